"""Monitor: the troubleshooting checks, live, while a run trains; they speak minrepro.

    alerts    `Alert` and its one-line form (`minrepro: event=nan step=812 loss=nan ...`),
              the events and the causes `minrepro diagnose` reads them as
    losses    NaN/Inf, explosion, stagnation and the plateau at ln(C), over plain floats
    memory    memory samples, the leak check, `memory_report()` and `oom_handler`
    data      `check_batch` / `check_loader` (data sanity, label distribution) and the
              loader timer behind `time_loader()`
    core      `TrainingMonitor`: losses kept on the device, read every N steps
    failure   `repro_dir=`: the alert log and the repro script at the moment of failure
    hf        `MinreproCallback` for the transformers Trainer (extra: minrepro[hf])
    lightning `MinreproCallback` for Lightning (extra: minrepro[lightning])

Hands on: alert lines on a stream (evidence for `minrepro diagnose`), `Alert` records, and
`MemoryReport`. Imports torch; nothing in `diagnose` imports this package.
"""

from __future__ import annotations

from minrepro.monitor.alerts import EVENTS, Alert, parse_alert_line
from minrepro.monitor.core import TrainingMonitor
from minrepro.monitor.data import check_batch
from minrepro.monitor.memory import MemoryReport, memory_report, oom_handler

__all__ = ["EVENTS", "Alert", "MemoryReport", "TrainingMonitor", "check_batch",
           "memory_report", "oom_handler", "parse_alert_line"]
