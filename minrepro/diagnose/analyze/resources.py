"""What the resource curves say: data-loading share of the step, GPU memory and host RAM
growing step after step. Pure checks of a CurveState, like curves.py."""

from __future__ import annotations

from typing import Any

from minrepro.diagnose.analyze import checks
from minrepro.diagnose.analyze.checks import AnalyzerCheck
from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.analyze.series import Point
from minrepro.diagnose.analyze.trends import mean
from minrepro.model import Evidence, Finding, Severity
from minrepro.taxonomy import CATEGORY_OF

#: Share of the step time spent waiting for data from which loading is the bottleneck. Below
#: it, a run is slowed by its input pipeline but that is not what failed (detection training
#: commonly shows 0.5-0.6 on a healthy run).
DATA_SHARE = 0.65
#: GPU memory growing this much before an OOM is a leak even when it is not 1.5x (a 65 GB
#: working set that grows by 10 GB step after step until the card is full).
LEAK_BEFORE_OOM = 1.1
LEAK_BEFORE_OOM_MB = 1024.0


def finding(check: AnalyzerCheck, score: float, points: list[Point], **extra: Any) -> Finding:
    """A finding of `check` with these points as its evidence."""
    params = extra.pop("params", {})
    return Finding(rule_id=check.id, cause=check.cause, category=CATEGORY_OF[check.cause],
                   score=score, first_line=points[0].line if points else 0,
                   evidence=tuple(Evidence(line=p.line, text=p.text, rank=p.rank)
                                  for p in points[:4]),
                   params=tuple(params.items()), severity=Severity.SYMPTOM, **extra)


def data_bound(state: CurveState) -> Finding | None:
    """Most of each step spent waiting for data: from the running averages a log prints
    (past its first record, which holds the workers' start-up alone), else from the
    printed steps' own times (without the first)."""
    data, batch = state.main("data_time").points(), state.main("batch_time").points()
    data_avg = state.main("data_time_avg").points()
    batch_avg = state.main("batch_time_avg").points()
    if len(data_avg) >= 2 and len(batch_avg) >= 2:
        mean_data, mean_batch, evidence = data_avg[-1].value, batch_avg[-1].value, data_avg[-2:]
        if _recent_share(data, batch) < DATA_SHARE / 4:
            return None  # the average still carries the start-up; the steps now do not wait
    elif len(data) >= 3 and len(batch) >= 3:
        mean_data = mean(p.value for p in data[1:])
        mean_batch = mean(p.value for p in batch[1:])
        evidence = data[:3]
    elif len(data) == 2 == len(batch) and all(
            d.value >= DATA_SHARE * b.value > 0 for d, b in zip(data, batch, strict=True)):
        # Two records, both mostly waiting: the first is not a lone start-up stall.
        mean_data, mean_batch = mean(p.value for p in data), mean(p.value for p in batch)
        evidence = data
    else:
        return None
    share = mean_data / mean_batch if mean_batch > 0 else 0.0
    if share < DATA_SHARE:
        return None
    return finding(checks.DATA_TIME_SHARE, 0.8 if share >= 0.75 else 0.6, evidence,
                    params={"data_time": round(mean_data, 4),
                            "batch_time": round(mean_batch, 4)})


def _recent_share(data: list[Point], batch: list[Point]) -> float:
    """The data share of the last few steps' own times (1.0 where the log prints none)."""
    recent_data, recent_batch = data[-3:], batch[-3:]
    if not recent_data or not recent_batch:
        return 1.0
    total = sum(p.value for p in recent_batch)
    return sum(p.value for p in recent_data) / total if total > 0 else 1.0


def host_memory_growth(state: CurveState) -> Finding | None:
    return _host_growth_finding(state.main("rss_mb").points())


def memory_growth(state: CurveState) -> Finding | None:
    """GPU memory logged by any series (train steps, eval batches) rising step after step."""
    grown = [_rising_tail(series.points()) for series in state.all("memory_mb")]
    points = max(grown, key=lambda tail: (len(tail) >= 5, tail[-1].value / max(tail[0].value, 1e-9)
                                          if tail else 0.0), default=[])
    if len(points) < 5:
        return None
    start, end = points[0].value, points[-1].value
    leaked = end >= 1.5 * start or (state.ended_in_oom and end >= LEAK_BEFORE_OOM * start
                                    and end - start >= LEAK_BEFORE_OOM_MB)
    if not leaked:
        return None
    return finding(checks.GPU_MEMORY_GROWS, 0.6, [points[0], points[-1]],
                    params={"memory_start_mb": round(points[0].value, 1),
                            "memory_end_mb": round(points[-1].value, 1)},
                    supersedes=("cuda_oom",))



def _host_growth_finding(points: list[Point]) -> Finding | None:
    """Host RAM (RSS) climbing step after step: DataLoader workers copying the dataset."""
    points = _rising_tail(points)
    if len(points) < 4 or points[-1].value < 1.5 * points[0].value:
        return None
    return finding(checks.HOST_MEMORY_GROWS, 0.55, [points[0], points[-1]],
                    params={"rss_start_mb": round(points[0].value, 1),
                            "rss_end_mb": round(points[-1].value, 1)})


def _rising_tail(points: list[Point]) -> list[Point]:
    """The last stretch of the series that never goes down and rises at 80% of its steps
    (memory held by leaked graphs grows step after step until the OOM)."""
    start = len(points) - 1
    while start > 0 and points[start - 1].value <= points[start].value:
        start -= 1
    tail = points[start:]
    steps = list(zip(tail, tail[1:], strict=False))
    while steps and sum(b.value > a.value for a, b in steps) < 0.8 * len(steps):
        tail, steps = tail[1:], steps[1:]  # drop the flat start of the stretch
    return tail
