"""Snapshots: the id is the content's hash (same run, same id; a change, a new id), the git
state and data fingerprint are in it, `--list` shows them, and a snapshot reads back as a
config for preflight and diff."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from minrepro.preflight.config import load_config
from minrepro.preflight.diff import compare
from minrepro.preflight.facts import read_run
from minrepro.preflight.machine import Machine
from minrepro.preflight.snapshot import list_snapshots, take_snapshot

MACHINE = Machine(cpu_count=8, gpu_name="NVIDIA A100-SXM4-80GB", capability=(8, 0),
                  gpu_memory=80 << 30, torch_version="2.3.0+cu121", cuda_version="12.1")


def _project(where: Path, lr: float = 2e-5) -> Path:
    (where / "train.jsonl").write_text('{"text": "a", "label": 0}\n')
    config = where / "config.json"
    config.write_text(json.dumps({"learning_rate": lr, "per_device_train_batch_size": 8,
                                  "train_file": "train.jsonl", "output_dir": "out"}))
    return config


def test_same_content_same_id_and_a_change_a_new_one(tmp_path: Path) -> None:
    config, out = _project(tmp_path), tmp_path / "snaps"
    first = take_snapshot(config, out, machine=MACHINE)
    again = take_snapshot(config, out, machine=MACHINE)
    assert first.id == again.id and len(first.id) == 12
    assert first.content["environment"]["gpu_name"] == "NVIDIA A100-SXM4-80GB"
    assert "torch" in first.content["packages"]
    (tmp_path / "train.jsonl").write_text('{"text": "b", "label": 1}\n')
    data_changed = take_snapshot(config, out, machine=MACHINE)
    assert data_changed.id != first.id
    assert data_changed.content["data"]["train_file"] != first.content["data"]["train_file"]
    _project(tmp_path, lr=1e-3)
    lr_changed = take_snapshot(config, out, machine=MACHINE)
    assert len({first.id, data_changed.id, lr_changed.id}) == 3
    assert [row["id"] for row in list_snapshots(out)].count(first.id) == 1
    assert len(list_snapshots(out)) == 3


def test_git_commit_and_diff_hash(tmp_path: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    config = _project(tmp_path)
    try:
        subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True, timeout=30)
        subprocess.run([*git, "add", "config.json"], cwd=tmp_path, check=True, timeout=30)
        subprocess.run([*git, "commit", "-qm", "x"], cwd=tmp_path, check=True, timeout=30)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not usable here")
    clean = take_snapshot(config, tmp_path / "s", machine=MACHINE).content["git"]
    assert len(clean["commit"]) == 40 and clean["diff_hash"] is None
    _project(tmp_path, lr=5e-5)
    dirty = take_snapshot(config, tmp_path / "s", machine=MACHINE).content["git"]
    assert dirty["commit"] == clean["commit"] and dirty["diff_hash"]


def test_snapshot_reads_back_for_preflight_and_diff(tmp_path: Path) -> None:
    config, out = _project(tmp_path), tmp_path / "snaps"
    a = take_snapshot(config, out, machine=MACHINE)
    _project(tmp_path, lr=1e-2)
    b = take_snapshot(config, out, machine=Machine(torch_version="2.4.0+cu118",
                                                   cuda_version="11.8"))
    loaded = load_config(b.path)
    assert loaded.kind == "snapshot" and loaded.number("learning_rate") == 1e-2
    ranked = compare(read_run(str(a.path)), read_run(str(b.path)), "lr_divergence")
    keys = [d.key for d in ranked]
    assert keys[0] == "learning_rate" and {"cuda_build", "gpu_name"} <= set(keys)
    env_first = compare(read_run(str(a.path)), read_run(str(b.path)), "cuda_env_mismatch")
    assert env_first[0].key in ("cuda_build", "gpu_name", "compute_capability")


def test_cli_snapshot_and_list(tmp_path: Path, cli: Callable[..., Any]) -> None:
    config, out = _project(tmp_path), tmp_path / "snaps"
    taken = cli("snapshot", str(config), "-o", str(out))
    assert taken.returncode == 0, taken.stderr
    snapshot_id = taken.stdout.split()[0]
    listed = cli("snapshot", "--list", "-o", str(out))
    assert listed.returncode == 0 and listed.stdout.startswith(snapshot_id)
    assert "config.json" in listed.stdout
    bad = cli("snapshot", str(tmp_path / "missing.yaml"), "-o", str(out))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_snapshot_elsewhere_keeps_the_configs_data_paths(tmp_path: Path) -> None:
    config = _project(tmp_path)
    taken = take_snapshot(config, tmp_path / "far" / "away", machine=MACHINE)
    loaded = load_config(taken.path)
    path = loaded.path("train_file")
    assert path is not None and path.exists()
    assert taken.id == take_snapshot(config, tmp_path / "other", machine=MACHINE).id
