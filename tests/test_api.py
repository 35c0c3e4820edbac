"""The public API of minrepro/__init__.py: diagnose(), render_repro(), Diagnosis."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import minrepro

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def test_public_names() -> None:
    assert set(minrepro.__all__) == {"Diagnosis", "diagnose", "render_repro"}


def test_diagnose_twice_and_render() -> None:
    # A submodule named like the function once shadowed it after the first call.
    first = minrepro.diagnose(SAMPLES / "cuda_oom__hf_trainer_new_format.log")
    second = minrepro.diagnose(SAMPLES / "position_overflow__cpu_traceback.log")
    assert (first.cause, second.cause) == ("cuda_oom", "position_overflow")
    assert isinstance(second, minrepro.Diagnosis)
    ast.parse(minrepro.render_repro(second))


def test_api_diagnose_does_not_import_torch() -> None:
    code = ("import sys, minrepro; minrepro.diagnose(sys.argv[1]);"
            " assert 'torch' not in sys.modules")
    log = str(SAMPLES / "position_overflow__cpu_traceback.log")
    assert subprocess.run([sys.executable, "-c", code, log], timeout=60).returncode == 0
