"""Which logs a triage reads: files, folders (recursively), globs, .gz; and how jobs are cut.

A folder holding several per-rank or per-node logs of one job (`rank*.log`, SLURM's `*.out`,
or what `--job-glob` names) is one job: its logs are diagnosed one by one, and the job's
failure is its first failing rank (see groups.py). Everything else is a job of one log.
Inputs are yielded one at a time, in a stable order (sorted), never listed whole.
"""

from __future__ import annotations

import fnmatch
import glob
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from minrepro.errors import shown_path

#: Names of a job's per-rank / per-node logs when --job-glob does not say otherwise.
JOB_GLOBS: tuple[str, ...] = ("rank*.log", "rank*.log.gz", "*.out", "*.out.gz")
#: What a folder walk picks up (a file named on the command line is always read).
LOG_GLOBS: tuple[str, ...] = ("*.log", "*.out", "*.err", "*.txt", "*.log.gz", "*.out.gz",
                              "*.err.gz", "*.txt.gz", "*.gz")
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True)
class LogInput:
    """One log to read; `job` is the job it belongs to (its own path for a lone log)."""

    path: str
    job: str


@dataclass(frozen=True, slots=True)
class InputError:
    """An input that cannot be read, with the one-line reason."""

    path: str
    reason: str


def iter_inputs(paths: Iterable[str], *, job_glob: str | None = None
                ) -> Iterator[LogInput | InputError]:
    """Each log named by `paths` (files, folders, globs) once, or the error of a bad path."""
    job_globs = (job_glob,) if job_glob else JOB_GLOBS
    seen: set[str] = set()  # paths only, to skip one named twice: bounded by the fleet
    for given in paths:
        for item in _expand(given, job_globs):
            key = item.path
            if key in seen:
                continue
            seen.add(key)
            yield item


def _expand(given: str, job_globs: tuple[str, ...]) -> Iterator[LogInput | InputError]:
    if os.path.isdir(given):
        yield from _walk(given, job_globs)
    elif os.path.lexists(given) or not (_GLOB_CHARS & set(given)):
        yield LogInput(path=given, job=given)  # a missing file is reported when it is read
    else:
        matches = sorted(glob.iglob(given, recursive=True))
        if not matches:
            yield InputError(path=given, reason=f"{shown_path(given)}: no file matches")
        for match in matches:
            yield from _walk(match, job_globs) if os.path.isdir(match) else \
                iter([LogInput(path=match, job=match)])


def _walk(root: str, job_globs: tuple[str, ...]) -> Iterator[LogInput | InputError]:
    errors: list[OSError] = []
    for folder, dirs, files in os.walk(root, onerror=errors.append):
        dirs.sort()
        yield from _folder_logs(folder, sorted(files), job_globs)
        while errors:
            err = errors.pop(0)
            where = err.filename or folder
            yield InputError(path=str(where),
                             reason=f"{shown_path(where)}: cannot list: {err.strerror or err}")


def _folder_logs(folder: str, names: list[str], job_globs: tuple[str, ...]
                 ) -> Iterator[LogInput]:
    """The folder's logs; those matching a job glob form one job when there are two or more."""
    job_names = _job_members(names, job_globs)
    for name in names:
        if name.startswith(".") or not (name in job_names or _is_log(name)):
            continue
        path = os.path.join(folder, name)
        yield LogInput(path=path, job=folder if name in job_names else path)


def _job_members(names: list[str], job_globs: tuple[str, ...]) -> set[str]:
    for pattern in job_globs:
        members = {name for name in names if fnmatch.fnmatch(name, pattern)}
        if len(members) >= 2:
            return members
    return set()


def _is_log(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in LOG_GLOBS)


def rank_of(path: str) -> int | None:
    """The rank or node index a per-rank log's name carries (`rank3.log`, `job-12_3.out`)."""
    name = os.path.basename(path).split(".")[0]
    digits = ""
    for char in reversed(name):
        if not char.isdigit():
            break
        digits = char + digits
    return int(digits) if digits else None
