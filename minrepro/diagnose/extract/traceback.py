"""Python tracebacks, reassembled per rank, from real (messy) logs -> Traceback events.

Handles: the standard format (3.11+ caret lines skipped), VS Code's debugger (`Exception has
occurred: X`, the message, frames innermost first), tracebacks without their header
(pasted from the middle), frames without indentation or run together on one line, Jupyter
(`RuntimeError     Traceback (most recent call last)` + `----> 1` frames), multi-line
messages (CUDA hints, `AssertionError:` + message below, ChildFailedError tables), chained
exceptions, several ranks interleaved (one traceback in progress per rank), tracebacks
escaped inside one line (`...last):\\n  File \\"x.py\\"...`), and a bare `SomeError: msg` line
with no traceback at all (emitted with no frames).

A traceback whose exception line never came (truncated paste, EOF) is emitted with
`exc_type == ""` when it has frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from minrepro.diagnose.extract import pylines
from minrepro.diagnose.extract.tbpartial import Partial, add_frames
from minrepro.diagnose.literals import any_of
from minrepro.model import Line, Traceback
from minrepro.patterns import lazy

MAX_RANKS = 64
#: Lines a frame may span (3.13 prints multi-line expressions) and junk a Jupyter block holds.
_MAX_CODE_LINES = 12
_MAX_JUPYTER_NOISE = 60
_MIN_WIDTH = 40  # a console narrower than this is no console a log was copied from


# VS Code's debugger, pasted into many reports: `Exception has occurred: RuntimeError`, the
# message, then the frames innermost first
_VSCODE = lazy(r"Exception has occurred: ([A-Za-z_][\w.]*)$")
#: A line holding none of these starts no traceback (a dynamo class may end in Failed,
#: Missing or Unsupported, or be any class of an exceptions module; Spyder's frames are
#: `File ~/x.py:7 in f`)
TRIGGERS = ("Error", "Exception", "Traceback", '", line ', "Interrupt", "Exit", "Failure",
            "StopIteration", "Failed", "Missing", "Unsupported", ".py:", ".exc.", ".errors.",
            ".exceptions.")
_may_start = any_of(TRIGGERS)


class TracebackExtractor:
    """Reassembles Python tracebacks; see the module docstring for the formats handled."""

    TRIGGERS = TRIGGERS  # while idle, a line holding none of these is ignored
    #: Python warnings ("file:line: UserWarning: ...") are kept for the rules that read them.
    SELECT = ("traceback", "error", "exception", "warning:")

    def __init__(self) -> None:
        self._partial: dict[int | None, Partial] = {}
        # A finished traceback waits for the next non-blank line of its rank, which may say
        # "The above exception was the direct cause..." and so set its `chained`.
        self._pending: dict[int | None, Traceback] = {}
        # Hydra's `Error in call to target 'X':` seen on a rank: (X, its line), for the
        # exception's repr on the next line
        self._target: dict[int | None, tuple[str, int]] = {}

    @property
    def idle(self) -> bool:
        """True when no traceback is in progress: only TRIGGERS lines matter then."""
        return not self._partial and not self._pending

    def feed(self, line: Line) -> Sequence[Traceback]:
        text = line.text
        if "\\n" in text and _has_escaped_traceback(text):
            return self._feed_escaped(text, line)
        rank = line.rank
        if rank not in self._partial and rank not in self._pending:
            if not _may_start(text):
                return ()
            events: list[Traceback] = []
            self._evict_if_full(rank, events)
            self._start(text, line, events)
            return events
        events = []
        self._step(text, line, events)
        return events

    def close(self) -> Sequence[Traceback]:
        events: list[Traceback] = []
        for rank in list(self._pending) + list(self._partial):
            self._flush_rank(rank, events)
        events.sort(key=lambda event: event.line)
        return events

    # --- states ---------------------------------------------------------------------------

    def _step(self, text: str, line: Line, events: list[Traceback]) -> None:
        rank = line.rank
        pending = self._pending.get(rank)
        if pending is not None:
            if not text.strip():
                return
            del self._pending[rank]
            kind = pylines.chain_kind(text)
            events.append(replace(pending, chained=kind) if kind else pending)
            if kind is None and _may_start(text):
                self._start(text, line, events)
            return
        partial = self._partial.get(rank)
        if partial is None:
            if _may_start(text):
                self._start(text, line, events)
            return
        partial.last_line = line.line
        if partial.exc_type is None:
            self._in_frames(partial, text, line, events)
        else:
            self._in_message(partial, text, line, events)

    def _start(self, text: str, line: Line, events: list[Traceback]) -> None:
        number = line.line
        if pylines.HEADER in text:
            partial = Partial(first_line=number, last_line=number)
            partial.header_type = pylines.jupyter_header(text) or ""
            self._partial[line.rank] = partial
            add_frames(partial, pylines.frames_in(text.split(pylines.HEADER, 1)[1]), number,
                        flattened=True)
            return
        frames = pylines.frames_in(text) if pylines.may_hold_frame(text) else []
        if frames:
            partial = Partial(first_line=number, last_line=number)
            add_frames(partial, frames, number)
            self._partial[line.rank] = partial
            return
        target = pylines.instantiate_target(text)
        if target is not None:
            self._target[line.rank] = (target, number)
            return
        called = self._target.pop(line.rank, None)
        if called is not None and called[1] == number - 1 and (
                found := pylines.exception_repr(text)) is not None:
            # Hydra's report: the exception, and the target whose call raised it
            partial = Partial(first_line=called[1], last_line=number)
            partial.start_message(found[0], found[1], number)
            partial.add_message_line(f"Error in call to target '{called[0]}'")
            self._partial[line.rank] = partial
            return
        vscode = _VSCODE.match(text.strip())
        found = (vscode[1], "") if vscode else pylines.exception_anywhere(text)
        if found is not None:
            partial = Partial(first_line=number, last_line=number, vscode=bool(vscode))
            partial.start_message(found[0], found[1], number)
            self._partial[line.rank] = partial

    def _in_frames(self, partial: Partial, text: str, line: Line,
                   events: list[Traceback]) -> None:
        whole = _unwrapped(partial, text)
        if whole is None:
            return
        text = whole
        stripped = text.strip()
        wrapped, partial.wrapped = partial.wrapped, stripped.endswith("$")
        if wrapped and partial.spare_lines < _MAX_CODE_LINES and '", line ' not in text:
            partial.spare_lines += 1  # the rest of a line `less -S` or nano cut at its `$`
        elif pylines.HEADER in text or pylines.chain_kind(text):
            found = pylines.exception_at_start(text)
            if found is not None and pylines.HEADER in found[1] and partial.frames:
                # torch < 1.1 re-raised a worker's exception with its traceback appended:
                # `Exception: KeyError:Traceback (most recent call last):`
                partial.start_message(found[0], found[1], line.line)
                self._finish(line.rank)
            else:
                self._abandon(line, events)
            self._step(text, line, events)
        elif pylines.may_hold_frame(text) and (frames := pylines.frames_in(text)):
            add_frames(partial, frames, line.line)
        elif (found := pylines.exception_at_start(text)) is not None and (
                ":" in text or partial.frames):
            partial.start_message(found[0], found[1], line.line)
        elif partial.jupyter:
            self._in_jupyter(partial, text, stripped, line, events)
        elif pylines.is_rich_box(stripped):  # a box line: a frame, the line it ran, context
            if (frame := pylines.rich_frame(text)) is not None:
                partial.add_frame(frame)
            elif (arrow := pylines.rich_arrow(text)) is not None:
                partial.set_code(*arrow)
        elif not stripped or pylines.is_caret_line(stripped) or pylines.is_elision(stripped):
            return
        elif partial.expect_code:
            partial.set_code(None, stripped)
        elif text[:1].isspace() and partial.spare_lines < _MAX_CODE_LINES:
            partial.spare_lines += 1  # a multi-line expression (3.13) or a wrapped code line
        elif (found := pylines.exception_anywhere(text)) is not None:
            partial.start_message(found[0], found[1], line.line)
        elif partial.frames and (found := pylines.raised_at_start(text)) is not None:
            # (exception_at_start was tried above: with frames, its find is taken there)
            partial.start_message(found[0], found[1], line.line)
        else:
            self._abandon(line, events)
            self._step(text, line, events)

    def _in_jupyter(self, partial: Partial, text: str, stripped: str, line: Line,
                    events: list[Traceback]) -> None:
        arrow = pylines.jupyter_arrow(text)
        if arrow is not None:
            partial.set_code(*arrow)
        elif not stripped or stripped.startswith("---") or pylines.is_jupyter_context(text):
            return
        elif (frame := pylines.jupyter_frame(text)) is not None:
            partial.add_frame(frame)
        else:
            partial.spare_lines += 1
            if partial.spare_lines > _MAX_JUPYTER_NOISE:
                self._abandon(line, events)

    def _in_message(self, partial: Partial, text: str, line: Line,
                    events: list[Traceback]) -> None:
        if partial.vscode and self._in_vscode_frames(partial, text):
            return
        if not text.strip():
            self._finish(line.rank)
            return
        if pylines.HEADER in text and not partial.frames and not "".join(partial.message):
            # `speechbrain.core - Exception:` then the traceback: a log record's header for
            # the exception printed below it, not an exception of its own
            del self._partial[line.rank]
            self._step(text, line, events)
            return
        if partial.message and partial.message[-1].rstrip().endswith(" raised:"):
            # torch._dynamo's `BackendCompilerFailed: backend='inductor' raised:` then the
            # inner `AssertionError: ...`: one exception, its message on the next line
            partial.add_message_line(text)
            return
        if (pylines.HEADER in text or pylines.chain_kind(text) or '", line ' in text
                or pylines.ends_message(text) or pylines.exception_at_start(text)
                or not partial.add_message_line(text)):
            self._finish(line.rank)
            self._step(text, line, events)

    @staticmethod
    def _in_vscode_frames(partial: Partial, text: str) -> bool:
        """VS Code's frames, after its message: True when the line was one (or its code)."""
        stripped = text.strip()
        if '", line ' in text and (frames := pylines.frames_in(text)):
            for frame in frames:
                partial.add_frame(frame)
            return True
        if partial.frames and partial.expect_code and stripped:
            partial.set_code(None, stripped)
            return True
        return False

    # --- transitions ----------------------------------------------------------------------

    def _finish(self, rank: int | None) -> None:
        """The exception message is complete: wait for a possible chain separator."""
        event = self._partial.pop(rank).to_event(rank)
        if event is not None:
            self._pending[rank] = event

    def _abandon(self, line: Line, events: list[Traceback]) -> None:
        """The traceback broke off before its exception line: keep what it showed."""
        event = self._partial.pop(line.rank).to_event(line.rank)
        if event is not None:
            events.append(event)

    def _evict_if_full(self, rank: int | None, events: list[Traceback]) -> None:
        if len(self._partial) + len(self._pending) < MAX_RANKS:
            return
        oldest = next(iter(self._pending or self._partial))
        self._flush_rank(oldest, events)

    def _flush_rank(self, rank: int | None, events: list[Traceback]) -> None:
        """Emit whatever this rank holds, as it stands."""
        if rank in self._pending:
            events.append(self._pending.pop(rank))
        if rank in self._partial:
            event = self._partial.pop(rank).to_event(rank)
            if event is not None:
                events.append(event)

    def _feed_escaped(self, text: str, line: Line) -> list[Traceback]:
        """A traceback inside one line with literal `\\n` escapes (JSON, repr'd strings)."""
        events: list[Traceback] = []
        rank = line.rank
        self._flush_rank(rank, events)
        for piece in text.replace('\\"', '"').split("\\n"):
            self._step(piece, line, events)
        if rank in self._partial:
            self._finish(rank)
        return events


def _unwrapped(partial: Partial, text: str) -> str | None:
    """The line as printed before a console wrapped it at its width, or None while a wrapped
    line still waits for its rest (or is the tail of a code line, which says nothing)."""
    if partial.cut:
        text, partial.cut = partial.cut + text, ""
    elif (partial.width and partial.previous == partial.width and not text[:1].isspace()
          and '", line ' not in text and pylines.exception_at_start(text) is None):
        partial.previous = len(text)
        return None  # `# see TORCHD` / `YNAMO_VERBOSE=1`: the rest of a code line
    partial.previous = len(text)
    if (len(text) >= _MIN_WIDTH and text.lstrip().startswith('File "') and '", line ' not in text
            and not text.rstrip().endswith(('"', "$"))):
        partial.cut, partial.width = text, len(text)
        return None
    return text


def _has_escaped_traceback(text: str) -> bool:
    return (pylines.HEADER in text or 'File \\"' in text) or (
        _may_start(text) and pylines.exception_anywhere(text) is not None)
