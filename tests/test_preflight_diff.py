"""diff on seeded pairs: a good run A and a bad run B differing in 1-7 settings, B failing by
a known cause (as a log whose failure diagnose reads, or as a config with --cause). The
causal change must rank first in >= 80 % of the pairs; the measured rate is printed."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from minrepro.preflight.diff import compare, differences_to_markdown
from minrepro.preflight.facts import read_run

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
PAIRS = 60

BASE: dict[str, Any] = {
    "learning_rate": 2e-5, "per_device_train_batch_size": 16, "warmup_steps": 500,
    "max_grad_norm": 1.0, "seed": 42, "num_train_epochs": 3, "weight_decay": 0.01,
    "dataloader_num_workers": 4, "max_seq_length": 256, "num_labels": 5, "bf16": True,
    "optim": "adamw_torch", "output_dir": "out"}
ENV: dict[str, Any] = {"torch": "2.3.0+cu121", "cuda_build": "12.1", "transformers": "4.40.2",
                       "gpu_name": "NVIDIA A100-SXM4-80GB", "compute_capability": "sm_80"}

Change = Callable[[dict[str, Any], dict[str, Any], random.Random], set[str]]


def _lr_up(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["learning_rate"] *= r.choice([10, 20, 50])
    return {"learning_rate"}


def _no_clip(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["max_grad_norm"] = 0.0
    return {"max_grad_norm"}


def _no_warmup(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["warmup_steps"] = 0
    return {"warmup_steps"}


def _batch_up(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["per_device_train_batch_size"] *= r.choice([4, 8])
    return {"batch_size"}


def _len_up(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["max_seq_length"] = r.choice([1024, 2048])
    return {"max_length"}


def _fp32(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["bf16"] = False
    return {"precision"}


def _torch_build(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    e.update(torch="2.4.0+cu118", cuda_build="11.8")
    return {"torch", "cuda_build"}


def _new_card(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    e.update(gpu_name="NVIDIA GeForce RTX 5090", compute_capability="sm_120")
    return {"gpu_name", "compute_capability"}


def _fp16(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c.update(bf16=False, fp16=True)
    return {"precision"}


def _positions(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["max_seq_length"] = r.choice([600, 1024])
    return {"max_length"}


def _workers(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["dataloader_num_workers"] = r.choice([32, 64])
    return {"num_workers"}


def _lr_down(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["learning_rate"] /= r.choice([100, 1000])
    return {"learning_rate"}


def _epochs(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["num_train_epochs"] = r.choice([20, 50])
    return {"num_train_epochs"}


def _labels(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    c["num_labels"] = 3
    return {"num_labels"}


def _transformers(c: dict[str, Any], e: dict[str, Any], r: random.Random) -> set[str]:
    e["transformers"] = "4.46.0"
    return {"transformers"}


#: cause -> (its causal changes, the sample log whose failure B shows, or None: config only)
SCENARIOS: dict[str, tuple[tuple[Change, ...], str | None]] = {
    "lr_divergence": ((_lr_up, _no_clip, _no_warmup), "lr_divergence__hf_grad_norm_explodes"),
    "cuda_oom": ((_batch_up, _len_up, _fp32), "cuda_oom__hf_trainer_new_format"),
    "cuda_env_mismatch": ((_torch_build, _new_card), "cuda_env_mismatch__sm120_no_kernel_image"),
    "fp16_overflow": ((_fp16,), "fp16_overflow__deepspeed_min_scale"),
    "position_overflow": ((_positions,), "position_overflow__cpu_traceback"),
    "host_oom_dataloader": ((_workers,), "host_oom_dataloader__worker_killed_rss_growth"),
    "loss_stagnation": ((_lr_down,), "loss_stagnation__ln10_plateau"),
    "overfitting": ((_epochs,), "overfitting__val_loss_rises"),
    "label_out_of_range": ((_labels,), None),
    "version_incompatibility": ((_transformers,), None),
}


def _distract(c: dict[str, Any], e: dict[str, Any], r: random.Random, avoid: set[str]) -> None:
    """One change of a setting other than the causal ones, either way, any size."""
    options: dict[str, Callable[[], None]] = {
        "seed": lambda: c.update(seed=r.randint(0, 9999)),
        "weight_decay": lambda: c.update(weight_decay=r.choice([0.0, 0.1, 0.05])),
        "num_train_epochs": lambda: c.update(num_train_epochs=r.choice([1, 2, 5])),
        "num_workers": lambda: c.update(dataloader_num_workers=r.choice([0, 2, 8])),
        "batch_size": lambda: c.update(per_device_train_batch_size=r.choice([8, 24, 32])),
        "learning_rate": lambda: c.update(learning_rate=r.choice([1e-5, 3e-5, 5e-5])),
        "warmup_steps": lambda: c.update(warmup_steps=r.choice([100, 1000, 2000])),
        "max_length": lambda: c.update(max_seq_length=r.choice([128, 384, 512])),
        "optimizer": lambda: c.update(optim=r.choice(["adafactor", "sgd"])),
        "max_grad_norm": lambda: c.update(max_grad_norm=r.choice([0.5, 2.0, 5.0])),
        "transformers": lambda: e.update(transformers=r.choice(["4.41.0", "4.39.3"])),
    }
    name = r.choice(sorted(set(options) - avoid))
    options[name]()


def _snapshot(config: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    return {"snapshot_version": 1, "config": config,
            "packages": {"torch": env["torch"], "transformers": env["transformers"]},
            "environment": {k: env[k] for k in ("cuda_build", "gpu_name", "compute_capability")}}


def _log(config: dict[str, Any], env: dict[str, Any], sample: str) -> str:
    """A log as an HF run prints it: versions and GPU, the TrainingArguments, then the failure
    (the body of a sample log of that cause)."""
    args = ", ".join(f"{k}={v}" for k, v in config.items())
    sm = env["compute_capability"][3:]
    head = [f"[INFO] torch=={env['torch']} transformers=={env['transformers']}",
            f"GPU 0: {env['gpu_name']} (UUID: GPU-0f3e)",
            f"Compute capability: {sm[:-1]}.{sm[-1]}",
            f"TrainingArguments({args}, fp16={config.get('fp16', False)})"]
    return "\n".join(head) + "\n" + (SAMPLES / f"{sample}.log").read_text(encoding="utf-8")


def _pair(index: int, where: Path, r: random.Random) -> tuple[Path, Path, str | None, set[str]]:
    cause = sorted(SCENARIOS)[index % len(SCENARIOS)]
    changes, sample = SCENARIOS[cause]
    config, env = dict(BASE), dict(ENV)
    a = where / f"a{index}.json"
    a.write_text(json.dumps(_snapshot(config, env)))
    config, env = dict(BASE), dict(ENV)
    causal = r.choice(changes)(config, env, r)
    for _ in range(r.randint(0, 6)):
        _distract(config, env, r, causal)
    as_log = sample is not None and r.random() < 0.5
    if as_log:
        assert sample is not None
        b = where / f"b{index}.log"
        b.write_text(_log(config, env, sample))
        return a, b, None, causal
    b = where / f"b{index}.json"
    b.write_text(json.dumps(_snapshot(config, env)))
    return a, b, cause, causal


def test_causal_change_ranks_first_in_80_percent(tmp_path: Path) -> None:
    r = random.Random(20)
    hits, misses = 0, []
    for index in range(PAIRS):
        a_path, b_path, cause, causal = _pair(index, tmp_path, r)
        a, b = read_run(str(a_path)), read_run(str(b_path))
        if cause is None:
            assert b.cause is not None, b_path.name  # the log's failure is read by diagnose
        ranked = compare(a, b, cause)
        assert ranked, (b_path.name, b.values)
        if ranked[0].key in causal:
            hits += 1
        else:
            misses.append((b.cause or cause, [d.key for d in ranked[:3]], sorted(causal)))
    rate = hits / PAIRS
    print(f"diff ranking: causal change first in {hits}/{PAIRS} = {rate:.0%}; misses: {misses}")
    assert rate >= 0.8


def test_same_run_as_log_and_snapshot_has_no_differences(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(_snapshot(dict(BASE), dict(ENV))))
    (tmp_path / "b.log").write_text(_log(dict(BASE), dict(ENV), "none__healthy_hf_trainer"))
    a, b = read_run(str(tmp_path / "a.json")), read_run(str(tmp_path / "b.log"))
    assert {"learning_rate", "batch_size", "torch", "gpu_name", "precision"} <= set(b.values)
    assert compare(a, b) == []


def test_markdown_is_inert_and_cli_json(tmp_path: Path, cli: Callable[..., Any]) -> None:
    config = dict(BASE, optim="@someone", learning_rate=0.01)
    (tmp_path / "a.json").write_text(json.dumps(BASE))
    (tmp_path / "b.yaml").write_text(json.dumps(config))
    a, b = read_run(str(tmp_path / "a.json")), read_run(str(tmp_path / "b.yaml"))
    text = differences_to_markdown(a, b, compare(a, b, "lr_divergence"), "lr_divergence")
    assert "@someone" not in text and "| 1 | learning_rate |" in text
    result = cli("diff", str(tmp_path / "a.json"), str(tmp_path / "b.yaml"),
                 "--cause", "lr_divergence", "--json")
    data = json.loads(result.stdout)
    assert data["differences"][0] == {"key": "learning_rate", "a": 2e-5, "b": 0.01,
                                      "cause": "lr_divergence", "score": 1.0}
    assert all(set(d) >= {"key", "a", "b", "cause"} for d in data["differences"])


def test_log_settings_are_typed_values_not_prose() -> None:
    from minrepro.preflight.facts import _scan_settings

    found = _scan_settings([
        "    lr: The learning rate of the optimizer.", "    batch_size: int = 8",
        "{'loss': 2.31, 'learning_rate': 1e-07, 'epoch': 0.1}",
        "step 10 loss: 2.3 lr: 0.0", "optimizer: 309.28",
        "aio_config ...... {'block_size': 1048576, 'queue_depth': 8}",
        "Namespace(lr=0.1, batch_size=32, optimizer='AdamW', gradient_checkpointing=True)",
        "Instantaneous batch size per device = 16"])  # the first printed value wins
    assert found == {"learning_rate": 0.1, "batch_size": 32.0, "optimizer": "adamw",
                     "gradient_checkpointing": True}
