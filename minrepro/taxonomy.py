"""The stable cause taxonomy of DESIGN.md: JSON output and rule packs use exactly these names."""

from __future__ import annotations

TAXONOMY: dict[str, tuple[str, ...]] = {
    "memory": ("undetached_loss_list", "cuda_oom", "allocator_fragmentation",
               "host_oom_dataloader"),
    "convergence": ("position_overflow", "single_class_labels", "softmax_overflow",
                    "lr_divergence", "loss_stagnation"),
    "speed": ("dataloader_bottleneck", "nccl_timeout"),
    "precision": ("fp16_overflow", "dtype_mismatch", "overfitting"),
    "environment": ("device_mismatch", "cuda_env_mismatch"),
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
