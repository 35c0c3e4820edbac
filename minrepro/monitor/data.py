"""Data checks: a batch's sanity, the label distribution, and the time spent loading.

`check_batch` (seed 004's quick_data_sanity_check): no empty batch, the same number of
samples in each tensor, no NaN/Inf in float inputs, labels inside [0, num_classes) (the
ignore index -100 aside). The label distribution is tallied across batches: `single_class`
fires once at least `min_labels` labels (64) have been seen, all of one class (the all-zero
labels that took a night to find); one small batch of one class proves nothing.

Loading (the seed's DataLoaderProfiler): `LoaderTimer.wrap(loader)` times each `next()`; the
share is load time over compute time in a read interval. Over 1.0 in `intervals` reads in a
row (two), past the first (workers starting), the loader is the bottleneck: more
`num_workers`, `pin_memory=True`, `persistent_workers=True`, or lighter per-sample work.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from minrepro.monitor.alerts import Alert

LABEL_KEYS = ("labels", "label", "targets", "target", "y")
IGNORE_INDEX = -100


def named_tensors(batch: Any) -> list[tuple[str, torch.Tensor]]:
    """The tensors of a batch by name: a mapping's keys, a sequence's indexes."""
    if isinstance(batch, torch.Tensor):
        return [("input", batch)]
    if isinstance(batch, Mapping):
        return [(str(k), v) for k, v in batch.items() if isinstance(v, torch.Tensor)]
    if isinstance(batch, list | tuple):
        return [(str(i), v) for i, v in enumerate(batch) if isinstance(v, torch.Tensor)]
    return []


def labels_of(batch: Any) -> torch.Tensor | None:
    """The integer labels of a batch: a label key of a mapping, or the last of (x, y)."""
    if isinstance(batch, Mapping):
        found = next((batch[k] for k in LABEL_KEYS if isinstance(batch.get(k), torch.Tensor)),
                     None)
    elif isinstance(batch, list | tuple) and len(batch) >= 2:
        found = batch[-1] if isinstance(batch[-1], torch.Tensor) else None
    else:
        found = None
    if found is None or found.is_floating_point() or found.is_complex():
        return None
    return found


class LabelTally:
    """Counts of each label value across the batches seen (bounded by the classes there are)."""

    def __init__(self, min_labels: int = 64) -> None:
        self.counts: Counter[int] = Counter()
        self.min_labels = min_labels
        self.fired = False

    def add(self, labels: torch.Tensor) -> None:
        flat = labels.detach().reshape(-1)
        flat = flat[flat != IGNORE_INDEX]
        values, counts = torch.unique(flat, return_counts=True)
        self.counts.update(dict(zip(values.tolist(), counts.tolist(), strict=True)))

    def alert(self, step: int) -> Alert | None:
        total = sum(self.counts.values())
        if self.fired or total < self.min_labels or len(self.counts) != 1:
            return None
        self.fired = True
        (label, _), = self.counts.items()
        return Alert("single_class", step, {"labels": total, "classes": 1, "label": label})


def check_batch(batch: Any, num_classes: int | None = None, step: int = 0,
                tally: LabelTally | None = None) -> list[Alert]:
    """Every problem one batch shows (it reads values: a sync; use it on a few batches)."""
    tensors = named_tensors(batch)
    if not tensors or any(t.numel() == 0 for _, t in tensors):
        return [Alert("empty_batch", step, {"tensors": len(tensors)})]
    alerts = _lengths(tensors, step) + _non_finite(tensors, step)
    labels = labels_of(batch)
    if labels is not None:
        alerts += _label_range(labels, num_classes, step)
        if tally is not None:
            tally.add(labels)
            alerts += [a for a in (tally.alert(step),) if a]
    return alerts


def _lengths(tensors: list[tuple[str, torch.Tensor]], step: int) -> list[Alert]:
    sizes = {t.shape[0] for _, t in tensors if t.dim() > 0}
    if len(sizes) <= 1:
        return []
    return [Alert("length_mismatch", step, {"smallest": min(sizes), "largest": max(sizes)})]


def _non_finite(tensors: list[tuple[str, torch.Tensor]], step: int) -> list[Alert]:
    for name, tensor in tensors:
        if tensor.is_floating_point():
            bad = int((~torch.isfinite(tensor.detach())).sum())
            if bad:
                return [Alert("nan_input", step, {"tensor": name, "count": bad})]
    return []


def _label_range(labels: torch.Tensor, num_classes: int | None, step: int) -> list[Alert]:
    kept = labels[labels != IGNORE_INDEX]
    if num_classes is None or kept.numel() == 0:
        return []
    low, high = int(kept.min()), int(kept.max())
    if low >= 0 and high < num_classes:
        return []
    return [Alert("label_range", step, {"min": low, "max": high, "num_classes": num_classes})]


def check_loader(loader: Iterable[Any], batches: int = 10, num_classes: int | None = None,
                 tally: LabelTally | None = None) -> list[Alert]:
    """The problems of the first `batches` batches, each event once, and the label tally."""
    tally = tally if tally is not None else LabelTally()
    seen: set[str] = set()
    found: list[Alert] = []
    for index, batch in enumerate(loader):
        if index >= batches:
            break
        for alert in check_batch(batch, num_classes, step=index, tally=tally):
            if alert.event not in seen:
                seen.add(alert.event)
                found.append(alert)
    return found


class LoaderTimer:
    """Time spent in the loader's `next()`, for the load-vs-compute share."""

    def __init__(self) -> None:
        self.load_s = 0.0
        self.batches = 0

    def wrap(self, loader: Iterable[Any]) -> Iterator[Any]:
        iterator = iter(loader)
        while True:
            start = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                return
            self.load_s += time.perf_counter() - start
            self.batches += 1
            yield batch


@dataclass
class LoaderShareCheck:
    """Load time over compute time per read interval; fires after `intervals` in a row."""

    threshold: float = 1.0
    intervals: int = 2
    _reads: int = 0
    _over: int = 0
    _fired: bool = False

    def feed(self, step: int, load_s: float, total_s: float) -> Alert | None:
        self._reads += 1
        compute = max(total_s - load_s, 1e-9)
        share = load_s / compute
        if self._reads == 1 or load_s <= 0:  # the first interval: workers starting
            return None
        self._over = self._over + 1 if share > self.threshold else 0
        if self._over < self.intervals:
            self._fired = False if self._over == 0 else self._fired
            return None
        if self._fired:
            return None
        self._fired = True
        return Alert("loader", step, {"data_share": share, "load_s": load_s,
                                      "compute_s": compute})
