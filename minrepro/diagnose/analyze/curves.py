"""What the loss curves say: pure checks of a CurveState, and the adapter that feeds it the
log's metric records.

Built to hold on whole real runs (thousands of noisy per-batch losses, warmup, lr decay, evals
every N steps, several runs in one file): every check judges the run's level (window medians,
trends.py) against its own noise, over enough points, as an engineer would before saying
"diverged", "stuck" or "overfitting":

  loss parts    one part of a summed loss is NaN while the others stay finite, the loss not
                climbing before  -> nan_in_data
  loss at 0     the first training loss, at step 0 (no optimizer step yet), is NaN
                -> nan_in_data
  transient NaN the training loss is NaN on some batches and finite again after, at its
                level, without mixed precision (weights gone NaN stay NaN) -> nan_in_data
  divergence    the loss stays NaN/Inf, or climbs back to several times its best level and
                stays there (still near its peak at the end), or never falls and ends well
                above its start  -> lr_divergence
  stagnation    the loss is flat from start to end; at ln(C) only where the log shows C
                classes (a stated class count, accuracy at 1/C, or ln C to four decimals)
                -> loss_stagnation
  collapse      train loss at ~0 while evaluation sits at chance -> single_class_labels
  one class     a per-class metric at 0, or one accuracy at every eval -> single_class_labels
  overfitting   the held-out loss climbs after its best while the train loss falls, and no
                held-out quality metric keeps improving -> overfitting
Stagnation is in plateau.py, the held-out checks in heldout.py, resource curves (data time,
GPU and host memory) in resources.py.
"""

from __future__ import annotations

import math

from minrepro.diagnose.analyze import checks
from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.heldout import (
    collapse,
    held_out_nan,
    one_class_predicted,
    overfitting,
)
from minrepro.diagnose.analyze.plateau import FLAT_POINTS, stagnation
from minrepro.diagnose.analyze.quality import quality_improved
from minrepro.diagnose.analyze.resources import (
    data_bound,
    finding,
    host_memory_growth,
    memory_growth,
)
from minrepro.diagnose.analyze.series import Point, Series
from minrepro.diagnose.analyze.trends import above_the_noise, falls, levels, median, windows
from minrepro.model import (
    EnvFact,
    Event,
    Finding,
    Line,
    LossScaleEvent,
    MetricRecord,
    OomReport,
)

CLIMB = 3.0  # a loss back at this many times its best level has diverged
SPIKE = 4.0  # in a snippet, a loss this many times the median before it is a spike
WORSE = 1.15  # three windows of a run this far above where it began: it got worse
ASTRONOMICAL = 1e15  # a finite loss this large has blown up, however flat it stays


class CurveAnalyzer:
    """Feeds the log's metric records (of one rank) to a CurveState; runs the checks on it."""

    def __init__(self) -> None:
        self.state = CurveState()
        self._rank: int | None = None
        self._seen_rank = False

    def feed(self, event: Event, line: Line) -> None:
        if isinstance(event, OomReport):
            self.state.ended_in_oom = True
        elif isinstance(event, EnvFact) and event.key == "num_classes":
            self.state.num_classes = int(event.value)
        elif isinstance(event, EnvFact) and event.key == "loss_fn":
            self.state.binary_loss = True
        elif isinstance(event, LossScaleEvent) or (
                isinstance(event, EnvFact) and event.key == "dtype"):
            self.state.mixed_precision = True
        if not isinstance(event, MetricRecord):
            return
        if not self._seen_rank:
            self._rank, self._seen_rank = event.rank, True
        if event.rank != self._rank:
            return  # other ranks repeat the same curve; interleaving them would zigzag
        self.state.add(event.values, line=event.line, rank=event.rank, text=line.text,
                       series=event.series, step=event.step)

    def loss_curve(self, points: int = 40) -> tuple[float, ...]:
        return self.state.loss_curve(points)

    def findings(self) -> list[Finding]:
        return run_checks(self.state)


def run_checks(state: CurveState) -> list[Finding]:
    """Every curve check's finding on `state` (a log's curves or a live run's): on its main
    curves, and on the curves its last records are of where those differ (how the run
    ended: a last run, a pasted tail), the stronger of the two."""
    results = []
    for check in (divergence, exploded_part, bad_part, nan_at_start, transient_nan, stagnation,
                  collapse, one_class_predicted, held_out_nan, overfitting, data_bound,
                  memory_growth, host_memory_growth):
        found = [check(state)]
        if _ends_elsewhere(state):
            state.at_end = True
            try:
                found.append(check(state))
            finally:
                state.at_end = False
        kept = [f for f in found if f is not None]
        if kept:
            results.append(max(kept, key=lambda f: f.score))
    return results


def _ends_elsewhere(state: CurveState) -> bool:
    """The last records of some curve are not of its main series."""
    for name, key in state.last_series.items():
        track = state.tracks[name][key].resolved()
        if track.count >= 3 and track is not state.main(name):
            return True
    return False


