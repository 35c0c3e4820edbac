"""Load a training config into one plain `RunConfig` of normalised settings.

Accepts an HF `TrainingArguments`-like JSON/YAML (`per_device_train_batch_size`, `fp16`, ...),
a Lightning CLI YAML (`trainer:`, `model:`, `data:` sections, `optimizer.init_args.lr`), an
argparse-style flat YAML/JSON (`--learning-rate`, `batch_size`), or a minrepro snapshot (its
`config` object). Keys are matched by their last name, dashes folded, so every dialect lands
in the same fields. Where a framework has a default the config leaves out (HF clips at 1.0 and
seeds 42), the default is applied and named in `defaults`: a check should see what the run
will do, not only what the file says.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from minrepro.errors import BadInputError, shown_path

Scalar = str | int | float | bool | None

#: normalised field -> the key names (last component, dashes as underscores) that set it
ALIASES: dict[str, tuple[str, ...]] = {
    "learning_rate": ("learning_rate", "lr", "base_lr", "max_lr"),
    "batch_size": ("per_device_train_batch_size", "train_batch_size", "batch_size",
                   "micro_batch_size", "per_gpu_train_batch_size"),
    "max_length": ("max_seq_length", "max_length", "max_seq_len", "block_size", "seq_len",
                   "max_source_length", "model_max_length", "cutoff_len", "sequence_length"),
    "warmup_steps": ("warmup_steps", "num_warmup_steps", "lr_warmup_steps", "warmup_iters",
                     "warmup_updates", "warmup_epochs"),
    "warmup_ratio": ("warmup_ratio", "warmup_proportion", "lr_warmup_ratio"),
    "max_grad_norm": ("max_grad_norm", "gradient_clip_val", "clip_grad_norm", "grad_clip",
                      "clip_grad", "gradient_clipping", "clip_norm", "grad_clip_norm"),
    "optimizer": ("optim", "optimizer", "optimizer_name", "optimizer_type"),
    "seed": ("seed", "seed_everything", "random_seed", "manual_seed"),
    "output_dir": ("output_dir", "default_root_dir", "save_dir", "checkpoint_dir", "dirpath",
                   "logging_dir"),
    "num_workers": ("dataloader_num_workers", "num_workers", "workers"),
    "num_labels": ("num_labels", "num_classes", "n_classes"),
    "train_file": ("train_file", "train_path", "train_data", "train_data_path", "data_path",
                   "training_file", "train_dir"),
    "eval_file": ("validation_file", "eval_file", "val_file", "eval_path", "val_path",
                  "valid_file", "eval_data", "val_dir", "eval_dir"),
    "lock_file": ("lock_file", "requirements_lock", "environment_lock", "lockfile"),
    "model_name": ("model_name_or_path", "model_name", "pretrained_model_name_or_path",
                   "model_id"),
    "grad_accum": ("gradient_accumulation_steps", "accumulate_grad_batches", "grad_accum"),
    "weight_decay": ("weight_decay",),
    "momentum": ("momentum",),
    "gpus": ("n_gpu", "devices", "gpus", "num_gpus"),
    "num_train_epochs": ("num_train_epochs", "max_epochs", "epochs", "n_epochs"),
    "gradient_checkpointing": ("gradient_checkpointing", "activation_checkpointing"),
    "master_port": ("master_port", "main_process_port"),
}
#: Keys that say the precision (read into RunConfig.precision / loss_scaling, not settings).
PRECISION_KEYS = ("fp16", "bf16", "half", "precision", "mixed_precision", "dtype",
                  "torch_dtype", "amp_dtype", "use_grad_scaler", "grad_scaler", "loss_scaling",
                  "amp_scaler", "use_amp_scaler")
_PRECISION_KEYS = ("precision", "mixed_precision", "dtype", "torch_dtype", "amp_dtype")
_SCALER_KEYS = ("use_grad_scaler", "grad_scaler", "loss_scaling", "amp_scaler", "use_amp_scaler")
_HF_MARKERS = ("per_device_train_batch_size", "num_train_epochs", "evaluation_strategy",
               "eval_strategy", "save_strategy", "logging_steps")
_LIGHTNING_MARKERS = ("trainer", "max_epochs", "gradient_clip_val", "accumulate_grad_batches",
                      "default_root_dir", "seed_everything")
#: TrainingArguments' defaults for the settings a check reads.
_HF_DEFAULTS: dict[str, Any] = {"learning_rate": 5e-5, "batch_size": 8, "max_grad_norm": 1.0,
                                "seed": 42, "optimizer": "adamw", "num_workers": 0,
                                "warmup_steps": 0, "grad_accum": 1}
_LIGHTNING_DEFAULTS: dict[str, Any] = {"grad_accum": 1}


@dataclass(frozen=True)
class RunConfig:
    """A run's settings, whatever dialect the file was written in."""

    source: str  # the file's name (not its full path: nothing volatile)
    kind: str  # "hf" | "lightning" | "flat" | "snapshot"
    settings: dict[str, Scalar] = field(default_factory=dict)  # normalised fields (ALIASES)
    precision: str = "fp32"  # "fp32" | "fp16" | "bf16"
    loss_scaling: bool | None = None  # fp16 with a GradScaler / dynamic loss scale
    flat: dict[str, Scalar] = field(default_factory=dict)  # every key, dotted, for diff
    defaults: tuple[str, ...] = ()  # settings filled in from the framework's defaults
    base_dir: str = "."  # relative paths in the config are taken from here

    def get(self, name: str) -> Scalar:
        return self.settings.get(name)

    def number(self, name: str) -> float | None:
        value = self.settings.get(name)
        if isinstance(value, bool) or value is None:
            return None
        try:
            return float(value)
        except (TypeError, ValueError):
            return None

    def path(self, name: str) -> Path | None:
        value = self.settings.get(name)
        if not isinstance(value, str) or not value:
            return None
        path = Path(value).expanduser()
        return path if path.is_absolute() else Path(self.base_dir) / path


