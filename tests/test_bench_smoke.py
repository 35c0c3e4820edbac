"""The benchmark runs end to end at its smallest size (a smoke test, not a timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_bench_runs_at_10_mib() -> None:
    result = subprocess.run([sys.executable, "bench/run.py", "--sizes", "10", "--repeat", "1"],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "10 MiB" in result.stdout and "cuda_oom (requested_bytes=2147483648)" in result.stdout
    assert "start-up:" in result.stdout
