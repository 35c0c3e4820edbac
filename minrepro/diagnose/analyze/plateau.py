"""Stagnation: a loss curve flat from start to end, at ln(C) only where the log shows C
classes (a stated class count, accuracy at 1/C, or ln C to four decimals) -> loss_stagnation.

A check of a CurveState, as those of curves.py (which runs it with them).
"""

from __future__ import annotations

import math

from minrepro.diagnose.analyze import checks
from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.quality import accuracy_rose, quality_improved
from minrepro.diagnose.analyze.resources import finding
from minrepro.diagnose.analyze.series import Series
from minrepro.diagnose.analyze.trends import (
    COMMON_CLASS_COUNTS,
    classes_for,
    falls,
    flatness,
    frozen,
    levels,
    mean,
    median,
    percent_scale,
    settled,
)
from minrepro.model import Finding

FLAT_TOLERANCE = 0.02  # relative spread of the levels under which a curve is flat
FLAT_POINTS = 40  # a curve this long that is flat is stuck (a short one may be a snippet)
FLAT_EVALS = 8  # evaluations that show the same held-out loss
FROZEN_POINTS = 10  # records of the very same loss that say no step moved the model
PRIOR_TOLERANCE = 0.03  # relative distance from the majority share's entropy
EXACT_CLASSES = 50  # above it, a level at ln C to four decimals is as likely chance


def stagnation(state: CurveState) -> Finding | None:
    if accuracy_rose(state) or quality_improved(state):
        return None  # a model guessing uniformly does not get better at the task
    if _still_warming_up(state):
        return None  # the lr is still climbing from ~0: no step has had its real size yet
    train = state.main("loss")
    train_falls = falls(train.values())
    for name in ("loss", "eval_loss"):
        series = state.main(name)
        if name == "eval_loss" and (train_falls and not state.quality()):
            continue  # training still learns: a flat held-out loss is not "no learning"
        found = _plateau_finding(state, series, summed=name == "loss" and state.summed_loss,
                                 held_out=name == "eval_loss")
        if found is not None:
            return found
    return None


