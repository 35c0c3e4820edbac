"""The CLI contract: exit codes, one-line errors, JSON keys, stdin, no torch in diagnose."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "position_overflow__cpu_traceback.log"
CONTRACT_KEYS = {"cause", "category", "confidence", "params", "evidence", "fix", "alternatives"}


def run(*args: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minrepro", *args], input=stdin,
                          capture_output=True, timeout=timeout, cwd=ROOT)


def assert_one_line_error(result: subprocess.CompletedProcess, code: int, needle: str) -> None:
    err = result.stderr.decode()
    assert result.returncode == code, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and needle in err, err


def test_diagnose_json_contract() -> None:
    result = run("diagnose", "--json", str(SAMPLE))
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert CONTRACT_KEYS <= set(data)
    assert data["cause"] == "position_overflow" and data["category"] == "convergence"
    assert 0 <= data["confidence"] <= 1
    assert data["params"] == {"seq_len": 600, "max_positions": 512}
    for item in data["evidence"]:
        assert set(item) == {"line", "rank", "text"} and item["line"] >= 1


def test_diagnose_text_report() -> None:
    result = run("diagnose", str(SAMPLE))
    out = result.stdout.decode()
    assert result.returncode == 0
    assert "convergence / position_overflow" in out and "fix:" in out and "line " in out


def test_no_known_cause_exits_1(tmp_path: Path) -> None:
    log = tmp_path / "ok.log"
    log.write_text("epoch 1 loss 2.1\nepoch 2 loss 1.7\nepoch 3 loss 1.2\n")
    result = run("diagnose", "--json", str(log))
    assert result.returncode == 1
    assert json.loads(result.stdout)["cause"] is None


def test_empty_file_is_no_known_cause(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    assert run("diagnose", str(empty)).returncode == 1


@pytest.mark.parametrize("make, needle", [
    (lambda d: d / "missing.log", "no such file"),
    (lambda d: d, "is a directory"),
    (lambda d: (d / "b.bin").write_bytes(bytes(range(256)) * 40) and d / "b.bin", "not a text log"),
    (lambda d: (d / "c.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 40) and d / "c.gz",
     "corrupt gzip"),
])
def test_bad_input_exits_2_with_one_line(tmp_path: Path, make, needle: str) -> None:
    assert_one_line_error(run("diagnose", str(make(tmp_path))), 2, needle)


def test_stdin_and_gzip(tmp_path: Path) -> None:
    assert run("diagnose", "-", stdin=SAMPLE.read_bytes()).returncode == 0
    gz = tmp_path / "run.log.gz"
    gz.write_bytes(gzip.compress(SAMPLE.read_bytes()))
    assert json.loads(run("diagnose", "--json", str(gz)).stdout)["cause"] == "position_overflow"


def test_bad_rule_pack_names_file_rule_and_key(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "id: MR-USR-009\ncause: cuda_oom\ncategory: memory\ntitle: t\nexplanation: e\nfix: f\n"
        "signals: [{name: s, pattern: 'x(', hint: x, weight: 0.5}]\n")
    result = run("diagnose", str(SAMPLE), "--rules", str(tmp_path))
    assert_one_line_error(result, 2, "mine.yaml: MR-USR-009: signals[0].pattern: bad regex")


def test_usage_error_exits_2() -> None:
    assert run("diagnose", "--no-such-flag").returncode == 2
    assert run("no-such-command").returncode == 2


def test_log_left_out_reads_a_piped_stdin() -> None:
    log = (ROOT / "samples" / "cuda_oom__hf_trainer_new_format.log").read_bytes()
    result = run("diagnose", "--json", stdin=log)
    assert result.returncode == 0 and json.loads(result.stdout)["cause"] == "cuda_oom"


def test_log_left_out_at_a_terminal_is_a_usage_error() -> None:
    import pty

    primary, secondary = pty.openpty()
    try:
        result = subprocess.run([sys.executable, "-m", "minrepro", "diagnose"], stdin=secondary,
                                capture_output=True, timeout=60, cwd=ROOT)
    finally:
        os.close(primary)
        os.close(secondary)
    assert_one_line_error(result, 2, "no LOG given")


def test_version() -> None:
    from minrepro import __version__

    result = run("--version")
    assert result.returncode == 0 and result.stdout.decode() == f"minrepro {__version__}\n"


def test_empty_log_says_so(tmp_path) -> None:  # noqa: ANN001
    (tmp_path / "empty.log").write_text("\n  \n")
    result = run("diagnose", str(tmp_path / "empty.log"))
    assert result.returncode == 1 and b"the log is empty" in result.stdout + result.stderr


def test_rules_list_and_explain() -> None:
    listing = run("rules").stdout.decode()
    assert "MR-CONV-001" in listing and "cuda_oom" in listing
    explained = run("rules", "MR-MEM-002")
    assert explained.returncode == 0 and b"fix:" in explained.stdout
    assert run("rules", "MR-NOPE-999").returncode == 2


def test_diagnose_never_imports_torch() -> None:
    code = ("import sys, runpy; sys.argv = ['minrepro', 'diagnose', sys.argv[1]]\n"
            "try:\n    runpy.run_module('minrepro', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "assert 'torch' not in sys.modules, 'diagnose imported torch'\n"
            # start-up: the built-in rules come from frozen.json, the scan engine on big logs
            "assert 'yaml' not in sys.modules, 'diagnose parsed the YAML rules'\n"
            "assert 'hyperscan' not in sys.modules, 'a small log built the hyperscan database'\n")
    result = subprocess.run([sys.executable, "-c", code, str(SAMPLE)], capture_output=True,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr.decode()


def test_a_named_command_runs_on_an_app_of_that_command_alone() -> None:
    from minrepro.cli import app, app_for

    slim = app_for(["diagnose", "run.log"])
    assert [c.callback.__name__ for c in slim.registered_commands] == ["diagnose"]
    assert slim.registered_callback is app.registered_callback  # --version still works
    assert len(app.registered_commands) > 1  # the shared app itself is left whole
    for args in ([], ["--help"], ["--version"], ["diagnos"], ["-x", "diagnose"]):
        assert app_for(args) is app


def test_help_and_errors_read_the_same_on_the_one_command_app() -> None:
    help_ = run("diagnose", "--help")
    assert help_.returncode == 0 and b"diagnose [OPTIONS] [LOG]" in help_.stdout
    assert_one_line_error(run("diagnose", "--bogus"), 2, "see `minrepro diagnose --help`")
    assert_one_line_error(run("diagnos", "x.log"), 2, "Did you mean 'diagnose'")


def test_usage_lines_name_arguments_in_capitals() -> None:
    """`minrepro verify {script}` reads as a typo; every positional is shown as a metavar."""
    for command in ("diagnose", "repro", "report", "verify", "diff", "triage", "preflight",
                    "rules"):
        usage = next(line for line in run(command, "--help").stdout.decode().splitlines()
                     if "Usage:" in line)
        assert not re.search(r"[{\[][a-z_]+", usage), usage
        assert "{" not in usage, usage  # a required argument is `SCRIPT`, as click writes it
    assert "verify [OPTIONS] SCRIPT" in run("verify", "--help").stdout.decode()
