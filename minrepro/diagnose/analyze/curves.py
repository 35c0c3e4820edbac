"""What the curves say: pure checks of a CurveState, and the adapter that feeds it the log's
metric records.

NaN/Inf and explosion -> lr_divergence; a flat line (at ln C) -> loss_stagnation; train loss
collapsing to ~0 while evaluation sits at chance -> single_class_labels; train falling while eval
rises -> overfitting; data time dominating step time -> dataloader_bottleneck; memory growing
step after step -> undetached_loss_list.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from typing import Any

from minrepro.diagnose.analyze import checks
from minrepro.diagnose.analyze.checks import AnalyzerCheck
from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.series import Point
from minrepro.model import Event, Evidence, Finding, Line, MetricRecord, Severity
from minrepro.taxonomy import CATEGORY_OF

SPIKE_FACTOR = 4.0  # a loss this many times its earlier median is a divergence spike
FLAT_TOLERANCE = 0.02  # relative range under which a loss curve is flat
#: Share of the step time spent waiting for data from which loading is the bottleneck. Below
#: it, a run is slowed by its input pipeline but that is not what failed (detection training
#: commonly shows 0.5-0.6 on a healthy run).
DATA_SHARE = 0.65
LN_C_TOLERANCE = 0.01  # relative distance from ln(C) that counts as "at ln C"
#: Class counts of common tasks and data sets (2-10, VOC 20/21, COCO 80/81/91, CIFAR-100,
#: 200-class sets, Places365, ImageNet): a plateau near their ln is taken more readily.
COMMON_CLASS_COUNTS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 21, 80, 81, 91, 100, 200, 365, 1000)


def _evidence(points: list[Point], limit: int = 4) -> tuple[Evidence, ...]:
    return tuple(Evidence(line=p.line, text=p.text, rank=p.rank) for p in points[:limit])


def _finding(check: AnalyzerCheck, score: float, points: list[Point], **extra: Any) -> Finding:
    params = extra.pop("params", {})
    return Finding(rule_id=check.id, cause=check.cause, category=CATEGORY_OF[check.cause],
                   score=score,
                   first_line=points[0].line if points else 0, evidence=_evidence(points),
                   params=tuple(params.items()), severity=Severity.SYMPTOM, **extra)


class CurveAnalyzer:
    """Feeds the log's metric records (of one rank) to a CurveState; runs the checks on it."""

    def __init__(self) -> None:
        self.state = CurveState()
        self._rank: int | None = None
        self._seen_rank = False

    def feed(self, event: Event, line: Line) -> None:
        if not isinstance(event, MetricRecord):
            return
        if not self._seen_rank:
            self._rank, self._seen_rank = event.rank, True
        if event.rank != self._rank:
            return  # other ranks repeat the same curve; interleaving them would zigzag
        self.state.add(event.values, line=event.line, rank=event.rank, text=line.text)

    def loss_curve(self, points: int = 40) -> tuple[float, ...]:
        return self.state.loss_curve(points)

    def findings(self) -> list[Finding]:
        return run_checks(self.state)


# --- the checks: pure functions of a CurveState ---------------------------------------

def run_checks(state: CurveState) -> list[Finding]:
    """Every curve check's finding on `state` (a log's curves or a live run's)."""
    found = (check(state) for check in (divergence, stagnation, collapse, overfitting,
                                          data_bound, memory_growth, host_memory_growth))
    return [finding for finding in found if finding is not None]



def _lr_at(state: CurveState, line: int) -> dict[str, float]:
    lrs = state.series["learning_rate"].points()
    before = [p for p in lrs if p.line <= line] or lrs
    return {"learning_rate": before[-1].value} if before else {}


