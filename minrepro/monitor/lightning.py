"""`MinreproCallback` for Lightning (extra: `pip install minrepro[lightning]`).

`on_train_batch_end` reads `outputs["loss"]` (the loss `training_step` returned, normalised
for gradient accumulation) and hands it, detached, to `TrainingMonitor.check` with the global
step, the first optimizer's learning rate and the batch; nothing is read back from the device
between reads. `on_alert="stop"` stops the run through `trainer.should_stop`. Works with
`lightning` (2.x) or the older `pytorch_lightning` package.
"""

from __future__ import annotations

import importlib
from typing import Any

from minrepro.monitor.core import TrainingMonitor


def _callback_base() -> Any:
    """Lightning's Callback class, from `lightning` or else the older `pytorch_lightning`."""
    for package in ("lightning.pytorch", "pytorch_lightning"):
        try:
            return importlib.import_module(package).Callback
        except ImportError:
            continue
    raise ImportError("minrepro.monitor.lightning needs Lightning:"
                      " pip install minrepro[lightning]")


Callback: Any = _callback_base()


class MinreproCallback(Callback):
    """minrepro's live checks on a Lightning run (see the module docstring)."""

    def __init__(self, monitor: TrainingMonitor | None = None, **options: Any) -> None:
        super().__init__()
        self.monitor = monitor or TrainingMonitor(**options)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int) -> None:
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        if loss is None:
            return
        self.monitor.check(trainer.global_step, loss, lr=_lr(trainer), batch=batch)
        if self.monitor.should_stop:
            trainer.should_stop = True

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self.monitor.close()


def _lr(trainer: Any) -> float | None:
    optimizers = getattr(trainer, "optimizers", None) or []
    return optimizers[0].param_groups[0]["lr"] if optimizers else None
