"""A run's metric curves in bounded memory, fed (values, position) by whoever reads them:
the log's metric records (CurveAnalyzer) or a live training loop (minrepro.monitor).

Framework-free: nothing here knows about log lines, ranks or events. The checks that read a
`CurveState` are pure functions in curves.py.
"""

from __future__ import annotations

from collections.abc import Iterable

from minrepro.diagnose.analyze.series import Series

#: The metric names (normalised, see extract/metrics.py) whose history is kept.
TRACKED = ("loss", "eval_loss", "learning_rate", "grad_norm", "accuracy", "eval_accuracy",
           "eval_matthews_correlation", "data_time", "batch_time", "data_time_avg",
           "batch_time_avg", "memory_mb", "rss_mb")


class CurveState:
    """The tracked series of one run, plus what the values say about the loss's make-up."""

    def __init__(self) -> None:
        self.series: dict[str, Series] = {name: Series() for name in TRACKED}
        # The loss is a sum of printed parts (loss_cls + loss_bbox + ..., detection and
        # segmentation frameworks): its level then says nothing about ln(C).
        self.summed_loss = False

    def add(self, values: Iterable[tuple[str, float]], *, line: int, rank: int | None = None,
            text: str = "") -> None:
        """One record: (name, value) pairs at position `line` (a log line, or a step)."""
        values = tuple(values)
        for name, value in values:
            series = self.series.get(name)
            if series is not None:
                series.add(line, value, rank, text)
        if not self.summed_loss and any(name == "loss" for name, _ in values):
            parts = [n for n, _ in values if "loss" in n and n != "loss"
                     and not n.startswith("eval_") and n != "loss_scale"]
            self.summed_loss = len(parts) >= 2

    def loss_curve(self, points: int = 40) -> tuple[float, ...]:
        """The training (else evaluation) loss, downsampled to `points` values."""
        values = self.series["loss"].values() or self.series["eval_loss"].values()
        if len(values) <= points:
            return tuple(round(v, 6) for v in values)
        step = len(values) / points
        return tuple(round(values[int(i * step)], 6) for i in range(points))
