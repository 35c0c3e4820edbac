"""A run's snapshot: its config, package versions, CUDA build and GPU, git commit and the hash
of uncommitted changes, and a fingerprint of its data files, as one JSON whose id is a prefix
of the hash of its content (the same run twice gives the same id; any change, a new one).

`created` and `config_dir` are left out of the hash: when a snapshot was taken, and from
which folder its relative data paths are read, say nothing of what ran.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minrepro.errors import BadInputError, OutputError, shown_path
from minrepro.preflight.config import RunConfig, load_config, read_mapping
from minrepro.preflight.machine import Machine, probe_machine

SNAPSHOT_VERSION = 1
DEFAULT_DIR = Path(".minrepro") / "snapshots"
ID_LENGTH = 12
#: Packages whose version changes what a training run does.
PACKAGES = ("torch", "transformers", "accelerate", "datasets", "tokenizers", "numpy",
            "lightning", "pytorch-lightning", "deepspeed", "peft", "bitsandbytes", "triton",
            "flash-attn", "xformers", "timm", "torchvision", "minrepro")
_FINGERPRINT_BYTES = 16 << 20
_UNHASHED = ("id", "created", "config_dir")


@dataclass(frozen=True)
class Snapshot:
    id: str
    path: Path
    content: dict[str, Any]


def package_versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def environment(machine: Machine) -> dict[str, Any]:
    """CUDA build, driver, GPU (no UUIDs or serials: nothing that names one card)."""
    return {"cuda_build": machine.cuda_version, "driver": _driver_version(),
            "gpu_name": machine.gpu_name,
            "compute_capability": (f"sm_{machine.capability[0]}{machine.capability[1]}"
                                   if machine.capability else None),
            "gpu_memory_gib": round(machine.gpu_memory / (1 << 30), 1)
            if machine.gpu_memory else None,
            "platform": platform.system()}


def _run(args: list[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(args, cwd=cwd, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def _driver_version() -> str | None:
    out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"], Path("."))
    return out.splitlines()[0].strip() if out and out.strip() else None


def git_state(where: Path) -> dict[str, Any] | None:
    """The commit, and a hash of `git diff HEAD` (None when the tree is clean)."""
    commit = _run(["git", "rev-parse", "HEAD"], where)
    if commit is None:
        return None
    diff = _run(["git", "diff", "HEAD"], where) or ""
    return {"commit": commit.strip(),
            "diff_hash": hashlib.sha256(diff.encode()).hexdigest()[:16] if diff else None}


def fingerprint(path: Path) -> dict[str, Any] | None:
    """Size and a hash of a data file's first 16 MiB, or of a folder's file names and sizes."""
    if not path.exists():
        return None
    digest = hashlib.sha256()
    if path.is_dir():
        files = sorted(f for f in path.rglob("*") if f.is_file())
        for file in files:
            digest.update(f"{file.relative_to(path)}\0{file.stat().st_size}\n".encode())
        return {"files": len(files), "sha256": digest.hexdigest()[:16]}
    with path.open("rb") as handle:
        digest.update(handle.read(_FINGERPRINT_BYTES))
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()[:16]}


def build_content(config: RunConfig | None, raw: dict[str, Any] | None,
                  machine: Machine, where: Path) -> dict[str, Any]:
    """Everything the id is the hash of."""
    data = {}
    if config is not None:
        for key in ("train_file", "eval_file"):
            path = config.path(key)
            if path is not None:
                data[key] = fingerprint(path)
    return {"snapshot_version": SNAPSHOT_VERSION,
            "config_source": config.source if config else None,
            "config": raw or {},
            "settings": ({**config.settings, "precision": config.precision,
                          "loss_scaling": config.loss_scaling} if config else {}),
            "packages": package_versions(), "environment": environment(machine),
            "git": git_state(where), "data": data}


def content_id(content: dict[str, Any]) -> str:
    hashed = {k: v for k, v in content.items() if k not in _UNHASHED}
    text = json.dumps(hashed, sort_keys=True, ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:ID_LENGTH]


def take_snapshot(config_path: Path | None, out_dir: Path = DEFAULT_DIR,
                  machine: Machine | None = None) -> Snapshot:
    """Write `<out_dir>/<id>.json` for the run `config_path` describes (or the bare env)."""
    config = load_config(config_path) if config_path is not None else None
    raw = read_mapping(config_path) if config_path is not None else None
    where = config_path.resolve().parent if config_path is not None else Path.cwd()
    content = build_content(config, raw, machine or probe_machine(), where)
    snapshot_id = content_id(content)
    content = {"id": snapshot_id, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "config_dir": str(where) if config_path is not None else None, **content}
    path = out_dir / f"{snapshot_id}.json"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            path.write_text(json.dumps(content, indent=2, sort_keys=True, default=str) + "\n",
                            encoding="utf-8")
    except OSError as err:
        raise OutputError(f"{shown_path(out_dir)}: cannot write: {type(err).__name__}") from None
    return Snapshot(id=snapshot_id, path=path, content=content)


def list_snapshots(out_dir: Path = DEFAULT_DIR) -> list[dict[str, Any]]:
    """One row per snapshot in `out_dir`, oldest first: id, created, config, torch, GPU, commit."""
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInputError(f"{shown_path(out_dir)}: not a directory")
    rows = []
    for path in sorted(out_dir.glob("*.json")) if out_dir.is_dir() else []:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or "snapshot_version" not in data:
            continue
        git = data.get("git") or {}
        rows.append({"id": data.get("id"), "created": data.get("created"),
                     "config": data.get("config_source"),
                     "torch": (data.get("packages") or {}).get("torch"),
                     "gpu": (data.get("environment") or {}).get("gpu_name"),
                     "commit": (git.get("commit") or "")[:10] or None,
                     "dirty": bool(git.get("diff_hash"))})
    return sorted(rows, key=lambda row: str(row["created"]))
