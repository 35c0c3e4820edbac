"""The first failure of a run, across its ranks, and the cascade that followed from it.

Every exception, CUDA assert, killed worker and collective timeout is a candidate. Some are
never the first failure however early they print:

* wrappers, whose original exception is printed beside them: torchrun's ChildFailedError
  (its "Root Cause (first observed failure)" names the rank), "Caught X in DataLoader
  worker process N" / "in replica N" (the original traceback follows);
* cascades: what the other ranks hit once one died (the NCCL watchdog, a communicator
  aborted, a broken pipe), an exception raised while handling another (a chained
  traceback: the first printed is the original), an "Exception ignored in" teardown, a worker
  aborted with its parent;
* interrupts (KeyboardInterrupt, SystemExit without an argparse error): no failure at all.

Of the rest, the earliest wins: by timestamp where both lines carry one, else by line.
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace

from minrepro.diagnose.extract.cxxabort import is_cxx_abort
from minrepro.diagnose.extract.kills import BATCH_REPORT, JOB_END
from minrepro.diagnose.extract.pylines import exception_at_start
from minrepro.diagnose.stamps import DATED, timestamp
from minrepro.model import (
    CudaAssert,
    Failure,
    FailureKind,
    NcclTimeout,
    ProcessKilled,
    Traceback,
    UsageError,
    WorkerKilled,
)
from minrepro.patterns import lazy

MAX_CANDIDATES = 24
MAX_CASCADE = 8
_WRAPPED = lazy(r"Caught \w+ in (?:DataLoader worker process|replica) \d+")
# torch < 1.2 re-raised a worker's exception with its traceback as message: `TypeError:
# Traceback (most recent...` (the same type), before 1.1 `Exception: KeyError:Traceback (...`
_OLD_WRAPPED = lazy(r"^(?:([A-Z]\w*(?:Error|Exception|Interrupt)):)?\s*Traceback \(most recent")
_CASCADE_TEXT = lazy(
    r"Watchdog caught collective|NCCL communicator was aborted|Some NCCL operations have "
    r"failed|ProcessGroupNCCL|DistBackendError|Connection reset by peer|Broken pipe|"
    r"recvValue failed|Socket Timeout|Connection closed by peer|detected a failure on "
    r"another rank|other ranks? (?:failed|exited)|terminate called", re.IGNORECASE)
_LAUNCHER = ("ChildFailedError", "ProcessRaisedException", "ProcessExitedException")
# launchers re-raising a child's exit status print the child's own traceback above it
_LAUNCHER_FRAME = lazy(r"accelerate[\\/]commands[\\/]|torch[\\/]distributed[\\/]launch\.py|"
                       r"deepspeed[\\/]launcher[\\/]")
#: ... or any wrapper script's `subprocess.run([sys.executable, "train.py"], check=True)`: a
#: Python child, whose own traceback is printed above the CalledProcessError
_PYTHON_CHILD = lazy(r"Command '\[\s*['\"][^'\"]*python[\w.]*(?:\.exe)?['\"]", re.IGNORECASE)
_JOB_END = lazy(JOB_END)
_JOB_ENDS = 64  # the last job ends kept (one file of many appended jobs)
_TEARDOWN_LINES = 3  # a C++ abort this close below a Python exception is its teardown
_CHILD_LINES = 40  # a child's exception this close above its parent's CalledProcessError
_WORKER_RAISE_LINES = 30  # the main process's raise this close after a worker's death
_ABORT_LINES = 60  # the watchdog's C++ abort this close after its timeout line
_SIGABRT = lazy(r"exitcode: -6\)|SIGABRT")
_WORKER_DEATH = lazy(r"DataLoader worker|shared memory|unable to write to file </torch_|"
                     r"Bus error|killed by signal")
_INTERRUPTS = ("KeyboardInterrupt",)
#: torchrun's agent passing on the user's Ctrl-C: "Process 49486 got signal: 2"
_SIGINT = lazy(r"got signal: 2\b")
_INTERRUPT_SPAN = 400  # lines a traceback interrupted with the others may start before it
# errors a shell tool prints before the job runs (conda's `conda activate` outside an
# initialised shell): the job goes on in another environment, to fail, if so, later
_SHELL_TOOLS = ("CommandNotFoundError",)
_REPORTED_FIRST = lazy(BATCH_REPORT)  # a kill the batch scheduler reports above the output
# a logger's WARNING level before the traceback's first line or the exception's own line
_WARNED = lazy(r"(?:\[WARN(?:ING)?\]|\bWARN(?:ING)?\b\s*[:\]-]|^W\d{4} \d\d:\d\d)"
               r".*?(?:Traceback \(most recent call last\)|\b[A-Za-z_][\w.]*(?:Error|Exception)\b)")
_ARGPARSE = lazy(r"unrecognized arguments|arguments are required|invalid choice")
# torchrun's Root Cause table; torch.multiprocessing.spawn's report of the process that failed
_ROOT_RANK = lazy(r"Root Cause \(first observed failure\):.*?\brank\s*:\s*(\d+)|"
                  r"^-- Process (\d+) terminated with the following error", re.DOTALL)


# the rank a failure's own message says it failed on, where no prefix gave one: DDP's
# `Parameters which did not receive grad for rank 3` (a watchdog's `[Rank 2]` is the rank
# that waited, the cascade's, not the one that failed)
_MESSAGE_RANK = lazy(r"did not receive grad for rank (\d+)")
_NAMES_A_RANK = lazy(r"(?i)\[rank\s*\d+\]|\brank\s*[:=]?\s*\d+")


def rank_in_message(message: str) -> int | None:
    """The rank an exception's message says it failed on, else None."""
    found = _MESSAGE_RANK.search(message) if "receive grad" in message else None
    return int(found[1]) if found else None