def _plateau_finding(state: CurveState, series: Series, *, summed: bool,
                     held_out: bool) -> Finding | None:
    points = series.points()
    values = [p.value for p in points]
    if not values:
        return None
    if len(values) == 1 and _at_the_start(state, series):
        return None  # every classifier starts at ln C: one record there shows no stall yet
    if len(values) < 4 and len(set(values)) > 1 or len(values) == 1:
        # Too few points for a plateau: only ending at ln(C) of a C-class task says "uniform".
        classes = None if summed else _evident_classes(state, values[-1], values)
        if classes is None or values[-1] > 2 * min(values):
            return None  # (a loss that doubled to ln C has diverged, not stalled)
        exact = abs(values[-1] - math.log(classes)) <= 2e-4
        return finding(checks.LOSS_PLATEAU, 0.6 if exact else 0.45, [points[-1]],
                       params={"plateau_loss": round(values[-1], 4), "num_classes": classes})
    level = median(levels(values)[len(levels(values)) // 2:])
    flat = mean(values) >= 0.05 and flatness(values) <= FLAT_TOLERANCE
    classes = None if summed else _evident_classes(state, level, values)
    # a binary classifier that learned only the class prior: its accuracy the majority's
    # share a, its loss the entropy of a (0.68 at a = 0.585), however noisy per batch
    prior = not (summed or held_out or falls(values)) and _at_prior_entropy(state, level)
    if prior and classes is None:
        classes = 2
    if classes is None and not flat:
        return None
    params: dict[str, float | int] = {"plateau_loss": round(level, 4)}
    if classes:
        params["num_classes"] = classes
    if flat and not held_out and _learning_rate_always_zero(state):
        params["learning_rate"] = 0.0
        score = 0.75  # no step moves the weights: a schedule or setting left the lr at 0
    elif classes and flat:
        score = 0.75
    elif classes:
        score = 0.65 if settled(values) or prior else 0.45
    elif frozen(values) and not held_out:
        # not one digit moves: no step changes the model (no gradient reaches it; resumed or
        # not: a converged loss still moves in its last digits); over FROZEN_POINTS records
        # not even a run that says it finished trained anything
        score = 0.65 if len(values) >= FROZEN_POINTS else 0.6
    elif (series.first_epoch or 0) > 1:
        score = 0.4  # a resumed run that starts on its plateau may just have converged
    elif held_out:  # evaluation after evaluation the same, and no metric got better
        score = 0.55 if len(values) >= FLAT_EVALS else 0.45
    else:
        score = 0.55 if len(values) >= FLAT_POINTS else 0.45
    return finding(checks.LOSS_PLATEAU, score, [points[0], points[-1]], params=params)


START_STEPS = 100  # a lone loss record at a step up to this is the run's starting loss


def _at_the_start(state: CurveState, series: Series) -> bool:
    """The series' record is of the run's first epoch or first steps, where the log says."""
    if series.first_epoch is not None and series.first_epoch < 1:
        return True
    step = state.first_loss[1] if state.first_loss is not None else None
    return step is not None and step <= START_STEPS


def _at_prior_entropy(state: CurveState, level: float) -> bool:
    """The loss sits at the entropy of a binary task's majority share, read from a held-out
    accuracy that never leaves it (0.55-0.8, over four evaluations at least)."""
    accuracy = state.main("eval_accuracy").values()
    if len(accuracy) < 4:
        return False
    shares = [value / percent_scale(accuracy) for value in accuracy]
    share = median(shares)
    if not 0.55 <= share <= 0.8 or max(shares) - min(shares) > 0.1:
        return False
    entropy = -(share * math.log(share) + (1 - share) * math.log(1 - share))
    return abs(level - entropy) <= PRIOR_TOLERANCE * entropy


WARMUP_RISE = 3.0  # the last lr printed this many times the first (or the first 0)


def _still_warming_up(state: CurveState) -> bool:
    """Every learning rate the log printed (three at least) is at least the one before, the
    last is well above the first, and it still climbs in the last third: the log ends inside
    the schedule's warmup."""
    rates = state.main("learning_rate").values()
    if len(rates) < 3 or rates[-1] <= 0:
        return False
    rising = all(later >= earlier for earlier, later in zip(rates, rates[1:], strict=False))
    climbing = rates[-1] > rates[len(rates) * 2 // 3]
    return rising and climbing and (rates[0] == 0 or rates[-1] >= WARMUP_RISE * rates[0])


def _learning_rate_always_zero(state: CurveState) -> bool:
    """Every learning rate the log printed (three at least) is 0."""
    rates = state.main("learning_rate").values()
    return len(rates) >= 3 and all(rate == 0.0 for rate in rates)


def _evident_classes(state: CurveState, level: float, values: list[float]) -> int | None:
    """C when the level is ln(C) AND the log shows a task of C classes: a stated class
    count, an accuracy at chance (1/C), or the level equal to ln C to four decimals (the
    model's output exactly uniform). A language model's loss near ln 7 is no 7-way task."""
    classes = classes_for(level)
    if classes is None:
        return None
    # ln C to four decimals is telling only where few ln C lie that close together: of
    # 500 classes, one level in five sits within 2e-4 of some ln C by chance
    exact = abs(values[-1] - math.log(classes)) <= 2e-4 and (
        classes <= EXACT_CLASSES or classes in COMMON_CLASS_COUNTS)
    if exact or state.num_classes == classes or (classes == 2 and state.binary_loss):
        return classes
    for name in ("accuracy", "eval_accuracy"):
        accuracy = state.main(name).values()
        if accuracy:
            share = median(accuracy[len(accuracy) // 2:]) / percent_scale(accuracy)
            if abs(share - 1 / classes) <= 0.5 / classes:
                return classes
    return None
