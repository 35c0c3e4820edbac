"""Plain frozen dataclasses exchanged between the stages (reader -> extractors -> rules ...).

Every stage takes and returns these; nothing below the CLI prints or exits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Union

from minrepro.patterns import lazy

#: A value extracted from a log: the only types a rule param or repro value may have.
ParamValue = Union[int, float, str]


class Name(str, Enum):
    """A fixed set of names: compares equal to, prints and formats as its value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class RootClass(Name):
    """Where a failure comes from; a fleet's root-cause distribution is told in these."""

    CONFIG = "config"  # a setting or command is wrong: lr, batch size, a path, a port ...
    DATA = "data"  # labels out of range or of one class, NaN inputs, corrupt files
    CODE = "code"  # the training code itself: autograd misuse, device/dtype/shape mixing
    ENVIRONMENT = "environment"  # CUDA/driver/torch builds, missing or incompatible packages
    FRAMEWORK = "framework"  # a bug inside PyTorch or a library
    HARDWARE = "hardware"  # GPU Xid/ECC, a node or the network fabric failing


class Severity(Name):
    """What kind of evidence a finding rests on (a str: JSON and YAML spell it as its value)."""

    CRASH = "crash"  # the run stopped: an exception, an assert, a kill
    SYMPTOM = "symptom"  # the run went on, badly: a curve, a memory trend, loss-scale collapse
    WARNING = "warning"  # a warning line that points at the cause
    PROSE = "prose"  # words of a bug report, not of a machine log


class Role(Name):
    """How a rule's signal counts towards its cause."""

    PRIMARY = "primary"  # names the cause on its own
    SUPPORT = "support"  # strengthens a primary hit nearby
    AGAINST = "against"  # evidence against the cause: takes its weight's share off the score


@dataclass(frozen=True, slots=True)
class Line:
    """One logical record of the log: a physical line, or one '\\r' update of it."""

    line: int  # 1-based physical line number in the input
    text: str  # decoded, ANSI stripped, rank prefix removed, capped in length
    rank: int | None = None  # from "[rank3]:", "[default0]:", "3: ", ...
    truncated: bool = False  # the physical line was longer than the cap


# --- events produced by extractors -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame of a Python traceback: `File "file", line N, in function` and its code."""

    file: str
    line: int | None  # line in `file` (not in the log)
    function: str | None
    code: str | None = None

    @property
    def package(self) -> str | None:
        """The package the frame is in ("torch", "stdlib"), None for the user's own code."""
        package = package_of(self.file)  # (`python -c` code is the user's own: <module>)
        return None if package == "<string>" and self.function == "<module>" else package


_SITE_PACKAGE = lazy(r"[\\/](?:site|dist)-packages[\\/]([^\\/]+)")
_STDLIB = lazy(r"[\\/]lib[\\/]python\d(?:\.\d+)?[\\/]|^<frozen |\\(?:python\d*|"
               r"(?:ana|mini)conda\d*|envs\\[^\\]+)\\Lib\\[^\\]+\.py$", re.IGNORECASE)
_DISTRIBUTION = lazy(r"(?:-\d[^\\/]*)?(?:\.egg|\.py)?$")
# an unpacked release of a library run from its source tree: `.../detectron2-0.3/detectron2/...`
_RELEASE_TREE = lazy(r"[\\/]([A-Za-z_]\w*)-v?\d+(?:\.\w+)+[\\/]\1[\\/]")
# code a library downloads, compiles or execs, not the user's: a Hub model's remote code, a
# torch.hub checkout, unsloth's compiled trainers (`unsloth_compiled_cache/`), `<string>`
_DOWNLOADED = lazy(r"[\\/](?:huggingface[\\/]modules[\\/](transformers_modules)|"
                   r"torch[\\/](hub)|([A-Za-z]\w*?)_compiled_cache)[\\/]|^(<string>)$")


def package_of(path: str) -> str | None:
    """`.../site-packages/transformers/trainer.py` -> "transformers"; Hub remote code ->
    "transformers_modules", torch.hub -> "torch.hub", `unsloth_compiled_cache/` -> "unsloth",
    exec'd code -> "<string>", the standard library -> "stdlib"; the user's code -> None."""
    match = _SITE_PACKAGE.search(path)
    if match:
        name = _DISTRIBUTION.sub("", match[1])  # "foo-1.0-py3.8.egg" -> "foo", "six.py" -> "six"
        return name or None
    match = _RELEASE_TREE.search(path)
    if match:
        return match[1]
    match = _DOWNLOADED.search(path)
    if match:
        return match[1] or ("torch.hub" if match[2] else match[3] or match[4])
    return "stdlib" if _STDLIB.search(path) else None


