"""Parsing of the numbers logs print: sizes ("2.51 GiB"), floats ("nan", "1e-4"), durations."""

from __future__ import annotations

import math
import re

from minrepro.patterns import lazy

#: Bytes per unit. torch prints binary units (KiB/MiB/GiB); bare K/M/G (TensorFlow, ROCm)
#: are binary too; KB/MB/GB are taken as SI because tools that print them mean SI.
_SIZE_UNITS: dict[str, int] = {
    "b": 1, "byte": 1, "bytes": 1,
    "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
    "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}

#: A size as torch writes it: number, optional space, unit.
SIZE = r"\d+(?:\.\d+)?\s*(?:[KMGT]i?B|[KMGT]B?|bytes?|B)\b"
_SIZE_RE = lazy(r"(\d+(?:\.\d+)?)\s*([KMGT]i?B|[KMGT]B?|bytes?|B)\b", re.IGNORECASE)

#: A float as logs print it, including nan/inf spellings.
FLOAT = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|(?i:nan|inf(?:inity)?))"

_DURATION_RE = lazy(r"(?:(\d+) days?, )?(\d+):(\d\d):(\d\d)(?:\.(\d+))?")


def parse_size(text: str) -> int | None:
    """'2.51 GiB' -> 2695091978; None when `text` holds no size."""
    match = _SIZE_RE.search(text)
    if match is None:
        return None
    number, unit = match.groups()
    factor = _SIZE_UNITS.get(unit.lower())
    value = float(number) * factor if factor is not None else math.inf
    return round(value) if math.isfinite(value) else None  # 400 digits: no size


_MAX_INT_DIGITS = 18  # a step, line number, rank or timeout has fewer; a longer one is noise


def parse_int(text: str | None) -> int | None:
    """A count from a log ('12', '-3', '1.2e3', '12.0') as an int; None for what is not one:
    inf/nan (an HF table's Step column), 400-digit runs (int() refuses past 4,300 digits and
    float() overflows), empty text."""
    if not text:
        return None
    digits = text.strip().lstrip("+-")
    if digits.isdigit():
        return int(text) if len(digits) <= _MAX_INT_DIGITS else None
    value = parse_float(text) if len(text) <= 64 else None
    if value is None or not is_finite(value) or abs(value) >= 10 ** _MAX_INT_DIGITS:
        return None
    return int(value)


def parse_float(text: str) -> float | None:
    """'1e-4' -> 0.0001, 'nan' -> nan, '-inf' -> -inf; None when not a number."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def is_finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def parse_duration_ms(text: str) -> int | None:
    """A Python timedelta as printed ('0:30:00', '1 day, 2:00:00') -> milliseconds."""
    match = _DURATION_RE.search(text)
    if match is None:
        return None
    days, hours, minutes, seconds, fraction = match.groups()
    total = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + int(seconds)
    millis = int((fraction or "0")[:3].ljust(3, "0"))
    return total * 1000 + millis
