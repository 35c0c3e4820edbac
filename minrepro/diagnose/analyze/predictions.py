"""What a printed confusion matrix says of the predictions: every sample put in one class
(single_class_labels, check MR-CONV-109, as heldout.py's per-class metrics at 0)."""

from __future__ import annotations

from minrepro.diagnose.analyze import checks
from minrepro.model import ConfusionMatrix, Event, Evidence, Finding, Line, Severity

#: This many matrices in a row at the end, all in one column, make it the run's state (one
#: matrix may be an early epoch's, before the model left its first guess).
SETTLED = 2


class PredictionsAnalyzer:
    """The last confusion matrices: a run whose last ones put every sample in one predicted
    class (one column; or one row, all the labels of one class) has not learned to tell the
    classes apart, however its loss moved."""

    def __init__(self) -> None:
        self.one_class = 0  # matrices in one class in a row, up to the last one
        self.last: ConfusionMatrix | None = None

    def feed(self, event: Event, line: Line) -> None:
        if isinstance(event, ConfusionMatrix):
            self.one_class = self.one_class + 1 if in_one_class(event.rows) else 0
            self.last = event

    def findings(self) -> list[Finding]:
        if self.last is None or not self.one_class:
            return []
        matrix = self.last
        column = next(j for row in matrix.rows for j, n in enumerate(row) if n)
        evidence = (Evidence(line=matrix.line, text=matrix.text, rank=matrix.rank),
                    Evidence(line=matrix.last[0], text=matrix.last[1], rank=matrix.rank))
        return [Finding(rule_id=checks.ONE_CLASS_PREDICTED.id, cause="single_class_labels",
                        category="convergence", score=0.7 if self.one_class >= SETTLED else 0.6,
                        first_line=matrix.line, evidence=evidence,
                        params=(("num_classes", len(matrix.rows)), ("predicted_class", column)),
                        severity=Severity.SYMPTOM)]


def in_one_class(rows: tuple[tuple[float, ...], ...]) -> bool:
    """Every count in one column (predicted class) or one row (true class), and some."""
    columns = {j for row in rows for j, n in enumerate(row) if n}
    filled = {i for i, row in enumerate(rows) if any(row)}
    return bool(columns) and (len(columns) == 1 or len(filled) == 1)
