"""A C++ exception that ended the process outside Python -> a Traceback event without frames.

libtorch, NCCL's watchdog thread and compiled extensions (tiny-cuda-nn, DGL) throw where no
Python frame catches it; the C++ runtime prints the type and `what()` and aborts:

    terminate called after throwing an instance of 'c10::Error'
      what():  CUDA error: uncorrectable ECC error encountered
    terminate called after throwing an instance of 'std::runtime_error'
      what():  [Rank 7] Watchdog caught collective operation timeout: WorkNCCL(...) ran for ...
    terminate called after throwing an instance of 'dmlc::Error'
      what():  [09:48:37] /opt/dgl/src/runtime/tensordispatch.cc:23: Check failed: ...

The event's type is the C++ one as printed, its message the `what():` text (on the next lines,
or on the same one where ranks' output ran together). With no `what():` within a few lines
the type alone is the event (a bare `terminate called without an active exception` is none).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from minrepro.model import Failure, Line, Traceback
from minrepro.patterns import lazy

_THROWN = lazy(r"terminate called after throwing an instance of '([\w:<>, ]{1,120})'")
_WHAT = lazy(r"\bwhat\(\):\s*(.*)")
_RANK_TAG = lazy(r"\[(?:PG [^\]]*?)?Rank (\d{1,5})\]")
_WHAT_WITHIN = 3  # lines after the `terminate called` line its `what():` may come
_MAX_MESSAGE = 4000


class CxxAbortExtractor:
    """`terminate called after throwing an instance of 'T'` (+ `what(): msg`) -> Traceback."""

    TRIGGERS = ("terminate called after throwing", "what():")
    SELECT = ("terminate called after throwing",)

    def __init__(self) -> None:
        self._pending: Traceback | None = None  # the type read, its `what():` not yet

    @property
    def idle(self) -> bool:
        return self._pending is None

    def feed(self, line: Line) -> Sequence[Traceback]:
        text = line.text
        events: list[Traceback] = []
        pending = self._pending
        if pending is not None and "what():" in text:
            found = _WHAT.search(text)
            self._pending = None
            message = found[1].strip()[:_MAX_MESSAGE] if found else ""
            tagged = _RANK_TAG.match(message) if pending.rank is None else None
            events.append(replace(pending, message=message,  # ProcessGroupNCCL's "[Rank 7] "
                                  rank=int(tagged[1]) if tagged else pending.rank))
            pending = None
        if "terminate called after throwing" in text:
            thrown = _THROWN.search(text)
            if thrown is not None:
                if pending is not None:
                    events.append(pending)
                pending = self._pending = Traceback(
                    exc_type=thrown[1].strip(), message="", line=line.line,
                    first_line=line.line, rank=line.rank)
                after = text[thrown.end():]
                if "what():" in after:
                    return [*events, *self.feed(Line(line=line.line, text=after,
                                                     rank=line.rank))]
        if pending is not None and line.line - pending.line >= _WHAT_WITHIN:
            self._pending = None
            events.append(pending)
        return events

    def close(self) -> Sequence[Traceback]:
        pending, self._pending = self._pending, None
        return [] if pending is None else [pending]


def is_cxx_abort(failure: Failure) -> bool:
    """A failure this extractor read: a `::`-scoped type (`c10::Error`), no Python frames."""
    return "::" in failure.exc_type and not failure.frames
