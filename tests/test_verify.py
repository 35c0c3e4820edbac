"""verify_script judges small hand-written scripts (no torch: each run takes milliseconds)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from minrepro.errors import BadInputError
from minrepro.repro.verify import classify, verify_script

ROOT = Path(__file__).resolve().parents[1]


def script(tmp_path: Path, body: str, name: str = "s.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


REPRODUCES = """
    import sys
    print("RuntimeError: index out of range in self")
    if "--fixed" in sys.argv:
        print("NOT REPRODUCED: position_overflow: fits")
        sys.exit(0)
    print("REPRODUCED: position_overflow: 600 > 512")
    sys.exit(1)
"""


def test_reproduced(tmp_path: Path) -> None:
    result = verify_script(script(tmp_path, REPRODUCES))
    assert (result.outcome, result.exit_code) == ("reproduced", 1)
    assert result.last_line == "REPRODUCED: position_overflow: 600 > 512"
    assert "RuntimeError: index out of range" in result.output_tail
    assert result.passed and result.seconds > 0


def test_not_reproduced_with_fixed_is_a_pass(tmp_path: Path) -> None:
    result = verify_script(script(tmp_path, REPRODUCES), fixed=True)
    assert (result.outcome, result.exit_code) == ("not_reproduced", 0)
    assert result.passed and result.fixed


def test_not_reproduced_without_fixed_is_no_pass(tmp_path: Path) -> None:
    body = 'print("NOT REPRODUCED: softmax_overflow: no NaN")\n'
    result = verify_script(script(tmp_path, body))
    assert result.outcome == "not_reproduced" and not result.passed


def test_cannot_test(tmp_path: Path) -> None:
    body = 'import sys\nprint("CANNOT TEST: cuda_oom: needs a CUDA device")\nsys.exit(125)\n'
    result = verify_script(script(tmp_path, body))
    assert (result.outcome, result.exit_code) == ("cannot_test", 125)
    assert result.last_line.startswith("CANNOT TEST: ") and not result.passed


@pytest.mark.parametrize("body", [
    "raise RuntimeError('the script itself is broken')\n",  # exit 1 without the marker
    "print('done')\n",  # exit 0 without the marker
    "import sys\nprint('REPRODUCED: x: y')\nsys.exit(0)\n",  # marker and status disagree
    "import sys\nprint('NOT REPRODUCED: x: y')\nsys.exit(1)\n",
    "import sys\nprint('REPRODUCED: x: y')\nprint('more output')\nsys.exit(1)\n",  # not last
    "import os\nprint('REPRODUCED: x: y', flush=True)\nos.abort()\n",  # CUDA teardown abort
])
def test_error(tmp_path: Path, body: str) -> None:
    result = verify_script(script(tmp_path, body))
    assert result.outcome == "error" and not result.passed


def test_marker_on_stderr_does_not_count(tmp_path: Path) -> None:
    body = "import sys\nprint('REPRODUCED: x: y', file=sys.stderr)\nsys.exit(1)\n"
    result = verify_script(script(tmp_path, body))
    assert result.outcome == "error" and "REPRODUCED: x: y" in result.output_tail


def test_timeout_kills_the_script_and_its_children(tmp_path: Path) -> None:
    body = """
        import subprocess, sys, time
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # holds pipes
        print("working", flush=True)
        time.sleep(60)
    """
    result = verify_script(script(tmp_path, body), timeout=1.0)
    assert (result.outcome, result.exit_code) == ("error", None)
    assert result.seconds < 15
    assert "working" in result.output_tail and "killed after 1 s" in result.output_tail


def test_arguments_and_working_directory(tmp_path: Path) -> None:
    body = """
        import os, sys
        open("scratch.txt", "w").close()  # lands in a temp dir, not next to the script
        print("REPRODUCED: x: " + " ".join(sys.argv[1:]) + " in " + os.getcwd())
        sys.exit(1)
    """
    path = script(tmp_path, body)
    result = verify_script(path, fixed=True, device="cpu")
    assert result.last_line.startswith("REPRODUCED: x: --fixed --device cpu in ")
    assert str(tmp_path) not in result.last_line
    assert not (tmp_path / "scratch.txt").exists()
    assert result.outcome == "reproduced" and not result.passed  # --fixed still failed


def test_missing_script(tmp_path: Path) -> None:
    with pytest.raises(BadInputError):
        verify_script(tmp_path / "nope.py")
    with pytest.raises(BadInputError):
        verify_script(tmp_path)


def test_undecodable_output_is_replaced(tmp_path: Path) -> None:
    body = "import sys\nsys.stdout.buffer.write(b'\\xff\\xfe\\n')\nprint('NOT REPRODUCED: x: y')\n"
    result = verify_script(script(tmp_path, body))
    assert result.outcome == "not_reproduced" and "\ufffd" in result.output_tail


@pytest.mark.parametrize(("code", "line", "outcome"), [
    (1, "REPRODUCED: a: b", "reproduced"),
    (0, "NOT REPRODUCED: a: b", "not_reproduced"),
    (125, "", "cannot_test"),
    (134, "REPRODUCED: a: b", "error"),
    (1, "REPRODUCED:a", "error"),
    (None, "REPRODUCED: a: b", "error"),
])
def test_classify(code: int | None, line: str, outcome: str) -> None:
    assert classify(code, line) == outcome


# --- the failure's text (the template spec's `expect`) --------------------------------------


def test_a_reproduction_needs_the_expected_error_text(tmp_path: Path) -> None:
    """position_overflow expects 'index out of range in self' (or its CUDA / HF forms):
    another error that prints the marker is no reproduction."""
    body = ("import sys\nprint('KeyError: labels')\n"
            "print('REPRODUCED: position_overflow: 600 > 512')\nsys.exit(1)\n")
    result = verify_script(script(tmp_path, body))
    assert result.outcome == "error" and "another failure" in result.reason
    assert "index out of range in self" in result.reason


def test_expect_given_by_the_caller_wins(tmp_path: Path) -> None:
    body = "import sys\nprint('boom: widget jammed')\nprint('REPRODUCED: x: y')\nsys.exit(1)\n"
    assert verify_script(script(tmp_path, body), expect=("widget jammed",)).outcome == "reproduced"
    assert verify_script(script(tmp_path, body), expect=("gear slipped",)).outcome == "error"


def test_an_unknown_cause_has_no_expectation(tmp_path: Path) -> None:
    body = "import sys\nprint('REPRODUCED: our_own_cause: y')\nsys.exit(1)\n"
    assert verify_script(script(tmp_path, body)).outcome == "reproduced"


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf")])
def test_bad_timeouts_are_refused(tmp_path: Path, timeout: float) -> None:
    with pytest.raises(BadInputError, match="--timeout"):
        verify_script(script(tmp_path, "print(1)\n"), timeout=timeout)


@pytest.mark.parametrize("device", ["gpu", "cuda:x", "cpu; rm -rf /", ""])
def test_bad_devices_are_refused(tmp_path: Path, device: str) -> None:
    with pytest.raises(BadInputError, match="--device"):
        verify_script(script(tmp_path, "print(1)\n"), device=device)


def test_the_reason_of_an_error_is_the_last_stderr_line(tmp_path: Path) -> None:
    body = "import no_such_module_here\n"
    result = verify_script(script(tmp_path, body))
    assert result.outcome == "error"
    assert result.reason == "ModuleNotFoundError: No module named 'no_such_module_here'"


def test_the_reason_of_a_timeout(tmp_path: Path) -> None:
    result = verify_script(script(tmp_path, "import time\ntime.sleep(30)\n"), timeout=0.5)
    assert result.reason == "timed out after 0.5 s"


# --- the whole tree, bounded output (issue 14, item 7) --------------------------------------


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


_DETACHES = """
    import os, subprocess, sys, time
    pid_file = sys.argv[0] + ".pid"
    # A worker that leaves the session (`setsid`) and holds stdout/stderr open.
    code = ("import os, sys, time; os.setsid(); open(sys.argv[1], 'w').write(str(os.getpid()));"
            " time.sleep(300)")
    subprocess.Popen([sys.executable, "-c", code, os.path.abspath("grandchild.pid")])
    while not os.path.exists("grandchild.pid") or not open("grandchild.pid").read():
        time.sleep(0.05)
    open(os.environ.get("PID_OUT", "/dev/null"), "w").write(open("grandchild.pid").read())
    print("RuntimeError: index out of range in self")
    print("REPRODUCED: position_overflow: 600 > 512")
    sys.exit(1)
