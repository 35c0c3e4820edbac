"""Plain frozen dataclasses exchanged between the stages (reader -> extractors -> rules ...).

Every stage takes and returns these; nothing below the CLI prints or exits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

#: A value extracted from a log: the only types a rule param or repro value may have.
ParamValue = Union[int, float, str]


@dataclass(frozen=True, slots=True)
class Line:
    """One logical record of the log: a physical line, or one '\\r' update of it."""

    number: int  # 1-based physical line number in the input
    text: str  # decoded, ANSI stripped, rank prefix removed, capped in length
    rank: int | None = None  # from "[rank3]:", "[default0]:", "3: ", ...
    truncated: bool = False  # the physical line was longer than the cap


# --- events produced by extractors -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Frame:
    file: str
    lineno: int | None
    function: str | None
    code: str | None = None


@dataclass(frozen=True, slots=True)
class Traceback:
    """A Python exception as printed, reassembled per rank."""

    exc_type: str  # as written: "RuntimeError", "torch.OutOfMemoryError", ...
    message: str  # first message line plus continuation lines, joined with "\n"
    line: int  # line number of the "Type: message" line
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
class EnvFact:
    """Something the log reveals about its environment: torch/CUDA/driver version, GPU."""

    line: int
    key: str  # "torch_version", "cuda_version", "driver_version", "gpu_name", "dtype"
    value: str


Event = Union[Traceback, CudaAssert, OomReport, MetricRecord, LossScaleEvent, NcclTimeout,
              WorkerKilled, EnvFact]


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
    severity: str = "crash"  # "crash" | "symptom" | "warning" | "prose"
    variant: str | None = None  # which repro variant the evidence points to
    cascade: bool = False  # a consequence of another failure (NCCL watchdog, ChildFailedError)
    supersedes: tuple[str, ...] = ()  # causes this finding explains (fragmentation > plain OOM)
    damping: float = 1.0  # evidence against the cause (a batch-size finder's expected OOM)


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
    traceback: str = ""  # text of the deciding traceback, for the report
    warnings: tuple[str, ...] = ()  # e.g. "input .gz was truncated at byte N"

    @property
    def diagnosed(self) -> bool:
        return self.cause is not None
