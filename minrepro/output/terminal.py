"""Text for a person at a terminal: colour and wrapping at word boundaries (rich), or the
plain text unchanged for pipes, files, `NO_COLOR` and `TERM=dumb`.

The text is the formatter's (output/text.py); this module only styles it. Every line goes to
rich as a `Text` object, never as markup: a log line holding `[bold]` or `[link=...]` is
printed as written, never interpreted.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

#: line start -> style; the first that matches wins
_STYLES: tuple[tuple[str, str], ...] = (
    ("failed first:", "bold yellow"),
    ("rank ", "bold yellow"),
    ("minrepro: error:", "bold red"),
    ("minrepro: warning:", "yellow"),
    ("minrepro:", "dim"),
    ("evidence:", "bold"),
    ("values from the log:", "bold"),
    ("fix:", "bold green"),
    ("alternatives:", "bold"),
    ("weak candidates:", "bold"),
)


def styled(stream: IO[str]) -> bool:
    """Colour and wrapping only for a terminal that wants them."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def emit(text: str, *, err: bool = False, force: bool | None = None,
         width: int | None = None) -> None:
    """Print `text` (lines ending in '\\n') to stdout or stderr; styled where `styled` says
    (or `force`), each line wrapped at words to the terminal's width under its indent."""
    stream = sys.stderr if err else sys.stdout
    if not (styled(stream) if force is None else force):
        stream.write(text)
        stream.flush()
        return
    from rich.console import Console  # ~0.1 s: imported only for a terminal

    console = Console(file=stream, highlight=False, markup=False, emoji=False,
                      force_terminal=True, width=width, soft_wrap=False)
    for line in text.splitlines():
        console.print(_styled_line(line))


def _styled_line(line: str) -> Any:
    from rich.padding import Padding
    from rich.text import Text

    body = line.lstrip(" ")
    indent = len(line) - len(body)
    style = next((s for start, s in _STYLES if body.startswith(start)), "")
    if not style and not indent and "(confidence " in body:
        style = "bold red"  # "category / cause  (confidence 0.97, rule ...)"
    return Padding(Text(body, style=style, overflow="fold"), (0, 0, 0, indent), expand=False)
