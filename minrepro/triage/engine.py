"""Where the per-log work runs: local processes (the default) or an existing Dask cluster.

Both ship batches of logs (not one tiny task a log) to the same function,
`record.diagnose_batch`, so their results are the same. At most a few batches are in
flight at once: results stream back to the store, never pile up in memory.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Protocol

from minrepro.errors import MinreproError
from minrepro.triage.record import LogRecord, diagnose_batch

Batch = list[tuple[str, str]]  # (content hash, path)
_IN_FLIGHT_PER_WORKER = 2
DASK_MISSING = ("the dask engine needs the dask extra: pip install minrepro[dask]"
                " (or pip install \"dask[distributed]\")")


class Engine(Protocol):
    """Runs `diagnose_batch` over batches; yields each batch's records as they finish."""

    def run(self, batches: Iterable[Batch]) -> Iterator[list[LogRecord]]: ...

    def close(self) -> None: ...


def default_workers() -> int:
    """One worker a CPU this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # macOS, Windows
        return max(1, os.cpu_count() or 1)


def _bounded(submit: Callable[[Batch], Any], result: Callable[[Any], list[LogRecord]],
             batches: Iterable[Batch], limit: int) -> Iterator[list[LogRecord]]:
    """Submit batches keeping at most `limit` pending; yield results in submission order."""
    pending: deque[Any] = deque()
    for batch in batches:
        pending.append(submit(batch))
        if len(pending) >= limit:
            yield result(pending.popleft())
    while pending:
        yield result(pending.popleft())


class LocalEngine:
    """A process pool on this machine; with one worker, this process itself (no pool)."""

    def __init__(self, workers: int | None = None, rule_dirs: tuple[str, ...] = ()) -> None:
        self.workers = workers or default_workers()
        self.rule_dirs = rule_dirs
        self._pool = ProcessPoolExecutor(self.workers) if self.workers > 1 else None

    def run(self, batches: Iterable[Batch]) -> Iterator[list[LogRecord]]:
        if self._pool is None:
            for batch in batches:
                yield diagnose_batch(batch, self.rule_dirs)
            return
        pool = self._pool

        def submit(batch: Batch) -> Future[list[LogRecord]]:
            return pool.submit(diagnose_batch, batch, self.rule_dirs)

        yield from _bounded(submit, lambda f: f.result(), batches,
                            self.workers * _IN_FLIGHT_PER_WORKER)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


class DaskEngine:
    """An existing Dask distributed cluster (`tcp://HOST:PORT`), one task a batch."""

    def __init__(self, scheduler: str | None, rule_dirs: tuple[str, ...] = ()) -> None:
        try:
            from distributed import Client
        except ImportError:
            raise MinreproError(DASK_MISSING) from None
        if not scheduler:
            raise MinreproError("--engine dask needs --scheduler tcp://HOST:PORT")
        try:
            self.client = Client(scheduler, timeout=10, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as err:
            raise MinreproError(f"cannot reach the dask scheduler {scheduler}: {err}") from None
        self.rule_dirs = rule_dirs
        workers = len(self.client.scheduler_info().get("workers", {})) or 1
        self.limit = workers * _IN_FLIGHT_PER_WORKER

    def run(self, batches: Iterable[Batch]) -> Iterator[list[LogRecord]]:
        client = self.client

        def submit(batch: Batch) -> Any:
            return client.submit(diagnose_batch, batch, self.rule_dirs, pure=False)

        yield from _bounded(submit, _task_result, batches, self.limit)

    def close(self) -> None:
        self.client.close()


def _task_result(future: Any) -> list[LogRecord]:
    """A finished task's records; a task that failed on the cluster (a worker without
    minrepro, a lost worker) is one line, not a remote traceback."""
    try:
        records: list[LogRecord] = future.result()
    except MinreproError:
        raise
    except Exception as err:  # noqa: BLE001 - anything a remote worker raised
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise MinreproError(f"a dask task failed: {type(err).__name__}: {first}") from None
    return records


def make_engine(name: str, *, workers: int | None = None, scheduler: str | None = None,
                rule_dirs: tuple[str, ...] = ()) -> Engine:
    """The engine `--engine` names; a usage error is one line."""
    if name == "local":
        return LocalEngine(workers, rule_dirs)
    if name == "dask":
        return DaskEngine(scheduler, rule_dirs)
    raise MinreproError(f"unknown engine {name!r} (local or dask)")