def _lr_at(state: CurveState, line: int) -> dict[str, float]:
    lrs = state.main("learning_rate").points()
    before = [p for p in lrs if p.line <= line] or lrs
    return {"learning_rate": before[-1].value} if before else {}


# --- divergence ---------------------------------------------------------------------------


def divergence(state: CurveState) -> Finding | None:
    losses = state.all("loss")
    for series in losses + state.all("eval_loss"):  # "total_val_loss: nan" counts too
        found = _not_finite(state, series) if series.stayed_bad else None
        if found is not None:
            return found
    held_out = state.main("eval_loss").values()
    if (falls(held_out) or len(held_out) == 2 and held_out[1] < 0.9 * held_out[0]
            or quality_improved(state)):
        return None  # the held-out loss fell (or a quality metric rose): the run learned
    # Judged on the main (longest) training curve: a shorter "loss" beside it may be a part
    # of the loss, or a validation summary the log does not mark as one. An RL agent's loss
    # (its value loss, the squared error of returns that grow and jump) climbs and spikes
    # with the returns it reaches: only a loss past any real one says its weights blew up.
    curve = state.main("loss").points()
    if state.main("episode_return").count >= RL_RECORDS:
        return _astronomical(state, curve)
    points = _climb(curve, from_start=_from_start(state))
    grad = _climb(state.main("grad_norm").points(), factor=50.0)
    if points:
        steep = points[-1].value >= 10 * max(points[0].value, 1e-12)
        return finding(checks.LOSS_SPIKES, 0.75 if grad or steep else 0.6, points,
                       params=_lr_at(state, points[-1].line))
    spikes = _spikes(curve)
    if len(spikes) >= 2 or (spikes and spikes[-1] is curve[-1]):
        return finding(checks.LOSS_SPIKES, 0.75 if len(spikes) >= 2 else 0.6, spikes,
                       params=_lr_at(state, spikes[0].line))
    loss = [p.value for p in curve]
    if grad and loss and levels(loss)[-1] >= levels(loss)[0]:
        return finding(checks.LOSS_SPIKES, 0.55, grad, params=_lr_at(state, grad[-1].line))
    return _astronomical(state, curve)


RL_RECORDS = 4  # records of an agent's return that make a run a reinforcement-learning one


def _astronomical(state: CurveState, curve: list[Point]) -> Finding | None:
    """Finite but past any real loss (no cross-entropy, no MSE of sane targets gets there):
    the weights or activations blew up, before the first record if need be."""
    astronomical = [p for p in curve if ASTRONOMICAL <= p.value < math.inf]
    if len(astronomical) < 3 or len(astronomical) * 2 < len(curve):
        return None
    return finding(checks.LOSS_SPIKES, 0.7, astronomical[:1] + astronomical[-1:],
                   params=_lr_at(state, astronomical[0].line))


def _not_finite(state: CurveState, series: Series) -> Finding | None:
    """A loss that turned NaN/Inf after finite steps and stayed so: most often a step too
    large (fp16 scaling and softmax overflow have their own, stronger signals). A loss NaN
    from the first record of a log that shows the run's start never was finite: no step
    blew it up (nan_at_start says what that points to, where the curve is long enough)."""
    bad = series.first_bad
    assert bad is not None
    before = [p for p in series.points() if p.line < bad.line]
    if not before and _from_start(state):
        return None
    grew = _grew_before(before)
    score = 0.75 if grew else 0.55 if len(before) >= 2 else 0.4
    evidence = ([before[0], max(before, key=lambda p: p.value)] if grew else []) + [bad]
    return finding(checks.LOSS_NOT_FINITE, score, evidence, params=_lr_at(state, bad.line))


def bad_part(state: CurveState) -> Finding | None:
    """A part of the loss NaN while the others stay finite, the loss not climbing before it:
    the NaN enters through that part's inputs (its targets), not through the weights."""
    if state.lone_bad_part is None:
        return None
    name, record = state.lone_bad_part
    before = [p for p in state.main("loss").points() if p.line < record.line]
    if _grew_before(before) or _climb(before):
        return None
    return finding(checks.LOSS_PART_NOT_FINITE, 0.6, [record], params={"loss_part": name},
                   supersedes=("lr_divergence",))


def exploded_part(state: CurveState) -> Finding | None:
    """A cross-entropy part of the loss at 1e4 or more (loss_cls: 2.3e9): only logits blown
    up by steps too large get there, though the log may show no climb before it."""
    if state.exploded_part is None:
        return None
    return finding(checks.LOSS_SPIKES, 0.6, [state.exploded_part[1]])


#: A first loss record at a step past this may follow a divergence the log did not show.
EARLY_STEPS = 100


def _from_start(state: CurveState) -> bool:
    """The loss curve shows the run's first steps: its first record is at an early step (or
    has none) of a run not resumed. A snippet from step 1321 of a noisy per-batch loss did
    not begin where the run began: no "worse than it began" can be told from it."""
    if (state.main("loss").first_epoch or 0) > 1:
        return False
    return state.first_loss is None or state.first_loss[1] is None or (
        state.first_loss[1] <= EARLY_STEPS)


