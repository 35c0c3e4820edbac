"""`minrepro env`: an environment report for bug reports that never fails.

In the spirit of `python -m torch.utils.collect_env`: every probe returns a string,
"not found" when it fails, and nothing here raises. Torch is imported lazily (and
only through the injectable `import_module`), so importing this module stays fast.
Subprocesses, imports and the environment are injectable so tests can fake a GPU box.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import platform
import re
import struct
import subprocess
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

#: Runs argv with a timeout in seconds; returns stdout, or None on any failure.
Runner = Callable[[list[str], float], "str | None"]
#: Imports a module by name like `importlib.import_module` (returns it or raises).
Importer = Callable[[str], Any]

NOT_FOUND = "not found"
NOT_INSTALLED = "not installed"
NOT_SET = "not set"

SUBPROCESS_TIMEOUT_S = 5.0
MAX_OUTPUT_CHARS = 64_000  # a runaway tool must not flood the report
MAX_VALUE_CHARS = 300

ENV_VARS_BEFORE_NCCL = (
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "TORCH_USE_CUDA_DSA",
)
# TORCH_NCCL_* holds the watchdog / blocking-wait settings that explain nccl_timeout.
ENV_PREFIXES = ("NCCL_", "TORCH_NCCL_")
ENV_VARS_AFTER_NCCL = ("OMP_NUM_THREADS",)

PACKAGES = (
    "torch", "transformers", "accelerate", "deepspeed", "lightning", "pytorch_lightning",
    "numpy", "triton", "torchvision", "apex",
)

NVIDIA_SMI_QUERY = [
    "nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader",
]
NVIDIA_SMI_LIST = ["nvidia-smi", "-L"]
NVCC_VERSION = ["nvcc", "--version"]

# "GPU 0: NVIDIA A100 (UUID: GPU-...)" as collect_env strips it, plus bare GPU/MIG UUIDs
# (they also appear in CUDA_VISIBLE_DEVICES); both identify one physical machine.
_UUID_IN_PARENS = re.compile(r"\s*\(UUID: [^)]*\)")
_BARE_UUID = re.compile(
    r"\b(?:MIG-)?(?:GPU-)?[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}(?:/\d+/\d+)?", re.IGNORECASE
)
_NVCC_RELEASE = re.compile(r"release ([\d.]+), V([\d.]+)")


@dataclass(frozen=True, slots=True)
class EnvField:
    key: str  # stable, used in JSON
    label: str  # human, used in text
    value: str


@dataclass(frozen=True, slots=True)
class EnvSection:
    key: str
    title: str
    fields: tuple[EnvField, ...]

    def value(self, key: str) -> str:
        """The value of field `key`; KeyError if the section has no such field."""
        for field in self.fields:
            if field.key == key:
                return field.value
        raise KeyError(key)


@dataclass(frozen=True, slots=True)
class EnvReport:
    sections: tuple[EnvSection, ...]

    def section(self, key: str) -> EnvSection:
        for section in self.sections:
            if section.key == key:
                return section
        raise KeyError(key)

    def value(self, section: str, key: str) -> str:
        return self.section(section).value(key)


# --- probes: each returns a str (or None from the runner) and never raises ---------------


def default_run(argv: list[str], timeout: float) -> str | None:
    """Run argv without a shell; stdout if it exits 0 within `timeout`, else None."""
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except Exception:  # missing binary, timeout, permission, bad argv: all mean "no answer"
        return None
    return proc.stdout[:MAX_OUTPUT_CHARS] if proc.returncode == 0 else None


def strip_uuids(text: str) -> str:
    """Remove GPU/MIG UUIDs (they identify a physical machine) from tool output."""
    return _BARE_UUID.sub("<uuid>", _UUID_IN_PARENS.sub("", text))


def _run_safely(run: Runner, argv: list[str]) -> str | None:
    try:
        out = run(list(argv), SUBPROCESS_TIMEOUT_S)
    except Exception:  # an injected runner may raise; the report must not
        return None
    return out[:MAX_OUTPUT_CHARS] if isinstance(out, str) else None


def _probe(fn: Callable[..., object], *args: object) -> str:
    """Call one probe; its value as text, or "not found" if it raises."""
    try:
        value = fn(*args)
    except Exception:  # the probe boundary: any failure of one probe is "not found"
        return NOT_FOUND
    return _cap(str(value))


def _cap(text: str) -> str:
    text = " ".join(text.split())  # one line per value, whatever the tool printed
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 3] + "..."


# --- sections ----------------------------------------------------------------------------


def _system_section() -> EnvSection:
    return EnvSection("system", "System", (
        EnvField("os", "OS", _probe(platform.platform)),
        EnvField("python", "Python version", _probe(_python_version)),
        EnvField("cpu_count", "CPU count", _probe(os.cpu_count)),
        EnvField("minrepro", "minrepro version", _probe(_minrepro_version)),
    ))


def _python_version() -> str:
    bits = struct.calcsize("P") * 8
    return f"{platform.python_version()} ({platform.python_implementation()}, {bits}-bit)"


def _minrepro_version() -> str:
    try:  # the installed package's metadata: pyproject takes its version from minrepro/__init__
        return importlib.metadata.version("minrepro")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        return NOT_INSTALLED


_TORCH_FIELDS: tuple[tuple[str, str, Callable[[Any], object]], ...] = (
    ("version", "PyTorch version", lambda t: t.__version__),
    ("debug_build", "Debug build", lambda t: t.version.debug),
    ("cuda_built", "CUDA used to build PyTorch", lambda t: t.version.cuda),
    ("hip_built", "HIP used to build PyTorch", lambda t: getattr(t.version, "hip", None)),
    ("cudnn", "cuDNN version", lambda t: t.backends.cudnn.version()),
    ("cuda_available", "CUDA available", lambda t: bool(t.cuda.is_available())),
    ("device_count", "CUDA device count", lambda t: int(t.cuda.device_count())),
)


def _torch_section(import_module: Importer) -> EnvSection:
    torch, failure = _import_torch(import_module)
    if torch is None:
        missing = tuple(EnvField(key, label, failure) for key, label, _ in _TORCH_FIELDS)
        return EnvSection("torch", "PyTorch", missing)
    fields = [EnvField(key, label, _probe(fn, torch)) for key, label, fn in _TORCH_FIELDS]
    if any(f.key == "cuda_available" and f.value == "True" for f in fields):
        fields += _torch_devices(torch)
    return EnvSection("torch", "PyTorch", tuple(fields))


def _import_torch(import_module: Importer) -> tuple[Any, str]:
    """(torch, "") or (None, why): not installed vs installed but broken (e.g. libcudart)."""
    try:
        with warnings.catch_warnings():  # torch without numpy warns at import: not our news
            warnings.filterwarnings("ignore", message=".*NumPy", category=UserWarning)
            return import_module("torch"), ""
    except ModuleNotFoundError as exc:
        if exc.name in (None, "torch"):
            return None, NOT_INSTALLED
        return None, _cap(f"import failed: {type(exc).__name__}: {exc}")
    except Exception as exc:  # a broken install raises OSError, RuntimeError, ...
        return None, _cap(f"import failed: {type(exc).__name__}: {exc}")


def _torch_devices(torch: Any) -> list[EnvField]:
    count = _probe(lambda: int(torch.cuda.device_count()))
    if not count.isdigit():
        return []
    return [
        EnvField(f"gpu{i}", f"GPU {i}", _probe(_torch_device, torch, i)) for i in range(int(count))
    ]


def _torch_device(torch: Any, index: int) -> str:
    name = torch.cuda.get_device_name(index)
    major, minor = torch.cuda.get_device_capability(index)
    return f"{name} (compute capability {major}.{minor})"


def _nvidia_section(run: Runner) -> EnvSection:
    rows = _smi_query(run)
    if rows:
        driver = rows[0][1]
        gpus = [f"{name}, {memory}" for name, _, memory in rows]
    else:
        driver, gpus = NOT_FOUND, _smi_list(run)
    fields = [EnvField("driver", "NVIDIA driver version", driver)]
    fields += [EnvField(f"gpu{i}", f"GPU {i}", gpu) for i, gpu in enumerate(gpus)]
    if not gpus:
        fields.append(EnvField("gpus", "GPU models", NOT_FOUND))
    fields.append(EnvField("nvcc", "CUDA toolkit (nvcc)", _nvcc_version(run)))
    return EnvSection("nvidia", "NVIDIA", tuple(fields))


def _smi_query(run: Runner) -> list[tuple[str, str, str]]:
    """(name, driver, memory) per GPU from the CSV query; [] if nvidia-smi gave nothing."""
    out = _run_safely(run, NVIDIA_SMI_QUERY)
    rows = []
    for line in strip_uuids(out or "").splitlines():
        parts = [_cap(part) for part in line.rsplit(",", 2)]  # a name may hold a comma
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def _smi_list(run: Runner) -> list[str]:
    """GPU models from `nvidia-smi -L`, UUIDs stripped (fallback for an older nvidia-smi)."""
    out = _run_safely(run, NVIDIA_SMI_LIST)
    return [_cap(line) for line in strip_uuids(out or "").splitlines() if line.strip()]


def _nvcc_version(run: Runner) -> str:
    out = _run_safely(run, NVCC_VERSION)
    match = _NVCC_RELEASE.search(out or "")
    return f"{match.group(1)} (V{match.group(2)})" if match else NOT_FOUND


def _env_section(environ: Mapping[str, str]) -> EnvSection:
    known = ENV_VARS_BEFORE_NCCL + ENV_VARS_AFTER_NCCL
    nccl = sorted(k for k in environ if k.startswith(ENV_PREFIXES) and k not in known)
    names = [*ENV_VARS_BEFORE_NCCL, *nccl, *ENV_VARS_AFTER_NCCL]
    fields = tuple(EnvField(n, n, _probe(_env_value, environ, n)) for n in names)
    return EnvSection("env", "Environment variables", fields)


def _env_value(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name)
    return NOT_SET if value is None else strip_uuids(str(value))


def _packages_section(version: Callable[[str], str] = importlib.metadata.version) -> EnvSection:
    fields = tuple(EnvField(n, n, _package_version(version, n)) for n in PACKAGES)
    return EnvSection("packages", "Packages", fields)


def _package_version(version: Callable[[str], str], name: str) -> str:
    """Installed version from package metadata: no import, so it is fast and side-effect free."""
    try:
        return _cap(str(version(name)))
    except importlib.metadata.PackageNotFoundError:
        return NOT_INSTALLED
    except Exception:  # corrupt metadata
        return NOT_FOUND


# --- public API --------------------------------------------------------------------------


def collect_env(
    *,
    run: Runner | None = None,
    import_module: Importer | None = None,
    environ: Mapping[str, str] | None = None,
) -> EnvReport:
    """Probe this machine. Never raises; a failed probe reads "not found"."""
    run = run or default_run
    import_module = import_module or importlib.import_module
    environ = os.environ if environ is None else environ
    return EnvReport((
        _system_section(),
        _torch_section(import_module),
        _nvidia_section(run),
        _env_section(environ),
        _packages_section(),
    ))


def format_env_text(report: EnvReport) -> str:
    """Aligned `label: value` lines under one heading per section, like collect_env."""
    blocks = []
    for section in report.sections:
        width = max((len(f.label) for f in section.fields), default=0) + 1
        lines = [f"  {f.label + ':':<{width}} {f.value}" for f in section.fields]
        blocks.append("\n".join([section.title, *lines]))
    return "\n\n".join(blocks) + "\n"


def env_to_json(report: EnvReport) -> dict[str, dict[str, JsonValue]]:
    """{section key: {field key: value}} in report order (JSON objects keep insertion order);
    probed values as JSON types ("True" -> true, "None" -> null, "2" -> 2); environment
    variables and package versions stay the strings they are."""
    return {s.key: {f.key: f.value if s.key in _STRING_SECTIONS else json_value(f.value)
                    for f in s.fields} for s in report.sections}


_STRING_SECTIONS = frozenset({"env", "packages"})


JsonValue = str | int | bool | None
_JSON_WORDS: dict[str, JsonValue] = {"True": True, "False": False, "None": None}


def json_value(text: str) -> JsonValue:
    if text in _JSON_WORDS:
        return _JSON_WORDS[text]
    if text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0")):
        return int(text)
    return text
