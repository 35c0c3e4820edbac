"""Every cause in the taxonomy has a rule, a sample, a golden file and a template."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from minrepro.diagnose.rules.registry import load_rules
from minrepro.repro.render import has_template, load_spec, template_dir
from minrepro.taxonomy import ALL_CAUSES, CATEGORY_OF, ROOT_OF, TAXONOMY
from minrepro.tools.scoring import CaseResult, case_line, summary

ROOT = Path(__file__).resolve().parents[1]
LABELS = yaml.safe_load((ROOT / "samples" / "labels.yaml").read_text(encoding="utf-8"))
RULE_CAUSES = {rule.cause for rule in load_rules()}


def test_taxonomy_matches_design_md() -> None:
    design = ROOT.parent / "shared" / "DESIGN.md"
    if not design.exists():
        pytest.skip("no ../shared/DESIGN.md beside this checkout")
    text = design.read_text(encoding="utf-8")
    for category, causes in TAXONOMY.items():
        row = ", ".join(f"{cause} [{ROOT_OF[cause].value}]" for cause in causes)
        assert f"| {category} | {row} |" in text
    assert set(ROOT_OF) == set(ALL_CAUSES)


@pytest.mark.parametrize("cause", ALL_CAUSES)
def test_cause_is_covered(cause: str) -> None:
    assert cause in RULE_CAUSES, "a rule pack"
    samples = [c["file"] for c in LABELS if c["cause"] == cause]
    assert samples, "a sample in samples/labels.yaml"
    for name in samples:
        assert (ROOT / "tests" / "golden" / name.replace(".log", ".json")).exists(), name
    assert has_template(cause), "a template"
    assert (template_dir() / f"{cause}.yaml").exists()
    assert CATEGORY_OF[cause] in {c["category"] for c in LABELS if c["cause"] == cause}


def test_negative_samples() -> None:
    negatives = [c for c in LABELS if c["category"] == "none"]
    assert len(negatives) >= 3
    assert {c["cause"] for c in negatives} >= {"healthy", "unrelated_error"}


@pytest.mark.parametrize("cause", [c for c in ALL_CAUSES if has_template(c)])
def test_every_template_says_what_its_failure_prints(cause: str) -> None:
    assert load_spec(cause).expect, f"templates/{cause}.yaml has no expect"


def test_a_case_line_marks_a_wrong_root_or_exception_type_even_with_the_cause_right() -> None:
    """The per-case line of the scoring tool shows what a round got wrong beyond the cause."""
    right = CaseResult("a.log", None, None, 0.0, root=("code", "code"),
                       exc_type=("torch.OutOfMemoryError", "OutOfMemoryError"))
    assert "(wrong)" not in case_line(right)
    wrong = CaseResult("b.log", None, None, 0.0, root=("data", None),
                       exc_type=("KeyError", "IndexError"))
    assert case_line(wrong).count("(wrong)") == 2 and "root data:none" in case_line(wrong)
    healthy = CaseResult("c.log", None, None, 0.0, root=(None, "config"), healthy=True)
    assert "root none:config (wrong)" in case_line(healthy)
    ranked = CaseResult("d.log", "nccl_timeout", "nccl_timeout", 0.9, first_rank=(2, 0))
    assert case_line(ranked).endswith("rank 2:0 (wrong)")
    assert "first rank right: 0/1" in summary([ranked])