def divergence(state: CurveState) -> Finding | None:
    loss = state.series["loss"]
    spikes = _spikes(loss.points())
    bad = loss.first_bad
    if bad is None and state.series["eval_loss"].first_bad is not None:
        loss = state.series["eval_loss"]  # "total_val_loss: nan" after finite values
        bad = loss.first_bad
    if bad is not None:
        # A loss that turns NaN/Inf after finite steps is most often a step too large;
        # fp16 scaling and softmax overflow have their own, stronger signals.
        grew = bool(spikes) or _grew_before(loss.points(), bad.line)
        finite_before = sum(1 for name in ("loss", "eval_loss")
                            for p in state.series[name].points() if p.line < bad.line)
        score = 0.75 if grew else 0.55 if finite_before >= 2 else 0.4
        points = spikes[:3] + [bad]
        return _finding(checks.LOSS_NOT_FINITE, score, points,
                        params=_lr_at(state, points[0].line))
    grad = _spikes(state.series["grad_norm"].points(), factor=50.0)
    if not spikes and not grad:
        rebound = _rebound(loss.points())
        return None if rebound is None else _finding(
            checks.LOSS_SPIKES, 0.55, rebound,
            params=_lr_at(state, rebound[-1].line))
    score = 0.75 if len(spikes) >= 2 or (spikes and grad) else 0.6
    points = spikes or grad
    return _finding(checks.LOSS_SPIKES, score, points,
                    params=_lr_at(state, points[0].line))


def stagnation(state: CurveState) -> Finding | None:
    if _accuracy_rose(state):
        return None  # a model guessing uniformly does not gain accuracy
    train = state.series["loss"].points()
    falling = len(train) >= 3 and train[-1].value < 0.9 * train[0].value
    for name in ("loss", "eval_loss"):
        points = state.series[name].points()
        if name == "eval_loss" and falling:
            continue  # training still learns: a flat held-out loss is not "no learning"
        ln_c = not (name == "loss" and state.summed_loss)
        plateau = _plateau(points)
        settled = _settled_at_ln_c(points) if plateau is None and ln_c else None
        level = plateau if plateau is not None else settled
        final_classes = _classes_for(points[-1].value) if points and ln_c else None
        if level is None and final_classes:
            # Ending at ln(C) is the loss of uniform guessing: a weak sign alone, unless the
            # value is ln(C) to four decimals (eval_loss = 1.386294 for four choices): the
            # model's output is exactly uniform.
            exact = abs(points[-1].value - math.log(final_classes)) <= 2e-4
            return _finding(checks.LOSS_PLATEAU, 0.6 if exact else 0.45,
                            [points[-1]],
                            params={"plateau_loss": round(points[-1].value, 4),
                                    "num_classes": final_classes})
        if level is None:
            continue
        params: dict[str, float | int] = {"plateau_loss": round(level, 4)}
        classes = _classes_for(level) if ln_c else None
        if classes:
            params["num_classes"] = classes
        score = 0.75 if classes and plateau is not None else 0.65 if classes else 0.45
        return _finding(checks.LOSS_PLATEAU, score, [points[0], points[-1]],
                        params=params)
    return None


