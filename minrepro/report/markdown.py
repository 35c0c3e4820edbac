"""Markdown helpers for reports: untrusted text that cannot break out of its block or line."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

MAX_LINE_CHARS = 400  # per excerpt line: a 16 KiB log line would drown the report
SPARK_WIDTH = 60
_BARS = "▁▂▃▄▅▆▇█"
_FLAT_FRACTION = 0.01
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]<>&|~"})
#: What GitHub turns live in prose: bare URLs and www. links, @user and @org/team mentions,
#: #1234 / owner/repo#1234 / GH-1234 references. In prose they go into code spans, inert.
_LIVE = re.compile(
    r"(?i:\b(?:https?|ftp|file|ssh|git)://|\bwww\.)[^\s<>`]*"
    r"|(?<![\w`])@\w[\w./-]*|#\w[\w-]*|(?i:\bgh-\d+)")


def fence(text: str, info: str = "") -> str:
    """A fenced code block that `text` cannot close: the fence outruns every backtick run."""
    ticks = "`" * max(3, _longest_run(text, "`") + 1)
    body = text if text.endswith("\n") else text + "\n"
    return f"{ticks}{info}\n{body}{ticks}"


def package_row(packages: dict[str, str], limit: int = 30) -> list[str]:
    """The "- Packages:" line of a report's environment (empty without packages): name and
    version of each, in the log's order, the first `limit` of them."""
    if not packages:
        return []
    shown = ", ".join(code_span(f"{name} {version}")
                      for name, version in list(packages.items())[:limit])
    more = f" (+{len(packages) - limit} more)" if len(packages) > limit else ""
    return [f"- Packages: {shown}{more}"]


def md_escape(text: str) -> str:
    """One line of untrusted text, safe in Markdown prose: no HTML, no links, no mentions
    (what GitHub would turn live goes into a code span)."""
    text = clean_line(text)
    parts, position = [], 0
    for match in _LIVE.finditer(text):
        parts += [text[position:match.start()].translate(_MD_SPECIAL), code_span(match[0])]
        position = match.end()
    parts.append(text[position:].translate(_MD_SPECIAL))
    return "".join(parts)


def code_span(text: str) -> str:
    """Inline code that the text cannot break out of."""
    text = clean_line(text)
    ticks = "`" * (_longest_run(text, "`") + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for c in text:
        run = run + 1 if c == char else 0
        longest = max(longest, run)
    return longest


def clean_line(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Control, bidi and line-separator characters become spaces; cut at `limit`."""
    cleaned = "".join(" " if c != "\t" and unicodedata.category(c) in _UNSAFE_CATEGORIES
                      else c for c in text[: limit + 1])
    return cleaned if len(cleaned) <= limit else cleaned[: limit - 1] + "…"


def sparkline(values: Sequence[float], width: int = SPARK_WIDTH) -> str:
    """▁▂▃▄▅▆▇█ from min to max, `!` for NaN/Inf; at most `width` characters."""
    points = _downsample(values, width)
    finite = [v for v in points if math.isfinite(v)]
    if not finite:
        return "!" * len(points)
    low, high = min(finite), max(finite)
    span = max(high - low, _FLAT_FRACTION * max(abs(low), abs(high)), 1e-12)
    if high - low < span:  # near-flat: centre it in the middle bar, away from bar edges
        low = (low + high) / 2 - span * (len(_BARS) / 2 - 0.5) / len(_BARS)
    return "".join(_BARS[min(int((v - low) / span * len(_BARS)), len(_BARS) - 1)]
                   if math.isfinite(v) else "!" for v in points)


def _downsample(values: Sequence[float], width: int) -> list[float]:
    """`width` buckets; a bucket holding a NaN/Inf shows it (it is the news), else its mean."""
    if len(values) <= width:
        return list(values)
    buckets = []
    for i in range(width):
        chunk = values[i * len(values) // width:(i + 1) * len(values) // width]
        bad = [v for v in chunk if not math.isfinite(v)]
        buckets.append(bad[0] if bad else sum(chunk) / len(chunk))
    return buckets
