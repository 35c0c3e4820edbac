"""Held-out quality metrics (mAP, BLEU, accuracy ...): did the model get better at the task?
A curve reading that says "stuck" or "overfitting" must agree with them."""

from __future__ import annotations

from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.trends import better_at_end, improved, mean


def quality_improved(state: CurveState, margin: float = 0.05) -> bool:
    """A held-out quality metric (mAP, BLEU, ...) got better over the run by `margin` of its
    scale (5 % by default)."""
    return any(improved(series.values(), direction, margin=margin)
               for _, direction, series in state.quality())


def still_improving(state: CurveState, since_line: int) -> bool:
    """A held-out quality metric is better at the end than when the held-out loss was best."""
    for _, direction, series in state.quality():
        points = series.points()
        since = next((i for i, p in enumerate(points) if p.line >= since_line), len(points))
        if better_at_end([p.value for p in points], direction, since):
            return True
    return False


def accuracy_rose(state: CurveState, names: tuple[str, ...] = ("accuracy", "eval_accuracy")
                  ) -> bool:
    """Accuracy (of any of `names`) up by ten points or more: the mean of its last third
    against that of its first (per-batch accuracy is noisy)."""
    for name in names:
        values = state.main(name).values()
        if len(values) >= 2:
            third = max(1, len(values) // 3)
            scale = 100.0 if max(values) > 1.0 else 1.0
            if mean(values[-third:]) - mean(values[:third]) >= 0.1 * scale:
                return True
    return False
