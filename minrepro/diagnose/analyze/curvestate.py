"""A run's metric curves in bounded memory, fed (values, position) by whoever reads them:
the log's metric records (CurveAnalyzer) or a live training loop (minrepro.monitor).

Framework-free: nothing here knows about log lines, ranks or events. The checks that read a
`CurveState` are pure functions in curves.py.

A metric name can stand for several series in one log: per-batch lines and epoch summaries,
a train and an eval pass, several runs appended to one file. Each record says which series it
belongs to (its `series` key: the log line's shape) and, where the log prints them, its epoch
and step. A series whose position goes backwards has restarted:

* restarted a few times (an appended or resumed run): the checks read its last run;
* restarted at every pass (an eval pass printed batch by batch, a per-epoch batch counter):
  each pass becomes one point, its last running average where the log prints one, else its
  mean. That is the curve an engineer would draw.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from minrepro.diagnose.analyze.series import Point, Series
from minrepro.diagnose.extract.metricnames import quality_direction
from minrepro.patterns import lazy

#: The metric names (normalised, see extract/metricnames.py) whose history is kept; held-out
#: quality metrics (eval_accuracy, eval_bbox_map, ...) are kept too, see `quality`.
TRACKED = ("loss", "eval_loss", "learning_rate", "grad_norm", "accuracy", "eval_accuracy",
           "eval_matthews_correlation", "data_time", "batch_time", "data_time_avg",
           "batch_time_avg", "memory_mb", "rss_mb", "episode_return")
#: Times that the first batch of an epoch inflates (DataLoader workers start for it).
_STARTUP_TIMES = frozenset({"data_time", "batch_time", "data_time_avg", "batch_time_avg"})
MAX_SERIES_PER_NAME = 8  # distinct line shapes kept for one name; later ones share the last
MAX_QUALITY = 8  # held-out quality metrics kept
#: This many restarts make a series a sequence of passes (one point each), fewer are runs.
PASS_RESTARTS = 4
MAX_RUNS = 4  # runs kept of a series that restarted (the last ones)


@dataclass(slots=True, eq=False)
class _Pass:
    """The pass being read: enough to make one point of it."""

    total: float = 0.0
    count: int = 0
    bad: bool = False
    average: float | None = None  # the last running average the log printed in it
    line: int = 0
    text: str = ""


class _Run:
    """One run of a series: its values as printed (split where the step counter goes back)
    and one point a pass."""

    def __init__(self) -> None:
        self.segments: list[Series] = [Series()]
        self.passes = Series()
        self.restarts = 0  # times the step counter went back within the run
        self._pass = _Pass()

    @property
    def count(self) -> int:
        return sum(segment.count for segment in self.segments)

    def add(self, value: float, line: int, rank: int | None, text: str,
            average: float | None, epoch: float | None) -> None:
        segment = self.segments[-1]
        if segment.count == 0:
            segment.first_epoch = epoch
            if self.passes.count == 0:
                self.passes.first_epoch = epoch
        segment.add(line, value, rank, text)
        current = self._pass
        current.count += 1
        current.bad |= not math.isfinite(value)
        current.total += value if math.isfinite(value) else 0.0
        current.average = average if average is not None else current.average
        current.line, current.text = line, text

    def new_pass(self) -> None:
        self.restarts += 1
        self._flush()
        self.segments.append(Series())
        del self.segments[:-MAX_RUNS]

    def _flush(self) -> None:
        current, self._pass = self._pass, _Pass()
        if not current.count:
            return
        if current.bad:
            value = math.nan
        elif current.average is not None:
            value = current.average
        else:
            value = current.total / current.count
        self.passes.add(current.line, value, None, current.text)

    def resolved(self) -> Series:
        if self.restarts >= PASS_RESTARTS:
            self._flush()  # the pass in progress at the end is a point too
            return self.passes
        return _last_substantial(self.segments)


class Track:
    """One series of one metric: a new run where its epoch goes back (an appended or resumed
    run), a new pass where only its step counter does."""

    def __init__(self, key: str = "") -> None:
        self.key = key  # the series key it was made for
        self.runs: list[_Run] = [_Run()]
        self._epoch: float | None = None
        self._step: int | None = None

    def add(self, value: float, *, line: int, rank: int | None, text: str,
            epoch: float | None, step: int | None, average: float | None) -> None:
        if epoch is not None and self._epoch is not None and epoch < self._epoch:
            self.runs.append(_Run())
            del self.runs[:-MAX_RUNS]
        elif (step is not None and self._step is not None and step < self._step
              and (epoch is None or epoch == self._epoch)):
            self.runs[-1].new_pass()
        self._epoch = epoch if epoch is not None else self._epoch
        self._step = step if step is not None else self._step
        self.runs[-1].add(value, line, rank, text, average, epoch)

    def resolved(self) -> Series:
        """The series the checks read: the last run's passes, or its last stretch as
        printed (the one the log ends in, unless it is only a few points long)."""
        runs = self.runs
        run = runs[-1] if runs[-1].count >= 5 or len(runs) == 1 or \
            runs[-2].count <= runs[-1].count else runs[-2]
        return run.resolved()


def _last_substantial(segments: list[Series]) -> Series:
    last = segments[-1]
    if last.count < 5 and len(segments) > 1 and segments[-2].count > last.count:
        return segments[-2]
    return last


_PART_LINES = 8  # lines after a total within which its parts, one a line, are printed
_Where = tuple[int, "int | None", str]  # a record's line, rank and text


#: A loss part that is a cross-entropy (its name's word): bounded by a few units for any
#: logits that have not blown up.
_CLASSIFICATION_PART = lazy(r"(?:^|_)(?:cls|ce|xent|nll|cross_entropy|classification)(?:_|$)")
EXPLODED = 1e4


def _part_names(values: dict[str, float]) -> list[str]:
    """The names of a summed loss's parts among a record's values (loss_cls, rpn_loss_box)."""
    return [n for n in values if "loss" in n and n != "loss" and not n.endswith("_avg")
            and not n.startswith("eval_") and n != "loss_scale"]


class CurveState:
    """The tracked series of one run, plus what the values say about the loss's make-up."""

    def __init__(self) -> None:
        self.tracks: dict[str, dict[str, Track]] = {}
        # The loss is a sum of printed parts (loss_cls + loss_bbox + ..., detection and
        # segmentation frameworks): its level then says nothing about ln(C).
        self.summed_loss = False
        self.num_classes: int | None = None  # stated by the log (num_classes=10, nc: 80)
        self.binary_loss = False  # a binary cross-entropy: ln 2 is its chance level
        self.ended_in_oom = False  # the run ran out of GPU memory (a leak then needs less)
        self.mixed_precision = False  # fp16/bf16 or a dynamic loss scale: a batch may overflow
        self.last_series: dict[str, str] = {}  # name -> the series its latest record is of
        #: checks read the series the log ends in instead of the longest (see `main`)
        self.at_end = False
        #: the first record where a part of a summed loss is NaN/Inf while most others are
        #: finite: (the first such part's name, the record)
        self.lone_bad_part: tuple[str, Point] | None = None
        #: the first record of a classification loss part far past any level cross-entropy
        #: reaches with finite logits (loss_cls: 2326544033.5): (its name, the record)
        self.exploded_part: tuple[str, Point] | None = None
        #: the run's first training-loss record, when the log gives it step 0 (computed with
        #: the initial weights, before any optimizer step)
        self.loss_at_step_0: Point | None = None
        #: the run's first training-loss record and its step (None where the log gives none)
        self.first_loss: tuple[Point, int | None] | None = None
        self._loss_seen = False
        self._group: tuple[dict[str, float], _Where] | None = None  # a total and its parts

    def add(self, values: Iterable[tuple[str, float]], *, line: int, rank: int | None = None,
            text: str = "", series: str = "", step: int | None = None) -> None:
        """One record: (name, value) pairs at position `line` (a log line, or a step)."""
        values = tuple(values)
        given = dict(values)
        epoch = given.get("epoch")
        for name, value in values:
            if name.endswith("_avg") and name not in TRACKED:
                continue
            if step == 0 and name in _STARTUP_TIMES:
                continue  # the first batch of a pass waits for the workers to start
            track = self._track(name, series)
            if track is None:
                continue
            average = given.get(f"{name}_avg")
            if average is not None and name.startswith("eval_"):
                # An eval line that prints "Loss 1.33 (1.54)" ends its pass: the running
                # average is the pass's loss, the first number its last batch's.
                value = average
            track.add(value, line=line, rank=rank, text=text, epoch=epoch, step=step,
                      average=average)
            self.last_series[name] = track.key
        if "loss_scale" in given:
            self.mixed_precision = True
        parts = _part_names(given)
        if not self.summed_loss and "loss" in given:
            self.summed_loss = len(parts) >= 2
        if "loss" in given and not self._loss_seen:
            self._loss_seen = True
            first = Point(line=line, value=given["loss"], rank=rank, text=text[:300])
            self.first_loss = (first, step)
            if step == 0:
                self.loss_at_step_0 = first
        if self.lone_bad_part is None:
            self._gather_parts(given, parts, (line, rank, text), step)
        if self.exploded_part is None:
            huge = [n for n in parts if _CLASSIFICATION_PART.search(n)
                    and EXPLODED <= given[n] < math.inf]
            if huge:
                self.exploded_part = (huge[0], Point(line=line, value=given[huge[0]], rank=rank,
                                                     text=text[:300]))

    def _gather_parts(self, given: dict[str, float], parts: list[str], where: _Where,
                      step: int | None) -> None:
        """A record's loss parts, and those of a total printed with its parts one a line
        after it (`total loss: nan`, then `rpn_loss_box: nan`, `loss_cls: 0.04` ...)."""
        if len(parts) >= 3:
            self._note_parts(parts, given, where)
        if "loss" in given:
            self._group = (given, where)  # a fresh dict a record: kept, not copied
        elif self._group is not None and step is None and parts and len(given) == len(parts) \
                and where[0] - self._group[1][0] <= _PART_LINES:
            group = {**self._group[0], **given}
            self._group = (group, self._group[1])
            names = _part_names(group)
            if len(names) >= 3:
                self._note_parts(names, group, self._group[1])
        else:
            self._group = None

    def _note_parts(self, parts: list[str], given: dict[str, float], where: _Where) -> None:
        """Some parts non-finite, more of them finite (two at least), and the total (where
        printed) not finite either: the NaN came in through those parts alone."""
        bad = [n for n in parts if not math.isfinite(given[n])]
        finite = len(parts) - len(bad)
        if bad and finite >= 2 and len(bad) < finite and not math.isfinite(
                given.get("loss", math.nan)):
            line, rank, text = where
            self.lone_bad_part = (bad[0], Point(line=line, value=math.nan, rank=rank,
                                                text=text[:300]))

    def _track(self, name: str, series: str) -> Track | None:
        if name not in TRACKED and not _is_quality(name):
            return None
        by_series = self.tracks.get(name)
        if by_series is None:
            if name not in TRACKED and sum(map(_is_quality, self.tracks)) >= MAX_QUALITY:
                return None
            by_series = self.tracks[name] = {}
        track = by_series.get(series)
        if track is None:
            if len(by_series) >= MAX_SERIES_PER_NAME:
                return next(reversed(by_series.values()))
            track = by_series[series] = Track(series)
        return track

    # --- what the checks read -------------------------------------------------------------

    def all(self, name: str) -> list[Series]:
        """Every series of `name`, resolved (passes or last run), longest first."""
        found = [track.resolved() for track in self.tracks.get(name, {}).values()]
        return sorted(found, key=lambda series: -series.count)

    def main(self, name: str) -> Series:
        """The series of `name` the checks read: of the longest ones (within 80 % of the
        longest), the smoothest: an epoch summary beside per-batch lines of the same length.
        An empty one where the log has none."""
        if self.at_end and name in self.last_series:
            return self.tracks[name][self.last_series[name]].resolved()
        found = self.all(name)
        if not found:
            return Series()
        longest = found[0].count
        return min((s for s in found if s.count >= 0.8 * longest), key=_roughness)

    def paired(self, first: str, second: str) -> tuple[Series, Series]:
        """A series of each name from the same line shape where the log prints both on one
        line (`train_loss 0.02 | val_loss 1.9`): comparable by construction. Else the longest
        of each."""
        shared = set(self.tracks.get(first, {})) & set(self.tracks.get(second, {}))
        if self.at_end:
            shared &= {self.last_series.get(second)}
        if shared:
            key = max(shared, key=lambda k: self.tracks[second][k].resolved().count)
            return self.tracks[first][key].resolved(), self.tracks[second][key].resolved()
        return self.main(first), self.main(second)

    def quality(self) -> list[tuple[str, int, Series]]:
        """(name, direction, series) of every series of a held-out quality metric that moves
        (+1: higher is better); a log may print one per batch and one per epoch."""
        return [(name, quality_direction(name), series) for name in self.tracks
                if _is_quality(name) for series in self.all(name)
                if series.count >= 4 and len(set(series.values())) > 1]

    def loss_curve(self, points: int = 40) -> tuple[float, ...]:
        """The training (else evaluation) loss, downsampled to `points` values."""
        values = self.main("loss").values() or self.main("eval_loss").values()
        if len(values) <= points:
            return tuple(round(v, 6) for v in values)
        step = len(values) / points
        return tuple(round(values[int(i * step)], 6) for i in range(points))


def _roughness(series: Series) -> float:
    """How much a series jumps from point to point, relative to its level."""
    values = series.values()
    if len(values) < 3:
        return 0.0
    steps = sorted(abs(b - a) for a, b in zip(values, values[1:], strict=False))
    level = sorted(abs(v) for v in values)[len(values) // 2]
    return steps[len(steps) // 2] / level if level > 0 else 0.0


def _is_quality(name: str) -> bool:
    if not name.startswith("eval_") or name.endswith("_avg") or "loss" in name:
        return False
    return quality_direction(name) != 0
