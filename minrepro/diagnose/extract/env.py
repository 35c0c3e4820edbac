"""What a log reveals about its environment -> EnvFact (each distinct key/value once).

Keys:
  torch_version         torch==2.11.0+cu128, PyTorch version: 2.1.0, torch 1.13.1 (pip list),
                        [pip3] torch==2.1.0, torch-2.0.1+cu118-cp310-... (wheel names)
  cuda_version          CUDA the torch build uses: "CUDA used to build PyTorch: 11.8", "+cu118"
  driver_cuda_version   CUDA the driver supports: nvidia-smi "CUDA Version: 12.2";
                        "The NVIDIA driver on your system is too old (found version 9000)" -> 9.0
  cuda_runtime_version  collect_env "CUDA runtime version: 12.1.105", nvcc "release 11.8"
  cuda_available        collect_env "Is CUDA available: True"
  driver_version        nvidia-smi "Driver Version: 535.104.05", "Nvidia driver version: ..."
  gpu_name              "NVIDIA GeForce RTX 3060 Laptop GPU with CUDA capability sm_86",
                        nvidia-smi rows, "GPU 0: NVIDIA A100-SXM4-80GB (UUID: ...)" (UUID dropped),
                        "Tesla T4", "A100-SXM4-80GB"
  compute_capability    sm_86 ("CUDA capability sm_86", "cuda capability 8.6")
  supported_archs       "The current PyTorch install supports CUDA capabilities sm_37 sm_50 ..."
  python_version        .../lib/python3.8/site-packages, "Python version: 3.10.12 (...)"
  dtype                 fp16 / bf16 from --fp16, fp16=True, "fp16": {"enabled": true},
                        mixed_precision="bf16", torch_dtype=torch.float16
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from minrepro.diagnose.literals import any_of
from minrepro.model import EnvFact, Line
from minrepro.patterns import lazy

_MAX_FACTS = 256
_VERSION = r"\d+\.\d+(?:\.\d+)?(?:[a-z]+\d*)?(?:\.dev\d+)?(?:\+[\w.]+)?"

_TORCH_VERSION = lazy(
    rf"(?:\bPyTorch version|\btorch(?:\.__version__)?(?: version)?)"
    rf"(?:\s*(?:==|[:=])\s*|\s+)v?({_VERSION})"  # not \s*(?:..|\s)\s*: quadratic on blanks
    rf"|\bpytorch\s+({_VERSION})\s|\btorch-({_VERSION})-cp")
_CU_SUFFIX = lazy(r"\+cu(\d{2,3})(\d)\b")
_CUDA_BUILD = lazy(
    r"CUDA used to build PyTorch:\s*(\d+\.\d+)|torch\.version\.cuda\W+(\d+\.\d+)")
_SMI_CUDA = lazy(r"CUDA Version:\s*(\d+\.\d+)")
_DRIVER_TOO_OLD = lazy(r"driver on your system is too old \(found version (\d+)\)")
_RUNTIME = lazy(r"CUDA runtime version:\s*(\d+\.\d+(?:\.\d+)?)|release (\d+\.\d+), V\d")
_AVAILABLE = lazy(r"Is CUDA available:\s*(True|False)")
_DRIVER = lazy(
    r"Driver Version:\s*(\d+\.\d+(?:\.\d+)?)|[Dd]river version:\s*(\d+\.\d+(?:\.\d+)?)")
_GPU_CAPABILITY = lazy(
    r"(?P<name>(?:NVIDIA|Tesla|GeForce|Quadro|TITAN)[\w .-]*?) with CUDA capability sm_(?P<sm>\d+)")
_FOUND_GPU = lazy(r"Found GPU\d* (?P<name>.+?) which is of cuda capability (?P<cc>\d+\.\d+)")
_CAPABILITY = lazy(r"(?:CUDA|[Cc]ompute) [Cc]apability:?\s*(?:sm_(\d+)|(\d+)\.(\d+))")
_SUPPORTED = lazy(r"supports CUDA capabilities ((?:sm_\d+\s*)+)")
_GPU_INDEX = lazy(r"\bGPU \d+: (?P<name>[^(\n]+?)\s*(?:\(UUID|$)")
_SMI_ROW = lazy(r"\|\s+\d+\s+(?P<name>[A-Za-z][\w .-]+?)\s+(?:On|Off)\s+\|")
_GPU_NAME = lazy(
    r"\b(?P<name>NVIDIA (?:GeForce |Quadro |TITAN |RTX )?(?:RTX |GTX )?[A-Z]{0,2}\d{2,4}\w*"
    r"(?:[ -](?:Ti|SUPER|Laptop GPU|SXM\d?|PCIE|\d+GB))*"
    r"|Tesla [KMPTVA]\d+\w*(?:-\w+)*|(?<![\w-])[AH]100(?:-(?:SXM\d?|PCIE|\d+GB))+)")
_PYTHON_PATH = lazy(r"python(\d\.\d+)[/\\](?:site|dist)-packages")
_PYTHON_VERSION = lazy(r"Python version:\s*(\d+\.\d+(?:\.\d+)?)")
_DTYPE = lazy(
    r"--(fp16|bf16)\b|\b(fp16|bf16)\s*=\s*True|[\"'](fp16|bf16)[\"']:\s*\{\s*[\"']enabled[\"']:"
    r"\s*true|mixed_precision\s*[= ]\s*[\"']?(fp16|bf16)"
    r"|torch_dtype\s*=\s*torch\.(float16|bfloat16)"
    # Lightning: "Using 16bit native Automatic Mixed Precision (AMP)", "Using bfloat16 ..."
    r"|Using (16bit|bfloat16) (?:native )?Automatic Mixed Precision")
_DTYPE_NAMES = {"float16": "fp16", "bfloat16": "bf16", "16bit": "fp16"}
#: The task's class count, as configs and model dumps print it (num_classes=10, "nc": 80).
_NUM_CLASSES = lazy(
    r"\b(?:num_classes|num_labels|n_classes|nclasses|number of classes|classes|nc)"
    r"[\"']?\s*[:=]\s*(\d{1,5})\b")

def _first(match: re.Match[str] | None) -> str | None:
    if match is None:
        return None
    return next((group for group in match.groups() if group), None)


def _torch(text: str) -> list[tuple[str, str]]:
    facts = []
    version = _first(_TORCH_VERSION.search(text)) if "orch" in text else None
    if version:
        facts.append(("torch_version", version))
        suffix = _CU_SUFFIX.search(version)
        if suffix:
            facts.append(("cuda_version", f"{int(suffix[1])}.{suffix[2]}"))
    return facts


def _cuda(text: str) -> list[tuple[str, str]]:
    if "CUDA" not in text and "cuda" not in text and "driver" not in text and "release" not in text:
        return []
    facts = []
    for key, pattern in (("cuda_version", _CUDA_BUILD), ("driver_cuda_version", _SMI_CUDA),
                         ("cuda_runtime_version", _RUNTIME), ("cuda_available", _AVAILABLE)):
        value = _first(pattern.search(text))
        if value:
            facts.append((key, value))
    too_old = _DRIVER_TOO_OLD.search(text)
    if too_old:
        number = int(too_old[1])
        facts.append(("driver_cuda_version", f"{number // 1000}.{number % 1000 // 10}"))
    return facts


def _driver(text: str) -> list[tuple[str, str]]:
    value = _first(_DRIVER.search(text)) if "river" in text else None
    return [("driver_version", value)] if value else []


def _gpu(text: str) -> list[tuple[str, str]]:
    if not ("GPU" in text or "NVIDIA" in text or "Tesla" in text or "100" in text
            or "apabilit" in text or "sm_" in text):
        return []
    facts: list[tuple[str, str]] = []
    match = _GPU_CAPABILITY.search(text)
    if match:
        return [("gpu_name", match["name"].strip()), ("compute_capability", "sm_" + match["sm"])]
    match = _FOUND_GPU.search(text)
    if match:
        major, minor = match["cc"].split(".")
        return [("gpu_name", match["name"].strip()), ("compute_capability", f"sm_{major}{minor}")]
    capability = _CAPABILITY.search(text)
    if capability:
        sm = capability[1] or f"{capability[2]}{capability[3]}"
        facts.append(("compute_capability", "sm_" + sm))
    supported = _SUPPORTED.search(text)
    if supported:
        facts.append(("supported_archs", " ".join(supported[1].split())))
    name = _GPU_INDEX.search(text) or _SMI_ROW.search(text) or _GPU_NAME.search(text)
    if name and any(ch.isdigit() for ch in name["name"]):
        facts.append(("gpu_name", name["name"].strip()))
    return facts


def _python(text: str) -> list[tuple[str, str]]:
    value = None
    if "-packages" in text:
        value = _first(_PYTHON_PATH.search(text))
    elif "Python version" in text:
        value = _first(_PYTHON_VERSION.search(text))
    return [("python_version", value)] if value else []


def _dtype(text: str) -> list[tuple[str, str]]:
    if "fp16" not in text and "bf16" not in text and "float16" not in text \
            and "Mixed Precision" not in text:
        return []
    value = _first(_DTYPE.search(text))
    return [("dtype", _DTYPE_NAMES.get(value, value))] if value else []


def _classes(text: str) -> list[tuple[str, str]]:
    match = _NUM_CLASSES.search(text) if ("classes" in text or "num_labels" in text
                                         or "nc" in text) else None
    return [("num_classes", match[1])] if match and 2 <= int(match[1]) <= 10000 else []


#: A binary cross-entropy loss, as autograd prints its node or code names it: its chance
#: level is ln 2 an output, whatever the task's class count.
_BINARY_LOSS = lazy(r"BinaryCrossEntropy(?:WithLogits)?Backward|\bBCE(?:WithLogits)?Loss\b|"
                    r"\bbinary_cross_entropy(?:_with_logits)?\b")


def _loss_fn(text: str) -> list[tuple[str, str]]:
    return [("loss_fn", "binary_cross_entropy")] if _BINARY_LOSS.search(text) else []


_PROBES: tuple[Callable[[str], list[tuple[str, str]]], ...] = (
    _torch, _cuda, _driver, _gpu, _python, _dtype, _classes, _loss_fn)


#: A line holding none of these reveals nothing.
TRIGGERS = ("orch", "CUDA", "cuda", "river", "GPU", "NVIDIA", "Tesla", "A100", "H100", "sm_",
            "-packages", "Python version", "fp16", "bf16", "classes", "num_labels", "nc:", "nc=",
            "nc\":", "nc':", "Mixed Precision", "BinaryCrossEntropy", "BCE", "binary_cross")
_may_hold_env = any_of(TRIGGERS)


class EnvExtractor:
    """Versions, GPU and precision the log reveals -> EnvFact, each key/value once."""

    TRIGGERS = TRIGGERS

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()

    def feed(self, line: Line) -> Sequence[EnvFact]:
        text = line.text
        if not _may_hold_env(text):
            return ()
        events = []
        for probe in _PROBES:
            for key, value in probe(text):
                if (key, value) in self._seen or len(self._seen) >= _MAX_FACTS:
                    continue
                self._seen.add((key, value))
                events.append(EnvFact(line=line.line, key=key, value=value))
        return events

    def close(self) -> Sequence[EnvFact]:
        return ()
