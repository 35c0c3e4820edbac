"""What the training curve says against the held-out one: a loss collapsing to zero while
evaluation sits at chance, or a model that predicts one class (single_class_labels), and
overfitting. Pure checks of a CurveState, like curves.py."""

from __future__ import annotations

import math

from minrepro.diagnose.analyze import checks
from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.quality import accuracy_rose, quality_improved, still_improving
from minrepro.diagnose.analyze.resources import finding
from minrepro.diagnose.analyze.series import Point
from minrepro.diagnose.analyze.trends import levels, mean, median, percent_scale
from minrepro.model import Finding

RISE = 1.1  # a held-out loss this far above its best, to stay, is rising
WIDE = 1.5  # a held-out loss this far above its best has left it far behind
FELL = 0.02  # a held-out metric this share of its scale below its best: it learned, then lost it


# --- collapse -----------------------------------------------------------------------------


def collapse(state: CurveState) -> Finding | None:
    loss = state.main("loss").points()
    if len(loss) < 3 or levels([p.value for p in loss])[-1] > 0.01 or loss[-1].value > 0.01:
        return None
    if any(p.value < 0 for p in loss):
        return None  # a loss below 0 (nnU-Net's CE - Dice) has no floor at 0 to collapse to
    at_chance = _eval_at_chance(state)
    always_zero = all(p.value <= 1e-5 for p in loss)  # printed as 0.0000: not a small MSE
    collapsed = loss[0].value >= 10 * max(loss[-1].value, 1e-6)
    accuracy = state.main("accuracy").points()
    # perfect at once (by the third record) and from then on: a model that learned its way
    # to 100 % training accuracy (a few-shot run, a small set) has fitted its data instead
    # (a pasted snippet may hold three records: the losses since the first perfect one)
    at = next((i for i, p in enumerate(accuracy) if p.value in (1.0, 100.0)), len(accuracy))
    since = [p for p in loss if at < len(accuracy) and p.line >= accuracy[at].line][-3:]
    perfect = (len(accuracy) >= 3 and at <= 2
               and all(p.value in (1.0, 100.0) for p in accuracy[at:])
               and len(since) >= 2 and all(p.value <= 1e-4 for p in since))
    if not (always_zero or perfect or (collapsed and at_chance is not None)):
        return None
    if _loss_below_its_accuracy(state, loss[-1].value):
        return None  # a loss of 1e-7 beside 99.5 % training accuracy is a sum scaled down
    params: dict[str, int] = {}
    if at_chance is not None and at_chance[1]:
        params["num_classes"] = at_chance[1]
    evidence = [loss[0], loss[-1]] + ([at_chance[0]] if at_chance else [])
    score = 0.75 if at_chance is not None else 0.5
    return finding(checks.LOSS_COLLAPSE, score, evidence, params=params,
                   supersedes=("overfitting",))


def _loss_below_its_accuracy(state: CurveState, loss: float) -> bool:
    """A mean cross-entropy is at least ln 2 on every sample the model gets wrong: with
    0.5 % of the training samples wrong it is 0.0035 or more. A loss far below that beside
    the training accuracy is a sum scaled down (or no cross-entropy): its ~0 is no collapse."""
    train = state.main("accuracy").values()
    if not train:
        return False
    wrong = 1.0 - train[-1] / percent_scale(train)
    return loss < 0.5 * wrong * math.log(2)


def _eval_at_chance(state: CurveState) -> tuple[Point, int | None] | None:
    """The eval point that shows chance-level prediction, and the class count it implies."""
    mcc = state.main("eval_matthews_correlation").points()
    acc = state.main("eval_accuracy").points()
    if acc:
        classes = round(1 / acc[-1].value) if acc[-1].value > 0 else 0
        if 2 <= classes <= 100 and abs(acc[-1].value - 1 / classes) <= 0.03:
            return acc[-1], classes
    if mcc and all(abs(p.value) < 1e-9 for p in mcc):
        return mcc[-1], None
    return None


# --- held-out NaN -------------------------------------------------------------------------


def held_out_nan(state: CurveState) -> Finding | None:
    """The held-out loss NaN/Inf from its first NaN on, while the training loss printed
    beside it stays finite (to the end): the weights are sound, so the held-out data, or
    their normalisation (a constant column divided by its zero spread), hold the NaN."""
    train_series, eval_series = state.paired("loss", "eval_loss")
    train, bad = train_series.points(), eval_series.first_bad
    if bad is None or not train or train_series.first_bad is not None \
            or eval_series.finite_after:
        return None  # (a held-out loss NaN now and then, finite between, is a batch's)
    beside = min(train, key=lambda p: abs(p.line - bad.line))
    return finding(checks.EVAL_LOSS_NOT_FINITE, 0.6, [beside, bad],
                   supersedes=("lr_divergence",))


