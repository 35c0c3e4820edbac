"""What the whole log says about each finding, before they are combined.

A finding read from thousands of healthy lines must not outvote how the run ended:

* prose evidence on lines a program printed (a Python warning's advice, a logger's tagged
  line) is only weak evidence: it is no user's account of what happened; nor is the
  prose of a memory cause that the run printed before it trained on (its own source) in a
  log where memory never ran out (no failure at all);
* a run that says it finished ("Training completed", train_runtime, "exits successfully")
  needs strong curve evidence for any cause;
* a run the user stopped (it ends in a KeyboardInterrupt) gets no answer from warnings it
  printed on the way: they did not stop it (DESIGN: a user interrupt gets no answer);
* an error the run went on training after (three more records) was caught and survived,
  unless it came again after them;
* a run that ends in an exception (training stopped at it) failed of that: a curve reading
  or a warning from before it is weak next to it, unless the exception is what the curve
  predicts (a NaN abort after a diverging loss, an OOM after growing memory) or a rule of the
  same cause names the exception itself (a driver warning, then an embedding refusing float
  ids: the dtype is the failure, the warning no more than before).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from minrepro.model import Failure, Finding, Severity
from minrepro.patterns import lazy

PROSE_PRINTED = 0.5
#: A line a program printed: a Python warning (file.py:N: UserWarning:), a log record's prefix
#: (a date, a time, a level), or a logger's upper-case tag ("AMP: ", "NCCL WARN").
_PRINTED = lazy(
    r"^\s*(?:\S+\.py:\d+: \w*Warning:|\[?\d{4}[-/]\d\d[-/]\d\d|\[?\d\d:\d\d:\d\d"
    r"|\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|[A-Z]{2,}[A-Z0-9_]*:\s"
    r"|[\w.]+ - (?:INFO|WARNING|ERROR|DEBUG) - |[IWEF]\d{4} )")
SYMPTOM_AFTER_SUCCESS = 0.8
SYMPTOM_BEFORE_CRASH = 0.5
WARNING_BEFORE_INTERRUPT = 0.5
CRASH_THE_RUN_SURVIVED = 0.3  # an error training went on after was caught (a finder's OOM)
#: A warning line: Python's (UserWarning:), a logger's (WARNING), glog's (W0315 x.cc:12] ...)
_WARNING = lazy(r"\w*Warning:|\bWARN(?:ING)?\b|\[W "
                      r"|(?:^|\s|\[)W\d{0,4}\s?[\w./-]*\.(?:cc|cpp|h):\d+\]")
_NAN_CAUSES = frozenset({"lr_divergence", "fp16_overflow", "softmax_overflow", "nan_in_data"})
#: a cause a run that finished shows by its nature (it trains to the end, memorising): its
#: finishing is no evidence against it
_SEEN_IN_FINISHED_RUNS = frozenset({"overfitting"})
_MEMORY_CAUSES = frozenset({"undetached_loss_list", "allocator_fragmentation",
                            "host_oom_dataloader", "host_oom", "cuda_oom"})


@dataclass(frozen=True)
class LogShape:
    """How the log went: its length, where training last reported, where it said it ended."""

    lines: int = 0
    last_metric_line: int = 0
    ended_line: int = 0  # 0: it never said it finished
    went_on_after: int = 0  # training kept reporting (3 records) after this line


def weigh(findings: Iterable[Finding], shape: LogShape, failures: Sequence[Failure]
          ) -> list[Finding]:
    findings = list(findings)
    crash = final_crash(shape, failures)
    # the causes a crash finding on the crash's own lines names: the crash is theirs, and a
    # warning or symptom of another cause printed before it did not stop the run either
    explaining = {f.cause for f in findings
                  if crash is not None and f.severity is Severity.CRASH and f.score > 0
                  and not _only_warnings(f) and _within(f, crash)}
    finished = (shape.ended_line > 0 and (crash is None or shape.ended_line > crash.line)
                and not _ended_by(failures, shape.ended_line))
    interrupted = crash is None and _interrupted(shape, failures)
    weighed = []
    for finding in findings:
        factor = 1.0
        if (finding.severity is Severity.CRASH and not finding.cascade and finding.score > 0
                and 0 < _last_line(finding) < shape.went_on_after):
            factor *= CRASH_THE_RUN_SURVIVED
        if finding.severity is Severity.PROSE and finding.evidence and (
                all(_PRINTED.match(e.text) for e in finding.evidence)
                or (finding.cause in _MEMORY_CAUSES and not failures
                    and _last_line(finding) < shape.went_on_after)):
            factor *= PROSE_PRINTED
        if _only_warnings(finding) and interrupted:
            factor *= WARNING_BEFORE_INTERRUPT
        elif finding.severity in (Severity.SYMPTOM, Severity.WARNING) or _only_warnings(finding):
            if (finished or interrupted) and finding.cause not in _SEEN_IN_FINISHED_RUNS:
                factor *= SYMPTOM_AFTER_SUCCESS
            elif (crash is not None and finding.cause not in explaining
                  and not _predicted(finding, crash)):
                factor *= SYMPTOM_BEFORE_CRASH
        weighed.append(finding if factor == 1.0 else
                       replace(finding, score=round(finding.score * factor, 3)))
    return weighed


#: A summary printed this few lines after an exception is a `finally` block's (detectron2
#: prints "Total training time" on the way out of a crash too), not a run that finished.
ENDED_BY_CRASH_LINES = 5


def _last_line(finding: Finding) -> int:
    """The last line of its evidence: the same error again after the last training records
    (a sweep whose every launch runs out of memory) is how the log ended, not survived."""
    return max((e.line for e in finding.evidence), default=finding.first_line)


def _ended_by(failures: Sequence[Failure], ended_line: int) -> bool:
    return any(f.exc_type and 0 <= ended_line - f.line <= ENDED_BY_CRASH_LINES
               for f in failures)


def final_crash(shape: LogShape, failures: Sequence[Failure]) -> Failure | None:
    """The exception the run stopped at: the last one, when training reported nothing after
    it began (a traceback printed mid-run, training going on, is not how it ended)."""
    real = [f for f in failures if f.exc_type and not f.stopped]
    if not real:
        return None
    last = real[-1]
    return last if last.first_line > shape.last_metric_line else None


def _interrupted(shape: LogShape, failures: Sequence[Failure]) -> bool:
    """The log ends in a KeyboardInterrupt, nothing reported after it: the user stopped it."""
    last = failures[-1] if failures else None
    return (last is not None and last.interrupted
            and last.first_line > shape.last_metric_line)


def _only_warnings(finding: Finding) -> bool:
    """Evidence only from warning lines: the run went on after them."""
    return bool(finding.evidence) and all(_WARNING.search(e.text) for e in finding.evidence)


def _within(finding: Finding, crash: Failure) -> bool:
    return crash.first_line - 5 <= finding.first_line <= crash.line + 5


def _predicted(finding: Finding, crash: Failure) -> bool:
    message = crash.message.lower()
    if finding.cause in _NAN_CAUSES:  # (NaN boxes or scores become indices past a table)
        return any(word in message for word in ("nan", "inf", "non-finite", "not finite",
                                                "device-side assert"))
    return finding.cause in _MEMORY_CAUSES and "out of memory" in message