def _accuracy_rose(state: CurveState) -> bool:
    """Accuracy (train or held-out) up by ten points or more: the mean of its last third
    against that of its first (per-batch accuracy is noisy)."""
    for name in ("accuracy", "eval_accuracy"):
        values = state.series[name].values()
        if len(values) >= 2:
            third = max(1, len(values) // 3)
            scale = 100.0 if max(values) > 1.0 else 1.0
            if _mean(values[-third:]) - _mean(values[:third]) >= 0.1 * scale:
                return True
    return False


def collapse(state: CurveState) -> Finding | None:
    loss = state.series["loss"].points()
    if len(loss) < 3 or loss[-1].value > 0.01:
        return None
    at_chance = _eval_at_chance(state)
    always_zero = all(p.value <= 1e-5 for p in loss)  # printed as 0.0000: not a small MSE
    collapsed = loss[0].value >= 10 * max(loss[-1].value, 1e-6)
    accuracy = state.series["accuracy"].points()
    perfect = (len(accuracy) >= 3 and all(p.value in (1.0, 100.0) for p in accuracy[-3:])
               and all(p.value <= 1e-4 for p in loss[-3:]))
    if not (always_zero or perfect or (collapsed and at_chance is not None)):
        return None
    params: dict[str, int] = {}
    if at_chance is not None and at_chance[1]:
        params["num_classes"] = at_chance[1]
    evidence = [loss[0], loss[-1]] + ([at_chance[0]] if at_chance else [])
    score = 0.75 if at_chance is not None else 0.5
    return _finding(checks.LOSS_COLLAPSE, score, evidence, params=params,
                    supersedes=("overfitting",))


def _eval_at_chance(state: CurveState) -> tuple[Point, int | None] | None:
    """The eval point that shows chance-level prediction, and the class count it implies."""
    mcc = state.series["eval_matthews_correlation"].points()
    acc = state.series["eval_accuracy"].points()
    if acc:
        classes = round(1 / acc[-1].value) if acc[-1].value > 0 else 0
        if 2 <= classes <= 100 and abs(acc[-1].value - 1 / classes) <= 0.03:
            return acc[-1], classes
    if mcc and all(abs(p.value) < 1e-9 for p in mcc):
        return mcc[-1], None
    return None


def overfitting(state: CurveState) -> Finding | None:
    train, evals = state.series["loss"].points(), state.series["eval_loss"].points()
    if len(evals) < 3 or len(train) < 2:
        return _generalisation_gap(train, evals)
    best = min(range(len(evals)), key=lambda i: evals[i].value)
    after = evals[best:]
    rising = len(after) >= 3 and after[-1].value >= after[0].value * 1.05
    train_after = [p for p in train if p.line >= evals[best].line]
    falling = len(train_after) >= 2 and train_after[-1].value < train_after[0].value
    recent_train = _mean(p.value for p in train_after) if train_after else 0.0
    gap = (_mean(p.value for p in after) - recent_train) / max(recent_train, 1e-9)
    if not (rising and falling and gap > 0.1):
        stalled = best < len(evals) - max(2, len(evals) // 3)  # no new best lately
        return _generalisation_gap(train, evals) if stalled else None
    return _finding(checks.EVAL_LOSS_RISES, 0.7, [evals[best], after[-1]],
                    params={"best_eval_loss": round(evals[best].value, 4)})


def _generalisation_gap(train: list[Point], evals: list[Point]) -> Finding | None:
    """Few evaluations: a held-out loss ten times the (already small) training loss."""
    if not train or not evals:
        return None
    last_train = min(train[-3:], key=lambda p: abs(p.line - evals[-1].line))
    if last_train.value >= 0.1 or evals[-1].value < 10 * max(last_train.value, 1e-9):
        return None
    return _finding(checks.GENERALISATION_GAP, 0.55, [last_train, evals[-1]],
                    params={"best_eval_loss": round(min(p.value for p in evals), 4)})


def data_bound(state: CurveState) -> Finding | None:
    """Most of each step spent waiting for data: from the running averages a log prints
    (past its first record, which holds the workers' start-up alone), else from the
    printed steps' own times (without the first)."""
    data, batch = state.series["data_time"].points(), state.series["batch_time"].points()
    data_avg = state.series["data_time_avg"].points()
    batch_avg = state.series["batch_time_avg"].points()
    if len(data_avg) >= 2 and len(batch_avg) >= 2:
        mean_data, mean_batch, evidence = data_avg[-1].value, batch_avg[-1].value, data_avg[-2:]
    elif len(data) >= 3 and len(batch) >= 3:
        mean_data = _mean(p.value for p in data[1:])
        mean_batch = _mean(p.value for p in batch[1:])
        evidence = data[:3]
    elif len(data) == 2 == len(batch) and all(
            d.value >= DATA_SHARE * b.value > 0 for d, b in zip(data, batch, strict=True)):
        # Two records, both mostly waiting: the first is not a lone start-up stall.
        mean_data, mean_batch = _mean(p.value for p in data), _mean(p.value for p in batch)
        evidence = data
    else:
        return None
    share = mean_data / mean_batch if mean_batch > 0 else 0.0
    if share < DATA_SHARE:
        return None
    return _finding(checks.DATA_TIME_SHARE, 0.8 if share >= 0.75 else 0.6, evidence,
                    params={"data_time": round(mean_data, 4),
                            "batch_time": round(mean_batch, 4)})


def host_memory_growth(state: CurveState) -> Finding | None:
    return _host_growth_finding(state.series["rss_mb"].points())


def memory_growth(state: CurveState) -> Finding | None:
    points = _rising_tail(state.series["memory_mb"].points())
    if len(points) < 5 or points[-1].value < 1.5 * points[0].value:
        return None
    return _finding(checks.GPU_MEMORY_GROWS, 0.6, [points[0], points[-1]],
                    params={"memory_start_mb": round(points[0].value, 1),
                            "memory_end_mb": round(points[-1].value, 1)},
                    supersedes=("cuda_oom",))



def _host_growth_finding(points: list[Point]) -> Finding | None:
    """Host RAM (RSS) climbing step after step: DataLoader workers copying the dataset."""
    points = _rising_tail(points)
    if len(points) < 4 or points[-1].value < 1.5 * points[0].value:
        return None
    return _finding(checks.HOST_MEMORY_GROWS, 0.55, [points[0], points[-1]],
                    params={"rss_start_mb": round(points[0].value, 1),
                            "rss_end_mb": round(points[-1].value, 1)})


def _spikes(points: list[Point], factor: float = SPIKE_FACTOR) -> list[Point]:
    """Points at least `factor` times the median of the points before them (>= 3 of them)."""
    seen: list[float] = []
    spikes = []
    for point in points:
        if len(seen) >= 3 and point.value > factor * max(seen[len(seen) // 2], 1e-8):
            spikes.append(point)
        bisect.insort(seen, point.value)
    return spikes


def _rising_tail(points: list[Point]) -> list[Point]:
    """The last stretch of the series that never goes down and rises at 80% of its steps
    (memory held by leaked graphs grows step after step until the OOM)."""
    start = len(points) - 1
    while start > 0 and points[start - 1].value <= points[start].value:
        start -= 1
    tail = points[start:]
    steps = list(zip(tail, tail[1:], strict=False))
    while steps and sum(b.value > a.value for a, b in steps) < 0.8 * len(steps):
        tail, steps = tail[1:], steps[1:]  # drop the flat start of the stretch
    return tail


def _rebound(points: list[Point]) -> list[Point] | None:
    """A loss that fell to its minimum, then climbed back to several times it and stayed there
    (the last two points): the step became too large for where training had got to."""
    if len(points) < 5:
        return None
    lowest = min(range(len(points)), key=lambda i: points[i].value)
    after = points[lowest + 1:]
    floor = max(points[lowest].value, 1e-8)
    if len(after) < 2 or not all(p.value >= 3 * floor for p in after[-2:]):
        return None
    return [points[lowest], after[-1]]


def _mean(values: Iterable[float]) -> float:
    """statistics.fmean, without importing statistics."""
    values = list(values)
    return math.fsum(values) / len(values)


def _grew_before(points: list[Point], line: int) -> bool:
    before = [p.value for p in points if p.line <= line]
    if len(before) < 4:
        return False
    import statistics  # here: its import (fractions, decimal) costs start-up ~2 ms

    return before[-1] > 3 * statistics.median(before[: len(before) // 2])


def _plateau(points: list[Point]) -> float | None:
    """The level of a curve that is flat from start to end, else None."""
    values = [p.value for p in points]
    if len(values) < 2 or (len(values) < 4 and len(set(values)) > 1):
        return None
    mean = _mean(values)
    if mean < 0.05 or (max(values) - min(values)) / mean > FLAT_TOLERANCE:
        return None
    return mean


def _settled_at_ln_c(points: list[Point]) -> float | None:
    """The level of a curve whose second half sits in a tight band around ln(C), else None.

    Noisy per-batch losses hovering at ln 2 or ln 10 mean uniform guessing even when the
    first steps were higher (initial loss above ln C falls to it and stays)."""
    tail = [p.value for p in points[len(points) // 2:]]
    if len(tail) < 3:
        return None
    import statistics

    level = statistics.median(tail)
    quartiles = statistics.quantiles(tail, n=4) if len(tail) >= 4 else [min(tail), 0, max(tail)]
    if level <= 0.05 or (quartiles[2] - quartiles[0]) / level > 0.05:
        return None
    return level if _classes_for(level) else None


def _classes_for(plateau: float) -> int | None:
    """C such that the plateau is ln(C): the loss of uniform guessing over C classes.

    Between 10 and 1000 classes the ln(C) lie close together (ln 42 - ln 41 = 0.024), so some
    ln(C) is near any level: a common class count (CIFAR-100, COCO, ImageNet ...) is taken
    within 1 %, any other count only within a tenth of the gap to the next one."""
    if not 0 < plateau <= math.log(1000) * (1 + LN_C_TOLERANCE):
        return None  # beyond a classifier's class count (a vocabulary-sized plateau)
    common = min(COMMON_CLASS_COUNTS, key=lambda c: abs(math.log(c) - plateau))
    tolerance = (3 if common <= 10 else 1) * LN_C_TOLERANCE * plateau
    if abs(math.log(common) - plateau) <= tolerance:
        return common
    classes = round(math.exp(plateau))
    if classes > 10 and abs(math.log(classes) - plateau) <= 0.1 * math.log1p(1 / classes):
        return classes
    return None