# --- one class predicted -----------------------------------------------------------------

#: Held-out metrics of the classes a model must tell apart: exactly 0 means no sample of them
#: was predicted (an accuracy can stay high on the majority class alone).
_PER_CLASS = ("f1", "recall", "precision", "iou", "miou", "dice", "mcc",
              "matthews_correlation")
ZERO_RECORDS = 3  # the last this many evaluations all exactly 0
SAME_EVALS = 4  # evaluations that print the very same accuracy


def one_class_predicted(state: CurveState) -> Finding | None:
    """The model predicts one class for every sample: a per-class held-out metric (F1,
    recall, IoU, ...) exactly 0 at its last evaluations while accuracy stays well above 0
    (every pixel called background), or a held-out accuracy printed the same to the last
    digit at every evaluation while the loss moves (its argmax never changes: the accuracy
    is one class's share)."""
    accuracy = state.main("eval_accuracy").values() or state.main("accuracy").values()
    scale = percent_scale(accuracy)
    for name in _PER_CLASS:
        for series in state.all(f"eval_{name}"):
            points = series.points()
            if (len(points) > ZERO_RECORDS and all(p.value == 0 for p in points[-ZERO_RECORDS:])
                    and accuracy and accuracy[-1] >= 0.5 * scale):
                return finding(checks.ONE_CLASS_PREDICTED, 0.6, points[-ZERO_RECORDS:],
                               params={"accuracy": round(accuracy[-1] / scale, 4)})
    evals = state.main("eval_accuracy").points()
    losses = state.main("eval_loss").values() or state.main("loss").values()
    if (len(evals) >= SAME_EVALS and len({p.value for p in evals}) == 1
            and 0 < evals[0].value < 0.99 * scale and len(set(losses)) >= 3):
        return finding(checks.ONE_CLASS_PREDICTED, 0.55, [evals[0], evals[-1]],
                       params={"accuracy": round(evals[0].value / scale, 4)})
    # an accuracy the log does not mark held-out, the same to many digits at its last
    # records while the loss falls (66.29629629629629 %, five times): a share of one fixed
    # set, where only an unchanging argmax keeps every digit
    plain = state.main("accuracy").points()[-SAME_EVALS - 1:]
    if (not evals and len(plain) > SAME_EVALS and len({p.value for p in plain[1:]}) == 1
            and len({p.text for p in plain[1:]}) == SAME_EVALS  # no bar redrawn as it was
            and _many_digits(plain[-1].value) and 0 < plain[-1].value < 0.99 * scale
            and len(set(losses)) >= 3):
        return finding(checks.ONE_CLASS_PREDICTED, 0.55, [plain[1], plain[-1]],
                       params={"accuracy": round(plain[-1].value / scale, 4)})
    return None


def _many_digits(value: float) -> bool:
    """Printed with more than four decimals that are not all zeros (66.29629629629629, not
    0.5 or 87.5: a batch's accuracy repeats those by chance)."""
    return round(value, 4) != value


# --- overfitting --------------------------------------------------------------------------


HIGH_EVAL_LOSS = 0.5  # a held-out loss below this is no gap worth a diagnosis


def overfitting(state: CurveState) -> Finding | None:
    train_series, eval_series = state.paired("loss", "eval_loss")
    train, evals = train_series.points(), eval_series.points()
    if len(evals) < 4 or len(train) < 2:
        return _generalisation_gap(train, evals) or _accuracy_gap(state)
    values = [p.value for p in evals]
    smooth = _smoothed(values)
    best = min(range(len(smooth)), key=smooth.__getitem__)
    floor = max(smooth[best], 1e-9)
    after = smooth[best:]
    rising = (len(after) >= 3 and after[-1] >= RISE * floor and min(after[-2:]) >= 1.05 * floor
              and _climbs_over_the_noise(values))
    train_after = [p.value for p in train if p.line >= evals[best].line]
    falling = len(train_after) >= 2 and levels(train_after)[-1] < levels(train_after)[0]
    recent_train = median(train_after) if train_after else 0.0
    gap = (mean(after) - recent_train) / max(recent_train, 1e-9)
    if not (rising and falling and gap > 0.1):
        return _accuracy_gap(state)  # the held-out loss does not climb: the gap may tell
    if still_improving(state, evals[best].line):
        return None  # the held-out loss rises, but the model still gets better at the task
    worse = _quality_got_worse(state)
    # the gap grew by far (the held-out loss half again above its best while the training
    # loss halved): the training set is being memorised, whatever the accuracy does meanwhile
    train_levels = levels(train_after)
    memorising = after[-1] >= WIDE * floor and train_levels[-1] <= 0.5 * train_levels[0]
    if state.quality() and not memorising and not quality_improved(
            state, margin=FELL) and not _quality_got_worse(state, margin=FELL) and not (
            accuracy_rose(state, ("accuracy",))):
        return None  # the held-out metric never moved: it never fit (labels? the eval set?)
    # a held-out metric that held its level while the loss rose: a model growing over-confident
    # on the samples it gets wrong, not one getting worse at the task (unless memorising)
    score = 0.8 if worse else 0.7 if not state.quality() else 0.6 if memorising else 0.45
    return finding(checks.EVAL_LOSS_RISES, score, [evals[best], evals[-1]],
                   params={"best_eval_loss": round(evals[best].value, 4)})


