"""The real-log corpora in ../shared/corpus must classify right.

dev: snippets from public bug reports (>= 95 % of causes right, no false alarm).
raw: whole training logs committed to public repositories, most of them healthy: no false
alarm on a healthy or unrelated run, and at least 12 of the 14 failing runs right.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from minrepro.tools.scoring import load_labels, score_case

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("MINREPRO_CORPUS", ROOT.parent / "shared" / "corpus"))
#: corpus -> (least share of causes right, least count of causes right)
BARS = {"dev": (0.95, 0), "raw": (0.0, 12)}

if not (SHARED / "dev" / "labels.yaml").exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"the real-log corpus is missing at {SHARED}")
    pytest.skip(f"no corpus at {SHARED} (set MINREPRO_CORPUS)", allow_module_level=True)


@pytest.fixture(scope="module", params=sorted(BARS))
def corpus(request: pytest.FixtureRequest) -> tuple[str, list]:
    folder = SHARED / request.param
    if not (folder / "labels.yaml").exists():
        if os.environ.get("CI"):
            raise RuntimeError(f"the corpus {folder} is missing")
        pytest.skip(f"no corpus at {folder}")
    return request.param, [score_case(folder, case) for case in load_labels(folder)]


def test_cause_accuracy(corpus) -> None:
    name, results = corpus
    share, count = BARS[name]
    positives = [r for r in results if r.expected is not None]
    right = sum(r.right for r in positives)
    misses = [f"{r.file}: got {r.got}" for r in positives if not r.right]
    assert right / len(positives) >= share and right >= count, misses


def test_no_false_alarms_on_none_cases(corpus) -> None:
    _, results = corpus
    alarms = [f"{r.file}: got {r.got}" for r in results if r.expected is None and r.got]
    assert not alarms


def test_labelled_params_extracted(corpus) -> None:
    _, results = corpus
    wrong = [f"{r.file}: {r.params_wrong}" for r in results if r.right and r.params_wrong]
    assert not wrong