@dataclass(frozen=True, slots=True)
class Traceback:
    """A Python exception as printed, reassembled per rank."""

    exc_type: str  # as written: "RuntimeError", "torch.OutOfMemoryError", ...
    message: str  # first message line plus continuation lines, joined with "\n"
    line: int  # line of the "Type: message" line
    first_line: int  # line of "Traceback (most recent call last):" (or of the first frame)
    rank: int | None = None
    frames: tuple[Frame, ...] = ()
    chained: str | None = None  # "cause" / "context": how the NEXT traceback relates to this one

    @property
    def short_type(self) -> str:
        return self.exc_type.rsplit(".", 1)[-1]


@dataclass(frozen=True, slots=True)
class CudaAssert:
    """`file.cu:123: kernel: block: [..] thread: [..] Assertion `cond` failed.`"""

    line: int
    file: str
    kernel: str
    condition: str
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class OomReport:
    """A CUDA out-of-memory message, old or new format; sizes in bytes (None when absent)."""

    line: int
    requested_bytes: int | None
    capacity_bytes: int | None = None
    free_bytes: int | None = None
    allocated_bytes: int | None = None  # allocated by PyTorch
    reserved_bytes: int | None = None  # reserved by PyTorch in total
    device_index: int | None = None
    rank: int | None = None
    fmt: str = "old"  # "old" (<= 2.0 wording) or "new" (2.1+ wording)


@dataclass(frozen=True, slots=True)
class MetricRecord:
    """Values reported for one step. Names are normalised (see extract/metrics.py)."""

    line: int
    values: tuple[tuple[str, float], ...]  # ("loss", 2.30), ("learning_rate", 1e-4), ...
    step: int | None = None
    rank: int | None = None
    series: str = ""  # the line's shape (numbers masked): which series the values belong to

    def get(self, name: str) -> float | None:
        for key, value in self.values:
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class LossScaleEvent:
    """A dynamic loss-scale reduction (apex, DeepSpeed, custom scalers)."""

    line: int
    scale_to: float | None
    scale_from: float | None = None
    at_minimum: bool = False
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class NcclTimeout:
    line: int
    op: str | None
    timeout_ms: int | None
    seq_num: int | None = None
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class WorkerKilled:
    """`DataLoader worker (pid N) is killed by signal: Killed.` and friends."""

    line: int
    signal: str
    pid: int | None = None
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class UsageError:
    """A program that refused its command line or config and exited without a traceback:
    argparse's `train.py: error: unrecognized arguments: ...`, Hydra's `Could not override`."""

    line: int
    message: str
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class ProcessKilled:
    """A process that died without a Python exception: a signal, the OOM killer, the
    scheduler (how: exitcode | signal | oom | scheduler | killed | segfault | aborted)."""

    line: int
    how: str
    detail: str
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class ConfusionMatrix:
    """A confusion matrix the run printed under a "confusion" heading: rows of counts, one a
    true class (sklearn's and numpy's layout: columns are the predicted classes)."""

    line: int  # its first row's
    rows: tuple[tuple[float, ...], ...]  # counts, or shares where the log prints shares
    rank: int | None = None
    text: str = ""  # its first row's
    last: tuple[int, str] = (0, "")  # its last row's line and text


@dataclass(frozen=True, slots=True)
class EnvFact:
    """Something the log reveals about its environment: torch/CUDA/driver version, GPU."""

    line: int
    key: str  # "torch_version", "cuda_version", "driver_version", "gpu_name", "dtype"
    value: str


#: EnvFact keys of installed packages: "package:transformers" -> "4.36.2".
PACKAGE_FACT = "package:"
_NAME_RUNS = lazy(r"[-_. ]+")


def package_key(name: str) -> str:
    """The EnvFact key of a package, its name normalised as pip does (PEP 503):
    "Pytorch_Lightning" and "pytorch-lightning" are one package."""
    return PACKAGE_FACT + _NAME_RUNS.sub("-", name.strip()).lower()


def package_versions(env: dict[str, str]) -> dict[str, str]:
    """The packages of an env mapping (name -> version), apart from its other facts."""
    return {k.removeprefix(PACKAGE_FACT): v for k, v in env.items() if k.startswith(PACKAGE_FACT)}


@dataclass(frozen=True, slots=True)
class RunEnded:
    """The run says it finished: "Training completed", the Trainer's train_runtime summary,
    "exits successfully", Lightning's "max_epochs=N reached"."""

    line: int
    text: str


