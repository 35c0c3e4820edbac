"""A Python traceback being read (its frames, then its message) and the frames one line
holds: the state that traceback.py's reader fills line by line."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from minrepro.diagnose.extract import pylines
from minrepro.model import Frame, Traceback
from minrepro.patterns import lazy

MAX_FRAMES = 200
MAX_MESSAGE_LINES = 40
MAX_MESSAGE_CHARS = 4000
_ASSERT = lazy(r"assert\b")
#: An exception name printed twice or more, run together (ranks writing one line at once).
_DOUBLED = lazy(r"((?:[A-Za-z_]\w*\.)*[A-Z]\w*?(?:Error|Exception|Interrupt|Exit|Warning))\1+")


@dataclass(slots=True, eq=False)
class Partial:
    """A traceback being read: frames first, then (once `exc_type` is set) its message."""

    first_line: int
    last_line: int
    frames: list[Frame] = field(default_factory=list)
    header_type: str = ""  # Jupyter's header names the type: `KeyError    Traceback (most ...`
    expect_code: bool = False
    spare_lines: int = 0
    exc_type: str | None = None
    exc_line: int = 0
    message: list[str] = field(default_factory=list)
    message_chars: int = 0
    vscode: bool = False  # VS Code's debugger: type, message, then frames innermost first
    wrapped: bool = False  # the last line ended in a pager's `$`: the next one continues it
    # A console that hard-wraps at its width (PowerShell's redirect, a terminal copy): a
    # `File "...` line cut before its `", line N` gives the width; a line of that width goes
    # on in the next one, which starts at column 0.
    cut: str = ""  # a frame line cut at the width, waiting for its rest
    width: int = 0
    previous: int = 0  # the length of the line before

    @property
    def jupyter(self) -> bool:
        """Read as Jupyter prints it (`----> 1` frames): its header named the type."""
        return bool(self.header_type)

    def add_frame(self, frame: Frame) -> None:
        if len(self.frames) >= MAX_FRAMES:
            del self.frames[MAX_FRAMES // 2]  # keep where it started and where it failed
        self.frames.append(frame)
        self.expect_code = frame.code is None
        self.spare_lines = 0

    def set_code(self, lineno: int | None, code: str) -> None:
        if self.frames:
            last = self.frames[-1]
            self.frames[-1] = replace(last, line=lineno or last.line, code=code or None)
        self.expect_code = False

    def start_message(self, exc_type: str, first: str, line: int) -> None:
        doubled = _DOUBLED.fullmatch(exc_type)  # two processes' lines run together on one:
        exc_type = doubled[1] if doubled else exc_type  # KeyboardInterruptKeyboardInterrupt
        self.exc_type, self.exc_line = exc_type, line
        first = first[:MAX_MESSAGE_CHARS]
        self.message = [first] if first else []
        self.message_chars = len(first)

    def add_message_line(self, text: str) -> bool:
        """Append a continuation line; False when the message is full."""
        if len(self.message) >= MAX_MESSAGE_LINES or self.message_chars >= MAX_MESSAGE_CHARS:
            return False
        text = text.rstrip()[: MAX_MESSAGE_CHARS - self.message_chars]
        self.message.append(text)
        self.message_chars += len(text) + 1
        return True

    def to_event(self, rank: int | None) -> Traceback | None:
        if self.exc_type is None and not self.frames:
            return None
        return Traceback(
            exc_type=self.exc_type or self._implied_type(),
            message="\n".join(self.message).strip("\n"),
            line=self.exc_line or self.last_line,
            first_line=self.first_line,
            rank=rank,
            frames=tuple(reversed(self.frames)) if self.vscode else tuple(self.frames),
        )

    def _implied_type(self) -> str:
        """A traceback cut before its exception line: the type Jupyter's header named, or
        AssertionError where the frame it stopped in is an `assert` statement (Python raises
        nothing else there), else ""."""
        if self.header_type:
            return self.header_type
        code = self.frames[-1].code if self.frames and not self.vscode else None
        return "AssertionError" if code and _ASSERT.match(code) else ""


def add_frames(partial: Partial, frames: list[Frame], line: int, *,
                flattened: bool = False) -> None:
    """Add a line's frames. Where the line held several (or the header too), its newlines
    were lost in the paste (`Traceback (...): File "a.py", line 3, in f  g()  KeyError: 'x'`)
    and the exception may follow the last frame's code on the same line."""
    for frame in frames:
        partial.add_frame(frame)
    code = frames[-1].code if frames and (flattened or len(frames) > 1) else None
    found = pylines.exception_anywhere(code) if code else None
    if code and found is not None:
        partial.set_code(None, code[: code.find(found[0] + ":")].strip())
        partial.start_message(found[0], found[1], line)
