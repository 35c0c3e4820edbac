"""Loss checks over plain floats, fed one read interval at a time (the seed's LossMonitor).

Defaults, and why they leave healthy runs alone:

* nan: the first non-finite loss. With a loss scaler in use (`amp=True`), up to
  `overflow_skips` non-finite losses in a row are the scaler's skipped steps, not a failure.
* explosion: `explode_steps` losses in a row above `explode_factor` x the median of the last
  `baseline_steps` finite losses (and `explode_min` above it): one noisy spike is no
  explosion, and a warmup's high start only raises the baseline.
* stagnation: the range of the last `stagnation_steps` losses under `stagnation_range`
  (0.001 over 500 steps), while their median is above `converged_below` (a loss resting
  near zero has converged, not stalled).
* ln_c: with `num_classes`, each of the last `ln_c_steps` losses within `ln_c_tolerance`
  (relative) of ln(num_classes): a classifier that learnt nothing, past any warmup.

Each check fires once; it can fire again only after its condition has cleared.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from minrepro.monitor.alerts import Alert


@dataclass(frozen=True)
class LossThresholds:
    """The documented defaults (see the module docstring)."""

    overflow_skips: int = 5
    explode_factor: float = 10.0
    explode_min: float = 0.1
    explode_steps: int = 3
    baseline_steps: int = 200
    baseline_min: int = 10
    stagnation_steps: int = 500
    stagnation_range: float = 0.001
    converged_below: float = 0.01
    ln_c_steps: int = 300
    ln_c_tolerance: float = 0.01
    rising_factor: float = 2.0  # a NaN after losses this far above baseline: trend=rising


class LossChecks:
    """The state of the loss checks between reads: a baseline window and a recent window."""

    def __init__(self, thresholds: LossThresholds, num_classes: int | None = None,
                 amp: bool = False) -> None:
        self.t = thresholds
        self.ln_c = math.log(num_classes) if num_classes and num_classes > 1 else None
        self.num_classes = num_classes
        self.amp = amp
        self.baseline: deque[float] = deque(maxlen=thresholds.baseline_steps)
        self.recent: deque[float] = deque(maxlen=max(thresholds.stagnation_steps,
                                                     thresholds.ln_c_steps))
        self.fired: set[str] = set()
        self.nonfinite_run = 0

    def feed(self, steps: Sequence[int], losses: Sequence[float], lr: float | None
             ) -> list[Alert]:
        """The alerts this interval raises; the windows move on by its losses."""
        reference = statistics.median(self.baseline) if len(
            self.baseline) >= self.t.baseline_min else None
        alerts = [a for a in (self._nan(steps, losses, reference, lr),
                              self._explosion(steps, losses, reference, lr)) if a]
        finite = [x for x in losses if math.isfinite(x)]
        self.baseline.extend(finite)
        self.recent.extend(finite)
        plateau = self._ln_c(steps[-1] if steps else 0)
        alerts += [a for a in (plateau, None if plateau else self._stagnation(steps[-1]
                                                                              if steps else 0))
                   if a]
        return alerts

    def _once(self, event: str, holds: bool) -> bool:
        """True the first time `event` holds; the latch opens again once it no longer does."""
        if not holds:
            self.fired.discard(event)
            return False
        if event in self.fired:
            return False
        self.fired.add(event)
        return True

    def _nan(self, steps: Sequence[int], losses: Sequence[float], reference: float | None,
             lr: float | None) -> Alert | None:
        for index, (step, loss) in enumerate(zip(steps, losses, strict=True)):
            self.nonfinite_run = 0 if math.isfinite(loss) else self.nonfinite_run + 1
            if self.nonfinite_run and (not self.amp or self.nonfinite_run > self.t.overflow_skips):
                if not self._once("nan", True):
                    return None
                return Alert("nan", step, self._nan_values(loss, losses[:index], reference, lr))
        if self.nonfinite_run == 0:
            self.fired.discard("nan")
        return None

    def _nan_values(self, loss: float, before: Sequence[float], reference: float | None,
                    lr: float | None) -> dict[str, float | int | str]:
        finite = [x for x in before if math.isfinite(x)][-5:] or list(self.baseline)[-5:]
        last = statistics.median(finite) if finite else math.nan
        rising = reference is not None and last > self.t.rising_factor * max(reference, 1e-12)
        values: dict[str, float | int | str] = {"loss": loss, "last_finite": last}
        if reference is not None:
            values["baseline"] = reference
        values["trend"] = "rising" if rising else "flat"
        return _with_lr(values, lr)

    def _explosion(self, steps: Sequence[int], losses: Sequence[float], reference: float | None,
                   lr: float | None) -> Alert | None:
        if reference is None:
            return None
        limit = max(self.t.explode_factor * reference, reference + self.t.explode_min)
        run = 0
        for step, loss in zip(steps, losses, strict=True):
            run = run + 1 if math.isfinite(loss) and loss > limit else 0
            if run >= self.t.explode_steps:
                if not self._once("explosion", True):
                    return None
                values: dict[str, float | int | str] = {"loss": loss, "baseline": reference,
                                                         "ratio": loss / reference
                                                         if reference > 0 else math.inf}
                return Alert("explosion", step, _with_lr(values, lr))
        if run == 0:
            self.fired.discard("explosion")
        return None

    def _stagnation(self, step: int) -> Alert | None:
        window = list(self.recent)[-self.t.stagnation_steps:]
        full = len(window) >= self.t.stagnation_steps
        spread = max(window) - min(window) if full else math.inf
        middle = statistics.median(window) if full else 0.0
        holds = full and spread < self.t.stagnation_range and middle > self.t.converged_below
        if not self._once("stagnation", holds):
            return None
        return Alert("stagnation", step, {"loss": middle, "range": spread,
                                          "window": self.t.stagnation_steps})

    def _ln_c(self, step: int) -> Alert | None:
        if self.ln_c is None:
            return None
        window = list(self.recent)[-self.t.ln_c_steps:]
        near = self.t.ln_c_tolerance * self.ln_c
        holds = len(window) >= self.t.ln_c_steps and all(abs(x - self.ln_c) <= near
                                                         for x in window)
        if not self._once("ln_c", holds):
            return None
        return Alert("ln_c", step, {"loss": statistics.median(window),
                                    "num_classes": self.num_classes or 0, "ln_c": self.ln_c,
                                    "window": self.t.ln_c_steps})


def _with_lr(values: dict[str, float | int | str], lr: float | None
             ) -> dict[str, float | int | str]:
    if lr is not None:
        values["lr"] = lr
    return values
