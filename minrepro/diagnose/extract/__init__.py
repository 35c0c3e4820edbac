"""Extractors: turn decoded log lines into events (tracebacks, OOM reports, metrics, ...).

Streaming by design: the caller owns the loop and feeds one `Line` at a time; every extractor
keeps bounded state and flushes what is still open on `close()`.

Each extractor class declares its words once, and everything else is derived from them:

    TRIGGERS  literals (case-sensitive), one of which every line it acts on contains: its own
              `feed` tests them first, and `ExtractorSet` skips a line that holds none of any
              extractor's (unless one is `idle` == False: a traceback in progress)
    SELECT    lower-case words of a failure, whose lines (with context) the big-log selector
              in scan.py keeps wherever they are in a multi-GB log
    WHOLE_WORDS  like SELECT, matched as whole words only ("nan" but not "finance"), in the
                 cases listed
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from minrepro.diagnose.extract.clsreport import ClassificationReportExtractor
from minrepro.diagnose.extract.confusion import ConfusionExtractor
from minrepro.diagnose.extract.cuda import CudaAssertExtractor, OomExtractor
from minrepro.diagnose.extract.cxxabort import CxxAbortExtractor
from minrepro.diagnose.extract.env import EnvExtractor
from minrepro.diagnose.extract.events import (
    LossScaleExtractor,
    NcclExtractor,
    RunEndedExtractor,
    WorkerKilledExtractor,
)
from minrepro.diagnose.extract.kills import KillExtractor
from minrepro.diagnose.extract.metrics import MetricExtractor
from minrepro.diagnose.extract.packages import PackageExtractor
from minrepro.diagnose.extract.traceback import TracebackExtractor
from minrepro.diagnose.extract.usage import UsageExtractor
from minrepro.diagnose.literals import LiteralSet
from minrepro.model import Event, Line

__all__ = [
    "ClassificationReportExtractor",
    "ConfusionExtractor",
    "CudaAssertExtractor",
    "CxxAbortExtractor",
    "EnvExtractor",
    "KillExtractor",
    "Extractor",
    "ExtractorSet",
    "LossScaleExtractor",
    "MetricExtractor",
    "NcclExtractor",
    "OomExtractor",
    "PackageExtractor",
    "RunEndedExtractor",
    "TracebackExtractor",
    "UsageExtractor",
    "WorkerKilledExtractor",
    "default_extractors",
    "extract_all",
    "selection_words",
]

EXTRACTOR_CLASSES = (TracebackExtractor, CudaAssertExtractor, OomExtractor, MetricExtractor,
                     LossScaleExtractor, NcclExtractor, WorkerKilledExtractor, EnvExtractor,
                     RunEndedExtractor, KillExtractor, UsageExtractor, PackageExtractor,
                     ConfusionExtractor, ClassificationReportExtractor, CxxAbortExtractor)


_ROUTES = 1024  # sets of trigger words whose extractors are kept
Feed = Callable[[Line], Sequence[Event]]


class Extractor(Protocol):
    """Reads lines one at a time; returns the events each line completes.

    Class attributes TRIGGERS, SELECT (and WHOLE_WORDS) as in the module docstring; an
    extractor that holds state across lines also has an `idle` property (True when a line
    without TRIGGERS cannot matter to it).
    """

    @property
    def TRIGGERS(self) -> tuple[str, ...]:  # noqa: N802 - a class constant in the classes
        """Literals one of which every line the extractor acts on contains."""
        ...

    def feed(self, line: Line) -> Sequence[Event]:
        """Events completed by this line (usually none)."""
        ...

    def close(self) -> Sequence[Event]:
        """Events still open at the end of the input (an unterminated traceback, ...)."""
        ...


def default_extractors() -> list[Extractor]:
    """A fresh set of every extractor, in a fixed order."""
    return [cls() for cls in EXTRACTOR_CLASSES]


def selection_words() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(SELECT words, WHOLE_WORDS) of every extractor, for the big-log selector."""
    select = tuple(w for cls in EXTRACTOR_CLASSES for w in getattr(cls, "SELECT", ()))
    whole = tuple(w for cls in EXTRACTOR_CLASSES for w in getattr(cls, "WHOLE_WORDS", ()))
    return select, whole


class ExtractorSet:
    """Every extractor behind one test: a line holding none of their TRIGGERS is skipped
    unless a stateful one is busy; else only the extractors whose TRIGGERS the line holds
    are fed (one literal scan finds which; the others would return nothing), all of them
    while a stateful one is busy."""

    def __init__(self, extractors: list[Extractor] | None = None) -> None:
        self.extractors = default_extractors() if extractors is None else extractors
        self._feeds: list[Feed] = [extractor.feed for extractor in self.extractors]
        self._stateful = [e for e in self.extractors if hasattr(e, "idle")]
        self._triggers = LiteralSet((w for e in self.extractors for w in e.TRIGGERS),
                                    fold_case=False)
        self._by_word: dict[str, list[int]] = {}
        for index, extractor in enumerate(self.extractors):
            for word in extractor.TRIGGERS:
                self._by_word.setdefault(word, []).append(index)
        self._routes: dict[tuple[str, ...], list[Feed]] = {}

    def feed(self, line: Line) -> list[Event]:
        feeds: list[Feed] | None
        if all(e.idle for e in self._stateful):
            words = tuple(self._triggers.present(line.text))
            if not words:
                return []
            feeds = self._routes.get(words)
            if feeds is None:
                feeds = self._route(words)
            if "\\n" in line.text:  # an escaped traceback may hold none of its extractor's words
                feeds = self._feeds
        else:
            feeds = self._feeds
        events: list[Event] = []
        for feed in feeds:
            found = feed(line)
            if found:
                events.extend(found)
        return events

    def _route(self, words: tuple[str, ...]) -> list[Feed]:
        chosen = sorted({index for word in words for index in self._by_word[word]})
        feeds = [self._feeds[index] for index in chosen]
        if len(self._routes) >= _ROUTES:
            self._routes.clear()
        self._routes[words] = feeds
        return feeds

    def close(self) -> list[Event]:
        return [event for extractor in self.extractors for event in extractor.close()]


def extract_all(lines: Iterable[Line], extractors: list[Extractor] | None = None
                ) -> Iterator[Event]:
    """Feed every line to every extractor; yield events as they complete, then the flush."""
    active = ExtractorSet(extractors)
    for line in lines:
        yield from active.feed(line)
    yield from active.close()
