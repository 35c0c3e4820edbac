"""Tables of metrics: a header line naming the columns, then rows of numbers under it.

    | epoch | train loss | val loss |        markdown (a `|---|` rule line is skipped)
    epoch | train_loss | valid_loss | time   fastai's table (a `00:01` duration cell is skipped)
    epoch   step   loss    acc              whitespace or tab columns
    epoch,step,train_loss,val_loss          CSV (Lightning's metrics.csv), empty cells allowed
    *** train_loss,valid_loss ***           a loop's decorated CSV header over tab-separated rows
"""

from __future__ import annotations

from minrepro.diagnose.extract.metricnames import STEP_KEYS, normalise
from minrepro.diagnose.extract.units import FLOAT, parse_int
from minrepro.patterns import lazy

_COLUMN_GAP = lazy(r"\t+|\s{2,}")
_NUMBER_TOKEN = lazy(rf"(?<![\w.]){FLOAT}(?![\w.])")
_CELL_NUMBER = lazy(rf"({FLOAT})\s*%?")
_RULE_CELL = lazy(r":?-{2,}:?")
#: A duration as a clock shows it (fastai's `time` column: `00:01`): a cell, not a value kept.
_CLOCK_CELL = lazy(r"\d{1,3}:\d\d(?::\d\d)?")


def cells(text: str) -> list[str]:
    text = text.strip()
    if "|" in text:
        return [cell.strip() for cell in text.strip("|").split("|")]
    found = [cell for cell in _COLUMN_GAP.split(text) if cell]
    if len(found) == 1 and "," in text and " " not in text:
        # CSV; a cell may be empty (a row of the training's columns only)
        return [cell.strip() for cell in text.strip("*=#").split(",")]
    return found


def header(text: str, max_columns: int) -> list[str | None] | None:
    """Column names -> normalised metric names (None for other columns), when `text` is the
    header of a table: two or more named columns, no numbers, at least one a metric."""
    if _NUMBER_TOKEN.search(text):  # every metric line has numbers: no split for those
        return None
    named = cells(text)
    if len(named) < 2 or len(named) > max_columns:
        return None
    names = [_column_name(cell) for cell in named]
    known = [name for name in names if name is not None]
    if len(known) < 2 or not any(name not in ("step", "epoch") for name in known):
        return None
    return names


def _column_name(cell: str) -> str | None:
    key = cell.strip().lower().replace(" ", "_")
    if key in STEP_KEYS:
        return "step"
    return normalise(cell) if cell else None


def row(text: str, columns: list[str | None]) -> tuple[dict[str, float], int | None] | None:
    """(values, step) of a row of numbers under the header (none for a markdown rule), or
    None when the line is no row (the table has ended)."""
    found = cells(text)
    if found and all(_RULE_CELL.fullmatch(cell) for cell in found):
        return {}, None
    if len(found) != len(columns):
        return None
    values: dict[str, float] = {}
    step = None
    for name, cell in zip(columns, found, strict=True):
        if not cell:
            continue  # a CSV row without this column's value
        number = _CELL_NUMBER.fullmatch(cell)
        if number is None:
            if _CLOCK_CELL.fullmatch(cell):
                continue
            return None
        if name == "step":
            step = parse_int(number[1])  # inf/nan/huge: a row without a step
        elif name is not None:
            values.setdefault(name, float(number[1]))
    return values, step
