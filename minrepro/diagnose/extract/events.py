"""One-line events: loss-scale reductions, NCCL/barrier timeouts, DataLoader worker deaths.

Real texts (sources cited in tests/test_extract_events.py):
  apex:      Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.03125
  DeepSpeed: [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2048, reducing
             to 1024
             [deepspeed] fp16 dynamic loss scale overflow! Skipping step. Attempted loss scale: ...
             Reducing dynamic loss scale from 65536 to 32768.0   (printed next to the line above)
             Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.
  fairseq:   NOTE: gradient overflow detected, ignoring gradient, setting loss scale to: 64.0
             FloatingPointError: Minimum loss scale reached (0.0001). ...
  NCCL:      [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580,
             OpType=ALLREDUCE, NumelIn=.., NumelOut=.., Timeout(ms)=600000) ran for 600060 ms ...
  barrier:   Waiting in store based barrier to initialize process group for rank: 5, key: ...
             (world_size=8, worker_count=7, timeout=0:30:00)
  workers:   DataLoader worker (pid 325) is killed by signal: Bus error.
             DataLoader worker (pid(s) 123, 456) exited unexpectedly
             ERROR: Unexpected bus error encountered in worker. This might be caused by ... (shm).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

from minrepro.diagnose.extract.units import FLOAT, parse_duration_ms, parse_float, parse_int
from minrepro.diagnose.literals import any_of
from minrepro.model import Line, LossScaleEvent, NcclTimeout, RunEnded, WorkerKilled
from minrepro.patterns import lazy

#: Events repeat (every rank, every retry, every 10 s for barriers); report each once.
_MAX_SEEN = 1024


class _Seen:
    """A bounded set: once full, new keys are no longer remembered (so they may repeat)."""

    def __init__(self, limit: int = _MAX_SEEN) -> None:
        self._keys: set[Hashable] = set()
        self._limit = limit

    def first_time(self, key: Hashable) -> bool:
        if key in self._keys:
            return False
        if len(self._keys) < self._limit:
            self._keys.add(key)
        return True


_RANK_IN_TEXT = lazy(r"\[(?:PG [^\]]*?)?Rank (\d+)\]|\bRank (\d+)\b")


def _rank(line: Line, text: str) -> int | None:
    if line.rank is not None:
        return line.rank
    match = _RANK_IN_TEXT.search(text)
    return None if match is None else int(match[1] or match[2])


# --- loss scale -----------------------------------------------------------------------------

_ATTEMPTED = lazy(rf"Attempted loss scale: ({FLOAT}), reducing to ({FLOAT})")
_REDUCING_FROM = lazy(rf"[Rr]educing (?:dynamic )?loss scale from ({FLOAT}) to ({FLOAT})")
_REDUCING_TO = lazy(rf"(?:reducing|setting) (?:loss )?scale to:? ({FLOAT})")
_MIN_REACHED = lazy(rf"Minimum loss scale reached \(({FLOAT})\)")
_AT_MINIMUM = "loss scale already at minimum"


class LossScaleExtractor:
    """Dynamic loss-scale reductions (apex, DeepSpeed, fairseq) -> LossScaleEvent."""

    TRIGGERS = ("scale",)
    SELECT = ("overflow", "loss scale")

    def __init__(self) -> None:
        # DeepSpeed prints one reduction twice ("Reducing dynamic loss scale from A to B" and
        # "Attempted loss scale: A, reducing to B"): drop the echo within a few lines.
        self._last: tuple[float | None, float | None, int | None, int] | None = None

    def feed(self, line: Line) -> Sequence[LossScaleEvent]:
        text = line.text
        if not _may_scale(text):
            return ()
        event = _loss_scale_event(text, line)
        if event is None:
            return ()
        last, self._last = self._last, (event.scale_from, event.scale_to, event.rank, line.line)
        if (last is not None and last[:3] == self._last[:3] and line.line - last[3] <= 3
                and not event.at_minimum):
            return ()
        return (event,)

    def close(self) -> Sequence[LossScaleEvent]:
        return ()


def _loss_scale_event(text: str, line: Line) -> LossScaleEvent | None:
    rank = _rank(line, text)
    if _AT_MINIMUM in text:
        return LossScaleEvent(line=line.line, scale_to=None, at_minimum=True, rank=rank)
    match = _MIN_REACHED.search(text)
    if match:
        return LossScaleEvent(line=line.line, scale_to=parse_float(match[1]),
                              at_minimum=True, rank=rank)
    match = _ATTEMPTED.search(text) or _REDUCING_FROM.search(text)
    if match:
        return LossScaleEvent(line=line.line, scale_from=parse_float(match[1]),
                              scale_to=parse_float(match[2]), rank=rank)
    match = _REDUCING_TO.search(text)
    if match and "overflow" in text.lower():
        return LossScaleEvent(line=line.line, scale_to=parse_float(match[1]), rank=rank)
    return None


# --- NCCL / process-group timeouts ----------------------------------------------------------

_SEQ = lazy(r"SeqNum=(\d+)")
_OPTYPE = lazy(r"OpType=(\w+)")
_TIMEOUT_MS = lazy(r"Timeout\(ms\)=(\d+)")
_BARRIER_RANK = lazy(r"rank: (\d+)")
_BARRIER_TIMEOUT = lazy(r"timeout=([\d:., a-z]+)\)")
_SECONDS = lazy(r"(?:after|for) (\d+(?:\.\d+)?) ?(?:seconds|s\b)")


class NcclExtractor:
    """NCCL watchdog timeouts, store-based barrier waits, DistBackendError timeouts."""

    TRIGGERS = ("Watchdog caught", "store based barrier", "DistBackendError", "DistStoreError")
    SELECT = ("watchdog", "timed out", "timeout", "store based barrier")

    def __init__(self) -> None:
        self._seen = _Seen()

    def feed(self, line: Line) -> Sequence[NcclTimeout]:
        text = line.text
        if _may_nccl(text):
            event = _nccl_event(text, line)
            if event is not None and self._seen.first_time(
                    (event.op, event.timeout_ms, event.seq_num, event.rank)):
                return (event,)
        return ()

    def close(self) -> Sequence[NcclTimeout]:
        return ()


def _nccl_event(text: str, line: Line) -> NcclTimeout | None:
    if "Watchdog caught" in text:
        return _watchdog(text, line)
    if "store based barrier" in text:
        return _barrier(text, line)
    if "Timeout" in text or "timed out" in text.lower():
        seconds = _SECONDS.search(text)
        timeout = round(float(seconds[1]) * 1000) if seconds else None
        return NcclTimeout(line=line.line, op=None, timeout_ms=timeout, rank=_rank(line, text))
    return None


def _watchdog(text: str, line: Line) -> NcclTimeout:
    seq, op, timeout = _SEQ.search(text), _OPTYPE.search(text), _TIMEOUT_MS.search(text)
    return NcclTimeout(
        line=line.line,
        op=op[1] if op else None,
        timeout_ms=parse_int(timeout[1]) if timeout else None,
        seq_num=parse_int(seq[1]) if seq else None,
        rank=_rank(line, text),
    )


def _barrier(text: str, line: Line) -> NcclTimeout:
    rank = line.rank
    if rank is None:
        match = _BARRIER_RANK.search(text)
        rank = int(match[1]) if match else None
    timeout = _BARRIER_TIMEOUT.search(text)
    return NcclTimeout(line=line.line, op="barrier",
                       timeout_ms=parse_duration_ms(timeout[1]) if timeout else None, rank=rank)


# --- DataLoader workers ---------------------------------------------------------------------

_KILLED = lazy(r"(?i:DataLoader) worker \(pid (\d+)\) is killed by signal(?:ed)?: ([^.]+)")
_EXITED = lazy(r"DataLoader worker \(pid\(?s?\)? ?([\d, ]*)\) exited unexpectedly")
_IN_WORKER = lazy(r"Unexpected (bus error|segmentation fault|floating-point exception)"
                        r" encountered in worker")
_SIGNAL_NAME = {"bus error": "Bus error", "segmentation fault": "Segmentation fault",
                "floating-point exception": "Floating-point exception"}


class WorkerKilledExtractor:
    """DataLoader worker deaths (signal, unexpected exit, shm bus error) -> WorkerKilled."""

    TRIGGERS = ("ataLoader worker", "ataloader worker", "in worker")  # any case of "D"
    SELECT = ("killed by signal", "exited unexpectedly", "bus error")

    def __init__(self) -> None:
        self._seen = _Seen()

    def feed(self, line: Line) -> Sequence[WorkerKilled]:
        text = line.text
        if not _may_worker(text):
            return ()
        event = _worker_event(text, line)
        if event is None or not self._seen.first_time((event.signal, event.pid, event.rank)):
            return ()
        return (event,)

    def close(self) -> Sequence[WorkerKilled]:
        return ()


def _worker_event(text: str, line: Line) -> WorkerKilled | None:
    match = _KILLED.search(text)
    if match:
        return WorkerKilled(line=line.line, signal=match[2].strip(), pid=int(match[1]),
                            rank=line.rank)
    match = _EXITED.search(text)
    if match:
        pids = re.findall(r"\d+", match[1])
        return WorkerKilled(line=line.line, signal="exited",
                            pid=int(pids[0]) if pids else None, rank=line.rank)
    match = _IN_WORKER.search(text)
    if match:
        return WorkerKilled(line=line.line, signal=_SIGNAL_NAME[match[1]], rank=line.rank)
    return None


_may_scale = any_of(LossScaleExtractor.TRIGGERS)
_may_nccl = any_of(NcclExtractor.TRIGGERS)
_may_worker = any_of(WorkerKilledExtractor.TRIGGERS)


# --- the run's own word that it finished ---------------------------------------------------

_FINISHED = lazy(
    r"(?i)\btraining(?: of (?:the )?(?:experiment|run|job|model))? (?:is |has )?(?:been )?"
    r"(?:complete|completed|finished|done|ended)\b"
    r"|\bfinished training\b|\btrain(?:ing)? (?:job )?finished\b|'train_runtime'|\"train_runtime\""
    r"|\bexits successfully\b|\bTotal training time\b|\bOverall training speed\b"
    # "Finetuning completed successfully!", "All folds complete", "Experiment finished."
    r"|\b(?:fine-?tuning|pre-?training|all (?:folds|epochs|runs)|experiment|job)"
    r" (?:is |has |have )?(?:been )?(?:complete|completed|finished|done)\b"
    r"|\b(?:training|fine-?tuning|run|job|experiment)\b.{0,40}"
    r"\b(?:completed|finished) successfully\b"
    r"|max_epochs=\d+` reached|\bmax_steps=\d+` reached")


class RunEndedExtractor:
    """The run's own word that it finished -> RunEnded (the last one counts)."""

    TRIGGERS = ("raining", "train_runtime", "successfully", "reached", "finished", "omplete",
                "inished", "done")

    def feed(self, line: Line) -> Sequence[RunEnded]:
        text = line.text
        if not _may_end(text) or not _FINISHED.search(text):
            return ()
        return (RunEnded(line=line.line, text=text[:300]),)

    def close(self) -> Sequence[RunEnded]:
        return ()


_may_end = any_of(RunEndedExtractor.TRIGGERS)
