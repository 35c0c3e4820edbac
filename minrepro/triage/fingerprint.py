"""The grouping signature of one failure: what it is, where in the user's code, what it said.

Modelled on Sentry's grouping: the kind (the cause, or for a failure outside the taxonomy its
root class and exception type), the innermost frame of the user's own code (file name and
function, no line number: an edit above it must not split a group), and the message with
its parameters masked (numbers, paths, hex ids, ranks, host names), so the same failure on
another run, rank or machine gets the same signature. Versioned: a change of algorithm
changes every digest's prefix, never silently merges old and new groups.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from minrepro.model import Diagnosis, Failure

VERSION = "fp1"
_MESSAGE_CAP = 200

# Order matters: a path or a hex id holds digits that the number mask would cut apart.
_MASKS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:[A-Za-z]:)?(?:[\\/][\w.@~+-]+){2,}[\\/]?|(?:\.{1,2}|~)(?:[\\/][\w.@+-]+)+"),
     "<path>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
     "<id>"),
    (re.compile(r"\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b", re.I),
     "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\b(?:host(?:name)?|node)(\s*[=:]\s*|\s+)[\w.-]+", re.I), r"host\1<host>"),
    (re.compile(r"\b[a-z][\w-]*\d[\w-]*(?:\.[a-z][\w-]*)+\b", re.I), "<host>"),
    (re.compile(r"\b(?:[a-z]+[-_])*(?:node|host|gpu|worker|compute|ip)[-_]?[\w-]*\d\b", re.I),
     "<host>"),
    (re.compile(r"\b(rank|local_rank|global_rank|device|cuda|gpu|pid)(\s*[=:#]?\s*)\d+", re.I),
     r"\1\2<n>"),
    (re.compile(r"[-+]?\b\d+(?:[.,]\d+)*(?:e[-+]?\d+)?"), "<n>"),
    (re.compile(r"'[^']{40,}'|\"[^\"]{40,}\""), "<str>"),
    (re.compile(r"\s+"), " "),
)


@dataclass(frozen=True, slots=True)
class Signature:
    """A failure's grouping key; `digest` is what groups compare, the rest says why."""

    kind: str  # "cuda_oom", or "config:KeyError" / "undecided:RuntimeError" / "none"
    frame: str  # "train.py:main" (the innermost user frame), or ""
    message: str  # the first message line, masked

    @property
    def digest(self) -> str:
        text = "\x00".join((VERSION, self.kind, self.frame, self.message))
        return f"{VERSION}-{hashlib.sha1(text.encode('utf-8')).hexdigest()[:12]}"


def mask_message(message: str) -> str:
    """The message with its parameters replaced by placeholders (stable across runs)."""
    text = message[:_MESSAGE_CAP * 2]
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.strip()[:_MESSAGE_CAP]


def frame_key(failure: Failure | None) -> str:
    """`file.py:function` of the innermost frame in the user's own code (no directories: the
    checkout lives elsewhere on every machine; no line: edits move it)."""
    frame = failure.user_frame if failure else None
    if frame is None:
        return ""
    name = re.split(r"[\\/]", frame.file)[-1]
    return f"{name}:{frame.function or '?'}"


def kind_of(diagnosis: Diagnosis) -> str:
    """The cause; else the root class (or "undecided") and the failure's exception type."""
    if diagnosis.cause:
        return diagnosis.cause
    failure = diagnosis.failure
    if failure is None:
        return "none"
    root = diagnosis.root.value if diagnosis.root else "undecided"
    what = failure.short_type or failure.kind.value
    return f"{root}:{what}"


def signature(diagnosis: Diagnosis) -> Signature:
    """The signature of the diagnosis's first failure (or of its cause alone: a curve)."""
    failure = diagnosis.failure
    message = mask_message(failure.message) if failure else ""
    return Signature(kind=kind_of(diagnosis), frame=frame_key(failure), message=message)
