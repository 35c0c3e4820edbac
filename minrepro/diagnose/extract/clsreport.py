"""sklearn's classification_report -> ConfusionMatrix, where it tells the whole matrix: one
class with recall 1.00 and every other class with precision and recall 0.00 means every
sample was predicted as that class.

Real text (a BERT fine-tune that predicts only label 1):
                  precision    recall  f1-score   support

               0       0.00      0.00      0.00        42
               1       0.40      1.00      0.57        28

        accuracy                           0.40        70
       macro avg       0.20      0.50      0.29        70
A report that shows some other mix of predictions tells no matrix and gives nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from minrepro.diagnose.extract.confusion import spanning
from minrepro.model import ConfusionMatrix, Line
from minrepro.patterns import lazy

_HEADER = lazy(r"^\s*precision\s+recall\s+f1-score\s+support\s*$")
_ROW = lazy(r"^\s*(?P<label>\S.{0,80}?)\s+(?P<p>[01]\.\d+)\s+(?P<r>[01]\.\d+)\s+[01]\.\d+"
            r"\s+(?P<s>\d{1,12})\s*$")
_SUMMARY = ("accuracy", "macro avg", "weighted avg", "micro avg", "samples avg")
MAX_CLASSES = 256


class ClassificationReportExtractor:
    TRIGGERS = ("f1-score",)
    SELECT: tuple[str, ...] = ()

    def __init__(self) -> None:
        self._rows: list[tuple[float, float, int, Line]] | None = None  # (precision, recall,
        # support, line) of each class row of the report being read; None: none open

    @property
    def idle(self) -> bool:
        return self._rows is None

    def feed(self, line: Line) -> Sequence[ConfusionMatrix]:
        if _HEADER.match(line.text):
            self._rows = []
            return ()
        if self._rows is None:
            return ()
        if not line.text.strip():
            return ()
        row = _ROW.match(line.text)
        if row is None or row["label"].strip().lower() in _SUMMARY \
                or len(self._rows) >= MAX_CLASSES:
            return self.close()
        self._rows.append((float(row["p"]), float(row["r"]), int(row["s"]), line))
        return ()

    def close(self) -> Sequence[ConfusionMatrix]:
        rows, self._rows = self._rows or [], None
        full = [i for i, (_, recall, support, _) in enumerate(rows) if recall == 1.0 and support]
        if len(rows) < 2 or len(full) != 1 or any(
                (precision, recall) != (0.0, 0.0) for i, (precision, recall, _, _) in
                enumerate(rows) if i != full[0]):
            return ()
        k = full[0]  # every sample predicted as class k
        matrix = tuple(tuple(support if j == k else 0 for j in range(len(rows)))
                       for _, _, support, _ in rows)
        return (spanning(matrix, rows[0][3], rows[-1][3], rows[0][3].rank),)
