"""A confusion matrix printed under a "confusion" heading -> ConfusionMatrix.

Real texts (AttnSleep's trainer, sklearn's confusion_matrix printed by numpy):
  Training Confusion Matrix for Epoch 65:
   [[    0     0  7917     0     0]
   [    0     0  2748     0     0]
   ...
   [    0     0  7271     0     0]]
Also a torch tensor (`tensor([[12,  0], [ 3,  0]])`) and a list of lists with commas. A
matrix whose rows numpy wrapped over several lines (many classes) is left unread.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minrepro.model import ConfusionMatrix, Line
from minrepro.patterns import lazy

#: One row of integer counts: `[[ 0 0 7917 0 0]`, ` [0, 0, 12],`, `tensor([[12,  0],`.
_ROW = lazy(r"^\s*(?:[\w ]{0,40}[:=]\s*)?(?:tensor\()?\[?\[\s*(\d+(?:[\s,]+\d+){1,255})\s*,?\s*\]"
            r"(\])?\s*(?:\)|,)?\s*$")
HEADING_LINES = 2  # the first row within this many lines of the heading
MAX_ROWS = 256


class ConfusionExtractor:
    TRIGGERS = ("onfusion",)  # "Confusion Matrix", "confusion matrix", "confusion_matrix"
    SELECT: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._heading = 0  # the line of the last heading; 0: none open
        self._rows: list[tuple[int, ...]] = []
        self._lines: list[Line] = []  # the first and last row's
        self._rank: int | None = None

    @property
    def idle(self) -> bool:
        return not self._heading

    def feed(self, line: Line) -> Sequence[ConfusionMatrix]:
        if "onfusion" in line.text:
            found = self._finish()
            self._heading, self._rank = line.line, line.rank
            self._rows, self._lines = [], []
            row = _ROW.match(line.text)  # `confusion matrix: [[12 0]` on the heading's line
            return found + (self._add(row, line) if row else ())
        if not self._heading:
            return ()
        row = _ROW.match(line.text)
        if row is None:
            return self._finish()
        if not self._rows and line.line - self._heading > HEADING_LINES:
            self._heading = 0
            return ()
        return self._add(row, line)

    def _add(self, row: re.Match[str], line: Line) -> tuple[ConfusionMatrix, ...]:
        counts = tuple(int(n) for n in row.group(1).replace(",", " ").split())
        if self._rows and len(counts) != len(self._rows[0]) or len(self._rows) >= MAX_ROWS:
            self._heading = 0
            return ()
        self._lines = [self._lines[0], line] if self._lines else [line]
        self._rows.append(counts)
        return self._finish() if row.group(2) else ()

    def _finish(self) -> tuple[ConfusionMatrix, ...]:
        rows, self._rows, self._heading = self._rows, [], 0
        if len(rows) >= 2 and len(rows) == len(rows[0]):
            first, last = self._lines[0], self._lines[-1]
            return (ConfusionMatrix(line=first.line, rows=tuple(rows), rank=self._rank,
                                    text=first.text[:300], last=(last.line, last.text[:300])),)
        return ()

    def close(self) -> Sequence[ConfusionMatrix]:
        return self._finish()