def _key(name: str) -> str:
    return name.strip().lstrip("-").replace("-", "_").lower()


_MAX_KEYS = 20_000  # a config has hundreds; YAML aliases can make billions
_MAX_DEPTH = 32
_MAX_BYTES = 8 << 20


def flatten(data: Any, prefix: str = "") -> dict[str, Scalar]:
    """Nested mappings -> {"trainer.max_epochs": 3, ...}; lists of scalars joined.
    BadInputError past 20,000 keys or 32 levels (an alias bomb, not a config)."""
    out: dict[str, Scalar] = {}
    _flatten_into(out, data, prefix, 0)
    return out


def _flatten_into(out: dict[str, Scalar], data: Any, prefix: str, depth: int) -> None:
    if depth > _MAX_DEPTH or len(out) > _MAX_KEYS:
        raise BadInputError("config is nested too deeply or has too many keys")
    if isinstance(data, dict):
        for name, value in data.items():
            key = f"{prefix}.{_key(str(name))}" if prefix else _key(str(name))
            _flatten_into(out, value, key, depth + 1)
    elif isinstance(data, list):
        if all(isinstance(v, (str, int, float, bool)) or v is None for v in data):
            out[prefix] = ",".join(str(v) for v in data[:64])[:1000]
        else:
            for index, value in enumerate(data):
                _flatten_into(out, value, f"{prefix}.{index}", depth + 1)
    elif isinstance(data, (str, int, float, bool)) or data is None:
        out[prefix] = data


def leaf(key: str) -> str:
    """"optimizer.init_args.lr" -> "lr": the name a key is matched by."""
    return _leaf(key)


def _leaf(key: str) -> str:
    parts = [p for p in key.split(".") if p not in ("init_args", "dict_kwargs")]
    return parts[-1] if parts else key


def _lookup(flat: dict[str, Scalar], names: tuple[str, ...]) -> tuple[str, Scalar] | None:
    """The shortest (least nested) key whose last name is one of `names`, in their order."""
    for name in names:
        hits = sorted((k for k in flat if _leaf(k) == name and flat[k] is not None),
                      key=lambda k: (k.count("."), not k.startswith("optimizer")))
        if hits:
            return hits[0], flat[hits[0]]
    return None


def _optimizer_name(flat: dict[str, Scalar], found: Scalar) -> Scalar:
    """Lightning writes `optimizer.class_path: torch.optim.AdamW`; HF `optim: adamw_torch`."""
    class_path = next((v for k, v in flat.items() if k.startswith("optimizer")
                       and _leaf(k) in ("class_path", "name", "type")), None)
    return normalise_optimizer(str(class_path if class_path else found))


def normalise_optimizer(name: str) -> str:
    """"torch.optim.AdamW", "adamw_torch_fused", "AdamW8bit", "SGD" -> a short family name."""
    low = name.rsplit(".", 1)[-1].lower()
    if "8bit" in low or "bnb" in low:
        return "adamw_8bit"
    for family in ("adafactor", "adagrad", "rmsprop", "lion", "lamb", "adamw", "adam", "sgd"):
        if family in low:
            return family
    return low


