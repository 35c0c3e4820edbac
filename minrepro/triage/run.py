"""One triage run: list the inputs, hash them, diagnose only what the store lacks, cut jobs.

The caller owns the loop's feedback (`on_progress`, called with each finished batch's size);
nothing here prints.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from minrepro.triage.engine import Engine
from minrepro.triage.groups import resolve_jobs
from minrepro.triage.inputs import InputError, iter_inputs
from minrepro.triage.record import content_hash, read_error
from minrepro.triage.store import Store

BATCH_LOGS = 16  # logs a task: big enough to amortise a task, small enough to balance


@dataclass(frozen=True, slots=True)
class RunStats:
    """How much this run read and how much it had to diagnose."""

    logs: int  # readable logs named by the inputs
    diagnosed: int  # logs diagnosed this run (the others' content was already stored)
    errors: int  # inputs that could not be read before diagnosis (missing, no permission)


def collect(paths: Iterable[str], store: Store, *, job_glob: str | None = None
            ) -> tuple[int, int]:
    """Record this run's inputs (path, content hash, job, mtime); (logs, errors)."""
    logs = errors = 0
    for item in iter_inputs(paths, job_glob=job_glob):
        if isinstance(item, InputError):
            store.add_error(item.path, item.reason)
            errors += 1
            continue
        try:
            digest = content_hash(item.path)
            mtime = os.stat(item.path).st_mtime
        except OSError as err:
            store.add_error(item.path, read_error(item.path, err))
            errors += 1
            continue
        store.add_member(item.path, digest, item.job, mtime)
        logs += 1
    store.commit()
    return logs, errors


def run_triage(paths: Iterable[str], store: Store, engine: Engine, *,
               job_glob: str | None = None, batch_logs: int = BATCH_LOGS,
               on_start: Callable[[int], None] | None = None,
               on_progress: Callable[[int], None] | None = None) -> RunStats:
    """Triage `paths` into `store` with `engine`; the groups are then read from the store."""
    store.begin_run()
    logs, errors = collect(paths, store, job_glob=job_glob)
    pending = store.plan()
    if on_start:
        on_start(pending)
    for records in engine.run(store.todo(batch_logs)):
        store.put(records)
        if on_progress:
            on_progress(len(records))
    resolve_jobs(store)
    return RunStats(logs=logs, diagnosed=pending, errors=errors)
