"""Run a repro script in a subprocess and judge it by exit status and last stdout line.

The scripts follow `git bisect run`: exit 1 with a last line ``REPRODUCED: ...`` means the
failure showed, exit 0 with ``NOT REPRODUCED: ...`` means it did not, exit 125 means it
cannot be tested here. Anything else (a crash of the script itself, which also exits 1 but
without the marker; an abort during CUDA teardown, 134; a timeout) is an ``error``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from minrepro.errors import BadInputError

REPRODUCED, NOT_REPRODUCED, CANNOT_TEST, ERROR = (
    "reproduced", "not_reproduced", "cannot_test", "error")
EXIT_CANNOT_TEST = 125
_TAIL_CHARS = 4000


@dataclass(frozen=True)
class VerifyResult:
    outcome: str  # REPRODUCED | NOT_REPRODUCED | CANNOT_TEST | ERROR
    exit_code: int | None  # None when the script was killed after the timeout
    last_line: str  # last non-empty line of stdout
    output_tail: str  # the end of stdout, then of stderr
    seconds: float
    fixed: bool = False  # run with --fixed: success then means NOT_REPRODUCED

    @property
    def passed(self) -> bool:
        """The run showed what was asked: the failure, or with --fixed its absence."""
        return self.outcome == (NOT_REPRODUCED if self.fixed else REPRODUCED)


def classify(exit_code: int | None, last_line: str) -> str:
    """The outcome for an exit status and the last stdout line."""
    if exit_code == 1 and last_line.startswith("REPRODUCED: "):
        return REPRODUCED
    if exit_code == 0 and last_line.startswith("NOT REPRODUCED: "):
        return NOT_REPRODUCED
    if exit_code == EXIT_CANNOT_TEST:
        return CANNOT_TEST
    return ERROR


def verify_script(path: str | os.PathLike[str], *, fixed: bool = False, timeout: float = 60.0,
                  device: str | None = None) -> VerifyResult:
    """Run `python path [--fixed] [--device D]` in a fresh temp dir and classify the result."""
    script = Path(path).resolve()
    if not script.is_file():
        raise BadInputError(f"{path}: no such script")
    command = [sys.executable, str(script)] + (["--fixed"] if fixed else [])
    command += ["--device", device] if device else []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="minrepro-verify-") as workdir:
        exit_code, stdout, stderr = _run(command, workdir, timeout)
    seconds = time.monotonic() - started
    last_line = _last_line(stdout)
    outcome = ERROR if exit_code is None else classify(exit_code, last_line)
    if exit_code is None:
        stderr += f"\nminrepro: killed after {timeout:g} s"
    return VerifyResult(outcome, exit_code, last_line, _tail(stdout, stderr), seconds, fixed)


def _run(command: list[str], workdir: str, timeout: float) -> tuple[int | None, str, str]:
    """(exit code or None on timeout, stdout, stderr); the whole process group is killed."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    # The scripts run tiny ops; on a busy 2-core machine torch's spinning OpenMP threads
    # made them 10-50x slower. One thread unless the caller chose otherwise.
    env.setdefault("OMP_NUM_THREADS", "1")
    process = subprocess.Popen(command, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)  # its own group: kill workers too
    try:
        out, err = process.communicate(timeout=timeout)
        return process.returncode, _decode(out), _decode(err)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        try:  # children that escaped the group could hold the pipes open: do not wait forever
            out, err = process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            out, err = b"", b""
        return None, _decode(out), _decode(err)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (AttributeError, ProcessLookupError, PermissionError):  # no killpg, or gone
        process.kill()


def _decode(data: bytes | None) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def _last_line(stdout: str) -> str:
    lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _tail(stdout: str, stderr: str) -> str:
    text = stdout.rstrip() + ("\n--- stderr ---\n" + stderr.rstrip() if stderr.strip() else "")
    return text[-_TAIL_CHARS:]
