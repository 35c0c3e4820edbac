"""The triage's memory: an embedded SQLite database in --out (content hash -> result).

A log whose content hash (with this version of minrepro's rules and fingerprint) is already
stored is not read again, so a nightly run over a growing folder only diagnoses the new logs.
What this run was asked about (its members, errors and jobs) is rebuilt every run; the
results persist. Every query is iterated, never fetched whole: memory stays flat.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from minrepro.errors import OutputError, shown_path
from minrepro.triage.fingerprint import VERSION as FINGERPRINT_VERSION
from minrepro.triage.record import LogRecord

DB_NAME = "triage.sqlite"
_PACKAGE = Path(__file__).resolve().parents[1]
#: What a stored result depends on: the diagnose code and rules, and the per-log record.
_RESULT_SOURCES = ("diagnose/**/*.py", "diagnose/**/*.yaml", "diagnose/**/*.json",
                   "model.py", "triage/record.py", "triage/fingerprint.py")


def _result_version() -> str:
    """The fingerprint version and a digest of the code a result came from: a result of
    other rules or another diagnose is never reused."""
    digest = hashlib.sha256()
    for pattern in _RESULT_SOURCES:
        for path in sorted(_PACKAGE.glob(pattern)):
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0")
            digest.update(path.read_bytes())
    return f"{FINGERPRINT_VERSION}/{digest.hexdigest()[:16]}"


RESULT_VERSION = _result_version()
FIELDS = [f.name for f in dataclasses.fields(LogRecord)]

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS results (version TEXT NOT NULL, {", ".join(FIELDS)},
    PRIMARY KEY (version, hash));
CREATE TABLE IF NOT EXISTS members (path TEXT PRIMARY KEY, hash TEXT, job TEXT, mtime REAL);
CREATE TABLE IF NOT EXISTS errors (path TEXT PRIMARY KEY, reason TEXT);
CREATE TABLE IF NOT EXISTS units (job TEXT PRIMARY KEY, path TEXT, hash TEXT, seen REAL,
    fingerprint TEXT);
CREATE TABLE IF NOT EXISTS todo (hash TEXT PRIMARY KEY, path TEXT);
CREATE INDEX IF NOT EXISTS members_job ON members (job, path);
CREATE INDEX IF NOT EXISTS units_fingerprint ON units (fingerprint, path);
"""


class Store:
    """One triage database; `begin_run` forgets the last run's inputs, not its results."""

    def __init__(self, out_dir: str | os.PathLike[str]) -> None:
        self.out_dir = Path(out_dir)
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.out_dir / DB_NAME)
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise OutputError(f"{shown_path(self.out_dir)}: cannot use as the triage store"
                              f" ({err})") from None

    def close(self) -> None:
        self.db.commit()
        self.db.close()

    def begin_run(self) -> None:
        for table in ("members", "errors", "units", "todo"):
            self.db.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names

    # --- this run's inputs ------------------------------------------------------------------

    def add_member(self, path: str, digest: str, job: str, mtime: float) -> None:
        self.db.execute("INSERT OR REPLACE INTO members VALUES (?, ?, ?, ?)",
                        (path, digest, job, mtime))

    def add_error(self, path: str, reason: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO errors VALUES (?, ?)", (path, reason))

    def plan(self) -> int:
        """Collect the logs whose content is not stored yet (one path per content); their
        number."""
        self.db.execute("DELETE FROM todo")
        self.db.execute(
            "INSERT OR IGNORE INTO todo SELECT m.hash, MIN(m.path) FROM members m"
            " WHERE NOT EXISTS (SELECT 1 FROM results r WHERE r.version = ? AND r.hash = m.hash)"
            " GROUP BY m.hash ORDER BY MIN(m.path)", (RESULT_VERSION,))
        self.db.commit()
        return int(self.db.execute("SELECT COUNT(*) FROM todo").fetchone()[0])

    def todo(self, size: int) -> Iterator[list[tuple[str, str]]]:
        """The planned (hash, path) pairs in batches of `size`, paged by rowid."""
        last = 0
        while True:
            rows = self.db.execute("SELECT rowid, hash, path FROM todo WHERE rowid > ?"
                                   " ORDER BY rowid LIMIT ?", (last, size)).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [(digest, path) for _, digest, path in rows]

    # --- results ----------------------------------------------------------------------------

    def put(self, records: Iterable[LogRecord]) -> None:
        marks = ", ".join("?" * (len(FIELDS) + 1))
        self.db.executemany(f"INSERT OR REPLACE INTO results VALUES ({marks})",  # noqa: S608
                            [(RESULT_VERSION, *dataclasses.astuple(r)) for r in records])
        self.db.commit()

    def members_by_job(self) -> Iterator[tuple[str, str, float, LogRecord]]:
        """(job, path, mtime, record) of every readable member, ordered by job then path."""
        columns = ", ".join(f"r.{name}" for name in FIELDS)
        cursor = self.db.execute(
            f"SELECT m.job, m.path, m.mtime, {columns} FROM members m JOIN results r"  # noqa: S608
            " ON r.version = ? AND r.hash = m.hash ORDER BY m.job, m.path", (RESULT_VERSION,))
        for job, path, mtime, *values in cursor:
            yield job, path, mtime, LogRecord(*values)

    def read_errors(self) -> Iterator[tuple[str, str]]:
        """(path, reason) of every input of this run that could not be read."""
        yield from self.db.execute(
            "SELECT path, reason FROM errors UNION ALL SELECT m.path, r.error FROM members m"
            " JOIN results r ON r.version = ? AND r.hash = m.hash WHERE r.error IS NOT NULL"
            " ORDER BY 1", (RESULT_VERSION,))

    # --- jobs and groups --------------------------------------------------------------------

    def add_unit(self, job: str, path: str, digest: str, seen: float, fingerprint: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO units VALUES (?, ?, ?, ?, ?)",
                        (job, path, digest, seen, fingerprint))

    def query(self, sql: str, args: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
        """Rows of a read-only query over the tables above (for groups.py)."""
        yield from self.db.execute(sql, args)

    def commit(self) -> None:
        self.db.commit()
