"""The machine a run will use: CPU cores, the GPU (name, compute capability, memory), the
torch build. Read through torch only when torch is importable and a GPU is present; every
probe returns None instead of raising (collect_env's rule). A named card (`--gpu A100-80GB`)
stands in for the one a login node does not have.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from minrepro.errors import BadInputError

_GIB = 1 << 30


@dataclass(frozen=True)
class Machine:
    """Facts a check compares a config against; None: not known here."""

    cpu_count: int | None = None
    gpu_name: str | None = None
    capability: tuple[int, int] | None = None  # (8, 0) for sm_80
    gpu_memory: int | None = None  # bytes
    torch_version: str | None = None
    cuda_version: str | None = None  # the CUDA torch was built with; None for a CPU build


#: Cards by the names people write: (compute capability, memory in GiB).
KNOWN_GPUS: dict[str, tuple[tuple[int, int], int]] = {
    "T4": ((7, 5), 16), "V100-16GB": ((7, 0), 16), "V100-32GB": ((7, 0), 32),
    "P100": ((6, 0), 16), "A10G": ((8, 6), 24), "L4": ((8, 9), 24), "A40": ((8, 6), 48),
    "A100-40GB": ((8, 0), 40), "A100-80GB": ((8, 0), 80), "H100-80GB": ((9, 0), 80),
    "H200": ((9, 0), 141), "RTX3090": ((8, 6), 24), "RTX4090": ((8, 9), 24),
    "RTX2080TI": ((7, 5), 11),
}


def _cpu_count() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count()


def _torch_facts() -> tuple[str | None, str | None]:
    try:
        import torch
    except Exception:  # noqa: BLE001 - a broken torch install is "not known", not a crash
        return None, None
    return str(torch.__version__), torch.version.cuda


def _gpu_facts() -> tuple[str | None, tuple[int, int] | None, int | None]:
    try:
        import torch

        if not torch.cuda.is_available():
            return None, None, None
        props = torch.cuda.get_device_properties(0)
        return str(props.name), (int(props.major), int(props.minor)), int(props.total_memory)
    except Exception:  # noqa: BLE001 - no driver, a busy card: not known
        return None, None, None


def probe_machine() -> Machine:
    """This machine, as torch sees it."""
    torch_version, cuda = _torch_facts()
    name, capability, memory = _gpu_facts() if torch_version else (None, None, None)
    return Machine(cpu_count=_cpu_count(), gpu_name=name, capability=capability,
                   gpu_memory=memory, torch_version=torch_version, cuda_version=cuda)


def named_gpu(name: str, base: Machine) -> Machine:
    """`base` with its GPU replaced by a known card; BadInputError for an unknown name."""
    key = name.upper().replace(" ", "").replace("NVIDIA", "")
    match = next((k for k in KNOWN_GPUS if k.replace("-", "") == key.replace("-", "")), None)
    if match is None:
        raise BadInputError(f"unknown GPU {name!r}; known: {', '.join(KNOWN_GPUS)}")
    capability, gib = KNOWN_GPUS[match]
    return Machine(cpu_count=base.cpu_count, gpu_name=match, capability=capability,
                   gpu_memory=gib * _GIB, torch_version=base.torch_version,
                   cuda_version=base.cuda_version)
