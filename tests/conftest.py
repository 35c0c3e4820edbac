"""Shared fixtures. Keep small: other test modules add theirs here too."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from minrepro.model import Diagnosis, Evidence
from minrepro.taxonomy import CATEGORY_OF


@pytest.fixture(autouse=True, scope="session")
def _cache_of_the_session(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Compiled scan databases go to a folder of this test session, not the user's cache
    (CLI subprocesses inherit it)."""
    import os

    os.environ["MINREPRO_CACHE"] = str(tmp_path_factory.mktemp("minrepro-cache"))


@pytest.fixture
def make_diagnosis() -> Callable[..., Diagnosis]:
    """A hand-built Diagnosis for `cause`; keyword arguments override the fields."""

    def build(cause: str, **fields: Any) -> Diagnosis:
        values: dict[str, Any] = {
            "cause": cause,
            "category": CATEGORY_OF.get(cause, "convergence"),
            "confidence": 0.9,
            "evidence": (Evidence(12, "RuntimeError: something failed", 3),
                         Evidence(40, "loss = nan")),
            "fix": "apply the recommended fix",
            "rule_id": "MR-TEST-001",
            "title": f"{cause} seen in the log",
            "source": "run.log",
        }
        values.update(fields)
        return Diagnosis(**values)

    return build


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite tests/golden/* from the current output (on purpose only)")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def cli() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Runs `minrepro ARGS` in-process: see `run_cli`."""
    return run_cli


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`minrepro ARGS` in-process, as main() runs it (a subprocess per call costs seconds of
    torch import): exit code, stdout and stderr."""
    import contextlib
    import io
    from unittest import mock

    from minrepro.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | str | None = 0
    with mock.patch.object(sys, "argv", ["minrepro", *args]), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main()
        except SystemExit as exit_:
            code = exit_.code
    return subprocess.CompletedProcess(args, int(code or 0), out.getvalue(), err.getvalue())


@pytest.fixture
def one_torch_thread() -> Any:
    """torch on one thread for the test (framework runs of a few steps: threads only add
    contention on a shared CI machine), restored after it."""
    import torch  # here: most test modules never need torch in the test process

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
