"""What one run was: a log, a snapshot or a config -> `RunFacts`, the settings and the
environment under one set of keys (`learning_rate`, `batch_size`, `precision`, `torch`,
`cuda_build`, `gpu_name`, ...), and the failure the run shows when it is a log.

A log is read through `minrepro.diagnose` (its EnvFacts: versions, GPU, dtype; and its
diagnosis: the cause of the failure) plus a scan of its lines for the settings a launcher or
the HF Trainer prints (`learning_rate=2e-05`, `Instantaneous batch size per device = 8`).
Values from a log are untrusted: kept only as short strings or numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from minrepro.errors import BadInputError, shown_path
from minrepro.preflight.config import (
    ALIASES,
    PRECISION_KEYS,
    leaf,
    load_config,
    normalise_optimizer,
    read_mapping,
)

Value = str | float | bool

#: diagnose's EnvFact keys -> the keys of a snapshot's environment and packages
_ENV_KEYS = {"torch_version": "torch", "cuda_version": "cuda_build", "driver_version": "driver",
             "gpu_name": "gpu_name", "compute_capability": "compute_capability",
             "python_version": "python", "driver_cuda_version": "driver_cuda"}
_CONFIG_SUFFIXES = (".json", ".yaml", ".yml")
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_WORD = r"[\w.+/-]{1,64}"
#: Names a log prints settings under; `block_size` left out (DeepSpeed's aio block size).
_SETTING_KEYS = {key: name for name, keys in ALIASES.items() for key in keys
                 if name not in ("train_file", "eval_file", "output_dir", "lock_file")
                 and key != "block_size"}
_SETTING = re.compile(
    r"(?<![\w.])[\"']?(" + "|".join(sorted(_SETTING_KEYS, key=len, reverse=True)) +
    r")[\"']?\s*(?:=|:)\s*[\"']?(" + _NUMBER + "|" + _WORD + ")")
_HF_BATCH = re.compile(r"Instantaneous batch size per device = (\d+)")
_HF_ACCUM = re.compile(r"Gradient Accumulation steps = (\d+)")
_HALF_FLAG = re.compile(r"\b(fp16|bf16)\s*[=:]\s*(True|False|true|false)\b")
_KNOWN_LEAVES = frozenset(k for keys in ALIASES.values() for k in keys) | set(PRECISION_KEYS)
_MAX_SCAN_LINES = 50_000  # settings are printed at the start; a whole log is not needed
_METRIC_LINE = re.compile(r"loss\W{1,4}[-+]?\d")  # "loss: 2.31", "'loss': 0.5": a progress record
_WORD_SETTINGS = frozenset({"optimizer", "model_name"})
_BOOL_SETTINGS = frozenset({"gradient_checkpointing"})
_OPTIMIZERS = frozenset({"adafactor", "adagrad", "rmsprop", "lion", "lamb", "adamw", "adam",
                         "sgd", "adamw_8bit"})
#: Words that are a type or prose where a value should be (`lr: float`, `batch_size: int`).
_NOT_VALUES = frozenset({"none", "null", "dict", "list", "str", "int", "float", "bool", "true",
                         "false", "the", "a", "an", "optional", "any", "type", "object", "is"})


@dataclass(frozen=True)
class RunFacts:
    """One run under comparable keys; `cause` is the failure it shows (logs only)."""

    source: str
    kind: str  # "log" | "snapshot" | "config"
    values: dict[str, Value] = field(default_factory=dict)
    cause: str | None = None
    summary: str = ""


def _as_value(text: str) -> Value:
    try:
        return float(text)
    except ValueError:
        return text[:64]


def _clean(values: dict[str, object]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[key] = value
        elif isinstance(value, (int, float)):
            out[key] = float(value)
        else:
            out[key] = str(value)[:120]
    return out


def facts_from_config(path: Path) -> RunFacts:
    """A config or a snapshot: its normalised settings, and a snapshot's env and packages."""
    data = read_mapping(path)
    config = load_config(path)
    values: dict[str, object] = {k: v for k, v in config.flat.items()
                                 if leaf(k) not in _KNOWN_LEAVES}  # the rest, by its own name
    values.update({**config.settings, "precision": config.precision})
    if config.loss_scaling is not None:
        values["loss_scaling"] = config.loss_scaling
    for name in ("train_file", "eval_file", "output_dir", "lock_file"):
        values.pop(name, None)
    kind = "config"
    if config.kind == "snapshot":
        kind = "snapshot"
        values.update({k: v for k, v in (data.get("packages") or {}).items()})
        env = data.get("environment") or {}
        values.update({k: env.get(k) for k in ("cuda_build", "driver", "gpu_name",
                                               "compute_capability")})
        for key, print_ in (data.get("data") or {}).items():
            if isinstance(print_, dict):
                values[f"data.{key}"] = print_.get("sha256")
    return RunFacts(source=path.name, kind=kind, values=_clean(values))