FITTED = 0.97  # training accuracy at this share of its scale: the training set is learned
ACCURACY_GAP = 0.35  # held-out accuracy this far below it (of the scale): it does not carry


def _accuracy_gap(state: CurveState) -> Finding | None:
    """Training accuracy near 100 % while held-out accuracy sits far below it (99.6 % against
    35 %): the model learned its training samples, not the task. A hard task's usual gap
    (CIFAR-100: 99.9 % against 77 %) stays under ACCURACY_GAP; a held-out accuracy at chance
    is the collapse check's (single_class_labels), which supersedes this."""
    train, evals = state.main("accuracy").points(), state.main("eval_accuracy").points()
    # an evaluation before training (a zero-shot baseline) says nothing of what it learned
    evals = [p for p in evals if train and p.line > train[0].line]
    if len(train) < 2 or not evals:
        return None
    scale = percent_scale(p.value for p in train + evals)
    fitted = median([p.value for p in train[-3:]])
    held_out = max(p.value for p in evals[-3:])  # the last evaluations all of them below
    if fitted < FITTED * scale or held_out > fitted - ACCURACY_GAP * scale:
        return None
    return finding(checks.ACCURACY_GAP, 0.55, [train[-1], evals[-1]],
                   params={"train_accuracy": round(fitted / scale, 4),
                           "eval_accuracy": round(held_out / scale, 4)})


def _smoothed(values: list[float], half: int = 1) -> list[float]:
    """A running median over 2 * half + 1 evaluations (three by default): one noisy
    evaluation is no best or worst."""
    if len(values) < 5:
        return values
    return [median(values[max(0, i - half):i + half + 1]) for i in range(len(values))]


def _climbs_over_the_noise(values: list[float]) -> bool:
    """Smoothed over a twentieth of the evaluations on each side, the end still sits RISE
    above the best: a long noisy run of evaluations that wanders (12 ... 20 ... 16) around
    its level has not climbed, though its three-point medians may say so."""
    wide = _smoothed(values, half=max(1, len(values) // 20))
    return wide[-1] >= RISE * max(min(wide), 1e-9)


def _quality_got_worse(state: CurveState, margin: float = 0.01) -> bool:
    """A held-out quality metric's last level is below its best by `margin` of its scale."""
    for _, direction, series in state.quality():
        values = [v * direction for v in series.values()]
        if len(values) >= 4:
            found = levels(values)
            scale = percent_scale(values)
            if max(found) - found[-1] >= margin * scale:
                return True
    return False


SEVERAL = 4  # a held-out loss this many times the training loss, and climbing, at the end


def _generalisation_gap(train: list[Point], evals: list[Point]) -> Finding | None:
    """Few evaluations: a held-out loss ten times the (already small) training loss, and
    itself still high (a held-out 0.09 beside a training 0.0000 is a model that generalises);
    or, of the last two, the held-out loss climbing to SEVERAL times a training loss that
    fell (nanoGPT fine-tuned: train 0.98 -> 0.67, val 3.75 -> 3.90)."""
    if not train or not evals:
        return None
    if len(evals) >= 2 and len(train) >= 2:
        before = min(train, key=lambda p: abs(p.line - evals[-2].line))
        after = min(train[-3:], key=lambda p: abs(p.line - evals[-1].line))
        if (evals[-1].value > evals[-2].value and after.value < before.value
                and evals[-1].value >= SEVERAL * max(after.value, 1e-9)
                and evals[-1].value >= HIGH_EVAL_LOSS and after.line > before.line):
            return finding(checks.GENERALISATION_GAP, 0.55, [evals[-2], evals[-1]],
                           params={"best_eval_loss": round(min(p.value for p in evals), 4)})
    last_train = min(train[-3:], key=lambda p: abs(p.line - evals[-1].line))
    if last_train.value >= 0.1 or evals[-1].value < 10 * max(last_train.value, 1e-9) \
            or evals[-1].value < HIGH_EVAL_LOSS:
        return None
    return finding(checks.GENERALISATION_GAP, 0.55, [last_train, evals[-1]],
                   params={"best_eval_loss": round(min(p.value for p in evals), 4)})
