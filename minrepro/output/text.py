"""Diagnosis -> the plain-text report `minrepro diagnose` prints. Pure functions."""

from __future__ import annotations

from minrepro.model import Diagnosis, ParamValue


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


def diagnosis_to_text(diagnosis: Diagnosis) -> str:
    if not diagnosis.diagnosed:
        lines = [f"minrepro: {diagnosis.summary or 'no known cause'}"]
        if diagnosis.alternatives:
            lines.append("weak candidates:")
            lines += [f"  {a.cause} ({a.category}) {a.confidence:.2f}"
                      for a in diagnosis.alternatives]
        return "\n".join(lines) + "\n"
    lines = [
        f"{diagnosis.category} / {diagnosis.cause}  (confidence {diagnosis.confidence:.2f},"
        f" rule {diagnosis.rule_id})",
        f"  {diagnosis.title}",
        "",
        "evidence:",
    ]
    for e in diagnosis.evidence:
        rank = f" [rank {e.rank}]" if e.rank is not None else ""
        lines.append(f"  line {e.line}{rank}: {e.text[:200]}")
    if diagnosis.params:
        lines += ["", "values from the log:"]
        lines += [f"  {k} = {_param_text(k, v)}" for k, v in diagnosis.params.items()]
    lines += ["", "fix:", f"  {diagnosis.fix}"]
    if diagnosis.alternatives:
        lines += ["", "alternatives:"]
        lines += [f"  {a.cause} ({a.category}) {a.confidence:.2f}" for a in diagnosis.alternatives]
    return "\n".join(lines) + "\n"
