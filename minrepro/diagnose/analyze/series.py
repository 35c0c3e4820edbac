"""A metric's history in bounded memory: a decimated sample of the whole run, plus its tail."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

CAPACITY = 512  # decimated points kept over the whole run
TAIL = 64  # most recent points, kept exactly


@dataclass(slots=True, eq=False)
class Point:
    line: int
    value: float
    rank: int | None = None
    text: str = ""  # the log line, kept (capped) for evidence


@dataclass(slots=True, eq=False)
class Series:
    """Feed values in order; memory stays O(CAPACITY + TAIL) however long the run."""

    count: int = 0
    finite: int = 0
    first_bad: Point | None = None  # first NaN / Inf
    bad_after: int = 0  # non-finite values from the first bad one on
    finite_after: int = 0  # finite values after the first bad one
    last_finite: bool = True  # the last value seen was finite
    sample: list[Point] = field(default_factory=list)
    tail: deque[Point] = field(default_factory=lambda: deque(maxlen=TAIL))
    first_epoch: float | None = None  # where the run this series is of began (resumed?)
    _stride: int = 1

    def add(self, line: int, value: float, rank: int | None = None, text: str = "") -> None:
        point = Point(line, value, rank, text[:300])
        self.count += 1
        self.last_finite = math.isfinite(value)
        if not self.last_finite:
            if self.first_bad is None:
                self.first_bad = point
            self.bad_after += 1
            return
        if self.first_bad is not None:
            self.finite_after += 1
        self.finite += 1
        self.tail.append(point)
        if (self.finite - 1) % self._stride == 0:
            self.sample.append(point)
            if len(self.sample) >= CAPACITY:
                self.sample = self.sample[::2]
                self._stride *= 2

    def points(self) -> list[Point]:
        """The decimated run followed by the exact tail, in order, without duplicates. (By
        position in the series, not by line: a progress bar's redraws share one line.)"""
        tail_start = self.finite - len(self.tail)  # the ordinal of the tail's first point
        head = self.sample[: -(-tail_start // self._stride)]  # sample[i] is point i * stride
        return head + list(self.tail)

    def values(self) -> list[float]:
        return [p.value for p in self.points()]

    @property
    def stayed_bad(self) -> bool:
        """The series turned NaN/Inf and did not come back: it ends so, or nearly all values
        after the first bad one are bad (a skipped step, or an eval that is NaN now and then
        while the run goes on, is no divergence)."""
        return self.first_bad is not None and (
            not self.last_finite or self.bad_after >= 3 * self.finite_after)
