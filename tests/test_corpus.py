"""The real-log corpus in ../shared/corpus/dev must classify right (>= 95%, no false alarms)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minrepro.tools.scoring import load_labels, score_case

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("MINREPRO_CORPUS", ROOT.parent / "shared" / "corpus" / "dev"))

if not (CORPUS / "labels.yaml").exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"the real-log corpus is missing at {CORPUS}")
    pytest.skip(f"no corpus at {CORPUS} (set MINREPRO_CORPUS)", allow_module_level=True)

CASES = load_labels(CORPUS)


@pytest.fixture(scope="module")
def results():
    return [score_case(CORPUS, case) for case in CASES]


def test_cause_accuracy(results) -> None:
    positives = [r for r in results if r.expected is not None]
    right = sum(r.right for r in positives)
    misses = [f"{r.file}: got {r.got}" for r in positives if not r.right]
    assert right / len(positives) >= 0.95, misses


def test_no_false_alarms_on_none_cases(results) -> None:
    alarms = [f"{r.file}: got {r.got}" for r in results if r.expected is None and r.got]
    assert not alarms


def test_labelled_params_extracted(results) -> None:
    wrong = [f"{r.file}: {r.params_wrong}" for r in results if r.right and r.params_wrong]
    assert not wrong
