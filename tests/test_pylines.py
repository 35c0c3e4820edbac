"""Exception lines as Python prints them: which names are exception types."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.pylines import exception_anywhere, exception_at_start


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


@pytest.mark.parametrize(("text", "expected"), [
    # a sentence's last word glued to a built-in exception by a paste
    ("Assertion `t >= 0 && t < n_classes` failed.RuntimeError: CUDA error: device-side assert "
     "triggered", ("RuntimeError", "CUDA error: device-side assert triggered")),
    ("the following error may occur ().ValueError: num_samples should be a positive integer "
     "value, but got num_samples=0",
     ("ValueError", "num_samples should be a positive integer value, but got num_samples=0")),
    # a package's own class of a built-in's name, qualified as Python prints it, stays
    ("requests.exceptions.ConnectionError: HTTPSConnectionPool(host='hf.co', port=443)",
     ("requests.exceptions.ConnectionError", "HTTPSConnectionPool(host='hf.co', port=443)")),
    ("asyncio.TimeoutError: the read timed out", ("asyncio.TimeoutError", "the read timed out")),
])
def test_an_exception_glued_to_the_text_before_it(text: str, expected: tuple[str, str]) -> None:
    assert exception_anywhere(text) == expected


def test_a_glued_word_is_no_module_at_the_start_of_a_line() -> None:
    assert exception_at_start("failed.RuntimeError: CUDA error") == ("RuntimeError", "CUDA error")
    assert exception_at_start("torch.OutOfMemoryError: CUDA out of memory") == (
        "torch.OutOfMemoryError", "CUDA out of memory")
