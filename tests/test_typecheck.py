"""Static checks are part of the suite: mypy and ruff over the package, as CI runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)


def test_mypy_is_clean() -> None:
    done = run("mypy", "--no-error-summary")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_is_clean() -> None:
    done = run("ruff", "check", "minrepro", "tests", "bench", "scripts")
    assert done.returncode == 0, done.stdout + done.stderr
