"""Run a repro script in a subprocess and judge it by exit status, last stdout line and the
failure's text.

The scripts follow `git bisect run`: exit 1 with a last line ``REPRODUCED: <cause>: ...`` means
the failure showed, exit 0 with ``NOT REPRODUCED: ...`` means it did not, exit 125 means it
cannot be tested here. A reproduction counts only when the output also shows the text the
cause's template spec expects (its `expect`), as PyTorch's after_aot repro counts a candidate
only when `check_str` is in the error. Anything else (a crash of the script itself, which also
exits 1 but without the marker; an abort during CUDA teardown, 134; a timeout) is an error,
with the reason.

The script runs under `supervise.py` in a session of its own: everything it starts is killed
when it ends or times out, and its output is streamed and only its tail kept.
"""

from __future__ import annotations

import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from minrepro.errors import BadInputError
from minrepro.model import Name

EXIT_CANNOT_TEST = 125
TAIL_BYTES = 64 * 1024  # of each stream; a script printing 300 MiB costs no more than this
_TAIL_CHARS = 4000  # shown in results
_SUPERVISOR = Path(__file__).with_name("supervise.py")
_DEVICE = re.compile(r"cpu|cuda(?::\d{1,2})?")
_MARKER = re.compile(r"(?:NOT )?REPRODUCED: (?P<cause>[a-z][a-z0-9_]{0,63}): ")


class Outcome(Name):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not_reproduced"
    CANNOT_TEST = "cannot_test"
    ERROR = "error"


REPRODUCED, NOT_REPRODUCED, CANNOT_TEST, ERROR = (
    Outcome.REPRODUCED, Outcome.NOT_REPRODUCED, Outcome.CANNOT_TEST, Outcome.ERROR)


@dataclass(frozen=True)
class VerifyResult:
    outcome: Outcome
    exit_code: int | None  # None when the script was killed after the timeout
    last_line: str  # last non-empty line of stdout
    output_tail: str  # the end of stdout, then of stderr
    seconds: float
    fixed: bool = False  # run with --fixed: success then means NOT_REPRODUCED
    reason: str = ""  # for an error or a cannot-test: why, in one line

    @property
    def passed(self) -> bool:
        """The run showed what was asked: the failure, or with --fixed its absence."""
        return self.outcome == (NOT_REPRODUCED if self.fixed else REPRODUCED)


def classify(exit_code: int | None, last_line: str) -> Outcome:
    """The outcome for an exit status and the last stdout line."""
    if exit_code == 1 and last_line.startswith("REPRODUCED: "):
        return REPRODUCED
    if exit_code == 0 and last_line.startswith("NOT REPRODUCED: "):
        return NOT_REPRODUCED
    if exit_code == EXIT_CANNOT_TEST:
        return CANNOT_TEST
    return ERROR


def check_options(timeout: float, device: str | None) -> None:
    """Refuse a timeout that is not a positive finite number and a device not cpu/cuda[:N]."""
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise BadInputError(f"--timeout should be a positive number of seconds, not {timeout!r}")
    if device is not None and not _DEVICE.fullmatch(device):
        raise BadInputError(f"--device should be cpu, cuda or cuda:N, not {device[:40]!r}")


def verify_script(path: str | os.PathLike[str], *, fixed: bool = False, timeout: float = 60.0,
                  device: str | None = None, expect: tuple[str, ...] | None = None
                  ) -> VerifyResult:
    """Run `python path [--fixed] [--device D]` in a fresh temp dir and classify the result.

    `expect`: the failure's text; None takes it from the spec of the cause the script names.
    """
    check_options(timeout, device)
    script = Path(path).resolve()
    if not script.is_file():
        raise BadInputError(f"{path}: no such script")
    command = [sys.executable, str(script)] + (["--fixed"] if fixed else [])
    command += ["--device", device] if device else []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minrepro-verify-") as workdir:
        exit_code, stdout, stderr = run_supervised(command, workdir, timeout)
    seconds = time.monotonic() - started
    if exit_code is None:
        stderr += f"\nminrepro: killed after {timeout:g} s"
    last_line = _last_line(stdout)
    outcome = ERROR if exit_code is None else classify(exit_code, last_line)
    reason = _reason(outcome, exit_code, last_line, stderr, timeout)
    if outcome is REPRODUCED:
        expected = expected_text(last_line) if expect is None else expect
        if expected and not shows(stdout + stderr, expected):
            outcome = ERROR
            reason = ("it printed REPRODUCED but not the failure's text"
                      f" ({' or '.join(repr(e) for e in expected)}): another failure")
    return VerifyResult(outcome, exit_code, last_line, _tail(stdout, stderr), seconds, fixed,
                        reason)


