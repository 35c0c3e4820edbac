"""preflight: a clean run passes every check; each seeded problem is flagged by its check
and by no other; bad input is one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from minrepro.preflight.checks import CHECKS, gather, results_to_json, run_checks
from minrepro.preflight.inputs import Status
from minrepro.preflight.machine import Machine
from minrepro.taxonomy import ROOT_OF

ROOT = Path(__file__).resolve().parents[1]
A100 = Machine(cpu_count=16, gpu_name="A100-80GB", capability=(8, 0), gpu_memory=80 << 30,
               torch_version=torch.__version__, cuda_version=torch.version.cuda)


def _rows(count: int, offset: int = 0, labels: int = 3) -> list[dict[str, Any]]:
    return [{"text": f"sentence number {offset + n}", "label": n % labels} for n in range(count)]


@dataclass
class Run:
    """The files of one run; a seed changes one of them."""

    config: dict[str, Any] = field(default_factory=lambda: {
        "output_dir": "out", "per_device_train_batch_size": 16, "learning_rate": 3e-5,
        "warmup_ratio": 0.1, "max_grad_norm": 1.0, "max_seq_length": 256, "seed": 7,
        "fp16": True, "dataloader_num_workers": 4, "num_train_epochs": 3,
        "train_file": "train.jsonl", "validation_file": "eval.jsonl",
        "lock_file": "requirements.lock"})
    model: dict[str, Any] = field(default_factory=lambda: {
        "model_type": "bert", "architectures": ["BertForSequenceClassification"],
        "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
        "intermediate_size": 3072, "vocab_size": 30522, "max_position_embeddings": 512,
        "type_vocab_size": 2, "num_labels": 3, "hidden_dropout_prob": 0.1})
    train: list[dict[str, Any]] = field(default_factory=lambda: _rows(60))
    eval: list[dict[str, Any]] = field(default_factory=lambda: _rows(15, offset=1000))
    lock: str = f"numpy==1.26.4\ntorch=={torch.__version__}\n"
    machine: Machine = A100
    fmt: str = "json"

    def write(self, where: Path) -> Path:
        (where / "requirements.lock").write_text(self.lock)
        (where / "model.json").write_text(json.dumps(self.model))
        for name, rows in (("train.jsonl", self.train), ("eval.jsonl", self.eval)):
            (where / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
        path = where / f"config.{self.fmt}"
        path.write_text(json.dumps(self.config) if self.fmt == "json"
                        else yaml.safe_dump(self.config))
        return path


def failures(run: Run, where: Path) -> dict[str, str]:
    config = run.write(where)
    inputs = gather(config, model_config=where / "model.json", machine=run.machine)
    return {r.name: r.detail for r in run_checks(inputs) if r.status == Status.FAIL}


def _set(**changes: Any) -> Callable[[Run], None]:
    return lambda run: run.config.update(changes)


def _lightning(run: Run) -> None:
    run.fmt = "yaml"
    run.config = {
        "seed_everything": 3,
        "trainer": {"max_epochs": 2, "precision": "bf16-mixed", "gradient_clip_val": 1.0,
                    "default_root_dir": "logs"},
        "model": {"max_length": 128, "num_labels": 3},
        "optimizer": {"class_path": "torch.optim.AdamW", "init_args": {"lr": 1e-4}},
        "data": {"batch_size": 32, "num_workers": 2, "train_file": "train.jsonl",
                 "val_file": "eval.jsonl"}}


def _flat(run: Run) -> None:
    run.fmt = "yaml"
    run.config = {"--lr": 0.05, "--optimizer": "sgd", "--momentum": 0.9, "--batch-size": 64,
                  "--seed": 1, "--grad-clip": 5.0, "--workers": 8, "--max-len": 64,
                  "--output-dir": "ckpt", "--train-file": "train.jsonl",
                  "--max-seq-len": 128, "--num-classes": 3}


CLEAN: dict[str, Callable[[Run], None]] = {
    "hf_json": lambda run: None,
    "hf_yaml": lambda run: setattr(run, "fmt", "yaml"),
    "hf_defaults": lambda run: [run.config.pop(k) for k in ("seed", "max_grad_norm",
                                                            "learning_rate")] and None,
    "roberta_at_limit": lambda run: (run.model.update(model_type="roberta",
                                                      max_position_embeddings=514),
                                     run.config.update(max_seq_length=512)) and None,
    "lightning": _lightning,
    "flat_sgd": _flat,
}


def _many_workers(run: Run) -> None:
    run.config["dataloader_num_workers"] = 32


def _no_seed(run: Run) -> None:
    """A script of its own (no HF Trainer, which would seed 42) that sets no seed."""
    for key in ("seed", "num_train_epochs"):
        run.config.pop(key)
    run.config["batch_size"] = run.config.pop("per_device_train_batch_size")


SEEDED: dict[str, Callable[[Run], None]] = {
    "max_length": _set(max_seq_length=1024),
    "single_class": lambda run: setattr(run, "train", [dict(r, label=1) for r in run.train]),
    "class_imbalance": lambda run: setattr(run, "train", _rows(55, labels=1) + _rows(2, 500, 3)[
        1:2] + _rows(3, 600, 3)[2:3] * 1),
    "label_range": lambda run: setattr(run, "train", _rows(60, labels=4)),
    "nan_empty_inputs": lambda run: run.train.extend([{"text": "", "label": 0},
                                                      {"text": float("nan"), "label": 1}]),
    "learning_rate": _set(learning_rate=5e-3),
    "warmup_clipping": _set(warmup_ratio=0.0, max_grad_norm=0.0),
    "precision_gpu": lambda run: (run.config.update(fp16=False, bf16=True),
                                  setattr(run, "machine", replace(
                                      A100, gpu_name="V100", capability=(7, 0)))) and None,
    "fp16_scaler": _set(use_grad_scaler=False),
    "memory": _set(per_device_train_batch_size=2048),
    "num_workers": _many_workers,
    "seed": _no_seed,
    "output_dir": _set(output_dir="train.jsonl/out"),  # under a file: cannot be made
    "data_paths": _set(validation_file="missing.jsonl"),
    "eval_overlap": lambda run: setattr(run, "eval", run.train[:10]),
    "lock_file": lambda run: setattr(run, "lock", "torch==2.3.0+cu121\n"),
}


def test_every_check_has_a_seeded_problem() -> None:
    assert {c.name for c in CHECKS} == set(SEEDED)
    assert all(c.cause is None or c.cause in ROOT_OF for c in CHECKS)


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_clean_configs_pass(name: str, tmp_path: Path) -> None:
    run = Run()
    CLEAN[name](run)
    assert failures(run, tmp_path) == {}


def test_clean_run_checks_everything(tmp_path: Path) -> None:
    run = Run()
    inputs = gather(run.write(tmp_path), model_config=tmp_path / "model.json",
                    machine=run.machine)
    assert {r.status for r in run_checks(inputs)} == {Status.PASS}


@pytest.mark.parametrize("name", sorted(SEEDED))
def test_seeded_problem_is_flagged_by_its_check(name: str, tmp_path: Path) -> None:
    run = Run()
    SEEDED[name](run)
    flagged = failures(run, tmp_path)
    assert set(flagged) == {name}, flagged


def test_roberta_offset(tmp_path: Path) -> None:
    run = Run()
    run.model.update(model_type="roberta", max_position_embeddings=514)
    run.config.update(max_seq_length=513)
    assert "max_length" in failures(run, tmp_path)


def test_cannot_check_without_inputs(tmp_path: Path) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"lr": 1e-4}))
    results = run_checks(gather(tmp_path / "c.json", machine=Machine()))
    status = {r.name: r.status for r in results}
    assert status["max_length"] == status["memory"] == status["eval_overlap"] == "cannot_check"
    assert status["learning_rate"] == "pass"
    assert all(r.detail for r in results)


def test_folder_and_csv_samples(tmp_path: Path) -> None:
    for label, count in (("cat", 40), ("dog", 2)):
        (tmp_path / "img" / label).mkdir(parents=True)
        for n in range(count):
            (tmp_path / "img" / label / f"{n}.jpg").write_bytes(f"{label}{n}".encode())
    (tmp_path / "t.csv").write_text("sentence,label\nhello,0\nnan,1\n,1\n")
    (tmp_path / "c.json").write_text(json.dumps({"num_labels": 2}))
    by_data = {}
    for data in ("img", "t.csv"):
        results = run_checks(gather(tmp_path / "c.json", data=tmp_path / data, machine=A100))
        by_data[data] = {r.name for r in results if r.status == "fail"}
    assert by_data == {"img": {"class_imbalance", "seed", "warmup_clipping"},
                       "t.csv": {"nan_empty_inputs", "seed", "warmup_clipping"}}


CliRunner = Callable[..., subprocess.CompletedProcess[str]]


def test_cli_subprocess_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("lr: 0.5\noptimizer: adam\nseed: 1\n")
    result = subprocess.run([sys.executable, "-m", "minrepro", "preflight",
                             str(tmp_path / "c.yaml")], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 1 and "FAIL learning_rate" in result.stdout, result.stderr


def test_cli_json_and_exit_codes(tmp_path: Path, cli: CliRunner) -> None:
    run = Run()
    config = run.write(tmp_path)
    clean = cli("preflight", str(config), "--model-config", str(tmp_path / "model.json"),
                 "--gpu", "A100-80GB", "--json")
    data = json.loads(clean.stdout)
    assert {c["name"] for c in data["checks"]} == set(SEEDED)
    assert all(set(c) >= {"name", "cause", "status", "detail"} for c in data["checks"])
    by_name = {c["name"]: c for c in data["checks"]}
    assert "MR-CONV-001" in by_name["max_length"]["rules"] and by_name["seed"]["rules"] == []
    failed = {c["name"] for c in data["checks"] if c["status"] == "fail"}
    assert clean.returncode == (1 if failed else 0), (failed, clean.stderr)
    assert failed <= {"num_workers"}  # this machine's cores, not the A100 host's
    bad = cli("preflight", str(config), "--gpu", "T4", "--model-config",
               str(tmp_path / "model.json"))
    assert bad.returncode == 1 and "FAIL memory" not in bad.stdout
    assert "FAIL precision_gpu" not in bad.stdout  # fp16 is fine on a T4


_BOMB = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
    f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join([f'*{chr(97 + n)}'] * 9)}]\n" for n in range(8))


@pytest.mark.parametrize("content", ["[1, 2]", "{not json", "\x00\x01binary", _BOMB,
                                     '{"a":' * 5000 + "1" + "}" * 5000],
                         ids=["list", "broken", "binary", "alias_bomb", "deep"])
def test_bad_input_is_one_line_exit_2(content: str, tmp_path: Path, cli: CliRunner) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    for args in (("preflight", str(path)), ("preflight", str(tmp_path / "none.yaml")),
                 ("preflight", str(tmp_path))):
        result = cli(*args)
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_json_shape(tmp_path: Path) -> None:
    run = Run()
    results = run_checks(gather(run.write(tmp_path), machine=A100))
    data = results_to_json(results)
    assert [c["name"] for c in data["checks"]] == [c.name for c in CHECKS]


def test_a_real_training_arguments_dump_is_clean(tmp_path: Path) -> None:
    """The JSON transformers itself writes (`TrainingArguments.to_json_string`)."""
    transformers = pytest.importorskip("transformers")
    args = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=3e-5,
                                          per_device_train_batch_size=16, use_cpu=True,
                                          fp16=False, bf16=False)
    path = tmp_path / "training_args.json"
    path.write_text(args.to_json_string())
    results = {r.name: r for r in run_checks(gather(path, machine=A100))}
    assert not [r for r in results.values() if r.status == Status.FAIL]
    assert results["learning_rate"].status == results["seed"].status == "pass"
    assert results["warmup_clipping"].detail == "warmup none, clipping set"


def test_token_labels_count_each_and_skip_ignore_index(tmp_path: Path) -> None:
    rows = [{"tokens": ["a", "b", "c"], "labels": [0, 1, -100]},
            {"tokens": ["d", "e"], "labels": [1, 9]}]
    (tmp_path / "ner.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "c.json").write_text(json.dumps({"num_labels": 3, "seed": 1, "lr": 1e-4,
                                                 "max_grad_norm": 1.0}))
    results = run_checks(gather(tmp_path / "c.json", data=tmp_path / "ner.jsonl", machine=A100))
    failed = {r.name: r.detail for r in results if r.status == "fail"}
    assert set(failed) == {"label_range"} and "[9]" in failed["label_range"]
