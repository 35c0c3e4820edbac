"""When a log line was written: the date-time it starts with, for ordering the failures of
several ranks (failures.py) and for a fleet's first- and last-seen dates (triage)."""

from __future__ import annotations

from minrepro.patterns import lazy

DATED = 1e9  # Unix times of dated lines are above this, glog's (month, day, time) below
_ISO_TIME = lazy(r"(\d{4})[-/](\d\d)[-/](\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")
_GLOG_TIME = lazy(r"\b[IWEF](\d{1,2})(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})")


def as_epoch(stamp: float | None) -> float | None:
    """The Unix time of a `timestamp()` with a year (the log's clock read as UTC), for
    first/last-seen dates; None for glog's year-less stamps."""
    return stamp if stamp is not None and stamp > DATED else None


def timestamp(text: str) -> float | None:
    """Seconds of the date-time a log line starts with: for an ISO date the Unix time (the
    clock read as UTC), for glog's year-less stamp seconds into the year (ordering only)."""
    found = _ISO_TIME.search(text[:80])
    if found:
        year, month, day, hour, minute, second = (int(g) for g in found.groups()[:6])
        fraction = float("0." + found[7]) if found[7] else 0.0
        if not 1 <= month <= 12:
            return None  # no date: `2024-13-01` is no time of day to order by
        return (_days_since_epoch(year, month, day) * 86400 + hour * 3600 + minute * 60
                + second + fraction)
    found = _GLOG_TIME.search(text[:80])
    if found:
        month, day, hour, minute, second = (int(g) for g in found.groups()[:5])
        return (((month * 31 + day) * 24 + hour) * 60 + minute) * 60 + second + \
            float("0." + found[6])
    return None


def _days_since_epoch(year: int, month: int, day: int) -> int:
    """Days from 1970-01-01 to a proleptic Gregorian date (calendar.timegm's arithmetic,
    without importing calendar at start-up)."""
    year -= month <= 2
    era = year // 400
    of_era = year - era * 400
    of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    of_era_days = of_era * 365 + of_era // 4 - of_era // 100 + of_year
    return era * 146097 + of_era_days - 719468