def expected_text(last_line: str) -> tuple[str, ...]:
    """The `expect` of the cause a REPRODUCED line names, where minrepro has its template."""
    match = _MARKER.match(last_line)
    if match is None:
        return ()
    from minrepro.repro.render import has_template, load_spec

    cause = match["cause"]
    return load_spec(cause).expect if has_template(cause) else ()


def shows(output: str, expected: tuple[str, ...]) -> bool:
    lowered = output.lower()
    return any(text.lower() in lowered for text in expected)


def _reason(outcome: Outcome, exit_code: int | None, last_line: str, stderr: str,
            timeout: float) -> str:
    if exit_code is None:
        return f"timed out after {timeout:g} s"
    if outcome is CANNOT_TEST:
        return last_line.removeprefix("CANNOT TEST: ")
    if outcome is not ERROR:
        return ""
    last_error = _last_line(stderr)
    if last_error and not last_error.startswith("minrepro: killed after"):
        return last_error[:300]
    if exit_code > 128:
        return f"killed by signal {exit_code - 128}"
    return f"exit {exit_code} without a REPRODUCED / NOT REPRODUCED last line"


def run_supervised(command: list[str], workdir: str, timeout: float
                   ) -> tuple[int | None, str, str]:
    """(exit code or None on timeout, stdout tail, stderr tail); nothing it started survives."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    # The scripts run tiny ops; on a busy 2-core machine torch's spinning OpenMP threads
    # made them 10-50x slower. One thread unless the caller chose otherwise.
    env.setdefault("OMP_NUM_THREADS", "1")
    process = subprocess.Popen([sys.executable, str(_SUPERVISOR), *command], cwd=workdir,
                               env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None and process.stderr is not None
    readers = [_TailReader(process.stdout), _TailReader(process.stderr)]
    try:
        exit_code: int | None = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        exit_code = None
    _kill_group(process.pid)  # the supervisor itself may have been killed: its group is not
    for reader in readers:
        reader.join(timeout=5)  # an escaped process could hold a pipe: do not wait forever
    return exit_code, readers[0].text(), readers[1].text()


def _kill_group(pgid: int) -> None:
    """SIGKILL what is left of the run's process group (its session leader was `pgid`)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (AttributeError, ProcessLookupError, PermissionError):
        pass


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the supervisor (it kills the tree below it), then SIGKILL the session."""
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=5)
    except (subprocess.TimeoutExpired, OSError):
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (AttributeError, ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


class _TailReader(threading.Thread):
    """Drains a pipe as it fills, keeping its last TAIL_BYTES."""

    def __init__(self, stream: IO[bytes]) -> None:
        super().__init__(daemon=True)
        self.stream = stream
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.lock = threading.Lock()
        self.start()

    def run(self) -> None:
        for chunk in iter(lambda: self.stream.read1(65536), b""):  # type: ignore[attr-defined]
            with self.lock:
                self.chunks.append(chunk)
                self.size += len(chunk)
                while self.size - len(self.chunks[0]) >= TAIL_BYTES:
                    self.size -= len(self.chunks.popleft())
        self.stream.close()

    def text(self) -> str:
        with self.lock:
            data = b"".join(self.chunks)
        return data[-TAIL_BYTES:].decode("utf-8", errors="replace")


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _tail(stdout: str, stderr: str) -> str:
    text = stdout.rstrip() + ("\n--- stderr ---\n" + stderr.rstrip() if stderr.strip() else "")
    return text[-_TAIL_CHARS:]
