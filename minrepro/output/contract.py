"""Diagnosis -> the JSON object of the `diagnose --json` contract. Pure functions."""

from __future__ import annotations

from typing import Any

from minrepro.model import Diagnosis


def diagnosis_to_json(diagnosis: Diagnosis) -> dict[str, Any]:
    """The `diagnose --json` object: contract keys first, then extras. Nothing volatile."""
    return {
        "cause": diagnosis.cause,
        "category": diagnosis.category,
        "confidence": diagnosis.confidence,
        "params": dict(diagnosis.params),
        "evidence": [{"line": e.line, "rank": e.rank, "text": e.text}
                     for e in diagnosis.evidence],
        "fix": diagnosis.fix,
        "alternatives": [{"cause": a.cause, "category": a.category,
                          "confidence": round(a.confidence, 2)}
                         for a in diagnosis.alternatives],
        "rule_id": diagnosis.rule_id,
        "title": diagnosis.title,
        "variant": diagnosis.variant,
        "summary": diagnosis.summary,
        "source": diagnosis.source,
        "env": dict(diagnosis.env),
        "warnings": list(diagnosis.warnings),
    }
