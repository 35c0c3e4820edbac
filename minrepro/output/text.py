"""Diagnosis -> the plain-text report `minrepro diagnose` prints. Pure functions."""

from __future__ import annotations

from minrepro.model import Diagnosis, Failure, FailureKind, ParamValue
from minrepro.sanitize import shown
from minrepro.taxonomy import CATEGORY_MEANING

EVIDENCE_CHARS = 200


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters at a word boundary where one is near, marked '…'."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", int(limit * 0.75), limit)
    return text[: cut if cut > 0 else limit - 1].rstrip() + "…"


def human_bytes(value: int) -> str:
    size = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return str(value)


def _param_text(name: str, value: ParamValue) -> str:
    if name.endswith("_bytes") and isinstance(value, int):
        return f"{value} ({human_bytes(value)})"
    return repr(value) if isinstance(value, str) else str(value)


def failure_summary(diagnosis: Diagnosis) -> str | None:
    """What failed first, where, and what followed, in one sentence:
    "rank 2 failed first: PIL.UnidentifiedImageError in a DataLoader worker at data.py:41
    in __getitem__ (data); then ranks 0, 1, 3 timed out in allreduce"."""
    failure = diagnosis.failure
    if failure is None:
        return None
    who = f"rank {failure.rank} failed first: " if failure.rank is not None else ""
    what = failure.exc_type or failure.message or "a traceback cut before its exception line"
    where = " in a DataLoader worker" if _in_worker(failure) else ""
    frame = failure.user_frame
    if frame is not None:
        function = f" in {frame.function}" if frame.function not in (None, "None", "") else ""
        where += f" at {_basename(frame.file)}:{frame.line}{function}"
    library = failure.library_frame
    if library is not None and library.package:
        where += f" (raised in {library.package})"
    root = f" [{diagnosis.root.value}]" if diagnosis.root else ""
    return f"{who}{what}{where}{root}{_cascade_text(diagnosis)}"


def _in_worker(failure: Failure) -> bool:
    return "_worker_loop" in failure.text or "in DataLoader worker" in failure.text


def _basename(path: str) -> str:
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def _cascade_text(diagnosis: Diagnosis) -> str:
    timeouts = sorted({f.rank for f in diagnosis.cascade
                       if f.kind is FailureKind.NCCL_TIMEOUT and f.rank is not None})
    if timeouts:
        ops = {f.message.removeprefix("collective timed out") for f in diagnosis.cascade
               if f.kind is FailureKind.NCCL_TIMEOUT}
        ranks = "rank" + ("s " if len(timeouts) > 1 else " ") + ", ".join(map(str, timeouts))
        return f"; then {ranks} timed out{sorted(ops)[0] if len(ops) == 1 else ''}"
    others = [f for f in diagnosis.cascade if f.exc_type]
    return f"; then {len(others)} more error(s) followed from it" if others else ""


def diagnosis_to_text(diagnosis: Diagnosis) -> str:
    """The text report; nothing in it can drive a terminal (see minrepro.sanitize)."""
    return shown(_text(diagnosis), multiline=True)


def _text(diagnosis: Diagnosis) -> str:
    first = failure_summary(diagnosis)
    if first and diagnosis.failure is not None and diagnosis.failure.rank is None:
        first = f"failed first: {first}"
    if not diagnosis.diagnosed:
        lines = [f"minrepro: {diagnosis.summary or 'no known cause'}"]
        if first:
            root = (diagnosis.root.value if diagnosis.root
                    else "unknown (the evidence does not decide)")
            lines = [first, f"  root class: {root}"]
            if diagnosis.rule_id:
                lines += [f"  {diagnosis.title} [{diagnosis.rule_id}]",
                          f"  fix: {diagnosis.fix}"]
            lines.append(f"minrepro: {diagnosis.summary}")
        if diagnosis.alternatives:
            lines.append("weak candidates:")
            lines += [f"  {a.cause} ({a.category}) {a.confidence:.2f}"
                      for a in diagnosis.alternatives]
        return "\n".join(lines) + "\n"
    lines = ([first, ""] if first else []) + [
        f"{diagnosis.category} / {diagnosis.cause}  (confidence {diagnosis.confidence:.2f},"
        f" rule {diagnosis.rule_id}, root class {diagnosis.root.value if diagnosis.root else '-'})",
        f"  {diagnosis.title}",
        *([f"  (category {diagnosis.category}: {CATEGORY_MEANING[diagnosis.category]})"]
          if diagnosis.category in CATEGORY_MEANING else []),
        "",
        "evidence:",
    ]
    for e in diagnosis.evidence:
        rank = f" [rank {e.rank}]" if e.rank is not None else ""
        lines.append(f"  line {e.line}{rank}: {clip(e.text, EVIDENCE_CHARS)}")
    if diagnosis.params:
        lines += ["", "values from the log:"]
        lines += [f"  {k} = {_param_text(k, v)}" for k, v in diagnosis.params.items()]
    lines += ["", "fix:", f"  {diagnosis.fix}"]
    if diagnosis.alternatives:
        lines += ["", "alternatives:"]
        lines += [f"  {a.cause} ({a.category}) {a.confidence:.2f}" for a in diagnosis.alternatives]
    return "\n".join(lines) + "\n"


def taxonomy_text() -> str:
    """The causes by category, each with its usual root class, then the root classes."""
    from minrepro.taxonomy import ROOT_MEANING, ROOT_OF, TAXONOMY

    lines = ["causes by category (root class in brackets):"]
    for category, causes in TAXONOMY.items():
        lines.append(f"  {category}:")
        lines += [f"    {cause} [{ROOT_OF[cause].value}]" for cause in causes]
    lines.append("root classes:")
    lines += [f"  {root.value:<12} {meaning}" for root, meaning in ROOT_MEANING.items()]
    return "\n".join(lines) + "\n"
