"""A rule pack's own causes get their repros from the pack's own templates/ folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from minrepro.errors import RenderError
from minrepro.repro.render import has_template, pack_template_dirs, render_repro
from tests.test_registry import NEW_CAUSE_RULE

TEMPLATE = """\
{% include "_header.py.j2" %}
{% include "_cli.py.j2" %}
TOK_VOCAB = {{ v.tok_vocab | py }}  # ids the tokenizer emits (from the log, clamped)
MODEL_VOCAB = TOK_VOCAB - 3  # rows of the model's embedding table
emb = torch.nn.Embedding(MODEL_VOCAB, 8).to(device)
if args.fixed:  # the fix: resize the embeddings to the tokenizer
    emb = torch.nn.Embedding(TOK_VOCAB, 8).to(device)
try:
    emb(torch.tensor([TOK_VOCAB - 1], device=device)).sum().backward()
except (IndexError, RuntimeError) as err:
    print(f"{type(err).__name__}: {err}")
    print("REPRODUCED: tokenizer_vocab_mismatch: an id beyond the embedding table"); sys.exit(1)
print("NOT REPRODUCED: tokenizer_vocab_mismatch: the table holds every id")
"""
SPEC = """\
params:
  tok_vocab: {type: int, default: 100, min: 8, max: 4096}
gpu_only: false
example:
  tok_vocab: 50260
expect:
  - out of range
"""
LOG = "loading model\ntokenizer has 50260 tokens but the model embeds 50257\n"


def make_pack(root: Path) -> Path:
    pack = root / "team-rules"
    (pack / "templates").mkdir(parents=True)
    (pack / "tok.yaml").write_text(NEW_CAUSE_RULE)
    (pack / "templates" / "tokenizer_vocab_mismatch.py.j2").write_text(TEMPLATE)
    (pack / "templates" / "tokenizer_vocab_mismatch.yaml").write_text(SPEC)
    return pack


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "minrepro", *map(str, args)],
                          capture_output=True, text=True, check=False, timeout=120)


def test_repro_renders_a_packs_cause_from_the_packs_template(tmp_path: Path) -> None:
    pack = make_pack(tmp_path)
    log = tmp_path / "run.log"
    log.write_text(LOG)
    script = tmp_path / "repro.py"
    done = run("repro", log, "--rules", pack, "-o", script)
    assert done.returncode == 0, done.stderr
    text = script.read_text()
    assert "TOK_VOCAB = 4096" in text  # the log's 50260, clamped to the spec's max
    assert "MR-USR-002" in text.splitlines()[1]  # the header credits the pack's rule
    bug = subprocess.run([sys.executable, str(script), "--device", "cpu"], capture_output=True,
                         text=True, check=False, timeout=120)
    assert bug.returncode == 1 and "REPRODUCED: tokenizer_vocab_mismatch" in bug.stdout
    fixed = subprocess.run([sys.executable, str(script), "--device", "cpu", "--fixed"],
                           capture_output=True, text=True, check=False, timeout=120)
    assert fixed.returncode == 0 and "NOT REPRODUCED" in fixed.stdout
    report = run("report", log, "--rules", pack)
    assert "TOK_VOCAB = 4096" in report.stdout


def test_a_pack_never_replaces_a_built_in_template(tmp_path: Path) -> None:
    pack = make_pack(tmp_path)
    (pack / "templates" / "cuda_oom.py.j2").write_text("print('not the verified one')\n")
    (pack / "templates" / "cuda_oom.yaml").write_text("params: {}\n")
    folders = pack_template_dirs([pack])
    assert folders == (pack / "templates",)
    assert has_template("cuda_oom", folders) and has_template("tokenizer_vocab_mismatch", folders)
    assert not has_template("tokenizer_vocab_mismatch")  # without the pack: none


def test_a_packs_template_is_checked_like_a_built_in_one(tmp_path: Path) -> None:
    """A template that imports beyond stdlib + torch is refused, with its file named."""
    from minrepro.diagnose.pipeline import diagnose_lines
    from minrepro.diagnose.rules.registry import load_rules
    from tests.test_registry import lines

    pack = make_pack(tmp_path)
    (pack / "templates" / "tokenizer_vocab_mismatch.py.j2").write_text(
        TEMPLATE.replace("TOK_VOCAB = ", "import numpy\nTOK_VOCAB = "))
    diagnosis = diagnose_lines(lines(LOG), rules=load_rules([pack]))
    with pytest.raises(RenderError, match="imports 'numpy'"):
        render_repro(diagnosis, pack_template_dirs([pack]))
