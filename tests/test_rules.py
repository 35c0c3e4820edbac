"""Every rule's own examples, the prefilter hints, and the rule-pack schema (ok/fail files)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minrepro.diagnose.matcher import RuleMatcher
from minrepro.diagnose.pipeline import diagnose_lines
from minrepro.diagnose.rules import files as rulefiles
from minrepro.diagnose.rules import registry as rulepack
from minrepro.diagnose.rules.pack import load_rule_file, signal_matches
from minrepro.diagnose.rules.registry import load_rules
from minrepro.errors import RulePackError
from minrepro.model import Line
from minrepro.taxonomy import ALL_CAUSES, CATEGORY_OF

REGISTRY = load_rules(eager=True)  # compiles every regex and checks its groups
RULES = REGISTRY.pattern_rules  # the rule files (the analyzers' checks have no patterns)
SCHEMA_DIR = Path(__file__).parent / "rule_schema"


def _primary_hits(rule, text: str) -> list[str]:
    return [s.name for s in rule.signals if s.role == "primary" and signal_matches(s, text)]


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_examples(rule) -> None:
    assert rule.examples_match, f"{rule.id} has no 'match' examples"
    for text in rule.examples_match:
        assert _primary_hits(rule, text), f"{rule.id} should match: {text!r}"
    for text in rule.examples_no_match:
        assert not _primary_hits(rule, text), f"{rule.id} should not match: {text!r}"


def test_a_signal_relation_keeps_only_matches_whose_numbers_hold() -> None:
    """`exceeds: [seq_len, max_positions]`: 937 tokens against a 512 table is a hit, 8
    against 1024 (a broadcast of other tensors) is not, and neither is a tie."""
    (rule,) = [r for r in RULES if r.cause == "position_overflow"]
    (signal,) = [s for s in rule.signals if s.name == "hf-size-mismatch"]
    text = "RuntimeError: The size of tensor a ({}) must match the size of tensor b ({}) at " \
           "non-singleton dimension 1"
    assert signal.exceeds == ("seq_len", "max_positions")
    assert signal_matches(signal, text.format(937, 512))
    assert not signal_matches(signal, text.format(8, 1024))
    assert not signal_matches(signal, text.format(512, 512))
    # not the position table: an element-wise op on two tensors of different sizes
    assert diagnose_lines(Line(line=1, text=text.format(8, 1024)) for _ in (0,)).cause == \
        "shape_mismatch"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_examples_pass_the_prefilter(rule) -> None:
    """A signal whose regex matches must also be reached through its literal hints."""
    for text in rule.examples_match:
        matcher = RuleMatcher([rule])
        matcher.feed(Line(line=1, text=text))
        found = matcher.findings()
        assert found and found[0].cause == rule.cause, f"{rule.id}: prefilter lost {text!r}"


def _re_compatible(signal) -> bool:
    try:  # hypothesis generates matches for `re` patterns; a regex-only construct is left out
        re.compile(signal.source, re.IGNORECASE if signal.ignore_case else 0)
    except re.error:
        return False
    return True


GATED = [(rule, signal) for rule in RULES for signal in rule.signals if _re_compatible(signal)]
# Characters that IGNORECASE folds onto ASCII letters though lower() keeps them apart
# (long s, Kelvin sign, dotted/dotless i): a line holding them is not worth a test.
_ALPHABET = st.characters(exclude_characters="\u017f\u212a\u0130\u0131", exclude_categories=["Cs"])


@pytest.mark.parametrize(("rule", "signal"), GATED, ids=[f"{r.id}/{s.name}" for r, s in GATED])
def test_literal_gates_are_implied_by_the_regex(rule, signal) -> None:
    """Every text the regex matches holds one of the signal's hints, and one of its `requires`
    words: the literal gates only skip lines the regex would not match anyway."""

    # Derandomized: CI must not fail on a search that found nothing last time. To explore,
    # drop derandomize and run with --hypothesis-seed=N (seeds 1-5 passed when written).
    @settings(max_examples=40, deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.from_regex(re.compile(signal.source, re.IGNORECASE if signal.ignore_case else 0),
                         alphabet=_ALPHABET))
    def gates_pass(text: str) -> None:
        if not signal.pattern.search(text):  # where `re` and `regex` read a pattern differently
            return
        lowered = text.lower()
        assert any(hint in lowered for hint in signal.hints), f"no hint in {text!r}"
        assert not signal.requires or any(w in lowered for w in signal.requires), (
            f"no `requires` word in {text!r}")

    gates_pass()


def test_every_builtin_signal_has_hints() -> None:
    lacking = [f"{r.id}/{s.name}" for r in RULES for s in r.signals if not s.hints]
    assert not lacking, f"signals without literal hints run on every line: {lacking}"


def test_one_builtin_rule_per_cause_with_stable_ids() -> None:
    # The MR-MON family reads the live monitor's alert lines: a second rule for its causes.
    causes = sorted(r.cause for r in RULES if not r.id.startswith("MR-MON-"))
    assert causes == sorted(ALL_CAUSES)
    assert len({r.id for r in RULES}) == len(RULES)
    for rule in RULES:
        assert CATEGORY_OF[rule.cause] == rule.category
        assert Path(rule.source).stem == rule.cause


@pytest.mark.parametrize("path", sorted(SCHEMA_DIR.glob("*.ok.yaml")), ids=lambda p: p.name)
def test_schema_ok(path: Path) -> None:
    assert load_rule_file(path).id.startswith("MR-")


@pytest.mark.parametrize("path", sorted(SCHEMA_DIR.glob("*.fail.yaml")), ids=lambda p: p.name)
def test_schema_fail(path: Path) -> None:
    expected = path.read_text(encoding="utf-8").splitlines()[0].removeprefix("# error:").strip()
    with pytest.raises(RulePackError) as err:
        load_rule_file(path)
    message = str(err.value)
    assert expected in message
    assert message.startswith(path.name), "the error names the file first"


def test_user_pack_cannot_override_builtin(tmp_path: Path) -> None:
    pack = (SCHEMA_DIR / "minimal.ok.yaml").read_text(encoding="utf-8")
    (tmp_path / "mine.yaml").write_text(pack.replace("MR-USR-001", "MR-MEM-002"))
    with pytest.raises(RulePackError, match="already defined by the built-in cuda_oom.yaml"):
        load_rules([tmp_path])


def test_user_pack_duplicate_ids(tmp_path: Path) -> None:
    pack = (SCHEMA_DIR / "minimal.ok.yaml").read_text(encoding="utf-8")
    (tmp_path / "a.yaml").write_text(pack)
    (tmp_path / "b.yaml").write_text(pack)
    with pytest.raises(RulePackError, match="MR-USR-001: id: duplicate"):
        load_rules([tmp_path])


def test_user_pack_adds_a_rule(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text((SCHEMA_DIR / "minimal.ok.yaml").read_text())
    assert any(r.id == "MR-USR-001" for r in load_rules([tmp_path]))


def test_frozen_rules_are_current() -> None:
    """frozen.json (read at start-up instead of the YAML) holds exactly what the YAML says."""
    frozen = rulepack._frozen_rules()
    assert frozen is not None, "frozen.json is stale: run `python -m minrepro.tools.freeze`"
    assert frozen == rulepack._load_dir(rulepack.BUILTIN_DIR, eager=False)


@pytest.mark.parametrize("content", ["", "{not json", '{"fingerprint": "x", "rules": []}',
                                     '{"rules": 1}', "[]"])
def test_a_stale_or_broken_frozen_file_falls_back_to_the_yaml(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str) -> None:
    expected = load_rules()
    frozen = tmp_path / "frozen.json"
    frozen.write_text(content)
    monkeypatch.setattr(rulefiles, "FROZEN", frozen)
    assert rulepack._frozen_rules() is None
    assert load_rules() == expected
    frozen.unlink()
    assert load_rules() == expected


def test_freeze_writes_a_file_that_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rulefiles, "FROZEN", tmp_path / "frozen.json")
    assert f"{len(rulefiles.rule_files(rulefiles.BUILTIN_DIR))} rule files" in rulepack.freeze()
    assert rulepack._frozen_rules() == load_rules().pattern_rules


def _finding_for(cause: str, lines: list[str]):
    matcher = RuleMatcher(RULES)
    for number, text in enumerate(lines, 1):
        matcher.feed(Line(line=number, text=text))
    return next(f for f in matcher.findings() if f.cause == cause)


def test_a_lower_lr_that_did_not_help_counts_against_divergence() -> None:
    tried = _finding_for("lr_divergence", [
        "I used the dataset you provided and found that the loss diverged.",
        "I have tried to use a smaller learning rate (`--lr`), but `loss=Nan` still exists."])
    fixed = _finding_for("lr_divergence", [
        "I used the dataset you provided and found that the loss diverged.",
        "Using a smaller learning rate fixed it."])
    assert tried.kept_share < 1 and fixed.kept_share == 1


CASES = [(rule, case) for rule in RULES for case in rule.cases]


def test_every_rule_file_carries_cases() -> None:
    for rule in RULES:
        causes = [case.cause for case in rule.cases]
        assert rule.cause in causes, f"{rule.id} has no case that names its cause"
        assert any(c != rule.cause for c in causes), f"{rule.id} has no look-alike case"


@pytest.mark.parametrize(("rule", "case"), CASES, ids=lambda x: getattr(x, "name", "")[:40])
def test_rule_cases_through_matcher_and_decide(rule, case) -> None:
    """Each named case is a whole log: matcher, extractors, analyzers and decide together."""
    lines = [Line(line=n, text=text) for n, text in enumerate(case.log.splitlines(), 1)]
    diagnosis = diagnose_lines(lines, rules=REGISTRY)
    assert diagnosis.cause == case.cause, f"{rule.id} {case.name}: got {diagnosis.cause}"
    for name, value in case.params:
        assert diagnosis.params.get(name) == value, f"{rule.id} {case.name}: {name}"
    if case.cause is not None:
        credited = REGISTRY.get(diagnosis.rule_id or "")
        assert credited is not None and credited.cause == case.cause


def test_a_comment_in_the_source_line_of_a_traceback_is_no_evidence() -> None:
    """Python quotes the raising source line; its comment (`# avoid a CUDA memory leak`) is
    the code's author talking, not the run: no cause from it. The same words as a report's
    prose still count."""
    frame = ['  File "/content/yolov9/train.py", line 108, in train',
             "    ckpt = torch.load(weights)  # load to CPU to avoid CUDA memory leak",
             "_pickle.UnpicklingError: invalid load key, '<'."]
    lines = [Line(line=n, text=t) for n, t in enumerate(["Traceback (most recent call last):",
                                                         *frame], start=1)]
    assert diagnose_lines(iter(lines)).cause is None
    prose = "GPU memory leak: memory keeps increasing every iteration"
    matcher = RuleMatcher(RULES)
    matcher.feed(Line(line=1, text=prose))
    assert "undetached_loss_list" in {f.cause for f in matcher.findings()}


def test_a_printed_settings_file_is_its_authors_comments_no_evidence() -> None:
    """nanoGPT prints its config file into the log: `# we expect to overfit on this small
    dataset` is the author's expectation, not the run; the settings themselves still read."""
    config = ["Overriding config with config/train_shakespeare_char.py:",
              "eval_interval = 250 # keep frequent because we'll overfit",
              "",  # a blank line between the file's sections
              "# we expect to overfit on this small dataset, so only save when val improves",
              "always_save_checkpoint = False"]
    lines = [Line(line=n, text=t) for n, t in enumerate(config, start=1)]
    assert diagnose_lines(iter(lines)).cause is None
    matcher = RuleMatcher(RULES)
    matcher.feed(Line(line=1, text="the model overfits: val loss rises while train loss falls"))
    assert "overfitting" in {f.cause for f in matcher.findings()}
    # far below the file's last setting, a comment line is not the file's
    matcher = RuleMatcher(RULES)
    for n, text in enumerate(["max_iters = 5000", "step 1 loss 2.3", "step 2 loss 2.2",
                              "step 3 loss 2.1", "# the model overfits: val loss rises while "
                              "train loss falls"], start=1):
        matcher.feed(Line(line=n, text=text))
    assert "overfitting" in {f.cause for f in matcher.findings()}


