"""Exception lines as Python prints them: which names are exception types."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.pylines import exception_at_start


@pytest.mark.parametrize(("text", "expected"), [
    ("RuntimeError: CUDA out of memory.", "RuntimeError"),
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
     "torch.distributed.elastic.multiprocessing.errors.ChildFailedError"),
    ("KeyboardInterrupt", "KeyboardInterrupt"),
    # stdlib names that end in neither Error nor Exception
    ("bdb.BdbQuit", "bdb.BdbQuit"),
    ("queue.Empty", "queue.Empty"),
    ("subprocess.TimeoutExpired: Command '['nvidia-smi']' timed out after 10 seconds",
     "subprocess.TimeoutExpired"),
    # any class of a package's exceptions module
    ("torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True.",
     "torch._dynamo.exc.FailOnRecompileLimitHit"),
    ("requests.exceptions.ReadTimeout: HTTPSConnectionPool(host='huggingface.co', port=443)",
     "requests.exceptions.ReadTimeout"),
])
def test_exception_names(text: str, expected: str) -> None:
    found = exception_at_start(text)
    assert found is not None and found[0] == expected


@pytest.mark.parametrize("text", [
    "Empty: nothing to do",  # unqualified: a word, not queue's exception
    "UserWarning: the default will change",  # a warning is no failure
    "Error: the file was not found",  # a log line's level
    "torch.distributed.elastic.multiprocessing.errors.record: wraps main",  # a function
])
def test_not_exception_names(text: str) -> None:
    assert exception_at_start(text) is None


def test_a_private_modules_underscore_is_no_markdown() -> None:
    """`_pickle.UnpicklingError` (a checkpoint that is no pickle) keeps its module's
    underscore; markdown's `_emphasis_` around a plain name still goes."""
    assert exception_at_start("_pickle.UnpicklingError: invalid load key, '<'.") == (
        "_pickle.UnpicklingError", "invalid load key, '<'.")
    assert exception_at_start("_queue.Empty") == ("_queue.Empty", "")
    assert exception_at_start("_RuntimeError: boom_") == ("RuntimeError", "boom")
