"""The stable cause taxonomy of DESIGN.md: JSON output and rule packs use exactly these names."""

from __future__ import annotations

from minrepro.model import RootClass

TAXONOMY: dict[str, tuple[str, ...]] = {
    "memory": ("undetached_loss_list", "cuda_oom", "allocator_fragmentation",
               "host_oom_dataloader"),
    "convergence": ("position_overflow", "single_class_labels", "softmax_overflow",
                    "lr_divergence", "loss_stagnation"),
    "speed": ("dataloader_bottleneck", "nccl_timeout"),
    "precision": ("fp16_overflow", "dtype_mismatch", "overfitting"),
    "environment": ("device_mismatch", "cuda_env_mismatch"),
}

#: The usual root class of each cause (the evidence may name another: a cuda_oom caused by
#: another process holding the card is `environment`).
ROOT_OF: dict[str, RootClass] = {
    "undetached_loss_list": RootClass.CODE, "cuda_oom": RootClass.CONFIG,
    "allocator_fragmentation": RootClass.CONFIG, "host_oom_dataloader": RootClass.CONFIG,
    "position_overflow": RootClass.CONFIG, "single_class_labels": RootClass.DATA,
    "softmax_overflow": RootClass.CODE, "lr_divergence": RootClass.CONFIG,
    "loss_stagnation": RootClass.CONFIG, "dataloader_bottleneck": RootClass.CONFIG,
    "nccl_timeout": RootClass.CONFIG, "fp16_overflow": RootClass.CONFIG,
    "dtype_mismatch": RootClass.CODE, "overfitting": RootClass.CONFIG,
    "device_mismatch": RootClass.CODE, "cuda_env_mismatch": RootClass.ENVIRONMENT,
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
    "cuda_oom", "allocator_fragmentation", "device_mismatch", "cuda_env_mismatch",
)
