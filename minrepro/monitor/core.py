"""`TrainingMonitor`: the live checks, framework-free, at near-zero cost per step.

    monitor = TrainingMonitor(num_classes=10)
    for step, batch in enumerate(monitor.time_loader(loader)):
        loss = step_fn(batch)
        monitor.check(step, loss, lr=scheduler.get_last_lr()[0])
    monitor.close()

`check()` keeps a detached reference to the loss (no `.item()`: no device sync) and reads the
interval's losses in one transfer every `every` steps; it returns the alerts raised at that
call, each also printed as one line on `stream`. `on_alert="stop"` sets `should_stop` (the
adapters stop the trainer); a callable is called with each alert. `repro_dir` gets the alert
log and, where the cause has a template, the repro script, when the first alert fires.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import IO, Any

import torch

from minrepro.monitor.alerts import Alert
from minrepro.monitor.data import (
    LabelTally,
    LoaderShareCheck,
    LoaderTimer,
    check_batch,
    check_loader,
    named_tensors,
)
from minrepro.monitor.losses import LossChecks, LossThresholds
from minrepro.monitor.memory import LeakCheck, LeakThresholds, MemoryReport, memory_report
from minrepro.monitor.memory import sample_memory as _sample_memory

OnAlert = Callable[[Alert], object] | str | None
DEFAULT_EVERY = 50


class TrainingMonitor:
    """The seed's checks, live; see losses, memory and data for each default and why."""

    def __init__(self, num_classes: int | None = None, every: int = DEFAULT_EVERY,
                 stream: IO[str] | None = None, on_alert: OnAlert = None,
                 repro_dir: str | Path | None = None, amp: bool = False,
                 memory: bool = True, loader_share: float = 1.0, **thresholds: Any) -> None:
        if every < 1:
            raise ValueError("every should be at least 1")
        if not (on_alert is None or on_alert == "stop" or callable(on_alert)):
            raise ValueError('on_alert should be None, "stop" or a callable')
        self.num_classes, self.every, self.stream = num_classes, every, stream
        self.on_alert, self.repro_dir, self.track_memory = on_alert, repro_dir, memory
        self.losses = LossChecks(_split(LossThresholds, thresholds), num_classes, amp)
        self.leak = LeakCheck(_split(LeakThresholds, thresholds))
        if thresholds:
            raise TypeError(f"unknown thresholds: {', '.join(sorted(thresholds))}")
        self.share = LoaderShareCheck(threshold=loader_share)
        self.tally = LabelTally()
        self.timer = LoaderTimer()
        self.alerts: list[Alert] = []
        self.should_stop = False
        self._steps: list[int] = []
        self._values: list[Any] = []
        self._flags: list[tuple[int, Any]] = []  # (step, all-finite flag of the batch)
        self._lr: Any = None
        self._memory: int | None = None
        self._device: torch.device | None = None
        self._batch: Any = None
        self._since = time.perf_counter()
        self._load_mark = 0.0

    # --- per step ---------------------------------------------------------------------------

    def check(self, step: int, loss: Any, *, lr: Any = None, batch: Any = None,
              memory: int | None = None, data_time: float | None = None) -> list[Alert]:
        """Record this step's loss; every `every` steps, read them and run the checks.

        Optional: `lr` (float or tensor), `batch` (its float tensors get an on-device
        all-finite flag: NaN inputs are told from a diverging loss), `memory` (bytes in use,
        instead of the monitor's own sample), `data_time` (seconds this step waited for data,
        where the loader is not wrapped by `time_loader`).
        """
        if isinstance(loss, torch.Tensor):
            loss = loss.detach()
            if self._device is None:
                self._device = loss.device
        self._steps.append(step)
        self._values.append(loss)
        if lr is not None:
            self._lr = lr
        if batch is not None:
            self._batch = batch
            self._flag(step, batch)
        if memory is not None:
            self._memory = memory
        if data_time is not None:
            self.timer.load_s += data_time
        return self._read() if len(self._steps) >= self.every else []

    def _flag(self, step: int, batch: Any) -> None:
        floats = [t.detach() for _, t in named_tensors(batch) if t.is_floating_point()]
        if floats:
            flags = [torch.isfinite(t).all() for t in floats]
            self._flags.append((step, flags[0] if len(flags) == 1 else torch.stack(flags).all()))

    def close(self) -> list[Alert]:
        """Read what is still pending (the last, partial interval) and return its alerts."""
        return self._read() if self._steps else []

    # --- reads ------------------------------------------------------------------------------

    def _read(self) -> list[Alert]:
        steps, values = self._steps, _floats(self._values)
        self._steps, self._values = [], []
        found = self._inputs() + self.losses.feed(steps, values, _scalar(self._lr))
        found += [a for a in (self._leak(steps[-1]), self._loader(steps[-1])) if a]
        for alert in found:
            self._emit(alert)
        return found

    def _inputs(self) -> list[Alert]:
        flags, self._flags = self._flags, []
        if not flags:
            return []
        finite = torch.stack([flag for _, flag in flags]).tolist()
        bad = next((step for (step, _), ok in zip(flags, finite, strict=True) if not ok), None)
        if bad is None or "nan_input" in self.losses.fired:
            return []
        self.losses.fired.add("nan_input")
        return [Alert("nan_input", bad, {"tensor": "batch"})]

    def _leak(self, step: int) -> Alert | None:
        if not self.track_memory:
            return None
        used, source = (self._memory, "given") if self._memory is not None else (
            _sample_memory(self._device))
        return self.leak.feed(step, used, source)

    def _loader(self, step: int) -> Alert | None:
        now = time.perf_counter()
        total, self._since = now - self._since, now
        load, self._load_mark = self.timer.load_s - self._load_mark, self.timer.load_s
        return self.share.feed(step, load, total)

    def _emit(self, alert: Alert) -> None:
        self.alerts.append(alert)
        stream = self.stream or sys.stderr
        print(alert.line(), file=stream, flush=True)
        if self.repro_dir is not None and len(self.alerts) == 1:
            from minrepro.monitor.failure import write_failure

            write_failure(Path(self.repro_dir), alert, self._batch, self.num_classes)
        if self.on_alert == "stop":
            self.should_stop = True
        elif callable(self.on_alert):
            self.on_alert(alert)

    # --- data and memory --------------------------------------------------------------------

    def time_loader(self, loader: Iterable[Any]) -> Iterator[Any]:
        """Yield the loader's batches, timing each fetch for the load-vs-compute check."""
        return self.timer.wrap(loader)

    def check_batch(self, batch: Any, step: int = 0) -> list[Alert]:
        """Data sanity of one batch (a sync: for a few batches), tallying its labels."""
        found = check_batch(batch, self.num_classes, step, self.tally)
        for alert in found:
            self._emit(alert)
        return found

    def check_loader(self, loader: Iterable[Any], batches: int = 10) -> list[Alert]:
        """Data sanity of the loader's first `batches` batches, each event once."""
        found = check_loader(loader, batches, self.num_classes, tally=self.tally)
        for alert in found:
            self._emit(alert)
        return found

    def memory_report(self) -> MemoryReport:
        """Allocated, reserved and peak memory of the device the losses are on."""
        return memory_report(self._device)


def _split(kind: Any, options: dict[str, Any]) -> Any:
    """The options the dataclass `kind` declares, taken out of `options`."""
    names = {f.name for f in fields(kind)}
    return kind(**{name: options.pop(name) for name in list(options) if name in names})


def _floats(values: list[Any]) -> list[float]:
    """The interval's losses as floats: one transfer when they are all tensors."""
    if values and all(isinstance(v, torch.Tensor) and v.numel() == 1 for v in values):
        try:
            shaped = values if all(v.dim() == 0 for v in values) else [
                v.reshape(()) for v in values]
            return [float(x) for x in torch.stack(shaped).float().cpu().tolist()]
        except RuntimeError:  # mixed devices or dtypes
            pass
    return [_scalar(v) if v is not None else math.nan for v in values]  # type: ignore[misc]


def _scalar(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, torch.Tensor):
        return float(value.detach().float().mean())
    return float(value)
