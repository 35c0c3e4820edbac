"""The preflight checks as data: each has a name, the taxonomy cause it prevents (None where
the failure has no cause in the taxonomy), the root class of that failure, and one function
(Inputs -> Outcome). `run_checks` runs them all; `gather` builds the Inputs from files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minrepro.model import RootClass
from minrepro.preflight import checks_data as data
from minrepro.preflight import checks_env as env
from minrepro.preflight import checks_model as model
from minrepro.preflight.config import load_config, read_mapping
from minrepro.preflight.data import read_sample
from minrepro.preflight.inputs import CheckFunction, CheckResult, Inputs, Status
from minrepro.preflight.machine import Machine, named_gpu, probe_machine
from minrepro.preflight.memory import shape_from_config
from minrepro.taxonomy import ROOT_OF


@dataclass(frozen=True)
class Check:
    name: str
    cause: str | None
    run: CheckFunction
    root: RootClass = RootClass.CONFIG

    def __post_init__(self) -> None:
        if self.cause is not None and self.cause not in ROOT_OF:
            raise ValueError(f"check {self.name}: unknown cause {self.cause!r}")


_D, _E = RootClass.DATA, RootClass.ENVIRONMENT

CHECKS: tuple[Check, ...] = (
    Check("max_length", "position_overflow", model.check_max_length),
    Check("single_class", "single_class_labels", data.check_single_class, _D),
    Check("class_imbalance", "single_class_labels", data.check_imbalance, _D),
    Check("label_range", "label_out_of_range", data.check_label_range, _D),
    Check("nan_empty_inputs", "nan_in_data", data.check_nan_empty, _D),
    Check("learning_rate", "lr_divergence", model.check_learning_rate),
    Check("warmup_clipping", "lr_divergence", model.check_warmup_clipping),
    Check("precision_gpu", "cuda_env_mismatch", model.check_precision_gpu, _E),
    Check("fp16_scaler", "fp16_overflow", model.check_fp16_scaler),
    Check("memory", "cuda_oom", model.check_memory),
    Check("num_workers", "host_oom_dataloader", env.check_num_workers),
    Check("seed", None, env.check_seed),
    Check("output_dir", None, env.check_output_dir),
    Check("data_paths", None, data.check_data_paths),
    Check("eval_overlap", "overfitting", data.check_eval_overlap, _D),
    Check("lock_file", "cuda_env_mismatch", env.check_lock, _E),
)


def run_checks(inputs: Inputs) -> list[CheckResult]:
    """Every check, in the order above."""
    results = []
    for check in CHECKS:
        outcome = check.run(inputs)
        results.append(CheckResult(name=check.name, cause=check.cause, root=check.root,
                                   status=outcome.status, detail=outcome.detail))
    return results


def _sample_if_exists(path: Path | None) -> Any:
    return read_sample(path) if path is not None and path.exists() else None


def gather(config_path: str | Path, *, model_config: str | Path | None = None,
           data: str | Path | None = None, lock: str | Path | None = None,
           gpu: str | None = None, machine: Machine | None = None) -> Inputs:
    """Read the config, the model config, the data sample(s), the lock file and the
    machine (probed unless given; `gpu` names a card to check against instead)."""
    config = load_config(config_path)
    model_dict = read_mapping(Path(model_config)) if model_config is not None else None
    shape = None
    if model_dict is not None:
        try:
            shape = shape_from_config(model_dict)
        except Exception:  # noqa: BLE001 - a config without sizes: the memory check says so
            shape = None
    train = read_sample(data) if data is not None else _sample_if_exists(config.path("train_file"))
    lock_path = Path(lock) if lock is not None else config.path("lock_file")
    pins = env.read_lock(lock_path) if lock_path is not None and lock_path.exists() else None
    machine = machine or probe_machine()
    if gpu:
        machine = named_gpu(gpu, machine)
    return Inputs(config=config, machine=machine, model=model_dict, shape=shape, train=train,
                  eval=_sample_if_exists(config.path("eval_file")), lock=pins,
                  lock_name=lock_path.name if lock_path is not None else None)


def any_failed(results: list[CheckResult]) -> bool:
    return any(r.status == Status.FAIL for r in results)


def rules_for(causes: set[str]) -> dict[str, list[str]]:
    """The diagnose rule ids that name each cause: the rules a prevented failure would fire."""
    from minrepro.diagnose.rules.registry import load_rules

    loaded = load_rules()
    return {cause: sorted(rule.id for rule in loaded.for_cause(cause)) for cause in causes}


def results_to_json(results: list[CheckResult]) -> dict[str, Any]:
    """{"checks": [{name, cause, rules, root, status, detail}, ...], "failed": N}"""
    rules = rules_for({r.cause for r in results if r.cause})
    return {"checks": [{"name": r.name, "cause": r.cause,
                        "rules": rules.get(r.cause, []) if r.cause else [],
                        "root": str(r.root), "status": str(r.status), "detail": r.detail}
                       for r in results],
            "failed": sum(r.status == Status.FAIL for r in results)}


def _prevents(result: CheckResult, rules: dict[str, list[str]]) -> str:
    if not result.cause or result.status != Status.FAIL:
        return ""
    named = rules.get(result.cause)
    return f"  [prevents {result.cause}" + (f": {', '.join(named)}]" if named else "]")


def results_to_text(results: list[CheckResult]) -> str:
    marks = {Status.PASS: "ok  ", Status.FAIL: "FAIL", Status.CANNOT_CHECK: "--  "}
    rules = rules_for({r.cause for r in results if r.cause and r.status == Status.FAIL})
    lines = [f"{marks[r.status]} {r.name:<17} {r.detail}{_prevents(r, rules)}"
             for r in results]
    failed = sum(r.status == Status.FAIL for r in results)
    lines.append(f"{failed} failed, {sum(r.status == Status.PASS for r in results)} passed, "
                 f"{sum(r.status == Status.CANNOT_CHECK for r in results)} cannot be checked")
    return "\n".join(lines) + "\n"