Event = Union[Traceback, CudaAssert, OomReport, MetricRecord, LossScaleEvent, NcclTimeout,
              WorkerKilled, EnvFact, RunEnded, ProcessKilled, UsageError, ConfusionMatrix]


class FailureKind(Name):
    EXCEPTION = "exception"
    CUDA_ASSERT = "cuda_assert"
    WORKER_KILLED = "worker_killed"
    NCCL_TIMEOUT = "nccl_timeout"
    KILLED = "killed"  # a process killed without an exception (signal, OOM killer, scheduler)
    USAGE = "usage"  # a program refused its arguments or config and exited (argparse, Hydra)


@dataclass(frozen=True, slots=True)
class Failure:
    """Something that failed in the log (an exception, a CUDA assert, a killed worker, a
    collective timeout), summarised for the diagnosis, the report and triage."""

    exc_type: str  # as written: "RuntimeError", "torch.OutOfMemoryError"; "" for no exception
    message: str  # the first line of the message
    line: int  # the exception line (or the last line seen of a cut-off traceback)
    first_line: int  # where its traceback starts
    rank: int | None = None
    frames: tuple[Frame, ...] = ()
    text: str = ""  # the traceback as printed, for the report
    kind: FailureKind = FailureKind.EXCEPTION
    timestamp: float | None = None  # from the log line, for ordering across ranks

    @property
    def headline(self) -> str:
        """`Type: first message line`, as one line."""
        return f"{self.exc_type}: {self.message}".strip(": ")

    @property
    def short_type(self) -> str:
        """The exception's class name without its module (as Traceback.short_type)."""
        return self.exc_type.rsplit(".", 1)[-1]

    @property
    def interrupted(self) -> bool:
        """The user stopped the process (Ctrl-C): a KeyboardInterrupt."""
        return self.short_type == "KeyboardInterrupt"

    @property
    def stopped(self) -> bool:
        """The process was stopped, not failed: interrupted, or a SystemExit."""
        return self.short_type in ("KeyboardInterrupt", "SystemExit")

    @property
    def user_frame(self) -> Frame | None:
        """The innermost frame in the user's own code (no package)."""
        return next((f for f in reversed(self.frames) if f.package is None), None)

    @property
    def library_frame(self) -> Frame | None:
        """The innermost frame, when it is inside a package: where the failure was raised."""
        return self.frames[-1] if self.frames and self.frames[-1].package else None


# --- findings and the diagnosis -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Evidence:
    line: int
    text: str
    rank: int | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    """One rule or analyzer saying "this looks like <cause>", with how sure and why."""

    rule_id: str
    cause: str
    category: str
    score: float  # 0..1
    first_line: int  # where the failure shows first (earlier failures win over cascades)
    evidence: tuple[Evidence, ...] = ()
    params: tuple[tuple[str, ParamValue], ...] = ()
    severity: Severity = Severity.CRASH
    variant: str | None = None  # which repro variant the evidence points to
    cascade: bool = False  # a consequence of another failure (NCCL watchdog, ChildFailedError)
    supersedes: tuple[str, ...] = ()  # causes this finding explains (fragmentation > plain OOM)
    #: the share of the score that evidence against the cause leaves (a batch-size finder's
    #: expected OOM); 1.0: nothing against it
    kept_share: float = 1.0


@dataclass(frozen=True, slots=True)
class Alternative:
    cause: str
    category: str
    confidence: float


@dataclass(frozen=True)
class Diagnosis:
    """What went wrong in one log. `cause` is None when no known cause was found."""

    cause: str | None
    category: str | None
    confidence: float
    params: dict[str, ParamValue] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    fix: str = ""
    alternatives: tuple[Alternative, ...] = ()
    rule_id: str | None = None
    title: str = ""
    variant: str | None = None
    summary: str = ""  # one sentence; for "no known cause", what was seen instead
    source: str = ""  # the log's name (basename only: nothing volatile)
    env: dict[str, str] = field(default_factory=dict)  # versions/GPU the log reveals
    loss_curve: tuple[float, ...] = ()  # downsampled, for the report's sparkline
    traceback: str = ""  # text of the first failure's traceback, for the report
    failure: Failure | None = None  # what failed first (across ranks)
    root: RootClass | None = None  # where it came from; None: the evidence does not decide
    cascade: tuple[Failure, ...] = ()  # what followed from the first failure
    warnings: tuple[str, ...] = ()  # e.g. "input .gz was truncated at byte N"

    @property
    def diagnosed(self) -> bool:
        """A cause was named."""
        return self.cause is not None

    @property
    def answered(self) -> bool:
        """A cause or a root class was named (exit status 0)."""
        return self.cause is not None or self.root is not None