"""


def test_a_setsid_grandchild_does_not_outlive_verify(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """It holds the pipes too: a clean exit 1 + REPRODUCED stays that, in seconds."""
    pid_out = tmp_path / "grandchild.pid"
    monkeypatch.setenv("PID_OUT", str(pid_out))
    result = verify_script(script(tmp_path, _DETACHES), timeout=30)
    assert (result.outcome, result.exit_code) == ("reproduced", 1), result
    assert result.seconds < 20, "the lingering grandchild turned a clean exit into a wait"
    grandchild = int(pid_out.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(grandchild), "the setsid grandchild outlived verify"


def test_huge_output_keeps_memory_flat(tmp_path: Path) -> None:
    """300 MiB on stdout: verify keeps a tail, not the whole output."""
    body = """
        import sys
        chunk = b"x" * (1 << 20) + b"\\n"
        for _ in range(300):
            sys.stdout.buffer.write(chunk)
        print("RuntimeError: index out of range in self")
        print("REPRODUCED: position_overflow: 600 > 512", flush=True)
        sys.exit(1)
    """
    path = script(tmp_path, body)
    proc = subprocess.run(
        # VmHWM, the process's own peak: ru_maxrss also counts the parent's pages at fork
        [sys.executable, "-c", "import sys; from minrepro.repro.verify import verify_script;"
         " r = verify_script(sys.argv[1], timeout=120); hwm = next(l.split()[1] for l in"
         " open('/proc/self/status') if l.startswith('VmHWM:')); print(r.outcome.value,"
         " int(hwm) // 1024)", str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=180)
    outcome, rss_mb = proc.stdout.split()
    assert outcome == "reproduced", proc.stderr
    assert int(rss_mb) < 150, f"verify grew to {rss_mb} MB on 300 MiB of output"


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "-inf", "1e999"])
def test_bad_timeout_on_the_command_line_is_one_line(tmp_path: Path, value: str) -> None:
    path = script(tmp_path, REPRODUCES)
    proc = subprocess.run([sys.executable, "-m", "minrepro", "verify", str(path), "--timeout",
                           value], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("minrepro: error:") and "timeout" in lines[0]


def test_a_killed_supervisor_leaves_no_worker_behind(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The OOM killer (here: the script) kills the supervisor; its group still goes."""
    pid_out = tmp_path / "worker.pid"
    monkeypatch.setenv("PID_OUT", str(pid_out))
    body = """
        import os, signal, subprocess, sys, time
        worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open(os.environ["PID_OUT"], "w").write(str(worker.pid))
        os.kill(os.getppid(), signal.SIGKILL)  # the supervisor
        time.sleep(300)
    """
    result = verify_script(script(tmp_path, body), timeout=30)
    assert result.outcome == "error" and result.seconds < 25, result
    worker = int(pid_out.read_text())
    deadline = time.monotonic() + 5
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(worker), "a worker of the run outlived verify"
