"""Analyzers over single events: the first OOM report, the loss-scale history, NCCL timeouts."""

from __future__ import annotations

import math

from minrepro.diagnose.analyze import checks
from minrepro.model import (
    Event,
    Evidence,
    Finding,
    Line,
    LossScaleEvent,
    MetricRecord,
    NcclTimeout,
    OomReport,
    Severity,
)

#: Reserved-but-unallocated memory this large a share of the reserved pool is fragmentation.
FRAGMENTED_SHARE = 0.25
#: ... or at least this share when it could serve the request twice over and is a GiB or
#: more (a few hundred MiB of split blocks is ordinary slack on a full card).
SOME_SHARE = 0.15
SOME_BYTES = 1 << 30
#: Of the card's memory, neither free nor reserved by this process: another process holds it.
HELD_ELSEWHERE = 0.5
#: Dynamic loss scaling halves a few times at start-up; this many reductions, never regrowing,
#: to a scale this low (from 2**16), is not that.
MANY_REDUCTIONS = 8
LOW_SCALE = 16.0
#: Steps the optimizer skipped (overflow) as a share of all steps, from this many steps on.
SKIPPED_SHARE = 0.5
MIN_STEPS = 50
REGREW_KEPT = 0.4  # what a scale that regrew from its floor leaves of a reading of collapse


def _evidence(line: Line) -> tuple[Evidence, ...]:
    return (Evidence(line=line.line, text=line.text[:500], rank=line.rank),)


class OomAnalyzer:
    """The first OOM report decides between a full card and a fragmented allocator."""

    def __init__(self) -> None:
        self.report: OomReport | None = None
        self.line: Line | None = None

    def feed(self, event: Event, line: Line) -> None:
        # Only a report with numbers says more than the rule that matched its words does
        # ("it would reply 'CUDA out of memory'" in a bug report is no OOM of this run).
        if isinstance(event, OomReport) and self.report is None and event.requested_bytes:
            self.report, self.line = event, line

    def findings(self) -> list[Finding]:
        report, line = self.report, self.line
        if report is None or line is None:
            return []
        params = {k: v for k, v in (
            ("requested_bytes", report.requested_bytes), ("capacity_bytes", report.capacity_bytes),
            ("free_bytes", report.free_bytes), ("allocated_bytes", report.allocated_bytes),
            ("reserved_bytes", report.reserved_bytes), ("device_index", report.device_index),
            ("rank", report.rank if report.rank is not None else line.rank),
        ) if v is not None}
        fragmented = is_fragmented(report)
        check = checks.OOM_FRAGMENTED if fragmented else checks.OOM_FULL_CARD
        return [Finding(
            rule_id=check.id, cause=check.cause,
            category="memory", score=0.8, first_line=line.line, evidence=_evidence(line),
            params=tuple(params.items()), severity=Severity.CRASH,
            supersedes=("cuda_oom",) if fragmented else (),
        )]


def held_elsewhere(capacity: float, free: float, reserved: float) -> bool:
    """What is neither free nor reserved by this process's PyTorch (its CUDA context takes a
    few hundred MiB) is over HELD_ELSEWHERE of the card: another process holds it."""
    return capacity - free - reserved > HELD_ELSEWHERE * capacity


def is_fragmented(report: OomReport) -> bool:
    """Enough memory is reserved but unallocated to serve the request, and it is a large share
    of the pool: the allocator holds it in blocks it cannot use. (A few percent of the pool
    unallocated is normal rounding slack, however large next to a small request; nor is a
    pool beside a card most of which another process holds.)"""
    requested, allocated, reserved = (report.requested_bytes, report.allocated_bytes,
                                      report.reserved_bytes)
    if requested is None or allocated is None or reserved is None:
        return False
    if reserved < allocated:
        # Torch <= 1.3 printed "N cached": the cache's free part, not the whole pool.
        unallocated, reserved = reserved, reserved + allocated
    else:
        unallocated = reserved - allocated
    capacity, free = report.capacity_bytes, report.free_bytes
    if capacity and free is not None and held_elsewhere(capacity, free, reserved):
        return False  # most of the card is another process's: this pool is not what ran out
    share = unallocated / reserved if reserved else 0.0
    # The message rounds to two decimals: 1.67 GiB unallocated "equals" a 1.67 GiB request.
    return unallocated >= 0.98 * requested and (
        share >= FRAGMENTED_SHARE
        or (share >= SOME_SHARE and unallocated >= max(2 * requested, SOME_BYTES)))


