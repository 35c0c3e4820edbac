"""One id space: rule files, analyzer checks and user packs; every finding names its rule."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minrepro.diagnose.analyze.checks import CHECKS
from minrepro.diagnose.analyze.curves import run_checks
from minrepro.diagnose.analyze.curvestate import CurveState
from minrepro.diagnose.pipeline import diagnose_lines
from minrepro.diagnose.rules.pack import ID
from minrepro.diagnose.rules.registry import describe_rule, load_rules
from minrepro.errors import RulePackError
from minrepro.model import Failure, Frame, Line, package_of

RULES = load_rules()
USER_RULE = """\
id: MR-USR-001
cause: cuda_oom
category: memory
title: Our cluster's OOM killer message
explanation: The scheduler's own words for a GPU that ran out of memory.
fix: Ask for the 80 GB partition (--partition=a100-80g).
signals:
  - name: cluster-oom
    pattern: 'GPUJOB-OOM: job \\d+ exceeded device memory'
    hint: GPUJOB-OOM
    weight: 0.95
"""


def lines(text: str) -> list[Line]:
    return [Line(line=n, text=row) for n, row in enumerate(text.splitlines(), 1)]


def test_analyzer_checks_have_ids_of_their_own() -> None:
    ids = [check.id for check in CHECKS]
    assert len(set(ids)) == len(ids)
    for check in CHECKS:
        assert ID.fullmatch(check.id) and int(check.id[-3:]) > 100, check.id
        rule = RULES.get(check.id)
        assert rule is not None and rule.fix and not rule.signals


def test_every_rule_id_is_unique_across_the_registry() -> None:
    ids = [rule.id for rule in RULES]
    assert len(set(ids)) == len(ids)


def test_lookup_by_id_in_any_case_or_by_cause() -> None:
    assert RULES.get("mr-mem-101") is RULES.get("MR-MEM-101") is not None
    assert {r.id for r in RULES.lookup("cuda_oom")} >= {"MR-MEM-002", "MR-MEM-101"}
    assert "an analyzer check" in describe_rule(RULES.get("MR-MEM-101"))


def test_an_analyzer_finding_is_credited_to_its_check() -> None:
    log = "\n".join(f"step {i} loss {v}" for i, v in enumerate([2.3, 2.2, 2.1, 9.5, 40.0, 250.0]))
    diagnosis = diagnose_lines(lines(log + "\nstep 6 loss nan"))
    assert diagnosis.cause == "lr_divergence" and diagnosis.rule_id == "MR-CONV-101"
    assert diagnosis.title == RULES.get("MR-CONV-101").title
    assert diagnosis.fix == RULES.get("MR-CONV-004").fix  # a check has its cause's fix


def test_a_user_rule_that_fires_is_credited_with_its_own_title_and_fix(tmp_path: Path) -> None:
    (tmp_path / "ours.yaml").write_text(USER_RULE)
    rules = load_rules([tmp_path])
    diagnosis = diagnose_lines(lines("GPUJOB-OOM: job 4711 exceeded device memory"), rules=rules)
    assert (diagnosis.cause, diagnosis.rule_id) == ("cuda_oom", "MR-USR-001")
    assert diagnosis.title == "Our cluster's OOM killer message"
    assert diagnosis.fix.startswith("Ask for the 80 GB partition")


def test_the_cli_shows_the_user_rule(tmp_path: Path) -> None:
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "ours.yaml").write_text(USER_RULE)
    log = tmp_path / "job.log"
    log.write_text("GPUJOB-OOM: job 4711 exceeded device memory\n")
    run = subprocess.run([sys.executable, "-m", "minrepro", "diagnose", str(log), "--json",
                          "--rules", str(tmp_path / "rules")], capture_output=True, text=True)
    found = json.loads(run.stdout)
    assert found["rule_id"] == "MR-USR-001" and found["fix"].startswith("Ask for the 80 GB")


NEW_CAUSE_RULE = """\
id: MR-USR-002
cause: tokenizer_vocab_mismatch
category: data_prep
root: data
title: Tokenizer and model vocabulary differ
explanation: The tokenizer emits ids beyond the model's embedding table.
fix: Resize the embeddings with model.resize_token_embeddings(len(tokenizer)).
params:
  tok_vocab: int
signals:
  - name: vocab
    pattern: 'tokenizer has (?P<tok_vocab>\\d+) tokens but the model embeds \\d+'
    hint: tokenizer has
    weight: 0.9
examples:
  match: ["tokenizer has 50260 tokens but the model embeds 50257"]
  no_match: ["tokenizer has been loaded"]
