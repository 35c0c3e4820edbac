"""`repro_dir=`: at the moment of failure, the alert log and the repro script.

The alert line is written to `<repro_dir>/monitor.log`; `minrepro diagnose` reads it (the same
path as the CLI, so the script is the one `minrepro repro monitor.log` would write), and where
the cause has a template, `<repro_dir>/repro.py` is rendered with the values the live run
knows: the batch's real size and sequence length, the class count, the learning rate. They
enter the script only through the template's typed, clamped params.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from minrepro.diagnose.pipeline import diagnose_log
from minrepro.errors import MinreproError
from minrepro.monitor.alerts import Alert
from minrepro.monitor.data import labels_of, named_tensors
from minrepro.repro.render import has_template, load_spec, render_repro, write_script

LOG_NAME = "monitor.log"
SCRIPT_NAME = "repro.py"


def live_params(alert: Alert, batch: Any, num_classes: int | None) -> dict[str, Any]:
    """What the live run knows that a template may take: shapes, classes, learning rate."""
    params: dict[str, Any] = {}
    tensors = [t for _, t in named_tensors(batch) if t.dim() > 0]
    if tensors:
        params["batch_size"] = int(tensors[0].shape[0])
        params["seq_len"] = max((int(t.shape[1]) for t in tensors if t.dim() > 1), default=None)
    labels = labels_of(batch)
    if labels is not None and labels.dim() == 1 and labels.numel():
        params.setdefault("num_classes", int(labels.max()) + 1)
    if num_classes:
        params["num_classes"] = num_classes
    if isinstance(alert.values.get("lr"), float):
        params["learning_rate"] = alert.values["lr"]
    return {k: v for k, v in params.items() if v is not None}


def write_failure(directory: Path, alert: Alert, batch: Any, num_classes: int | None
                  ) -> Path | None:
    """Write the alert log and, where a template exists, the script; the script's path."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / LOG_NAME
    with log.open("a", encoding="utf-8") as handle:
        handle.write(alert.line() + "\n")
    try:
        diagnosis = diagnose_log(log)
        if diagnosis.cause is None or not has_template(diagnosis.cause):
            return None
        declared = {p.name for p in load_spec(diagnosis.cause).params}
        known = {k: v for k, v in live_params(alert, batch, num_classes).items() if k in declared}
        text = render_repro(replace(diagnosis, params={**diagnosis.params, **known}))
        return write_script(text, directory / SCRIPT_NAME, force=True)
    except MinreproError:  # the run goes on: the alert line is out already
        return None
