"""Extractors: turn decoded log lines into events (tracebacks, OOM reports, metrics, ...).

Streaming by design: the caller owns the loop and feeds one `Line` at a time; every extractor
keeps bounded state and flushes what is still open on `close()`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from minrepro.diagnose.extract.cuda import CudaAssertExtractor, OomExtractor
from minrepro.diagnose.extract.env import EnvExtractor
from minrepro.diagnose.extract.events import LossScaleExtractor, NcclExtractor, WorkerKilledExtractor
from minrepro.diagnose.extract.metrics import MetricExtractor
from minrepro.diagnose.extract.prefilter import trigger_search
from minrepro.diagnose.extract.traceback import TracebackExtractor
from minrepro.model import Event, Line

__all__ = [
    "CudaAssertExtractor",
    "EnvExtractor",
    "Extractor",
    "LossScaleExtractor",
    "MetricExtractor",
    "NcclExtractor",
    "OomExtractor",
    "TracebackExtractor",
    "WorkerKilledExtractor",
    "default_extractors",
    "extract_all",
]


class Extractor(Protocol):
    """Reads lines one at a time; returns the events each line completes.

    Optional, used by `extract_all` to skip ordinary lines fast: a class attribute
    `TRIGGERS: tuple[str, ...]` and, for extractors that hold state across lines, an `idle`
    property (True when a line without TRIGGERS cannot matter to it).
    """

    def feed(self, line: Line) -> Sequence[Event]:
        """Events completed by this line (usually none)."""
        ...

    def close(self) -> Sequence[Event]:
        """Events still open at the end of the input (an unterminated traceback, ...)."""
        ...


def default_extractors() -> list[Extractor]:
    """A fresh set of every extractor, in a fixed order."""
    return [
        TracebackExtractor(),
        CudaAssertExtractor(),
        OomExtractor(),
        MetricExtractor(),
        LossScaleExtractor(),
        NcclExtractor(),
        WorkerKilledExtractor(),
        EnvExtractor(),
    ]


def extract_all(lines: Iterable[Line], extractors: list[Extractor] | None = None
                ) -> Iterator[Event]:
    """Feed every line to every extractor; yield events as they complete, then the flush.

    Fast path: when every extractor declares `TRIGGERS` (literals, one of which each line it
    acts on contains) a line holding none of them is skipped with one regex search, unless an
    extractor with an `idle` property is busy (a traceback in progress needs every line).
    """
    active = default_extractors() if extractors is None else extractors
    feeds = [extractor.feed for extractor in active]
    interesting = _prefilter(active)
    stateful = [extractor for extractor in active if hasattr(extractor, "idle")]
    for line in lines:
        if (interesting is not None and interesting(line.text) is None
                and all(extractor.idle for extractor in stateful)):
            continue
        for feed in feeds:
            events = feed(line)
            if events:
                yield from events
    for extractor in active:
        yield from extractor.close()


def _prefilter(extractors: list[Extractor]) -> Callable[[str], object] | None:
    if not all(hasattr(extractor, "TRIGGERS") for extractor in extractors):
        return None
    return trigger_search(word for extractor in extractors for word in extractor.TRIGGERS)
