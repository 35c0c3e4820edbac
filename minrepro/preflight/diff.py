"""Compare two runs and rank their differences by how likely each explains the failure the
second run shows.

The ranking is a table, data not code: for each cause, the keys whose change can bring it
about, a weight (how often such a change is the culprit), and the direction that does it
(a higher lr diverges, a lower one rarely; clipping removed, not added). A difference scores
weight x direction x size: a tenfold lr change counts more than a 10 % one. Keys outside the
cause's row keep a small generic weight, so every difference is still listed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from minrepro.preflight.facts import RunFacts, Value
from minrepro.report.markdown import md_escape

UP, DOWN, ANY = "+", "-", "*"
_PACKAGES = ("torch", "transformers", "accelerate", "deepspeed", "numpy", "lightning",
             "pytorch-lightning", "datasets", "tokenizers", "peft", "bitsandbytes",
             "flash-attn", "xformers", "triton", "python")
_ENV = (("torch", 1.0, ANY), ("cuda_build", 1.0, ANY), ("compute_capability", 0.9, ANY),
        ("gpu_name", 0.8, ANY), ("driver", 0.8, ANY), ("driver_cuda", 0.8, ANY))

#: cause -> (key, weight, direction of the change that causes it)
CAUSE_KEYS: dict[str, tuple[tuple[str, float, str], ...]] = {
    "lr_divergence": (("learning_rate", 1.0, UP), ("warmup_steps", 0.8, DOWN),
                      ("warmup_ratio", 0.8, DOWN), ("max_grad_norm", 0.8, UP),
                      ("optimizer", 0.6, ANY), ("precision", 0.4, ANY),
                      ("batch_size", 0.3, DOWN), ("weight_decay", 0.2, ANY)),
    "fp16_overflow": (("precision", 1.0, ANY), ("loss_scaling", 0.9, DOWN),
                      ("learning_rate", 0.5, UP), ("max_grad_norm", 0.4, UP)),
    "softmax_overflow": (("precision", 1.0, ANY), ("max_length", 0.4, UP)),
    "dtype_mismatch": (("precision", 1.0, ANY), ("torch", 0.4, ANY)),
    "cuda_oom": (("batch_size", 1.0, UP), ("max_length", 1.0, UP), ("precision", 0.7, UP),
                 ("gradient_checkpointing", 0.8, DOWN), ("gpu_name", 0.7, ANY),
                 ("model_name", 0.7, ANY), ("optimizer", 0.4, ANY), ("grad_accum", 0.2, DOWN)),
    "allocator_fragmentation": (("batch_size", 0.8, ANY), ("max_length", 0.8, ANY),
                                ("torch", 0.4, ANY)),
    "host_oom_dataloader": (("num_workers", 1.0, UP), ("batch_size", 0.5, UP)),
    "host_oom": (("num_workers", 0.8, UP), ("batch_size", 0.6, UP)),
    "dataloader_bottleneck": (("num_workers", 1.0, DOWN), ("batch_size", 0.4, ANY)),
    "cuda_env_mismatch": _ENV,
    "version_incompatibility": tuple((name, 0.9, ANY) for name in _PACKAGES),
    "missing_dependency": tuple((name, 0.8, ANY) for name in _PACKAGES),
    "position_overflow": (("max_length", 1.0, UP), ("model_name", 0.7, ANY)),
    "label_out_of_range": (("num_labels", 1.0, DOWN), ("data.train_file", 0.8, ANY),
                           ("model_name", 0.4, ANY)),
    "single_class_labels": (("data.train_file", 1.0, ANY), ("num_labels", 0.4, ANY),
                            ("seed", 0.2, ANY)),
    "nan_in_data": (("data.train_file", 1.0, ANY), ("precision", 0.3, ANY)),
    "loss_stagnation": (("learning_rate", 1.0, ANY), ("optimizer", 0.6, ANY),
                        ("warmup_steps", 0.4, ANY), ("weight_decay", 0.4, UP),
                        ("batch_size", 0.3, ANY)),
    "overfitting": (("num_train_epochs", 0.8, UP), ("weight_decay", 0.8, DOWN),
                    ("data.train_file", 0.6, ANY), ("learning_rate", 0.4, ANY)),
    "nccl_timeout": (("gpus", 0.8, UP), ("torch", 0.5, ANY), ("batch_size", 0.3, ANY)),
    "distributed_port_in_use": (("master_port", 1.0, ANY), ("gpus", 0.4, ANY)),
    "hardware_fault": (("gpu_name", 0.5, ANY), ("driver", 0.5, ANY)),
    "shape_mismatch": (("max_length", 0.8, ANY), ("model_name", 0.8, ANY),
                       ("num_labels", 0.8, ANY)),
    "state_dict_mismatch": (("model_name", 1.0, ANY), ("num_labels", 0.9, ANY),
                            ("transformers", 0.6, ANY)),
}
#: When the failure is not known: how often a change of each key breaks a run at all.
GENERIC: dict[str, float] = {
    "learning_rate": 0.5, "batch_size": 0.45, "precision": 0.45, "torch": 0.45,
    "cuda_build": 0.45, "max_length": 0.4, "gpu_name": 0.35, "optimizer": 0.35,
    "max_grad_norm": 0.3, "warmup_steps": 0.3, "warmup_ratio": 0.3, "transformers": 0.3,
    "num_workers": 0.25, "model_name": 0.35, "num_labels": 0.3, "driver": 0.3,
}
_OUTSIDE = 0.1  # a key the cause's row does not name
_AGAINST = 0.25  # a change in the direction that does not cause the failure
#: Keys whose "off" value (0, none) means unlimited: no clipping is the largest max_grad_norm.
_OFF_IS_INFINITE = frozenset({"max_grad_norm"})
_PRECISION_BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0}


@dataclass(frozen=True)
class Difference:
    key: str
    a: Value | None
    b: Value | None
    cause: str | None  # the cause this change would explain, or None
    score: float


def _numeric(key: str, value: Value | None) -> float | None:
    if key == "precision" and isinstance(value, str):
        return _PRECISION_BYTES.get(value)
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, float):
        return math.inf if key in _OFF_IS_INFINITE and value <= 0 else value
    if value is None and key in _OFF_IS_INFINITE:
        return math.inf
    return None


def _direction_factor(key: str, a: Value | None, b: Value | None, direction: str) -> float:
    if direction == ANY:
        return 1.0
    x, y = _numeric(key, a), _numeric(key, b)
    if x is None or y is None or x == y:
        return 0.6  # appeared, vanished, or not comparable: may be either way
    went_up = y > x
    return 1.0 if went_up == (direction == UP) else _AGAINST


def _size_factor(key: str, a: Value | None, b: Value | None) -> float:
    """0.6 for a small numeric change, up to 1.0 for tenfold or more; 0.9 otherwise."""
    x, y = _numeric(key, a), _numeric(key, b)
    if x is None or y is None or x <= 0 or y <= 0 or math.isinf(x) or math.isinf(y):
        return 0.9
    return 0.6 + 0.4 * min(1.0, abs(math.log10(y / x)))


def score(key: str, a: Value | None, b: Value | None,
          cause: str | None) -> tuple[float, str | None]:
    """How likely this change explains `cause` (any failure when None), and the cause named."""
    if cause is None:
        weight = GENERIC.get(key, _OUTSIDE)
        return weight * _size_factor(key, a, b), _likeliest_cause(key)
    row = {k: (w, d) for k, w, d in CAUSE_KEYS.get(cause, ())}
    if key not in row:
        return _OUTSIDE * _size_factor(key, a, b), None
    weight, direction = row[key]
    factor = _direction_factor(key, a, b, direction)
    return weight * factor * _size_factor(key, a, b), cause if factor > _AGAINST else None


def _likeliest_cause(key: str) -> str | None:
    best = max(((w, c) for c, row in CAUSE_KEYS.items() for k, w, _ in row if k == key),
               default=None)
    return best[1] if best else None


def _same(a: Value | None, b: Value | None) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def compare(a: RunFacts, b: RunFacts, cause: str | None = None) -> list[Difference]:
    """The keys whose values differ, ranked by how likely each explains `cause` or B's
    failure. Between two logs, or a log and a config, a key only one side reveals is no
    difference (a log says less than a config); between configs, a key set on one side only
    is (clipping removed)."""
    cause = cause or b.cause
    complete = a.kind != "log" and b.kind != "log"
    keys = set(a.values) | set(b.values) if complete else set(a.values) & set(b.values)
    found = []
    for key in sorted(keys):
        x, y = a.values.get(key), b.values.get(key)
        if _same(x, y):
            continue
        value, named = score(key, x, y, cause)
        found.append(Difference(key=key, a=x, b=y, cause=named, score=round(value, 4)))
    return sorted(found, key=lambda d: (-d.score, d.key))


def differences_to_json(a: RunFacts, b: RunFacts, ranked: list[Difference],
                        cause: str | None) -> dict[str, object]:
    """{"a", "b", "cause_b", "differences": [{key, a, b, cause, score}, ...]}"""
    return {"a": a.source, "b": b.source, "cause_b": cause or b.cause,
            "differences": [{"key": d.key, "a": d.a, "b": d.b, "cause": d.cause,
                             "score": d.score} for d in ranked]}


def _cell(value: Value | None) -> str:
    text = "(unset)" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
    # inert: no code spans, links, HTML, @mentions or autolinked URLs from a log's text
    return md_escape(text[:60]).replace("@", "@\u2060").replace("://", ":\u2060//")


def differences_to_markdown(a: RunFacts, b: RunFacts, ranked: list[Difference],
                            cause: str | None) -> str:
    """A ranked Markdown table; values from logs are shown as inert text."""
    cause = cause or b.cause
    lines = [f"# {_cell(a.source)} vs {_cell(b.source)}", "",
             f"B's failure: {cause or 'none known'}"
             + (f" ({_cell(b.summary)})" if b.summary and cause else ""), ""]
    if not ranked:
        lines.append("No differences in the settings and environment both runs reveal.")
        return "\n".join(lines) + "\n"
    lines += ["| rank | key | A | B | would explain |", "|---:|---|---|---|---|"]
    for rank, d in enumerate(ranked, 1):
        lines.append(f"| {rank} | {d.key} | {_cell(d.a)} | {_cell(d.b)} | {d.cause or ''} |")
    return "\n".join(lines) + "\n"