def _scan_settings(lines: list[str]) -> dict[str, object]:
    found: dict[str, object] = {}
    for text in lines:
        for pattern, name in ((_HF_BATCH, "batch_size"), (_HF_ACCUM, "grad_accum")):
            match = pattern.search(text)
            if match:
                found.setdefault(name, float(match[1]))
        if _METRIC_LINE.search(text):  # a progress record: its lr is the schedule's
            continue
        for match in _SETTING.finditer(text):
            name = _SETTING_KEYS[match[1]]
            value = _typed(name, match[2])
            if value is not None:
                found.setdefault(name, value)
    flags = {m[1]: m[2].lower() == "true" for text in lines for m in _HALF_FLAG.finditer(text)}
    if flags and not any(flags.values()):
        found["precision"] = "fp32"  # a TrainingArguments dump with fp16=False, bf16=False
    return found


def _typed(name: str, text: str) -> Value | None:
    """A printed value as the setting's type, or None where it is not one (prose, a type
    name in a docstring, a number where a name belongs)."""
    if name in _BOOL_SETTINGS:
        return {"true": True, "false": False}.get(text.lower())
    value = _as_value(text)
    if name in _WORD_SETTINGS:
        if not isinstance(value, str) or value.lower() in _NOT_VALUES:
            return None
        if name == "optimizer":
            family = normalise_optimizer(value)
            return family if family in _OPTIMIZERS else None
        return value
    if not isinstance(value, float) or (name == "learning_rate" and value <= 0):
        return None
    return value


def _read_lines(source: str) -> list[str]:
    from minrepro.diagnose.reader import LogReader

    lines = []
    for line in LogReader(source):
        lines.append(line.text)
        if len(lines) >= _MAX_SCAN_LINES:
            break
    return lines


def facts_from_log(source: str) -> RunFacts:
    """A training log: what diagnose reads of its environment and failure, and the settings
    its lines print."""
    from minrepro.diagnose.pipeline import diagnose_log

    diagnosis = diagnose_log(source)
    values: dict[str, object] = _scan_settings(_read_lines(source))
    for key, value in diagnosis.env.items():
        if key in _ENV_KEYS:
            values[_ENV_KEYS[key]] = value
        elif key == "dtype":
            values["precision"] = value
    return RunFacts(source=Path(source).name, kind="log", values=_clean(values),
                    cause=diagnosis.cause, summary=diagnosis.summary or diagnosis.title)


def read_run(source: str) -> RunFacts:
    """A config/snapshot (.json/.yaml holding a mapping) or else a log."""
    path = Path(source)
    if source == "-":
        raise BadInputError("diff reads each run as a file: give a path, not - (stdin)")
    if not path.exists():
        raise BadInputError(f"{shown_path(source)}: no such file")
    if path.suffix.lower() in _CONFIG_SUFFIXES:
        return facts_from_config(path)
    return facts_from_log(source)