"""


def test_a_pack_declares_a_cause_of_its_own(tmp_path: Path) -> None:
    pack = tmp_path / "tok.yaml"
    pack.write_text(NEW_CAUSE_RULE)
    diagnosis = diagnose_lines(lines("tokenizer has 50260 tokens but the model embeds 50257"),
                               rules=load_rules([pack]))  # a file, not only a directory
    assert (diagnosis.cause, diagnosis.category, diagnosis.rule_id) == (
        "tokenizer_vocab_mismatch", "data_prep", "MR-USR-002")
    assert diagnosis.root is not None and diagnosis.root.value == "data"
    assert diagnosis.params == {"tok_vocab": 50260}


@pytest.mark.parametrize(("edit", "message"), [
    (lambda t: t.replace("root: data\n", ""), "needs its root class"),
    (lambda t: t.replace('match: ["tokenizer has 50260', 'match: ["tokeniser has 50260'),
     "examples.match: no signal matches"),
    (lambda t: t.replace('no_match: ["tokenizer has been loaded"]',
                         'no_match: ["tokenizer has 1 tokens but the model embeds 2"]'),
     "examples.no_match: a signal matches"),
])
def test_a_pack_is_checked_when_loaded(tmp_path: Path, edit, message: str) -> None:  # noqa: ANN001
    (tmp_path / "tok.yaml").write_text(edit(NEW_CAUSE_RULE))
    with pytest.raises(RulePackError, match=message):
        load_rules([tmp_path])


def test_a_built_in_rule_may_not_invent_a_cause(tmp_path: Path) -> None:
    from minrepro.diagnose.rules.pack import load_rule_file

    (tmp_path / "tok.yaml").write_text(NEW_CAUSE_RULE)
    with pytest.raises(RulePackError, match="unknown cause"):
        load_rule_file(tmp_path / "tok.yaml")


def test_a_pack_folder_without_rule_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(RulePackError, match="no rule files"):
        load_rules([tmp_path])


def test_the_taxonomy_is_printed_for_users_without_design_md() -> None:
    run = subprocess.run([sys.executable, "-m", "minrepro", "rules", "--taxonomy"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "cuda_oom [config]" in run.stdout
    assert "hardware_fault [hardware]" in run.stdout


# --- the structured failure ----------------------------------------------------------------


@pytest.mark.parametrize(("path", "package"), [
    ("/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", "torch"),
    ("C:\\Users\\a\\Anaconda3\\lib\\site-packages\\transformers\\trainer.py", "transformers"),
    ("/x/lib/python3.8/site-packages/foo-1.0-py3.8.egg/foo/a.py", "foo"),
    ("/usr/lib/python3/dist-packages/six.py", "six"),
    ("/usr/lib/python3.8/threading.py", "stdlib"),
    ("<frozen runpy>", "stdlib"),
    ("train.py", None),
    ("/home/alice/proj/models/bert.py", None),
    ("C:\\Users\\a\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\threading.py", "stdlib"),
    ("C:\\Users\\a\\anaconda3\\envs\\torch\\lib\\runpy.py", "stdlib"),
    ("/home/kevin/git/RecycleGAN/lib/utils.py", None),  # a repo's own lib folder
    ("C:\\work\\repo\\lib\\utils.py", None),
    ("Cell In[5], line 3", None),
])
def test_frame_package_from_its_path(path: str, package: str | None) -> None:
    assert package_of(path) == package
    assert Frame(path, 1, "f").package == package


def test_failure_names_the_user_frame_and_the_library_frame() -> None:
    frames = (Frame("train.py", 88, "<module>"), Frame("/home/u/model.py", 12, "forward"),
              Frame("/env/site-packages/torch/nn/functional.py", 2210, "embedding"))
    failure = Failure("IndexError", "index out of range in self", 40, 35, frames=frames)
    assert failure.user_frame == frames[1] and failure.library_frame == frames[2]
    assert failure.headline == "IndexError: index out of range in self"
    assert Failure("KeyError", "'x'", 3, 1, frames=frames[:2]).library_frame is None


def test_a_diagnosis_carries_its_failure() -> None:
    log = ('Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
           "    x = emb(ids)\nIndexError: index out of range in self\n")
    diagnosis = diagnose_lines(lines(log))
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "IndexError"
    assert diagnosis.failure.user_frame == Frame("train.py", 9, "<module>", "x = emb(ids)")


# --- the curve checks without a log --------------------------------------------------------


def test_curve_checks_run_on_values_handed_over_directly() -> None:
    """What a live monitor does: no log lines, only (values, step)."""
    state = CurveState()
    for step, loss in enumerate([2.3, 2.2, 2.1, 9.5, 40.0, 250.0, float("nan")]):
        state.add([("loss", loss), ("learning_rate", 0.5)], line=step)
    found = run_checks(state)
    assert [f.cause for f in found] == ["lr_divergence"]
    assert dict(found[0].params)["learning_rate"] == 0.5


def test_healthy_values_give_no_curve_finding() -> None:
    state = CurveState()
    for step in range(200):
        state.add([("loss", 3.0 * 0.99 ** step + 0.2)], line=step)
    assert run_checks(state) == []