class LossScaleAnalyzer:
    """fp16 overflow: the dynamic loss scale keeps falling (below 1, or to its minimum).

    Dynamic scaling overflows by design: a burst of reductions at start-up, then a probe
    every few hundred steps (the scale doubles after N clean steps, overflows, halves: the
    log shows it back at its old value). That is healthy. A scale at its floor, below 1, or
    falling far without ever coming back, is not."""

    def __init__(self) -> None:
        self.count = 0
        self.lowest: float | None = None
        self.at_minimum = False
        self.recovered = False  # a later reduction started above an earlier low: it regrew
        # ... above its lowest point at or below 1, after reaching it: steps went through
        # unscaled-and-clean long enough for the scaler to grow it back (a run at a small
        # scale that trains on, not one every step of which overflows)
        self.left_the_floor = False
        self.lines: list[Line] = []
        self.skipped: tuple[float, int, Line] | None = None  # the last "step=N, skipped=M"
        self.nan_loss = False  # a loss printed as nan or inf

    def feed(self, event: Event, line: Line) -> None:
        if isinstance(event, MetricRecord):  # "loss_scale : 1.4e-14" printed as a metric
            scale = event.get("loss_scale")
            if scale is not None and scale < 1:
                self._lower(scale, None, line, at_minimum=False)
            loss = event.get("loss")
            self.nan_loss |= loss is not None and not math.isfinite(loss)
            skipped = event.get("skipped_steps")
            if skipped is not None and event.step:
                self.skipped = (skipped, event.step, line)
            return
        if isinstance(event, LossScaleEvent):
            self.count += 1
            self._lower(event.scale_to, event.scale_from, line, event.at_minimum)

    def _lower(self, scale: float | None, start: float | None, line: Line,
               at_minimum: bool) -> None:
        self.at_minimum |= at_minimum
        # a reduction from above an earlier low, or to above it (fairseq prints only the new
        # scale), means the scale grew back in between
        if self.lowest is not None and max(start or 0.0, scale or 0.0) > self.lowest:
            self.recovered = True
            self.left_the_floor |= self.lowest <= 1
        if scale is not None and (self.lowest is None or scale < self.lowest):
            self.lowest = scale
            self.left_the_floor = False  # a new low: the question is asked of it
        if len(self.lines) < 3 or at_minimum or (scale is not None and scale <= 1):
            self.lines = (self.lines + [line])[-4:]

    def regrew_from_its_floor(self) -> bool:
        """Many reductions, the lowest at or below 1, and the scale grown back above it
        after (steps ran clean long enough to double it), with no loss gone NaN: a run that
        trains on at a small scale (fairseq's HuBERT in fp16), not one whose every step
        overflows."""
        # (left_the_floor is only ever set of a lowest at or below 1)
        return (self.count >= MANY_REDUCTIONS and self.left_the_floor and not self.at_minimum
                and not self.nan_loss)

    def findings(self) -> list[Finding]:
        # At or below 1 the scaler is at its floor (DeepSpeed's default minimum is 1): every
        # step overflows unscaled.
        collapsed = self.at_minimum or (self.lowest is not None and self.lowest <= 1
                                         and not self.left_the_floor)
        falling = (self.count >= MANY_REDUCTIONS and not self.recovered
                   and self.lowest is not None and self.lowest <= LOW_SCALE)
        lost = False
        if self.skipped is not None:
            skipped, steps, line = self.skipped
            lost = steps >= MIN_STEPS and skipped >= SKIPPED_SHARE * steps
            if lost and not self.lines:
                self.lines = [line]  # every step skipped: the optimizer never stepped
        if self.regrew_from_its_floor() and not lost:
            # the history says the scaler found its level: the lines that read a scale
            # below 1 as a collapse (the rule's own signals) are vetoed, not named here
            return [Finding(rule_id=checks.LOSS_SCALE_COLLAPSE.id, cause="fp16_overflow",
                            category="precision", score=0.0, first_line=0,
                            kept_share=REGREW_KEPT)]
        if not (collapsed or falling or lost) or not self.lines:
            return []
        params = {"loss_scale": self.lowest} if self.lowest is not None else {}
        evidence = tuple(e for line in self.lines for e in _evidence(line))
        return [Finding(rule_id=checks.LOSS_SCALE_COLLAPSE.id, cause="fp16_overflow",
                        category="precision", score=0.8 if collapsed or lost else 0.6,
                        first_line=self.lines[0].line, evidence=evidence,
                        params=tuple(params.items()), severity=Severity.SYMPTOM,
                        supersedes=("lr_divergence",))]


class NcclAnalyzer:
    """The first watchdog timeout: op, timeout and rank. A cascade when another rank crashed."""

    def __init__(self) -> None:
        self.first: tuple[NcclTimeout, Line] | None = None

    def feed(self, event: Event, line: Line) -> None:
        if isinstance(event, NcclTimeout) and self.first is None:
            self.first = (event, line)

    def findings(self) -> list[Finding]:
        if self.first is None:
            return []
        event, line = self.first
        params = {k: v for k, v in (("timeout_ms", event.timeout_ms),
                                    ("op", event.op.lower() if event.op else None),
                                    ("rank", event.rank if event.rank is not None else line.rank))
                  if v is not None}
        return [Finding(rule_id=checks.NCCL_WATCHDOG.id, cause="nccl_timeout", category="speed",
                        score=0.7,
                        first_line=line.line, evidence=_evidence(line),
                        params=tuple(params.items()), severity=Severity.CRASH, cascade=True)]
