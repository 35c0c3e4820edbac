"""The diagnose path, one direction: reader -> extractors + rules -> analyzers -> decide.

Streams: every stage keeps bounded state, so memory stays flat on a multi-GB log.
Never imports torch.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterable
from dataclasses import replace

from minrepro.diagnose.analyze import Analyzer, CurveAnalyzer, default_analyzers
from minrepro.diagnose.decide import Context, decide
from minrepro.diagnose.extract import ExtractorSet, selection_words
from minrepro.diagnose.extract.progress import empty_bar, is_bar
from minrepro.diagnose.failures import FailureLog, rank_in_message
from minrepro.diagnose.matcher import RuleMatcher
from minrepro.diagnose.reader import LogReader
from minrepro.diagnose.rules.pack import Rule
from minrepro.diagnose.rules.registry import RuleSet, load_rules
from minrepro.diagnose.scan import LineSelector
from minrepro.diagnose.stamps import timestamp
from minrepro.diagnose.weigh import LogShape, weigh
from minrepro.model import (
    CudaAssert,
    Diagnosis,
    EnvFact,
    Event,
    Failure,
    Line,
    MetricRecord,
    NcclTimeout,
    ProcessKilled,
    Role,
    RunEnded,
    Severity,
    Traceback,
    UsageError,
    WorkerKilled,
)

_KEEP_TRACEBACKS = 6  # the first few (the original failure) and the last (how it ended)
_RECENT_LINES = 256  # lines kept to give multi-line events their own line's text
_WENT_ON = 3  # training records after an error that show the run went on past it
_BAR_BEFORE = 12  # lines before a traceback where the loop's last progress bar is looked for
_RESTARTS = 4  # a series going back more often than this counts epochs, not sessions
_SERIES_MAX = 64  # series whose position is followed (bounded memory)
TASK_FACTS = frozenset({"num_classes", "loss_fn"})  # of the task, for the analyzers, not the env


class _Collector:
    """Routes events to analyzers and keeps what the diagnosis reports besides findings."""

    def __init__(self, analyzers: list[Analyzer]) -> None:
        self.analyzers = analyzers
        self.env: dict[str, str] = {}
        self.failures: list[Failure] = []
        self.last_failure: Failure | None = None
        self.recent: deque[Line] = deque(maxlen=_RECENT_LINES)
        self.failure_log = FailureLog()
        self.last_metric_line = 0  # training went on until here
        self.empty = True  # until a line holds more than white space
        self.metric_lines: deque[int] = deque(maxlen=_WENT_ON)  # the last few records' lines
        # where a series' (epoch, step) went back: a new session appended to the same log
        # (a restart, a resume from a checkpoint), not the run going on past an error
        self._resets: dict[str, list[int]] = {}  # series -> lines where it went back
        self._position: dict[str, tuple[float, int]] = {}  # series -> its last (epoch, step)
        self.ended_line = 0  # where the run last said it finished
        # exception lines of tracebacks right after a progress bar over no item: the loop
        # had no batch to run (an empty data set), and what failed next is that
        self.no_batches: list[int] = []
        self.lines = 0

    def dispatch(self, event: Event, current: Line) -> None:
        line = self._line_of(event, current)
        if isinstance(event, EnvFact) and event.key not in TASK_FACTS:
            self.env.setdefault(event.key, event.value[:120])
        elif isinstance(event, Traceback):
            self._keep_traceback(event)
        elif isinstance(event, (CudaAssert, WorkerKilled, NcclTimeout, ProcessKilled,
                                UsageError)):
            self.failure_log.add_event(event, line.text)
        elif isinstance(event, MetricRecord):
            self.last_metric_line = max(self.last_metric_line, event.line)
            self.metric_lines.append(event.line)
            self._note_position(event)
        elif isinstance(event, RunEnded):
            self.ended_line = event.line
        for analyzer in self.analyzers:
            analyzer.feed(event, line)

    def _note_position(self, record: MetricRecord) -> None:
        epoch = record.get("epoch")
        if record.step is None and epoch is None:
            return
        here = (-1.0 if epoch is None else epoch, -1 if record.step is None else record.step)
        before = self._position.get(record.series)
        if before is not None and here < before:
            resets = self._resets.setdefault(record.series, [])
            if len(resets) <= _RESTARTS:
                resets.append(record.line)
        if before is not None or len(self._position) < _SERIES_MAX:
            self._position[record.series] = here

    def restarts(self) -> tuple[int, ...]:
        """Lines where training started over; a series that goes back every epoch (a batch
        counter, `[10/500]`) counts a new epoch, not a new session."""
        return tuple(line for resets in self._resets.values() if len(resets) <= _RESTARTS
                     for line in resets)

    def _text_of(self, number: int) -> str:
        for line in reversed(self.recent):
            if line.line == number:
                return line.text
        return ""

    def _line_of(self, event: Event, current: Line) -> Line:
        number = getattr(event, "line", current.line)
        if number == current.line:
            return current
        for line in reversed(self.recent):
            if line.line == number:
                return line
        return Line(line=number, text="", rank=getattr(event, "rank", None))

    def _keep_traceback(self, tb: Traceback) -> None:
        if tb.rank is None and (rank := rank_in_message(tb.message)) is not None:
            tb = replace(tb, rank=rank)
        stamp = timestamp(self._text_of(tb.first_line)) or timestamp(self._text_of(tb.line))
        failure = Failure(exc_type=tb.exc_type, message=_first_line(tb.message)[:300],
                          line=tb.line, first_line=tb.first_line, rank=tb.rank,
                          frames=tb.frames, text=format_traceback(tb), timestamp=stamp)
        self.failure_log.add_traceback(tb, failure, self._text_of(tb.first_line - 1),
                                       self._text_of(tb.first_line))
        if len(self.no_batches) < _KEEP_TRACEBACKS and self._after_empty_bar(tb.first_line):
            self.no_batches.append(tb.line)
        if len(self.failures) < _KEEP_TRACEBACKS:
            self.failures.append(failure)
        else:
            self.last_failure = failure

    def _after_empty_bar(self, first_line: int) -> bool:
        """The last progress bar printed in the lines before `first_line` went over no item."""
        for line in reversed(self.recent):
            if line.line < first_line - _BAR_BEFORE:
                break
            if line.line < first_line and is_bar(line.text):
                return empty_bar(line.text)
        return False

    def all_failures(self) -> tuple[Failure, ...]:
        extra = (self.last_failure,) if self.last_failure else ()
        return tuple(self.failures) + extra


_REJOINED_CHARS = 2000


def _rejoined(tb: Traceback) -> Line:
    """The exception line as it was before the message was wrapped over several lines."""
    message = " ".join(part.strip() for part in tb.message.splitlines())
    return Line(line=tb.line, text=f"{tb.exc_type}: {message}"[:_REJOINED_CHARS], rank=tb.rank)


def _first_line(message: str) -> str:
    return message.splitlines()[0] if message else ""


def format_traceback(tb: Traceback) -> str:
    lines = ["Traceback (most recent call last):"] if tb.frames else []
    for frame in tb.frames:
        where = f'  File "{frame.file}"' + (f", line {frame.line}" if frame.line else "")
        lines.append(where + (f", in {frame.function}" if frame.function else ""))
        if frame.code:
            lines.append(f"    {frame.code}")
    lines.append(f"{tb.exc_type}: {tb.message}" if tb.message else tb.exc_type)
    return "\n".join(lines)


def run_stages(lines: Iterable[Line], rules: RuleSet) -> tuple[list, _Collector, RuleMatcher]:
    matcher = RuleMatcher(rules)
    extractors = ExtractorSet()
    collector = _Collector(default_analyzers())
    line = Line(line=0, text="")
    for line in lines:
        if collector.empty and line.text.strip():
            collector.empty = False
        collector.recent.append(line)
        matcher.feed(line)
        for event in extractors.feed(line):
            _route(event, line, collector, matcher)
    for event in extractors.close():
        _route(event, line, collector, matcher)
    collector.lines = line.line
    findings = matcher.findings()
    for analyzer in collector.analyzers:
        findings.extend(analyzer.findings())
    return findings, collector, matcher


def _route(event: Event, line: Line, collector: _Collector, matcher: RuleMatcher) -> None:
    collector.dispatch(event, line)
    if isinstance(event, Traceback) and "\n" in event.message:
        matcher.feed_rejoined(_rejoined(event), event.line + event.message.count("\n"))


def diagnose_lines(lines: Iterable[Line], *, rules: RuleSet | None = None,
                   source: str = "") -> Diagnosis:
    rules = load_rules() if rules is None else rules
    findings, collector, matcher = run_stages(lines, rules)
    curve = next((a for a in collector.analyzers if isinstance(a, CurveAnalyzer)), None)
    notes = [f"rule pattern timed out (switched off for this log): {name}"
             for name in sorted(matcher.timeouts)]
    if matcher.exhausted:
        notes.append("the regex time budget of this log was spent: rule patterns were off"
                     " for the rest of it")
    failures = collector.all_failures()
    went_on = collector.metric_lines[0] if len(collector.metric_lines) == _WENT_ON else 0
    shape = LogShape(lines=collector.lines, last_metric_line=collector.last_metric_line,
                     ended_line=collector.ended_line, went_on_after=went_on)
    first, cascade, genuine = collector.failure_log.resolve(went_on, collector.restarts(),
                                                            collector.ended_line)
    context = Context(source=source, env=collector.env, failures=failures,
                      loss_curve=curve.loss_curve() if curve else (), warnings=tuple(notes),
                      first_failure=first, cascade=cascade, first_is_failure=genuine,
                      empty=collector.empty, last_record_line=collector.last_metric_line,
                      no_batches=tuple(collector.no_batches))
    return decide(weigh(findings, shape, failures), rules, context)


def trigger_words(rules: Iterable[Rule]) -> list[str]:
    """Literals of the signals that can name a cause on their own in a machine log."""
    return [hint for rule in rules for signal in rule.signals
            if signal.role is Role.PRIMARY and signal.severity is not Severity.PROSE
            for hint in signal.hints]


def make_selector(rules: RuleSet) -> LineSelector:
    """The big-log selector: the rules' trigger words and the extractors' failure words."""
    select, whole_words = selection_words()
    return LineSelector(trigger_words(rules) + list(select), whole_words=whole_words)


def diagnose_log(source: str | os.PathLike[str], *, rule_dirs: Iterable[str] = (),
                 reader: LogReader | None = None, rules: RuleSet | None = None) -> Diagnosis:
    """Diagnose the log at `source` (a path, '-' for stdin, or a gzip file).

    A `reader` given without a selector gets one: big logs are read by chunk-level selection.
    `rules` already loaded (from `rule_dirs`) spare a caller of many logs (triage) the load.
    """
    rules = load_rules(rule_dirs) if rules is None else rules
    reader = reader or LogReader(source)
    if reader.selector is None:
        reader.selector = make_selector(rules)
    diagnosis = diagnose_lines(reader, rules=rules, source=reader.name)
    if reader.warnings:  # known only once the whole input was read
        diagnosis = replace(diagnosis, warnings=tuple(reader.warnings) + diagnosis.warnings)
    return diagnosis
