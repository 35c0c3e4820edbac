"""Diagnosis -> the JSON object of the `diagnose --json` contract. Pure functions."""

from __future__ import annotations

from typing import Any

from minrepro.model import PACKAGE_FACT, Diagnosis, Failure, Frame, package_versions
from minrepro.sanitize import shown_tree


def diagnosis_to_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """The `diagnose --json` object: contract keys first, then extras. Nothing volatile.
    Every string passes the sanitiser: `ensure_ascii=False` would print C1 and bidi raw."""
    return shown_tree({
        "cause": diagnosis.cause,
        "category": diagnosis.category,
        "confidence": diagnosis.confidence,
        "root": diagnosis.root.value if diagnosis.root else None,
        "params": dict(diagnosis.params),
        "evidence": [{"line": e.line, "rank": e.rank, "text": e.text}
                     for e in diagnosis.evidence],
        "failure": failure_to_json(diagnosis.failure),
        "cascade": [{"line": f.line, "rank": f.rank, "text": f.headline or f.message}
                    for f in diagnosis.cascade],
        "fix": diagnosis.fix,
        "alternatives": [{"cause": a.cause, "category": a.category,
                          "confidence": round(a.confidence, 2)}
                         for a in diagnosis.alternatives],
        "rule_id": diagnosis.rule_id,
        "title": diagnosis.title,
        "variant": diagnosis.variant,
        "summary": diagnosis.summary,
        "source": diagnosis.source,
        "env": env_to_json(diagnosis.env),
        "warnings": list(diagnosis.warnings),
    })


def env_to_json(env: dict[str, str]) -> dict[str, Any]:
    """What the log shows of its environment: the facts (torch_version, gpu_name, ...) and,
    under "packages", the installed packages' versions ({"transformers": "4.36.2"})."""
    facts: dict[str, Any] = {k: v for k, v in env.items() if not k.startswith(PACKAGE_FACT)}
    packages = package_versions(env)
    if packages:
        facts["packages"] = packages
    return facts


def failure_to_json(failure: Failure | None) -> dict[str, Any] | None:
    """The first failure: what, where (the innermost frame of the user's code, and the
    library frame it failed in), on which rank."""
    if failure is None:
        return None
    frame = failure.user_frame or (failure.frames[-1] if failure.frames else None)
    return {
        "exc_type": failure.exc_type or None,
        "message": failure.message,
        "line": failure.line,
        "rank": failure.rank,
        "kind": failure.kind.value,
        "frame": frame_to_json(frame),
        "library_frame": frame_to_json(failure.library_frame),
    }


def frame_to_json(frame: Frame | None) -> dict[str, Any] | None:
    if frame is None:
        return None
    return {"file": frame.file, "line": frame.line, "function": frame.function,
            "package": frame.package}
