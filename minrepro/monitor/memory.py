"""Memory: samples, the leak check, `memory_report()` and `oom_handler` (the seed's
diagnose_memory and detect_memory_leak).

A sample is `torch.cuda.memory_allocated()` on CUDA (a host-side counter: no sync), else the
process's resident set size from /proc/self/statm (on CPU, tensors kept alive with their
graphs show there: big buffers are mmap'd and handed back when freed). Samples are taken at
each read, not each step.

Leak: memory grew at each of the last `leak_intervals` reads, by at least `leak_mb` per
`leak_steps` steps on average (100 MB over 20 steps). A one-off rise (the optimizer's state
on the first step, an evaluation) is no leak: it does not repeat every interval.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections import deque
from dataclasses import dataclass
from typing import IO, Any, Literal

import torch

from minrepro.monitor.alerts import Alert

MB = 1 << 20
FRAGMENTED = 1.5  # reserved over allocated above this: the allocator is fragmented


@dataclass(frozen=True)
class LeakThresholds:
    leak_mb: float = 100.0
    leak_steps: int = 20
    leak_intervals: int = 2


def rss_bytes() -> int | None:
    """The process's resident set size, or None where /proc is not there."""
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def sample_memory(device: torch.device | None) -> tuple[int | None, str]:
    """(bytes in use, what was measured) for the device the losses live on."""
    if device is not None and device.type == "cuda":
        return torch.cuda.memory_allocated(device), "cuda_allocated"
    return rss_bytes(), "rss"


class LeakCheck:
    """Samples (step, bytes) at reads; fires once while memory keeps growing fast."""

    def __init__(self, thresholds: LeakThresholds) -> None:
        self.t = thresholds
        self.samples: deque[tuple[int, int]] = deque(maxlen=thresholds.leak_intervals + 1)
        self.fired = False

    def feed(self, step: int, used: int | None, source: str) -> Alert | None:
        if used is None:
            return None
        self.samples.append((step, used))
        if len(self.samples) <= self.t.leak_intervals:
            return None
        pairs = list(zip(self.samples, list(self.samples)[1:], strict=False))
        (first_step, first), (last_step, last) = self.samples[0], self.samples[-1]
        span = max(last_step - first_step, 1)
        rate = (last - first) / span * self.t.leak_steps / MB  # MB per leak_steps steps
        growing = all(b[1] > a[1] for a, b in pairs) and rate >= self.t.leak_mb
        if not growing:
            self.fired = False
            return None
        if self.fired:
            return None
        self.fired = True
        return Alert("leak", step, {"memory_mb": last / MB, "growth_mb": rate,
                                    "window": self.t.leak_steps, "source": source})


@dataclass(frozen=True)
class MemoryReport:
    """The seed's diagnose_memory: what is allocated, reserved and the peak, in bytes."""

    device: str
    allocated: int | None
    reserved: int | None
    peak: int | None
    summary: str = ""  # torch.cuda.memory_summary() on CUDA

    @property
    def fragmented(self) -> bool:
        """Reserved over 1.5x allocated: memory the caching allocator holds but cannot use."""
        return bool(self.allocated and self.reserved
                    and self.reserved > FRAGMENTED * self.allocated)

    def advice(self) -> str:
        if self.fragmented:
            return ("reserved memory is over 1.5x allocated: the allocator is fragmented; try "
                    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True or fixed input shapes")
        return "no fragmentation: reduce the batch size, use gradient checkpointing or AMP"

    def lines(self) -> list[str]:
        """The report as text: the figures, the advice, then the allocator's own summary."""
        figures = " ".join(f"{name}_mb={_mb(value)}" for name, value in
                           (("allocated", self.allocated), ("reserved", self.reserved),
                            ("peak", self.peak)))
        lines = [f"memory ({self.device}): {figures}", f"advice: {self.advice()}"]
        return lines + self.summary.splitlines()

    def alerts(self, step: int) -> list[Alert]:
        if not self.fragmented:
            return []
        ratio = (self.reserved or 0) / max(self.allocated or 1, 1)
        return [Alert("fragmentation", step, {"allocated_mb": (self.allocated or 0) / MB,
                                              "reserved_mb": (self.reserved or 0) / MB,
                                              "ratio": ratio})]


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / MB:.1f}"


def memory_report(device: torch.device | str | None = None) -> MemoryReport:
    """Memory now: CUDA's allocator figures where CUDA is in use, else the process's RSS."""
    dev = torch.device(device) if device is not None else (
        torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))
    if dev.type == "cuda":
        return MemoryReport(str(dev), torch.cuda.memory_allocated(dev),
                            torch.cuda.memory_reserved(dev), torch.cuda.max_memory_allocated(dev),
                            torch.cuda.memory_summary(dev, abbreviated=True))
    peak = _peak_rss()
    return MemoryReport("cpu", rss_bytes(), None, peak)


def _peak_rss() -> int | None:
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # KiB on Linux


def is_oom(error: BaseException) -> bool:
    """torch's OutOfMemoryError, or a RuntimeError that says it ran out of memory."""
    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error))


class oom_handler(contextlib.ContextDecorator):  # noqa: N801 - used as a decorator
    """On an out-of-memory error: print the memory report and an `event=oom` line, re-raise.

        with oom_handler(step=step):          # or @oom_handler() on the step function
            loss = model(batch).loss
    """

    def __init__(self, stream: IO[str] | None = None, step: int = -1,
                 device: torch.device | str | None = None) -> None:
        self.stream, self.step, self.device = stream, step, device

    def __enter__(self) -> oom_handler:
        return self

    def __exit__(self, kind: Any, error: BaseException | None, trace: Any) -> Literal[False]:
        if error is not None and is_oom(error):
            report = memory_report(self.device)
            stream = self.stream or sys.stderr
            for line in report.lines():
                print(line, file=stream)
            values: dict[str, float | int | str] = {"allocated_mb": (report.allocated or 0) / MB,
                                                    "peak_mb": (report.peak or 0) / MB,
                                                    "device": report.device}
            for alert in [Alert("oom", self.step, values), *report.alerts(self.step)]:
                print(alert.line(), file=stream)
            stream.flush()
        return False  # re-raise: the handler reports, it does not recover