@dataclass(eq=False)
class _Candidate:
    failure: Failure
    role: str  # "failure" | "wrapper" | "cascade"


class FailureLog:
    """Collects the failure candidates of one log in bounded memory; `resolve` picks."""

    def __init__(self) -> None:
        self.candidates: list[_Candidate] = []
        self.root_rank: int | None = None  # the rank torchrun says failed first
        self._chained: dict[int | None, bool] = {}  # rank -> the last traceback chains on
        self._interrupts: list[int] = []  # lines of the user's interrupts (the last few)
        self._job_ends: deque[tuple[int, str]] = deque(maxlen=_JOB_ENDS)  # SLURM's CANCELLED

    def add_traceback(self, tb: Traceback, failure: Failure, before: str,
                      opening: str = "") -> None:
        """`before`: the text of the line before the traceback; `opening`: its own first
        line as printed (a logger's prefix and level included)."""
        short = tb.short_type
        text = tb.message
        if short in _INTERRUPTS or (short == "SystemExit" and not _ARGPARSE.search(text)) or (
                short == "SignalException" and _SIGINT.search(text)):
            self._chained[tb.rank] = False
            if short != "SystemExit":
                self._interrupts = [*self._interrupts[-7:], failure.line]
            return
        if short in _LAUNCHER or (short == "CalledProcessError" and (
                _PYTHON_CHILD.search(text) or self._child_failed_above(failure)
                or any(_LAUNCHER_FRAME.search(frame.file) for frame in tb.frames))):
            found = _ROOT_RANK.search(text)
            if found:
                self.root_rank = int(found[1] or found[2])
            role = "wrapper"
        elif (short in _SHELL_TOOLS and not tb.frames) or _WARNED.search(opening):
            role = "cascade"  # taken only where nothing else is found: a shell's message, or
            # a traceback a logger printed at WARNING level (torch._dynamo's "WON'T CONVERT":
            # the process went on)
        elif _WRAPPED.search(text.splitlines()[0] if text else "") or _OLD_WRAPPED.match(text):
            role = "wrapper"  # its original traceback is printed next
        elif (self._chained.get(tb.rank) or "Exception ignored in" in before
              or _CASCADE_TEXT.search(text) or _in_thread(tb, before)
              or self._seen_as_cascade(failure)
              or (is_cxx_abort(failure) and short.endswith("DistBackendError"))):
            role = "cascade"  # (a background thread's exception: the process went on)
        else:
            role = "failure"
        self._chained[tb.rank] = tb.chained is not None
        if role == "failure" and "device-side assert" in text:
            if self._merge_into_assert(failure):
                return
        self._add(failure, role)

    def _child_failed_above(self, failure: Failure) -> bool:
        """An exception printed just above a CalledProcessError: the child's own (its
        command line may be wrapped past where it names python)."""
        return any(c.role == "failure" and c.failure.exc_type and c.failure.rank == failure.rank
                   and 0 <= failure.first_line - c.failure.line <= _CHILD_LINES
                   for c in self.candidates[-4:])

    def _seen_as_cascade(self, failure: Failure) -> bool:
        """Another copy of an exception just taken as a cascade (threads printing over each
        other leave copies with some of their frames, or none)."""
        return any(c.role == "cascade" and c.failure.headline == failure.headline
                   for c in self.candidates[-16:])

    def _last_job_start(self) -> int:
        """The end line of the job before the last one in the file (0: one job only)."""
        if not self._job_ends:
            return 0
        last = self._job_ends[-1][1]
        return max((line for line, job in self._job_ends if job != last), default=0)

    def _in_teardown(self, failure: Failure) -> bool:
        """A C++ abort just after a Python exception of its rank: the process's teardown
        (a CUDA event freed after an ECC error) ending it, not a failure of its own."""
        return is_cxx_abort(failure) and any(
            c.failure.kind is FailureKind.EXCEPTION and c.failure.exc_type
            and not is_cxx_abort(c.failure) and c.failure.rank == failure.rank
            and 0 <= failure.first_line - c.failure.line <= _TEARDOWN_LINES
            for c in self.candidates)

    def _reports_an_abort(self, failure: Failure) -> bool:
        """A launcher's SIGABRT report (`exitcode: -6`) after a C++ abort printed above."""
        return (failure.kind is FailureKind.KILLED and _SIGABRT.search(failure.message)
                is not None and any(is_cxx_abort(c.failure) and c.failure.line < failure.line
                                    for c in self.candidates))

    def add_event(self, event: CudaAssert | WorkerKilled | NcclTimeout | ProcessKilled
                  | UsageError, text: str) -> None:
        stamp = timestamp(text)
        if isinstance(event, UsageError):
            failure = Failure("", event.message, event.line, event.line, event.rank, text=text,
                              kind=FailureKind.USAGE, timestamp=stamp)
            self._add(failure, "failure")
            return
        if isinstance(event, ProcessKilled):
            ended = _JOB_END.search(text)
            if ended is not None:
                self._job_ends.append((event.line, ended[1]))
            if event.how == "cancelled":
                return  # the user's scancel ends the job: no failure of its own
            failure = Failure("", f"process killed: {event.detail}", event.line, event.line,
                              event.rank, text=text, kind=FailureKind.KILLED, timestamp=stamp)
            role = _kill_role(event)
            if role == "wrapper" and self.root_rank is None:
                # torchrun's first `failed (exitcode: 1) local_rank: N`: the worker whose
                # exception is printed elsewhere (its Root Cause table, where printed, wins:
                # on several nodes a local rank is not the global one)
                self.root_rank = event.rank
            self._add(failure, role)
            return
        if isinstance(event, CudaAssert):
            where = event.kernel or event.file
            failure = Failure("", f"Assertion `{event.condition}` failed in {where}",
                              event.line, event.line, event.rank, text=text,
                              kind=FailureKind.CUDA_ASSERT, timestamp=stamp)
            self._add(failure, "failure")
        elif isinstance(event, WorkerKilled):
            failure = Failure(_raised_as(text), f"DataLoader worker killed: {event.signal}",
                              event.line, event.line, event.rank, text=text,
                              kind=FailureKind.WORKER_KILLED, timestamp=stamp)
            self._add(failure, "cascade" if event.signal == "Aborted" else "failure")
        else:
            op = f" in {event.op.lower()}" if event.op else ""
            failure = Failure(_raised_as(text), f"collective timed out{op}",
                              event.line, event.line, event.rank, text=text,
                              kind=FailureKind.NCCL_TIMEOUT, timestamp=stamp)
            self._add(failure, "cascade")

    def _add(self, failure: Failure, role: str) -> None:
        if len(self.candidates) >= MAX_CANDIDATES:
            if role != "failure":
                return  # the first ones (the original failure) and real failures matter
            del self.candidates[MAX_CANDIDATES // 2]
        self.candidates.append(_Candidate(failure, role))

    def _merge_into_assert(self, failure: Failure) -> bool:
        """`RuntimeError: CUDA error: device-side assert triggered` after its assert lines:
        one failure, starting at the assert, with the exception's type and traceback."""
        for index in range(len(self.candidates) - 1, -1, -1):
            found = self.candidates[index].failure
            if found.kind is FailureKind.CUDA_ASSERT and found.rank == failure.rank:
                self.candidates[index] = _Candidate(replace(
                    failure, first_line=found.first_line, timestamp=found.timestamp,
                    message=f"{failure.message} ({found.message})"[:300]), "failure")
                return True
        return False

    def resolve(self, went_on_until: int = 0, restarts: tuple[int, ...] = (), ended: int = 0
                ) -> tuple[Failure | None, tuple[Failure, ...], bool]:
        """(the first failure, what followed from it, whether it is a failure of its own
        rather than only a cascade or a wrapper: nothing better was found).

        `went_on_until`: the line of the last training record. An error the run went on
        training after (a batch-size finder's OOM, a caught exception) is no failure, unless
        training started over after it (`restarts`: lines where the step counter went back,
        a new session appended to the same log): then it ended its session, unless the
        last session said it finished (`ended`: the line of its "Training ... done", after
        the last training records) or failed itself: earlier sessions' crashes are then
        history."""
        if 0 < went_on_until <= ended:
            restarts = ()
        # Several SLURM jobs appended to one output file: the last job's outcome is the log's,
        # the failures of jobs that ended before it began are history.
        last_job = self._last_job_start()
        self.candidates = [c for c in self.candidates if c.failure.line > last_job]
        self.candidates = [_Candidate(c.failure, "cascade") if c.role == "failure"
                           and self._in_teardown(c.failure) else c for c in self.candidates]
        self.candidates = [_Candidate(c.failure, "wrapper") if c.role == "failure"
                           and self._reports_an_abort(c.failure) else c
                           for c in self.candidates]
        self.candidates = [c for c in self.candidates if c.failure.line >= went_on_until
                           or any(line > c.failure.line for line in restarts)
                           or _REPORTED_FIRST.search(c.failure.message)]
        # Training started over after a failure (the user launched again into the same
        # file) and the last session failed too: its failure is the one to diagnose, the
        # earlier sessions' are history.
        last_start = max(restarts, default=0)
        if any(c.role == "failure" and c.failure.line > last_start for c in self.candidates):
            self.candidates = [c for c in self.candidates if c.failure.line > last_start]
        # A traceback cut before its exception line shortly before a Ctrl-C is another
        # rank's copy of the interrupt, printed over (KeyboardInterruptKeyboardInterrupt).
        self.candidates = [c for c in self.candidates if c.failure.exc_type
                           or c.failure.kind is not FailureKind.EXCEPTION or not any(
            0 <= line - c.failure.first_line <= _INTERRUPT_SPAN for line in self._interrupts)]
        failures = [c.failure for c in self.candidates if c.role == "failure"]
        # A traceback cut before its exception line (ranks printing over each other) is a
        # failure only when nothing whole is found.
        whole = [f for f in failures if f.exc_type or f.kind is not FailureKind.EXCEPTION]
        # A bare `Type: message` line (a shell's or a logger's: conda's CommandNotFoundError
        # at the top of a job) gives way to an exception printed with its traceback.
        if any(_traced(f) for f in whole):
            whole = [f for f in whole if f.kind is not FailureKind.EXCEPTION or _traced(f)]
        failures = whole + [f for f in failures if f not in whole] if whole else failures
        others = [c.failure for c in self.candidates if c.role != "failure"]
        if self.root_rank is not None and any(f.rank == self.root_rank for f in failures):
            failures = [f for f in failures if f.rank == self.root_rank] + \
                [f for f in failures if f.rank != self.root_rank]
            first = failures[0]
        elif whole:
            first = min(whole, key=_order_key(whole))
        elif failures and (typed := _typed_by_wrapper(
                min(failures, key=_order_key(failures)), others)).exc_type:
            first = typed
        else:
            # only cascades, wrappers, or tracebacks cut before their exception line: a whole
            # cascade says more than a cut traceback (the same exception re-printed, cut)
            cascades = [c.failure for c in self.candidates if c.role == "cascade"]
            wrappers = [c.failure for c in self.candidates if c.role == "wrapper"]
            pool = cascades or wrappers or failures
            if not pool:
                return None, (), False
            first = min(pool, key=_order_key(pool))
            failures = [f for f in failures if f is first]
        rest = [f for f in failures + others if f is not first]
        rest.sort(key=lambda f: f.first_line)
        first = _typed_by_what_followed(_typed_by_wrapper(first, others), rest)
        if first.rank is None and (first.frames or first.exc_type):
            seen = {(f.rank, f.exc_type, f.message) for f in failures if f.exc_type}
            ranks = {rank for rank, *error in seen
                     if rank is not None and error == [first.exc_type, first.message]}
            # copies without prefixes, or the one exception printed, a rank's own that does
            # not name one (a watchdog's `[Rank 0]` is the rank that waited, not the failed)
            if seen == {(None, first.exc_type, first.message)} or (
                    not seen and not _NAMES_A_RANK.search(first.message)):
                first = replace(first, rank=self.root_rank)  # the launcher says whose
            elif len(ranks) == 1:  # one rank's prefixed copy of it, printed later
                first = replace(first, rank=min(ranks))
        return first, tuple(rest[:MAX_CASCADE]), bool(failures)


def _traced(f: Failure) -> bool:
    return f.kind is FailureKind.EXCEPTION and (bool(f.frames) or f.first_line < f.line)


def _in_thread(tb: Traceback, before: str) -> bool:
    """Raised in a thread other than the main one (`Exception in thread X:`, frames from
    threading's bootstrap): the thread died, the process did not."""
    return "Exception in thread " in before or any(
        frame.function == "_bootstrap_inner" for frame in tb.frames[:3])


def _typed_by_wrapper(failure: Failure, others: list[Failure]) -> Failure:
    """A worker's original traceback cut before its exception line (a pasted excerpt): the
    wrapper printed just above it ("Caught KeyError in DataLoader worker process 0") names
    the exception's type."""
    if failure.exc_type or failure.kind is not FailureKind.EXCEPTION:
        return failure
    above = [f for f in others if f.rank == failure.rank and f.line <= failure.first_line
             and f.exc_type and (_WRAPPED.search(f.message) or _OLD_WRAPPED.match(f.message))]
    if not above:
        return failure
    old_style = _OLD_WRAPPED.match(above[-1].message)
    return replace(failure, exc_type=old_style[1] if old_style and old_style[1]
                   else above[-1].exc_type)


def _typed_by_what_followed(failure: Failure, rest: list[Failure]) -> Failure:
    """A worker's own report of its death (`ERROR: Unexpected bus error encountered in
    worker`) names no exception; the main process raises it just after, as the type the log
    then prints (`RuntimeError: DataLoader worker (pid N) is killed by signal: Bus error`).
    Likewise NCCL's watchdog: its timeout line names none, the C++ exception it then throws
    to end the process does (`terminate called after throwing ... 'c10::DistBackendError'`)."""
    if failure.exc_type:
        return failure
    if failure.kind is FailureKind.NCCL_TIMEOUT:
        raised = next((f for f in rest if is_cxx_abort(f) and f.rank in (failure.rank, None)
                       and f.exc_type.endswith("DistBackendError")
                       and 0 <= f.first_line - failure.line <= _ABORT_LINES), None)
    elif failure.kind is FailureKind.WORKER_KILLED:
        raised = next((f for f in rest if f.exc_type and f.rank == failure.rank
                       and 0 <= f.first_line - failure.line <= _WORKER_RAISE_LINES
                       and _WORKER_DEATH.search(f.message)), None)
    else:
        return failure
    return replace(failure, exc_type=raised.exc_type) if raised else failure


def _raised_as(text: str) -> str:
    """The exception type an event's line was raised as (`RuntimeError: [Rank 2] Watchdog
    ...`, `RuntimeError: DataLoader worker (pid N) is killed ...`), or ""."""
    raised = exception_at_start(text)
    return raised[0] if raised else ""


def _kill_role(event: ProcessKilled) -> str:
    """A launcher's "failed (exitcode: 1)" reports an exception printed elsewhere (a
    wrapper); SIGTERM / SIGINT and an abort are the others being stopped (a cascade)."""
    code = re.search(r"exitcode: (-?\d+)", event.detail)
    if code and int(code[1]) >= 0:
        return "wrapper"
    if event.how == "aborted" or re.search(r"SIGTERM|SIGINT|Signal (?:15|2) ", event.detail):
        return "cascade"
    return "failure"


def _order_key(failures: list[Failure]):  # noqa: ANN202 - a sort key
    """By timestamp when every candidate has one, else by where it starts in the log."""
    stamps = [f.timestamp for f in failures]
    if all(t is not None for t in stamps) and len({t > DATED for t in stamps}) == 1:  # type: ignore[operator]
        return lambda f: (f.timestamp, f.first_line)
    return lambda f: f.first_line