def nan_at_start(state: CurveState) -> Finding | None:
    """The first training loss already NaN: logged at step 0, no step was taken yet; logged
    within the first steps (or with no step) in a run without mixed precision, a learning
    rate had little time to blow the weights up. Only where the loss curve the checks read
    (an appended file's last run) holds a NaN: an earlier launch's is history."""
    if state.main("loss").first_bad is None:
        return None
    first = state.loss_at_step_0
    if first is not None and not math.isfinite(first.value):
        return finding(checks.LOSS_NAN_AT_START, 0.6, [first], supersedes=("lr_divergence",))
    series = state.main("loss")
    # one NaN loss mentioned (a sentence, a monitor's alert) is no run's log, unless the log
    # puts it in the run's first epoch (nnU-Net's `Epoch 0` then `train_loss nan`)
    if state.first_loss is None or state.mixed_precision or (
            series.count < 3 and series.first_epoch != 0):
        return None
    point, step = state.first_loss
    if math.isfinite(point.value) or (step is not None and step > EARLY_STEPS):
        return None
    return finding(checks.LOSS_NAN_FIRST_RECORD, 0.5, [point], supersedes=("lr_divergence",))


def transient_nan(state: CurveState) -> Finding | None:
    """The training loss NaN/Inf at some steps, then finite again at its level before: the
    NaN came with those batches (weights blown up stay NaN). Under mixed precision a batch's
    overflow does the same and the scaler skips the step, so only runs without it count."""
    series = state.main("loss")
    bad = series.first_bad
    if bad is None or series.stayed_bad or series.finite_after < 2 or state.mixed_precision:
        return None
    points = series.points()
    before = [p.value for p in points if p.line < bad.line]
    after = [p for p in points if p.line > bad.line]
    if len(after) < 2 or (before and median([p.value for p in after]) > CLIMB * median(before)):
        return None
    return finding(checks.LOSS_NAN_TRANSIENT, 0.55, [bad, after[0]],
                   supersedes=("lr_divergence",))


def _grew_before(before: list[Point]) -> bool:
    if len(before) < 4:
        return False
    values = [p.value for p in before]
    return values[-1] > 3 * median(values[: len(values) // 2])


def _climb(points: list[Point], factor: float = CLIMB, *, from_start: bool = False
           ) -> list[Point] | None:
    """(best, last) when the curve climbed back to `factor` times its best level and stays
    there, still near the peak it climbed to and at least half its starting level (not a
    tiny loss wobbling); or, for a curve `from_start` of the run, when it never fell and ends
    well above where it began. None for a healthy curve (a spike that recovers, a new model
    starting from scratch)."""
    if len(points) < 4:
        return None
    values = [p.value for p in points]
    if min(values) < 0:  # not a loss >= 0 (an RL objective, a log-ratio): no ratio to judge
        return None
    found = levels(values)
    spans = windows(len(values))
    best_at = min(range(len(found)), key=found.__getitem__)
    best, first, last = max(found[best_at], 1e-12), found[0], found[-1]
    if best_at < len(found) - 1:
        peak = max(found[best_at + 1:])
        stays = all(level >= 2 * best for level in found[-2:])
        if (last >= factor * best and last >= 0.5 * first and stays and last >= 0.7 * peak
                and above_the_noise(values, best, last)):
            return [_at(points, spans[best_at]), points[-1]]
    if from_start and factor == CLIMB and len(values) >= 10:
        # It got worse than it began, for a stretch of the run: it never learned, and the
        # steps made it worse (even where a later lr decay brought it back down).
        above = [level >= WORSE * max(first, 1e-12) for level in found]
        stretch = max((len(run) for run in "".join("x" if a else " " for a in above).split()),
                      default=0)
        if stretch >= 3 and above_the_noise(values, first, max(found)):
            peak = max(range(len(found)), key=found.__getitem__)
            return [points[0], _at(points, spans[peak])]
    return None


def _spikes(points: list[Point]) -> list[Point]:
    """Of a short curve (a snippet pasted into a bug report: a level of its own cannot be
    told), the points at least SPIKE times the median of the points before them."""
    if len(points) >= FLAT_POINTS or any(p.value < 0 for p in points):
        return []  # a whole run: a spike that recovers is noise, a climb that stays is not
    spikes: list[Point] = []
    seen: list[float] = []
    for point in points:
        if len(seen) >= 3 and point.value > SPIKE * max(median(seen), 1e-8):
            spikes.append(point)
        seen.append(point.value)
    return spikes


def _at(points: list[Point], span: tuple[int, int]) -> Point:
    """The point of a window closest to its median."""
    chosen = points[span[0]:span[1]]
    middle = median([p.value for p in chosen])
    return min(chosen, key=lambda p: abs(p.value - middle))
