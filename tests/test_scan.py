"""Chunk-level selection gives the same diagnosis as reading every line."""

from __future__ import annotations

from pathlib import Path

import pytest

from minrepro.diagnose.engines import ENGINES, available, best_engine, build
from minrepro.diagnose.extract import selection_words
from minrepro.diagnose.pipeline import diagnose_log, make_selector, trigger_words
from minrepro.diagnose.reader import LogReader
from minrepro.diagnose.rules.registry import load_rules
from minrepro.diagnose.scan import (
    HEAD_BYTES,
    MIN_SAMPLES_PER_BLOCK,
    SAMPLES_PER_BLOCK,
    TAIL_BYTES,
    LineSelector,
)

NOISE = "2026-11-29 03:00:00,123 - INFO - data - shard {i} opened, {j} samples, prefetch ok\n"
METRIC = "{{'loss': {loss:.4f}, 'learning_rate': 5e-05, 'epoch': {e:.2f}}}\n"
OOM = """Traceback (most recent call last):
  File "train.py", line 188, in main
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Process 4242 has 78.12 GiB memory in use. Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated.
"""


def big_log(path: Path, middle: str, size: int = 4 * (HEAD_BYTES + TAIL_BYTES)) -> Path:
    """Training records, then `middle` halfway, then only chatter: the run stopped there
    (a failure the run trained on past is survived, not the run's failure)."""
    lines, written, i, half = [], 0, 0, 0
    while written < size:
        metric = METRIC.format(loss=2.0 - i * 1e-5, e=i / 1e4)
        line = metric if i % 3 and written < size // 2 else NOISE.format(i=i, j=i * 7)
        lines.append(line)
        written += len(line)
        i += 1
        half = half or (written >= size // 2 and len(lines))
    path.write_text("".join(lines[:half]) + middle + "".join(lines[half:]), encoding="utf-8")
    return path


def both_ways(path: Path):
    full = diagnose_log(path, reader=LogReader(path, selector=_Everything()))
    selected = diagnose_log(path)
    return full, selected


class _Everything(LineSelector):
    """A selector that picks every line: the reference."""

    def __init__(self) -> None:
        super().__init__(())

    def pick(self, block: bytes, total, final, size=None):  # noqa: ANN001, ANN201
        from minrepro.diagnose.scan import _all_spans

        return _all_spans(block, size)


@pytest.mark.parametrize("middle, cause", [
    (OOM, "cuda_oom"),
    ("[rank2]:IndexError: index out of range in self\n", "position_overflow"),
    ("RuntimeError: Expected all tensors to be on the same device, but found at least two "
     "devices, cuda:0 and cpu!\n", "device_mismatch"),
])
def test_failure_in_the_middle_is_found(tmp_path: Path, middle: str, cause: str) -> None:
    full, selected = both_ways(big_log(tmp_path / "big.log", middle))
    assert full.cause == selected.cause == cause
    assert full.params == selected.params
    assert [e.line for e in full.evidence][:1] == [e.line for e in selected.evidence][:1]


def test_line_numbers_survive_selection(tmp_path: Path) -> None:
    path = big_log(tmp_path / "big.log", OOM)
    expected = next(n for n, text in enumerate(path.read_text().splitlines(), 1)
                    if "OutOfMemoryError" in text)
    assert diagnose_log(path).evidence[0].line == expected


def test_small_log_reads_every_line(tmp_path: Path) -> None:
    path = tmp_path / "small.log"
    path.write_text("".join(NOISE.format(i=i, j=i) for i in range(1000)))
    assert len(list(LogReader(path, selector=make_selector(load_rules())))) == 1000


@pytest.mark.parametrize("engine", [e for e in ENGINES if e != "re" and available(e)])
def test_every_engine_picks_the_lines_of_the_standard_library_one(tmp_path: Path,
                                                                  engine: str) -> None:
    path = big_log(tmp_path / "big.log", OOM)
    select, whole = selection_words()
    words = trigger_words(load_rules()) + list(select)
    a = [ln.line for ln in LogReader(path, selector=LineSelector(
        words, whole_words=whole, engine="re"))]
    b = [ln.line for ln in LogReader(path, selector=LineSelector(
        words, whole_words=whole, engine=engine))]
    assert a == b


@pytest.mark.parametrize("engine", [e for e in ENGINES if available(e)])
def test_whole_words_are_whole_in_every_engine(engine: str) -> None:
    found = build(engine, ("out of memory",), ("nan", "NaN", "inf")).hits(
        b"finance info\nloss nan\nOut Of Memory\ninf\nINFO x\nloss NaN INF\n")
    assert len(found) == 4  # not "finance", "info", "INFO", nor "INF" (not a listed case)


def test_the_default_install_has_an_accelerator() -> None:
    """pyproject's default dependencies bring hyperscan or ahocorasick-rs on every platform."""
    assert best_engine() != "re"


def test_a_line_rewritten_a_million_times_is_thinned(tmp_path: Path) -> None:
    bar = b"".join(b"\r %d%%|###| %d/1000000 [00:01<00:00, loss=2.3]" % (i % 100, i)
                   for i in range(300_000))
    oom = (b"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total"
           b" capacity; 13.10 GiB already allocated; 100.00 MiB free; 13.50 GiB reserved in total"
           b" by PyTorch)\n")
    path = tmp_path / "bar.log"
    path.write_bytes(bar + b"\r" + oom)
    selector = make_selector(load_rules())
    records = list(LogReader(path, selector=selector))
    assert len(records) < 5000  # not 300,000 records through the per-line stages
    assert records[-1].text.startswith("RuntimeError: CUDA out of memory")
    assert diagnose_log(path).cause == "cuda_oom"



def test_a_sampled_progress_bar_gives_its_last_update_only() -> None:
    """Past the head, a block of progress bars (no trigger) yields samples: one point each."""
    bar = "".join(f"\r{p}%|##| {p}/100 [00:01<00:09, loss={2.0 - p / 100:.2f}]" for p in range(5))
    block = ((bar + "\r\n") * 20_000).encode()
    selector = LineSelector(["out of memory"], engine="re")
    selector.offset = HEAD_BYTES  # this block comes after the head
    picked = [block[s:e] for s, e in selector.pick(block, total=10 * len(block), final=False)]
    assert 32 <= len(picked) <= 2 * SAMPLES_PER_BLOCK
    assert set(picked) == {b"4%|##| 4/100 [00:01<00:09, loss=1.96]\r"}


def test_a_huge_log_gets_fewer_samples_a_block_but_never_none() -> None:
    """The samples of a whole log are capped (the curves keep 512 points): a block of a
    log 100 times its size gets fewer than SAMPLES_PER_BLOCK, and of one 10,000 times its
    size MIN_SAMPLES_PER_BLOCK, still spread through it."""
    block = b"".join(b"step %d loss 2.%04d\n" % (n, n) for n in range(40_000))

    def samples(total: int) -> list[int]:
        selector = LineSelector(["out of memory"], engine="re")
        selector.offset = HEAD_BYTES
        return [start for start, _ in selector.pick(block, total=total, final=False)]

    assert len(samples(10 * len(block))) == SAMPLES_PER_BLOCK
    assert MIN_SAMPLES_PER_BLOCK < len(samples(100 * len(block))) < SAMPLES_PER_BLOCK
    few = samples(10_000 * len(block))
    assert len(few) == MIN_SAMPLES_PER_BLOCK
    assert few[0] < len(block) // MIN_SAMPLES_PER_BLOCK < few[-1] - len(block) // 2


def test_a_long_traceback_in_the_middle_of_a_big_log_is_read_whole(tmp_path: Path) -> None:
    """Forty frames are more than a trigger's context: the indented run is followed to its
    exception line, so the failure is found and named as if every line had been read."""
    frames = "".join(f'  File "/env/site-packages/d2/data/common.py", line {n}, in step{n}\n'
                     f"    data = self._map_func(self._dataset[{n}])\n" for n in range(40))
    middle = ("Traceback (most recent call last):\n" + frames +
              "ValueError: too many dimensions 'Boxes'\n")
    path = big_log(tmp_path / "big.log", middle)
    diagnosis = diagnose_log(path)
    assert diagnosis.failure is not None and diagnosis.failure.exc_type == "ValueError"
    assert len(diagnosis.failure.frames) == 40


class _NoScanAhead(LineSelector):
    def prepare(self, block, size, total) -> None:  # noqa: ANN001
        pass


@pytest.mark.skipif(best_engine() != "hyperscan", reason="scans ahead only with hyperscan")
def test_scans_started_ahead_pick_the_lines_a_scan_in_place_picks(tmp_path: Path) -> None:
    """The reader starts each block's trigger scan in a thread as it reads the block in and
    reads the block before it meanwhile: the same lines come out, and each scan is claimed by
    the pick of its own block (none left running on a buffer about to be refilled)."""
    path = big_log(tmp_path / "big.log", OOM, size=6 * (HEAD_BYTES + TAIL_BYTES))
    select, whole = selection_words()
    words = trigger_words(load_rules()) + list(select)
    claimed: list[bool] = []

    class Counting(LineSelector):
        def _claim(self, block, size):  # noqa: ANN001, ANN202
            found = super()._claim(block, size)
            claimed.append(found is not None)
            return found

    ahead = Counting(words, whole_words=whole)
    lines = [(ln.line, ln.text) for ln in LogReader(path, chunk_bytes=64 << 10, selector=ahead)]
    in_place = [(ln.line, ln.text) for ln in LogReader(
        path, chunk_bytes=64 << 10, selector=_NoScanAhead(words, whole_words=whole))]
    assert lines == in_place
    assert len(claimed) > 10 and all(claimed)
    assert ahead._ahead == []
