"""Golden files from data: samples/<name>.log <-> tests/golden/<name>.json.

`python -m pytest tests/test_golden.py --update-golden` rewrites them on purpose.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from minrepro.diagnose.pipeline import diagnose_log
from minrepro.output.contract import diagnosis_to_json

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
GOLDEN = Path(__file__).parent / "golden"
LABELS = {case["file"]: case for case in yaml.safe_load((SAMPLES / "labels.yaml").read_text())}
LOGS = sorted(SAMPLES.glob("*.log"))


def test_every_sample_is_labelled() -> None:
    assert sorted(LABELS) == [p.name for p in LOGS]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_sample_diagnoses_to_its_label(log: Path) -> None:
    case = LABELS[log.name]
    diagnosis = diagnose_log(log)
    expected = None if case["category"] == "none" else case["cause"]
    assert diagnosis.cause == expected, diagnosis.summary
    if expected is not None:
        assert diagnosis.category == case["category"]
        assert diagnosis.confidence >= 0.5
        assert diagnosis.evidence, "a diagnosis names its evidence lines"


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.stem)
def test_golden_json(log: Path, update_golden: bool) -> None:
    actual = json.dumps(diagnosis_to_json(diagnose_log(log)), indent=2, sort_keys=True,
                        ensure_ascii=False) + "\n"
    golden = GOLDEN / f"{log.stem}.json"
    if update_golden:
        golden.write_text(actual, encoding="utf-8")
    assert golden.exists(), f"missing {golden.name}: run pytest --update-golden"
    assert actual == golden.read_text(encoding="utf-8")
