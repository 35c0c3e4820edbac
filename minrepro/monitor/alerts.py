"""Alerts and their one documented line: what the monitor prints and `diagnose` reads.

Every alert is one line, on the monitor's stream::

    minrepro: event=<event> step=<int> <key>=<value> ...

Values are numbers (`%.6g`, `nan`, `inf`), or bare words ([A-Za-z0-9_.-]); keys keep the
order given. `EVENTS` names each event, what raised it and the cause the MR-MON rules of
`minrepro diagnose` read it as.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

PREFIX = "minrepro: "

#: event -> (what raised it, the cause diagnose names for it)
EVENTS: dict[str, tuple[str, str]] = {
    "nan": ("a non-finite loss (trend=rising: it grew first)", "lr_divergence"),
    "explosion": ("the loss far above its robust baseline, several steps running",
                  "lr_divergence"),
    "nan_input": ("a non-finite value in a batch", "nan_in_data"),
    "stagnation": ("the loss range under the threshold over the window", "loss_stagnation"),
    "ln_c": ("the loss held at ln(num_classes) over the window", "loss_stagnation"),
    "leak": ("memory growing every interval, faster than the threshold", "undetached_loss_list"),
    "loader": ("data loading slower than compute, two intervals running",
               "dataloader_bottleneck"),
    "single_class": ("every label seen is the same class", "single_class_labels"),
    "label_range": ("a label outside [0, num_classes)", "label_out_of_range"),
    "empty_batch": ("a batch with no samples", "dataloader_worker_error"),
    "length_mismatch": ("tensors of one batch with different sample counts", "shape_mismatch"),
    "oom": ("an out-of-memory error caught by oom_handler", "cuda_oom"),
    "fragmentation": ("reserved memory over 1.5x allocated", "allocator_fragmentation"),
}

_WORD = re.compile(r"[A-Za-z0-9_.:+-]{1,80}")
_LINE = re.compile(r"minrepro: event=(\w+) step=(-?\d+)((?: [a-z_]+=\S+)*)\s*$")

Value = float | int | str


def format_value(value: Value) -> str:
    """A value as the line shows it: numbers in `%.6g`, words checked (a line stays one line)."""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else f"{value:.6g}"
    text = str(value)
    return text if _WORD.fullmatch(text) else "?"


@dataclass(frozen=True)
class Alert:
    """One check that fired: its event, the step it fired at and the values behind it."""

    event: str
    step: int
    values: dict[str, Value] = field(default_factory=dict)

    @property
    def cause(self) -> str:
        """The cause `minrepro diagnose` names for this event."""
        return EVENTS[self.event][1]

    def line(self) -> str:
        """The documented one-line form."""
        parts = [f"event={self.event}", f"step={self.step}"]
        parts += [f"{key}={format_value(value)}" for key, value in self.values.items()]
        return PREFIX + " ".join(parts)


def parse_alert_line(text: str) -> Alert | None:
    """The alert a line holds (anywhere after a logger's prefix), or None."""
    start = text.find(PREFIX)
    match = _LINE.match(text, start) if start >= 0 else None
    if match is None or match.group(1) not in EVENTS:
        return None
    values: dict[str, Value] = {}
    for item in match.group(3).split():
        key, _, raw = item.partition("=")
        values[key] = _number(raw)
    return Alert(match.group(1), int(match.group(2)), values)


def _number(raw: str) -> Value:
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        return float(raw)
    except ValueError:
        return raw
