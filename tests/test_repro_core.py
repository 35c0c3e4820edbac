"""The core four repro scripts, rendered from hand-built diagnoses and RUN on CPU.

All script runs start at once in a thread pool (each is a torch start-up plus well under a
second of work); the parametrised tests then judge each run by exit status and last line.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from minrepro.model import Diagnosis, Evidence
from minrepro.repro.render import imported_modules, load_spec, render_repro, write_script
from minrepro.repro.verify import VerifyResult, verify_script
from minrepro.taxonomy import CORE_CAUSES

pytestmark = pytest.mark.slow

#: Each template's `example`: values as a log would give them, including ones that must be
#: clamped (softmax_overflow's seq_len of 100 000).
PARAMS = {cause: load_spec(cause).example_params() for cause in CORE_CAUSES}
CASES = [(cause, variant) for cause in PARAMS for variant in load_spec(cause).variants]
TIMEOUT = 60.0


CLAMPED = {"seq_len": 300, "max_positions": 100_000}  # relation seq_len > max_positions kept


def diagnosis(cause: str, variant: str, params: dict | None = None) -> Diagnosis:
    return Diagnosis(
        cause=cause, category="convergence", confidence=0.9, params=params or PARAMS[cause],
        evidence=(Evidence(12, "RuntimeError: index out of range in self", 3),),
        fix="see the rule", rule_id="MR-TEST-001", title=cause, variant=variant,
        source="/home/someone/runs/train.log",
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, Future]:
    """(cause, variant, mode) -> Future of the run; modes: bug, fixed (on --device cpu)."""
    folder = tmp_path_factory.mktemp("repro")
    pool = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2))
    futures: dict[tuple, Future] = {}
    for cause, variant in CASES:
        script = render_repro(diagnosis(cause, variant))
        path = write_script(script, folder / f"{cause}_{variant}.py")
        futures[cause, variant, "bug"] = pool.submit(verify_script, path, timeout=TIMEOUT)
        futures[cause, variant, "fixed"] = pool.submit(
            verify_script, path, fixed=True, device="cpu", timeout=TIMEOUT)
    clamped = write_script(render_repro(diagnosis("position_overflow", "index", CLAMPED)),
                           folder / "clamped.py")
    futures["clamped"] = pool.submit(verify_script, clamped, timeout=TIMEOUT)
    # The same script told to expect another error: its own check must not call this one a
    # reproduction (the IndexError is re-raised), whatever verify would say.
    text = render_repro(diagnosis("position_overflow", "index"))
    other = write_script(_expecting(text, "some other error"), folder / "other.py")
    futures["other"] = pool.submit(verify_script, other, timeout=TIMEOUT, expect=())
    yield futures
    pool.shutdown(wait=True)


def show(result: VerifyResult) -> str:
    return f"exit {result.exit_code}, {result.seconds:.1f} s:\n{result.output_tail}"


@pytest.mark.parametrize(("cause", "variant"), CASES)
def test_script_reproduces(runs: dict, cause: str, variant: str) -> None:
    result = runs[cause, variant, "bug"].result()
    assert result.exit_code == 1, show(result)
    assert result.last_line.startswith(f"REPRODUCED: {cause}: "), show(result)
    assert len(result.output_tail.strip().splitlines()) >= 2, "the symptom is printed first"


@pytest.mark.parametrize(("cause", "variant"), CASES)
def test_fixed_script_does_not_reproduce(runs: dict, cause: str, variant: str) -> None:
    result = runs[cause, variant, "fixed"].result()
    assert result.exit_code == 0, show(result)
    assert result.last_line.startswith(f"NOT REPRODUCED: {cause}: "), show(result)


@pytest.mark.parametrize(("cause", "variant"), CASES)
def test_script_shape(cause: str, variant: str) -> None:
    text = render_repro(diagnosis(cause, variant))
    assert text == render_repro(diagnosis(cause, variant))  # byte-identical
    assert sum(1 for line in text.splitlines() if line.strip()) <= 40
    assert imported_modules(ast.parse(text)) <= set(sys.stdlib_module_names) | {"torch"}
    assert text.startswith("#!/usr/bin/env python3\n")
    assert "/home/someone" not in text and "train.log" in text  # basename only
    assert "torch.manual_seed(0)" in text
    assert "import torch.optim" not in text and "torch.optim." not in text


def test_clamped_values_keep_the_failing_relation(runs: dict) -> None:
    text = render_repro(diagnosis("position_overflow", "index", CLAMPED))
    assert "SEQ_LEN, MAX_POSITIONS, HIDDEN = 2049, 2048, 64" in text
    assert "seq_len=2049 (clamped from 300), max_positions=2048 (clamped from 100000)" in text
    result = runs["clamped"].result()
    assert (result.exit_code, result.outcome) == (1, "reproduced"), show(result)


def _expecting(text: str, expected: str) -> str:
    start = text.index("EXPECT = (")
    end = text.index("\n", start)
    return text[:start] + f"EXPECT = ({expected!r},)" + text[end:]


def test_the_script_checks_the_error_it_caught(runs: dict) -> None:
    result = runs["other"].result()
    assert result.outcome == "error" and "REPRODUCED" not in result.last_line, show(result)
    assert "IndexError: index out of range in self" in result.output_tail


def test_position_overflow_sets_launch_blocking_before_torch() -> None:
    text = render_repro(diagnosis("position_overflow", "index"))
    assert text.index('os.environ["CUDA_LAUNCH_BLOCKING"] = "1"') < text.index("import torch")
    assert "os._exit(1)" in text  # no CUDA teardown after a device-side assert


def test_values_from_the_log_are_used_and_clamped() -> None:
    text = render_repro(diagnosis("softmax_overflow", "fp16_matmul"))
    assert "SEQ_LEN, HEAD_DIM = 1024, 64" in text
    assert "seq_len=1024 (clamped from 100000)" in text
    assert "head_dim=64 (log)" in text


def test_help_shows_the_captured_values(tmp_path: Path) -> None:
    path = write_script(render_repro(diagnosis("position_overflow", "index")), tmp_path / "r.py")
    done = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True,
                          timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    help_text = " ".join(done.stdout.split())
    assert "seq_len=937 (log)" in help_text and "--fixed" in help_text
