"""A confusion matrix printed under a "confusion" heading -> ConfusionMatrix.

Real texts (AttnSleep's trainer, sklearn's confusion_matrix printed by numpy):
  Training Confusion Matrix for Epoch 65:
   [[    0     0  7917     0     0]
   [    0     0  2748     0     0]
   ...
   [    0     0  7271     0     0]]
Also a torch tensor (`tensor([[12,  0], [ 3,  0]])`) and a list of lists with commas. A
matrix whose rows numpy wrapped over several lines (many classes) is left unread. A binary
task's four counts, on one line or a few (pytorch-transformers' and BERT's eval results):
  INFO:__main__:  fn = 0          INFO:tensorflow:  eval_fn = 106.0
  INFO:__main__:  fp = 2529       INFO:tensorflow:  eval_fp = 0.0
  INFO:__main__:  tn = 0          ...
  INFO:__main__:  tp = 2471
are the matrix [[tn, fp], [fn, tp]]. And a labelled table, counts or shares, a header of the
predicted classes over rows of the true ones, a total row and column optional:
  Validation confusion matrix:
             P = 0   P = 1 | Total
      L = 0  0.884   0.000 | 0.884
      L = 1  0.116   0.000 | 0.116
      Total  1.000   0.000 | 0.884
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from minrepro.model import ConfusionMatrix, Line
from minrepro.patterns import lazy

#: One row of integer counts: `[[ 0 0 7917 0 0]`, ` [0, 0, 12],`, `tensor([[12,  0],`.
_ROW = lazy(r"^\s*(?:[\w ]{0,40}[:=]\s*)?(?:tensor\()?\[?\[\s*(\d+(?:[\s,]+\d+){0,255})\s*,?\s*\]"
            r"(\])?\s*(?:\)|,)?\s*$")
#: A labelled row: a true class's name (`L = 1`, `cat`, `true_3:`), its cells, a total after
#: a bar; a `Total` row ends the table.
_LABELLED = lazy(r"^\s*(?P<label>[A-Za-z_][\w.-]{0,20}(?:\s*[=:]\s*\w{1,12})?:?)\s+"
                 r"(?P<cells>\d+(?:\.\d+)?(?:[ \t]+\d+(?:\.\d+)?){1,63})\s*"
                 r"(?:\|\s*\d+(?:\.\d+)?\s*)?$")
HEADING_LINES = 2  # the first row within this many lines of the heading
MAX_ROWS = 256
#: One of a binary task's counts: `tn = 0`, `eval_fp = 0.0`, `TP: 12`.
_COUNT = lazy(r"(?<![\w.])(?:eval_|test_|val_)?(tp|fp|tn|fn)\s*[=:]\s*(\d{1,12})(?:\.0+)?(?![\w.])",
              re.IGNORECASE)
COUNT_LINES = 12  # the four counts within this many lines


class ConfusionExtractor:
    # "Confusion Matrix", "confusion_matrix"; a binary task's counts
    TRIGGERS = ("onfusion", "混淆矩阵",
                *(f"{n}{s}" for n in ("tp", "fp", "tn", "fn", "TP", "FP", "TN", "FN")
                  for s in (" =", "=", ":", " :")))
    SELECT: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._heading = 0  # the line of the last heading; 0: none open
        self._rows: list[tuple[float, ...]] = []
        self._lines: list[Line] = []  # the first and last row's
        self._rank: int | None = None
        self._counts: dict[str, int] = {}
        self._count_lines: list[Line] = []

    @property
    def idle(self) -> bool:
        return not self._heading

    def feed(self, line: Line) -> Sequence[ConfusionMatrix]:
        heading = "onfusion" in line.text or "混淆矩阵" in line.text
        if not heading and not self._heading:
            return self._binary(line)
        if heading:
            found = self._finish()
            self._heading, self._rank = line.line, line.rank
            self._rows, self._lines = [], []
            row = _ROW.match(line.text)  # `confusion matrix: [[12 0]` on the heading's line
            return found + (self._add(row, line) if row else ())
        if not self._rows and line.line - self._heading > HEADING_LINES:
            self._heading = 0
            return ()
        row = _ROW.match(line.text) or _LABELLED.match(line.text)
        if row is None or (_labelled(row) and row["label"].lower() == "total"):
            # a header of column names before the first row; anything else ends it
            return () if not self._rows and row is None else self._finish()
        return self._add(row, line)

    def _add(self, row: re.Match[str], line: Line) -> tuple[ConfusionMatrix, ...]:
        cells = row["cells"] if _labelled(row) else row.group(1)
        counts = tuple(float(n) if "." in n else int(n) for n in cells.replace(",", " ").split())
        if self._rows and len(counts) != len(self._rows[0]) or len(self._rows) >= MAX_ROWS:
            self._heading, self._rows = 0, []  # no matrix: rows of other lengths, or too many
            return ()
        self._lines = [self._lines[0], line] if self._lines else [line]
        self._rows.append(counts)
        return self._finish() if not _labelled(row) and row.group(2) else ()

    def _finish(self) -> tuple[ConfusionMatrix, ...]:
        rows, self._rows, self._heading = self._rows, [], 0
        if rows and len(rows) == len(rows[0]):  # [[700]]: one class, labels and predictions
            return (spanning(tuple(rows), self._lines[0], self._lines[-1], self._rank),)
        return ()

    def _binary(self, line: Line) -> tuple[ConfusionMatrix, ...]:
        found = _COUNT.findall(line.text)
        if not found:
            return ()
        if self._count_lines and line.line - self._count_lines[0].line > COUNT_LINES:
            self._counts, self._count_lines = {}, []
        self._counts.update((name.lower(), int(value)) for name, value in found)
        self._count_lines = [self._count_lines[0], line] if self._count_lines else [line]
        if len(self._counts) < 4:
            return ()
        c, lines = self._counts, self._count_lines
        self._counts, self._count_lines = {}, []
        return (spanning(((c["tn"], c["fp"]), (c["fn"], c["tp"])), lines[0], lines[-1],
                         line.rank),)

    def close(self) -> Sequence[ConfusionMatrix]:
        return self._finish()


def _labelled(row: re.Match[str]) -> bool:
    return "cells" in row.re.groupindex


def spanning(rows: tuple[tuple[float, ...], ...], first: Line, last: Line,
             rank: int | None) -> ConfusionMatrix:
    """The matrix `rows`, read from the lines `first` to `last` (its evidence)."""
    return ConfusionMatrix(line=first.line, rows=rows, rank=rank, text=first.text[:300],
                           last=(last.line, last.text[:300]))