def _softmax_finding(gap: int):
    """A half-precision cast, `gap` filler lines, then softmax's backward returning NaN."""
    rows = ["model = model.cuda().half()"] + [f"step {i} ok" for i in range(gap)] + [
        "RuntimeError: Function 'SoftmaxBackward0' returned nan values in its 0th output."]
    matcher = RuleMatcher(load_rules())
    searched: list[str] = []
    search = matcher._search

    def spy(name, signal, text):
        searched.append(name)
        return search(name, signal, text)

    matcher._search = spy  # type: ignore[method-assign]
    for number, text in enumerate(rows, 1):
        matcher.feed(Line(line=number, text=text))
    found = next(f for f in matcher.findings() if f.cause == "softmax_overflow")
    return found, searched


def test_a_supporting_line_before_the_first_primary_hit_still_counts() -> None:
    """Supporting signals wait for a primary: the cast 20 lines above the NaN is searched
    once the NaN is seen, and counts as before."""
    near, _ = _softmax_finding(20)
    assert [e.line for e in near.evidence] == [1, 22]
    far, searched = _softmax_finding(200)
    assert [e.line for e in far.evidence] == [202]  # out of its reach (60 lines)
    assert far.score < near.score
    assert "MR-CONV-003/fp16-context" not in searched  # never searched: it could not count