def _precision(flat: dict[str, Scalar]) -> str:
    leaves = {_leaf(k): v for k, v in flat.items()}
    if leaves.get("bf16") is True or leaves.get("bf16_full_eval") is True:
        return "bf16"
    if leaves.get("fp16") is True or leaves.get("half") is True:
        return "fp16"
    for name in _PRECISION_KEYS:
        text = str(leaves.get(name, "")).lower()
        if "bf16" in text or "bfloat16" in text:
            return "bf16"
        if text.startswith("16") or "fp16" in text or "float16" in text or text == "half":
            return "fp16"
    return "fp32"


def _loss_scaling(flat: dict[str, Scalar], kind: str, precision: str) -> bool | None:
    """fp16 only: HF's fp16 and Lightning's "16-mixed" use a GradScaler; "16-true" does not."""
    if precision != "fp16":
        return None
    hit = _lookup(flat, _SCALER_KEYS)
    if hit is not None:
        return bool(hit[1])
    named = _lookup(flat, _PRECISION_KEYS)
    text = str(named[1]) if named is not None else ""
    if "true" in text.lower():
        return False
    return True if kind in ("hf", "lightning") else None


def _kind(data: dict[str, Any], flat: dict[str, Scalar]) -> str:
    leaves = {_leaf(k) for k in flat}
    if any(m in leaves for m in _HF_MARKERS):
        return "hf"
    if any(m in data or m in leaves for m in _LIGHTNING_MARKERS):
        return "lightning"
    return "flat"


def config_from_mapping(data: dict[str, Any], *, source: str = "config",
                        base_dir: str = ".", kind: str | None = None) -> RunConfig:
    """A parsed config (any dialect) -> RunConfig, with the framework's defaults applied."""
    flat = flatten(data)
    kind = kind or _kind(data, flat)
    settings: dict[str, Scalar] = {}
    for name, keys in ALIASES.items():
        hit = _lookup(flat, keys)
        if hit is not None:
            settings[name] = hit[1]
    if "optimizer" in settings or any(k.startswith("optimizer") for k in flat):
        settings["optimizer"] = _optimizer_name(flat, settings.get("optimizer", ""))
    defaults = {"hf": _HF_DEFAULTS, "lightning": _LIGHTNING_DEFAULTS}.get(kind, {})
    if kind == "lightning" and isinstance(data.get("trainer"), dict):
        defaults = {**defaults, "seed": True}  # LightningCLI's seed_everything default
    applied = tuple(sorted(k for k in defaults if k not in settings))
    settings.update({k: defaults[k] for k in applied})
    precision = _precision(flat)
    return RunConfig(source=source, kind=kind, settings=settings, precision=precision,
                     loss_scaling=_loss_scaling(flat, kind, precision), flat=flat,
                     defaults=applied, base_dir=base_dir)


def read_mapping(path: Path) -> dict[str, Any]:
    """Parse a JSON or YAML file that must hold a mapping; BadInputError (one line) if not."""
    where = shown_path(path)
    if not path.exists():
        raise BadInputError(f"{where}: no such file")
    if not path.is_file():
        raise BadInputError(f"{where}: not a file")
    try:
        if path.stat().st_size > _MAX_BYTES:
            raise BadInputError(f"{where}: over {_MAX_BYTES >> 20} MiB: not a config")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise BadInputError(f"{where}: cannot read: {type(err).__name__}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError) as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise BadInputError(f"{where}: not valid JSON/YAML: {first[:120]}") from None
    if not isinstance(data, dict):
        raise BadInputError(f"{where}: expected a mapping of settings, "
                            f"got {type(data).__name__}")
    return data


def load_config(path: str | Path) -> RunConfig:
    """Read a config file or a minrepro snapshot into a RunConfig."""
    path = Path(path)
    data = read_mapping(path)
    base = str(path.resolve().parent)
    if "snapshot_version" in data and isinstance(data.get("config"), dict):
        where = data.get("config_dir")  # relative data paths are the config's, not the snapshot's
        inner = config_from_mapping(data["config"], source=path.name,
                                    base_dir=where if isinstance(where, str) else base)
        return RunConfig(**{**inner.__dict__, "kind": "snapshot"})
    return config_from_mapping(data, source=path.name, base_dir=base)
