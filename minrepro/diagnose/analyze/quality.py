"""Held-out quality metrics (mAP, BLEU, accuracy ...): did the model get better at the task?
A curve reading that says "stuck" or "overfitting" must agree with them."""

from __future__ import annotations

from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.trends import better_at_end, improved


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
