"""Robust summaries of a noisy curve, for checks that must hold on whole real runs.

A per-batch loss jumps around; one batch says nothing. The checks judge `levels`: the medians
of a curve's consecutive windows (ten of them, or one a point for short curves), so that a
trend is a change of the run's level against its own noise, never a single batch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

WINDOWS = 10
LN_C_TOLERANCE = 0.01  # relative distance from ln(C) that counts as "at ln C"
#: Class counts of common tasks and data sets (2-10, VOC 20/21, COCO 80/81/91, CIFAR-100,
#: 200-class sets, Places365, ImageNet): a plateau near their ln is taken more readily.
COMMON_CLASS_COUNTS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 21, 80, 81, 91, 100, 200, 365, 1000)


def mean(values: Iterable[float]) -> float:
    """statistics.fmean, without importing statistics; values near the float limit (a loss of
    8.9e307 in a hostile log) overflow the exact sum, so those are summed scaled down."""
    values = list(values)
    try:
        return math.fsum(values) / len(values)
    except OverflowError:
        return math.fsum(v / len(values) for v in values)


def median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def windows(count: int, parts: int = WINDOWS) -> list[tuple[int, int]]:
    """(start, end) of `parts` consecutive windows over `count` items (fewer if fewer items)."""
    parts = min(parts, count)
    return [(i * count // parts, (i + 1) * count // parts) for i in range(parts)]


def levels(values: Sequence[float], parts: int = WINDOWS) -> list[float]:
    """The median of each window: the curve's level along the run."""
    return [median(values[a:b]) for a, b in windows(len(values), parts)]


def flatness(values: Sequence[float]) -> float:
    """The spread of a curve's levels relative to their mean (0: perfectly flat)."""
    found = levels(values)
    centre = mean(found)
    return (max(found) - min(found)) / centre if centre > 0 else math.inf


def percent_scale(values: Iterable[float]) -> float:
    """100 for a metric printed in percent (any value past 1.5), else 1: the scale a margin
    of "points" is taken of."""
    return 100.0 if max((abs(v) for v in values), default=0.0) > 1.5 else 1.0


def improved(values: Sequence[float], direction: int, since: int = 0,
             margin: float = 0.01) -> bool:
    """Did a quality metric get better after index `since` than it was there: its best level
    afterwards beats its level at `since` by `margin` of its scale (percent or fraction)?"""
    after = values[since:]
    if len(after) < 2:
        return False
    scale = percent_scale(values)
    found = levels(after, parts=min(WINDOWS, max(2, len(after) // 2)))
    start = found[0]
    best = max(found) if direction > 0 else min(found)
    return (best - start) * direction >= margin * scale


def better_at_end(values: Sequence[float], direction: int, since: int,
                  margin: float = 0.01) -> bool:
    """Is a quality metric better at the end of the run than around index `since`, by
    `margin` of its scale and by two standard errors of the difference of the two medians?
    (Still improving after the held-out loss turned up; a val_acc that wanders 0.64-0.70 is
    not.) The scatter is read off the steps between evaluations (median |step| = 0.954
    sigma for Gaussian noise; a median of n has a standard error of 1.253 sigma / sqrt n)."""
    if len(values) - since < 2:
        return False
    scale = percent_scale(values)
    near = values[max(0, since - 1):since + 2]
    tail = values[-max(2, len(values) // 5):]
    sigma = median([abs(b - a) for a, b in zip(values, values[1:], strict=False)]) / 0.954
    noise = 2 * 1.253 * sigma * math.sqrt(1 / len(near) + 1 / len(tail))
    return (median(tail) - median(near)) * direction >= max(margin * scale, noise)


def classes_for(level: float) -> int | None:
    """C such that the level is ln(C): the loss of uniform guessing over C classes.

    Between 10 and 1000 classes the ln(C) lie close together (ln 42 - ln 41 = 0.024), so some
    ln(C) is near any level: a common class count (CIFAR-100, COCO, ImageNet ...) is taken
    within 1 %, any other count only within a tenth of the gap to the next one."""
    if not 0 < level <= math.log(1000) * (1 + LN_C_TOLERANCE):
        return None  # beyond a classifier's class count (a vocabulary-sized plateau)
    common = min(COMMON_CLASS_COUNTS, key=lambda c: abs(math.log(c) - level))
    tolerance = (3 if common <= 10 else 1) * LN_C_TOLERANCE * level
    if abs(math.log(common) - level) <= tolerance:
        return common
    classes = round(math.exp(level))
    if classes > 10 and abs(math.log(classes) - level) <= 0.1 * math.log1p(1 / classes):
        return classes
    return None


def above_the_noise(values: list[float], first: float, peak: float) -> bool:
    """A rise of a window's median (`first` to `peak`) that the scatter of the values cannot
    make by chance: per-sample losses of batch size 1 (4, 0.6, 21, 2.7, 101, ...) move their
    window medians by half without any trend. Judged on the log of the values (a loss's
    noise grows with its size); the scatter is the values' distance from their own window's
    median (a trend is no scatter); the rise must be four standard errors of the difference
    of two window medians (three, and one for picking the best or worst of ten windows)."""
    if min(values) <= 0 or first <= 0:
        return True  # no log scale: the ratio tests before this one decide
    logs = [math.log(v) for v in values]
    spans = windows(len(logs))
    residuals = [abs(v - level) for (a, b), level in zip(spans, levels(logs), strict=True)
                 for v in logs[a:b]]
    spread = 1.4826 * median(residuals)
    per_window = max(len(logs) // len(spans), 1)
    noise = math.sqrt(2.0) * 1.2533 * spread / math.sqrt(per_window)
    return math.log(peak / first) >= 4.0 * noise


def settled(values: list[float]) -> bool:
    """The second half sits in a tight band (a noisy loss hovering at its level)."""
    tail = values[len(values) // 2:]
    if len(tail) < 3:
        return False
    ordered = sorted(tail)
    low, high = ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]
    level = median(tail)
    return level > 0.05 and (high - low) / level <= 0.05


def frozen(values: list[float]) -> bool:
    """Six records or more of the very same loss, printed to more than two decimals."""
    return len(values) >= 6 and len(set(values)) == 1 and values[0] != round(values[0], 2)


def falls(values: list[float]) -> bool:
    """The curve's last level is a tenth or more below its first."""
    found = levels(values)
    return len(values) >= 3 and found[-1] < 0.9 * found[0]
