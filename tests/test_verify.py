"""verify_script judges small hand-written scripts (no torch: each run takes milliseconds)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from minrepro.errors import BadInputError
from minrepro.repro.verify import classify, verify_script


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
