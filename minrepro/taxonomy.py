"""The stable cause taxonomy of DESIGN.md: JSON output and rule packs use exactly these names."""

from __future__ import annotations

from minrepro.model import RootClass

TAXONOMY: dict[str, tuple[str, ...]] = {
    "memory": ("undetached_loss_list", "cuda_oom", "allocator_fragmentation",
               "host_oom_dataloader", "host_oom"),
    "convergence": ("position_overflow", "single_class_labels", "softmax_overflow",
                    "lr_divergence", "loss_stagnation", "nan_in_data"),
    "speed": ("dataloader_bottleneck", "nccl_timeout"),
    "precision": ("fp16_overflow", "dtype_mismatch", "overfitting"),
    "environment": ("device_mismatch", "cuda_env_mismatch", "version_incompatibility",
                    "missing_dependency"),
    "program": ("label_out_of_range", "inplace_autograd", "backward_twice", "no_grad_fn",
                "shape_mismatch", "state_dict_mismatch", "dataloader_worker_error"),
    "distributed": ("ddp_unused_parameters", "distributed_port_in_use"),
    "hardware": ("hardware_fault",),
}

_C, _D, _K = RootClass.CONFIG, RootClass.DATA, RootClass.CODE
_E, _H = RootClass.ENVIRONMENT, RootClass.HARDWARE

#: The usual root class of each cause (the evidence may name another: a cuda_oom caused by
#: another process holding the card is `environment`).
ROOT_OF: dict[str, RootClass] = {
    "undetached_loss_list": _K, "cuda_oom": _C, "allocator_fragmentation": _C,
    "host_oom_dataloader": _C, "host_oom": _C,
    "position_overflow": _C, "single_class_labels": _D, "softmax_overflow": _K,
    "lr_divergence": _C, "loss_stagnation": _C, "nan_in_data": _D,
    "dataloader_bottleneck": _C, "nccl_timeout": _C,
    "fp16_overflow": _C, "dtype_mismatch": _K, "overfitting": _C,
    "device_mismatch": _K, "cuda_env_mismatch": _E, "version_incompatibility": _E,
    "missing_dependency": _E,
    "label_out_of_range": _D, "inplace_autograd": _K, "backward_twice": _K, "no_grad_fn": _K,
    "shape_mismatch": _C, "state_dict_mismatch": _C, "dataloader_worker_error": _D,
    "ddp_unused_parameters": _K, "distributed_port_in_use": _C,
    "hardware_fault": _H,
}

#: What each category is about, for people (the names stay stable for JSON and rule packs).
CATEGORY_MEANING: dict[str, str] = {
    "memory": "GPU or host memory runs out or leaks",
    "convergence": "the run cannot learn: inputs the model cannot take, or losses that "
                   "diverge, stall or turn NaN",
    "speed": "the run is slow or stalls",
    "precision": "numeric precision and dtypes, and how the model generalises",
    "environment": "devices, CUDA builds and installed packages",
    "program": "errors in the training program and its data pipeline",
    "distributed": "multi-process setup and communication",
    "hardware": "the GPU, node or network failing",
}

#: What each root class means, for people (`minrepro rules --taxonomy`).
ROOT_MEANING: dict[RootClass, str] = {
    RootClass.CONFIG: "a setting or command is wrong (lr, batch size, a path, max length, a port)",
    RootClass.DATA: "labels out of range or of one class, NaN inputs, corrupt or mis-formatted "
                    "files",
    RootClass.CODE: "the training code itself (autograd misuse, device/dtype/shape mixing)",
    RootClass.ENVIRONMENT: "CUDA/driver/torch builds, missing or incompatible packages",
    RootClass.FRAMEWORK: "a bug inside PyTorch or a library",
    RootClass.HARDWARE: "GPU Xid/ECC, a node or the network fabric failing",
}

CATEGORY_OF: dict[str, str] = {
    cause: category for category, causes in TAXONOMY.items() for cause in causes
}

ALL_CAUSES: tuple[str, ...] = tuple(CATEGORY_OF)

CORE_CAUSES: tuple[str, ...] = (
    "position_overflow", "undetached_loss_list", "single_class_labels", "softmax_overflow",
)

#: Causes whose failure only shows on a CUDA device; their scripts exit 125 on CPU.
GPU_ONLY_CAUSES: tuple[str, ...] = (
    "cuda_oom", "allocator_fragmentation", "device_mismatch", "cuda_env_mismatch", "hardware_fault",
)

#: Causes whose script checks this machine for the problem (an installed package, a GPU's
#: health) instead of failing a program: exit 1 where the problem is here, 0 where it is not,
#: 125 where it cannot be checked; which one depends on the machine, not on the log.
CHECK_CAUSES: tuple[str, ...] = (
    "cuda_env_mismatch", "version_incompatibility", "missing_dependency", "hardware_fault",
)
