"""The per-log work of a triage: diagnose one log in-process, keep what grouping needs.

`diagnose_batch` is what every engine runs (a local process, a Dask worker): it takes a
batch of (content hash, path) and returns one `LogRecord` a log, plain values only, so it
pickles small. Rules are loaded once a process, not once a log.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from dataclasses import dataclass

from minrepro.diagnose.pipeline import diagnose_log, make_selector
from minrepro.diagnose.reader import LogReader
from minrepro.diagnose.rules.registry import RuleSet, load_rules
from minrepro.errors import MinreproError, shown_path
from minrepro.model import Diagnosis, FailureKind
from minrepro.triage.fingerprint import signature

_EVIDENCE_KEPT = 5
_EVIDENCE_CHARS = 300
_CASCADE_TYPES = ("ChildFailedError", "DistBackendError")
_HASH_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class LogRecord:
    """What a triage keeps of one diagnosed log (or why it could not be read)."""

    hash: str
    fingerprint: str = ""
    kind: str = ""
    frame: str = ""
    message: str = ""
    cause: str | None = None
    category: str | None = None
    root: str | None = None
    headline: str = ""  # the first failure, `Type: message`
    stamp: float | None = None  # the first failure's log timestamp, for ordering ranks
    cascade: bool = False  # the failure looks like another rank's consequence
    evidence: str = "[]"  # JSON list of {"line", "rank", "text"}
    error: str | None = None  # the one-line reason the log could not be read


def content_hash(path: str) -> str:
    """sha256 of the file's bytes (a .gz is hashed as stored). Raises OSError."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise IsADirectoryError(path) if stat.S_ISDIR(mode) else OSError(f"{path}: not a file")
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def read_error(path: str, err: OSError) -> str:
    """The library's one-line reason a path cannot be read (the same words as `diagnose`)."""
    try:
        for _ in LogReader(path):
            break
    except MinreproError as found:
        return str(found)
    return f"{shown_path(path)}: cannot read ({err.strerror or err})"


@functools.lru_cache(maxsize=4)
def _rules(rule_dirs: tuple[str, ...]) -> RuleSet:
    return load_rules(rule_dirs)


def diagnose_batch(batch: list[tuple[str, str]], rule_dirs: tuple[str, ...] = ()
                   ) -> list[LogRecord]:
    """Diagnose each (hash, path) of `batch`; a log that cannot be read gets its reason."""
    rules = _rules(rule_dirs)
    records = []
    for digest, path in batch:
        try:  # a selector a log: it counts the bytes it has seen (the head is read in full)
            diagnosis = diagnose_log(path, rules=rules,
                                     reader=LogReader(path, selector=make_selector(rules)))
        except MinreproError as err:
            records.append(LogRecord(hash=digest, error=str(err)))
            continue
        except Exception as err:  # noqa: BLE001 - one log's bug must not stop a fleet's run
            reason = f"{shown_path(path)}: internal error: {type(err).__name__}: {err}"
            records.append(LogRecord(hash=digest, error=reason[:300]))
            continue
        records.append(to_record(digest, diagnosis))
    return records


def to_record(digest: str, diagnosis: Diagnosis) -> LogRecord:
    """The grouping view of a diagnosis."""
    sig = signature(diagnosis)
    failure = diagnosis.failure
    evidence = [{"line": e.line, "rank": e.rank, "text": e.text[:_EVIDENCE_CHARS]}
                for e in diagnosis.evidence[:_EVIDENCE_KEPT]]
    return LogRecord(
        hash=digest, fingerprint=sig.digest, kind=sig.kind, frame=sig.frame,
        message=sig.message, cause=diagnosis.cause, category=diagnosis.category,
        root=diagnosis.root.value if diagnosis.root else None,
        headline=failure.headline[:300] if failure else "",
        stamp=failure.timestamp if failure else None,
        cascade=_looks_like_cascade(diagnosis), evidence=json.dumps(evidence))


def _looks_like_cascade(diagnosis: Diagnosis) -> bool:
    """A rank that failed because another one did: a collective timeout, a killed process,
    the launcher's ChildFailedError, or nothing at all of its own."""
    failure = diagnosis.failure
    if failure is None:
        return not diagnosis.answered
    if diagnosis.cause == "nccl_timeout":
        return True
    if failure.kind in (FailureKind.NCCL_TIMEOUT, FailureKind.KILLED):
        return True
    return failure.short_type in _CASCADE_TYPES
