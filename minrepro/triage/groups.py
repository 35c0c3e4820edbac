"""Groups of a fleet: jobs cut to their first failure, failures grouped by fingerprint.

A job of several rank logs counts once: its failure is the first failing rank's (a rank
whose failure is its own before one that failed because another did, then the earliest log
timestamp, then the lowest rank), the others are its cascade. Each group says how many
failures it holds, their share, root class, first and last seen (the failure's date in the
log, else the file's mtime), example logs, one representative's evidence, and the repro (or
check) script written for it.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass

from minrepro.diagnose.stamps import as_epoch
from minrepro.errors import MinreproError
from minrepro.model import RootClass
from minrepro.triage.inputs import rank_of
from minrepro.triage.record import LogRecord
from minrepro.triage.store import FIELDS, RESULT_VERSION, Store

EXAMPLES = 3
NO_FAILURE = "none"  # the root shown for logs with nothing to report
UNDECIDED = "undecided"
ROOT_NAMES: tuple[str, ...] = tuple(r.value for r in RootClass) + (UNDECIDED, NO_FAILURE)


@dataclass(frozen=True)
class Group:
    """One fingerprint's failures, summarised."""

    fingerprint: str
    kind: str
    cause: str | None
    root: str
    count: int
    share: float
    first_seen: float
    last_seen: float
    examples: tuple[str, ...]
    headline: str = ""
    frame: str = ""
    message: str = ""
    evidence: tuple[dict, ...] = ()
    script: str | None = None  # the group's script under --out (scripts/...), if written


def resolve_jobs(store: Store) -> None:
    """One unit a job: its first failing member (see the module docstring)."""
    rows = store.members_by_job()
    for job, members in itertools.groupby(rows, key=lambda row: row[0]):
        readable = [(path, mtime, rec) for _, path, mtime, rec in members if rec.error is None]
        if not readable:
            continue
        path, mtime, record = min(readable, key=_first_failure_key)
        seen = as_epoch(record.stamp) or mtime  # when it failed, by the log's clock if it has one
        store.add_unit(job, path, record.hash, seen, record.fingerprint)
    store.commit()


def _first_failure_key(member: tuple[str, float, LogRecord]) -> tuple:
    path, _, record = member
    stamp = record.stamp if record.stamp is not None else math.inf
    rank = rank_of(path)
    return (record.cascade, stamp, rank if rank is not None else math.inf, path)


def root_name(record_root: str | None, kind: str) -> str:
    """The root class shown: the diagnosis's, or undecided, or none (nothing failed)."""
    if record_root:
        return record_root
    return NO_FAILURE if kind == NO_FAILURE else UNDECIDED


_GROUPS_SQL = """
SELECT u.fingerprint, COUNT(*), MIN(u.seen), MAX(u.seen), MIN(u.path)
FROM units u GROUP BY u.fingerprint ORDER BY COUNT(*) DESC, u.fingerprint"""


class Summary:
    """The groups, distributions and errors of the last run, read from the store."""

    def __init__(self, store: Store, logs: int) -> None:
        self.store = store
        self.logs = logs
        self.failures = int(next(store.query("SELECT COUNT(*) FROM units"))[0])

    def groups(self) -> Iterator[Group]:
        """Largest first; each with its representative (the first member by path)."""
        for digest, count, first, last, example in list(self.store.query(_GROUPS_SQL)):
            record = self._record_of(example)
            examples = tuple(p for (p,) in self.store.query(
                "SELECT path FROM units WHERE fingerprint = ? ORDER BY path LIMIT ?",
                (digest, EXAMPLES)))
            yield Group(fingerprint=digest, kind=record.kind, cause=record.cause,
                        root=root_name(record.root, record.kind), count=count,
                        share=count / max(self.failures, 1), first_seen=first, last_seen=last,
                        examples=examples, headline=record.headline, frame=record.frame,
                        message=record.message, evidence=tuple(json.loads(record.evidence)),
                        script=self._script_of(digest))

    def _record_of(self, path: str) -> LogRecord:
        columns = ", ".join(f"r.{name}" for name in FIELDS)
        row = next(self.store.query(
            f"SELECT {columns} FROM units u JOIN results r ON r.version = ?"  # noqa: S608
            " AND r.hash = u.hash WHERE u.path = ?", (RESULT_VERSION, path)))
        return LogRecord(*row)

    def _script_of(self, digest: str) -> str | None:
        name = f"scripts/{script_name(digest)}"
        return name if (self.store.out_dir / name).is_file() else None

    def logs_of(self, digest: str) -> Iterator[str]:
        """Every member's path (a job's: its first failing log), streamed."""
        for (path,) in self.store.query(
                "SELECT path FROM units WHERE fingerprint = ? ORDER BY path", (digest,)):
            yield path

    def roots(self) -> dict[str, int]:
        """Root class -> failures: the six classes always, undecided / none when present."""
        counts = dict.fromkeys(ROOT_NAMES[:6], 0)
        for root, kind, count in self.store.query(
                "SELECT r.root, r.kind, COUNT(*) FROM units u JOIN results r ON r.version = ?"
                " AND r.hash = u.hash GROUP BY r.root, r.kind = 'none'", (RESULT_VERSION,)):
            name = root_name(root, kind)
            counts[name] = counts.get(name, 0) + count
        return counts

    def causes(self) -> Iterator[tuple[str, str, int]]:
        """(cause, or kind for failures outside the taxonomy; root; failures), largest first."""
        sql = ("SELECT COALESCE(r.cause, r.kind), r.root, r.kind, COUNT(*) FROM units u JOIN"
               " results r ON r.version = ? AND r.hash = u.hash GROUP BY 1, 2"
               " ORDER BY 4 DESC, 1")
        for cause, root, kind, count in self.store.query(sql, (RESULT_VERSION,)):
            yield cause, root_name(root, kind), count

    def errors(self) -> Iterator[tuple[str, str]]:
        yield from self.store.read_errors()


def script_name(digest: str) -> str:
    return f"{digest}.py"


def write_scripts(summary: Summary) -> int:
    """One repro (or check) script a group whose cause has a template, rendered by
    minrepro.repro from the group's representative, under --out/scripts/; how many were
    written (a script already there is kept: the same fingerprint, the same failure)."""
    from minrepro.diagnose.pipeline import diagnose_log
    from minrepro.diagnose.rules.registry import load_rules
    from minrepro.repro.render import has_template, render_repro, write_script

    folder = summary.store.out_dir / "scripts"
    folder.mkdir(exist_ok=True)
    written = 0
    rules = load_rules()  # once, not once a group
    for digest, example, cause in list(summary.store.query(
            "SELECT u.fingerprint, MIN(u.path), r.cause FROM units u JOIN results r"
            " ON r.version = ? AND r.hash = u.hash GROUP BY u.fingerprint", (RESULT_VERSION,))):
        target = folder / script_name(digest)
        if target.exists() or not cause or not has_template(cause):
            continue
        try:
            write_script(render_repro(diagnose_log(example, rules=rules)), target, force=True)
            written += 1
        except MinreproError:  # the log changed or went away since: no script for it
            continue
    return written
