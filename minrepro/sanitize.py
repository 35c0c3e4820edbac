"""The one sanitiser for text that reaches a terminal, a JSON value or a report.

A log is written by a third party; its bytes must never drive the user's terminal (an OSC 52
clipboard write, an OSC 8 hyperlink, a title change, `ESC c` resetting the screen, `ESC ( 0`
switching to line-drawing glyphs), hide text (backspace, carriage tricks) or reorder what is
shown (bidi overrides, as in "Trojan Source"). Two steps, in this order:

1. escape sequences are removed, repeatedly until nothing changes: removing `ESC[0m` from
   `ESC ESC[0m]52;...BEL` would otherwise leave a live OSC 52 behind;
2. every control character left (C0 except tab, DEL, C1 U+0080-U+009F, bidi controls,
   line/paragraph separators, and the surrogates that stand for undecodable bytes of a file
   name) is removed (`log_text`) or made visible as `\\xNN` / `\\uNNNN` (`shown`, for names
   and messages). Step 2 leaves no ESC and no C1 byte, so no sequence
   can survive whatever step 1 missed.

Pure functions; the fast path (a printable line) costs one `str.isprintable` call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from minrepro.patterns import lazy

_SEQUENCE = lazy(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI (7- and 8-bit): colours, cursor, erase
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"  # OSC/DCS..
    r"|\x1b[ -/]+[0-~]"  # nF: ESC ( 0 (charset), ESC # 8
    r"|\x1b[0-~]"  # two-byte: ESC c (reset), ESC 7/8, ESC =, ESC M
)
_MAX_PASSES = 32  # more nesting than this is hostile; step 2 still neutralises what is left
_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_CONTROLS = ("".join(chr(c) for c in range(32) if c != 9) + "\x7f"
             + "".join(chr(c) for c in range(0x80, 0xA0)) + _BIDI + "\u2028\u2029")
_SURROGATES = "\ud800-\udfff"  # undecodable bytes of a file name (os.fsdecode)
_UNSAFE = lazy(f"[{re.escape(_CONTROLS)}{_SURROGATES}]")
_UNSAFE_KEEP_NEWLINE = lazy(f"[{re.escape(_CONTROLS.replace(chr(10), ''))}{_SURROGATES}]")


def strip_escapes(text: str) -> str:
    """`text` without terminal escape sequences, removed until none is left (bounded)."""
    for _ in range(_MAX_PASSES):
        if "\x1b" not in text and not _has_c1_introducer(text):
            return text
        stripped = _SEQUENCE.sub("", text)
        if stripped == text:
            return text
        text = stripped
    return text


def _has_c1_introducer(text: str) -> bool:
    return not text.isascii() and any(c in text for c in "\x90\x98\x9b\x9d\x9e\x9f")


def log_text(text: str) -> str:
    """A log line as minrepro keeps it: no escape sequences, no control characters (a tab
    stays), nothing that reorders text."""
    if text.isprintable():
        return text
    return _UNSAFE.sub("", strip_escapes(text))


def shown(text: str, *, multiline: bool = False) -> str:
    """Text for a terminal or a report: escapes removed, other controls made visible
    (`\\x1b`, `\\u202e`); a newline too unless `multiline`, so a name cannot forge a line."""
    if text.isprintable():
        return text
    unsafe = _UNSAFE_KEEP_NEWLINE if multiline else _UNSAFE
    return unsafe.sub(_visible, strip_escapes(text))


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def shown_tree(value: Any, clean: Callable[[str], str] | None = None) -> Any:
    """A JSON-able value with every string in it (keys too) passed through `clean`
    (default: `shown`, one line)."""
    clean = clean or shown
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {shown_tree(k, clean): shown_tree(v, clean) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [shown_tree(v, clean) for v in value]
    return value
