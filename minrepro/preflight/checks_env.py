"""Checks of the run against this machine and its environment: DataLoader workers vs CPU
cores, the seed, the output directory, torch/CUDA against a lock file."""

from __future__ import annotations

import os
import re
from pathlib import Path

from minrepro.errors import BadInputError, shown_path
from minrepro.preflight.inputs import Inputs, Outcome, cannot, failed, passed

_PIN = re.compile(r"^\s*(torch|pytorch|cuda|cudatoolkit|pytorch-cuda|cuda-version)\s*"
                  r"(?:==|=|:)\s*[\"']?([\w.+-]+)", re.IGNORECASE)
_CU = re.compile(r"\+cu(\d{2,3})(\d)\b")


def check_num_workers(inputs: Inputs) -> Outcome:
    workers, cores = inputs.config.number("num_workers"), inputs.machine.cpu_count
    if workers is None:
        return cannot("the config sets no num_workers")
    if cores is None:
        return cannot("the CPU count is not known here")
    gpus = inputs.config.number("gpus")
    processes = int(gpus) if gpus and gpus > 1 else 1
    if workers * processes > cores:
        return failed(f"{int(workers)} workers x {processes} processes > {cores} CPU cores: "
                      "each worker holds a copy of the dataset")
    return passed(f"{int(workers)} workers x {processes} processes <= {cores} CPU cores")


def check_seed(inputs: Inputs) -> Outcome:
    seed = inputs.config.get("seed")
    if seed is None or seed is False:
        return failed("no seed: a failure may not come back when the run is repeated")
    source = " (framework default)" if "seed" in inputs.config.defaults else ""
    return passed(f"seed {seed}{source}")


def check_output_dir(inputs: Inputs) -> Outcome:
    path = inputs.config.path("output_dir")
    if path is None:
        return cannot("the config names no output_dir")
    existing = path
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return failed(f"{path.name}: {existing.name} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        return failed(f"{path.name}: {'it' if existing == path else existing.name} "
                      "is not writable")
    return passed(f"{path.name}: writable" if existing == path else f"{path.name}: can be made")


def read_lock(path: Path) -> dict[str, str]:
    """torch and CUDA pins of a requirements/conda lock (`torch==2.3.0+cu121`,
    `pytorch-cuda=12.1`) or a minrepro snapshot; BadInputError if unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise BadInputError(f"{shown_path(path)}: cannot read: {type(err).__name__}") from None
    pins: dict[str, str] = {}
    if path.suffix == ".json":
        from minrepro.preflight.config import read_mapping

        data = read_mapping(path)
        packages = data.get("packages", data)
        env = data.get("environment", {})
        if isinstance(packages, dict) and isinstance(packages.get("torch"), str):
            pins["torch"] = packages["torch"]
        if isinstance(env, dict) and isinstance(env.get("cuda_build"), str):
            pins["cuda"] = env["cuda_build"]
    for line in text.splitlines():
        match = _PIN.match(line.lstrip("- "))
        if match:
            name = "torch" if match[1].lower() in ("torch", "pytorch") else "cuda"
            pins.setdefault(name, match[2])
    suffix = _CU.search(pins.get("torch", ""))
    if suffix and "cuda" not in pins:
        pins["cuda"] = f"{int(suffix[1])}.{suffix[2]}"
    return pins


def _base(version: str) -> str:
    return version.split("+", 1)[0]


def check_lock(inputs: Inputs) -> Outcome:
    if inputs.lock is None:
        return cannot("no lock file given (--lock, or lock_file in the config)")
    torch_have, cuda_have = inputs.machine.torch_version, inputs.machine.cuda_version
    if torch_have is None:
        return cannot("torch is not importable here")
    wrong = []
    want = inputs.lock.get("torch")
    if want and _base(want) != _base(torch_have):
        wrong.append(f"torch {torch_have} here, {want} locked")
    want_cuda = inputs.lock.get("cuda")
    if want_cuda and (cuda_have or "none") != want_cuda:
        wrong.append(f"CUDA build {cuda_have or 'none (CPU build)'} here, {want_cuda} locked")
    if not inputs.lock:
        return cannot(f"{inputs.lock_name}: pins neither torch nor CUDA")
    return failed("; ".join(wrong)) if wrong else passed(
        f"torch {torch_have}, CUDA {cuda_have or 'none'} as locked")
