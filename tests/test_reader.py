"""The reader: decoding, '\\r' updates, ANSI, rank prefixes, caps, gzip, UTF-16, bad input."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from minrepro.diagnose.reader import LogReader, split_rank
from minrepro.errors import BadInputError


def read(path: Path, **options) -> list[tuple[int, int | None, str]]:
    return [(line.line, line.rank, line.text) for line in LogReader(path, **options)]


def test_carriage_return_updates_are_separate_records(tmp_path: Path) -> None:
    log = tmp_path / "bar.log"
    log.write_bytes(b"start\n 10%|#| 1/10\r 20%|##| 2/10\rTraceback here\nend\r\n")
    assert read(log) == [(1, None, "start"), (2, None, " 10%|#| 1/10"),
                         (2, None, " 20%|##| 2/10"), (2, None, "Traceback here"),
                         (3, None, "end")]


@pytest.mark.parametrize("text, rank, rest", [
    ("[rank3]: RuntimeError: x", 3, "RuntimeError: x"),
    ("[rank12]:[E321 02:07:08 ProcessGroupNCCL.cpp:607] w", 12,
     "[E321 02:07:08 ProcessGroupNCCL.cpp:607] w"),
    ("[default0]:Traceback (most recent call last):", 0, "Traceback (most recent call last):"),
    ("[80746] [rank4]:[E321] x", 4, "[E321] x"),
    ("3: loss 2.3", 3, "loss 2.3"),
    ("[1,2]<stderr>:boom", 2, "boom"),
    ("(RayTrainWorker pid=123, ip=10.0.0.1) loss 1", None, "loss 1"),
    ("2017-06-11-22:43:00] 1, 8.812", None, "2017-06-11-22:43:00] 1, 8.812"),
    ("[05:19:47.352788] Epoch: [1]", None, "[05:19:47.352788] Epoch: [1]"),
    # srun's label, then torchrun's: the global rank inside
    ("1: [rank6]: Traceback (most recent call last):", 6, "Traceback (most recent call last):"),
    ("0: 6000:  18%|#8 | 7000/39531", 0, "6000:  18%|#8 | 7000/39531"),
    # behind a log collector's timestamp (kubectl logs --timestamps): the stamp stays
    ("2024-11-20 14:37:16 [rank3]:     trainer.train()", 3,
     "2024-11-20 14:37:16     trainer.train()"),
    ("2024-11-20T14:37:16.123Z [default1]:x", 1, "2024-11-20T14:37:16.123Z x"),
    ("2024-11-20 14:37:16 [rank] x", None, "2024-11-20 14:37:16 [rank] x"),
])
def test_rank_prefixes(text: str, rank: int | None, rest: str) -> None:
    assert split_rank(text) == (rank, rest)


def test_ansi_stripped_and_bad_utf8_replaced(tmp_path: Path) -> None:
    log = tmp_path / "c.log"
    log.write_bytes(b"\x1b[31mRuntimeError\x1b[0m: bad \xff byte\x00\n")
    assert read(log) == [(1, None, "RuntimeError: bad \ufffd byte")]


def test_long_line_is_capped_and_flagged(tmp_path: Path) -> None:
    log = tmp_path / "long.log"
    log.write_bytes(b"x" * 100_000 + b"\nnext\n")
    lines = list(LogReader(log, max_line_bytes=1000, chunk_bytes=4096))
    assert [(ln.line, len(ln.text), ln.truncated) for ln in lines] == [(1, 1000, True),
                                                                          (2, 4, False)]


def test_long_progress_line_keeps_its_updates(tmp_path: Path) -> None:
    log = tmp_path / "bar.log"
    log.write_bytes(b"".join(b"step %d\r" % i for i in range(20_000)) + b"OOM here\n")
    lines = list(LogReader(log, max_line_bytes=512, chunk_bytes=4096))
    assert len(lines) == 20_001 and lines[-1].text == "OOM here"
    assert {ln.line for ln in lines} == {1}


def test_gzip_and_truncated_gzip(tmp_path: Path) -> None:
    text = b"".join(b"line %d\n" % i for i in range(5000))
    full = tmp_path / "run.log.gz"
    full.write_bytes(gzip.compress(text))
    assert len(read(full)) == 5000
    cut = tmp_path / "cut.gz"
    cut.write_bytes(full.read_bytes()[: len(full.read_bytes()) // 2])
    reader = LogReader(cut)
    lines = list(reader)
    assert 0 < len(lines) < 5000
    assert lines[0].text == "line 0"
    assert "truncated gzip" in reader.warnings[0]


def test_corrupt_gzip_is_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 64)
    with pytest.raises(BadInputError, match="corrupt gzip"):
        list(LogReader(bad))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
def test_utf16(tmp_path: Path, encoding: str) -> None:
    log = tmp_path / "w.log"
    log.write_bytes("Epoch 1\r\nRuntimeError: CUDA out of memory.\r\n".encode(encoding))
    assert read(log) == [(1, None, "Epoch 1"), (2, None, "RuntimeError: CUDA out of memory.")]


def test_binary_is_refused(tmp_path: Path) -> None:
    blob = tmp_path / "model.pt"
    blob.write_bytes(bytes(range(256)) * 64)
    with pytest.raises(BadInputError, match="not a text log"):
        list(LogReader(blob))


def test_missing_and_directory(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="no such file"):
        list(LogReader(tmp_path / "nope.log"))
    with pytest.raises(BadInputError, match="is a directory"):
        list(LogReader(tmp_path))


def test_stdin() -> None:
    reader = LogReader("-", stdin=io.BytesIO(b"a\nb\n"))
    assert [ln.text for ln in reader] == ["a", "b"] and reader.name == "<stdin>"


@pytest.mark.parametrize("chunk", [3, 7, 64, 333, 4096])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_any_chunk_size_gives_the_lines_of_a_whole_read(tmp_path: Path, chunk: int,
                                                       compress: bool) -> None:
    """The two reused buffers (read into in place, pending carried to the other) must give
    every line once, in order, numbered as a plain split does: over-long lines, '\\r'
    updates, blank runs and a last line without its newline included."""
    rows = [b"step %d loss 2.%03d" % (n, n) for n in range(300)]
    rows[40] = b"y" * 900  # over the cap below: cut, and what follows it still read
    rows[41] = b"a\rb\rc"
    rows[100:103] = [b"", b"", b"Traceback (most recent call last):"]
    text = b"\n".join(rows) + b"\nno newline at the end"
    log = tmp_path / ("run.log.gz" if compress else "run.log")
    log.write_bytes(gzip.compress(text) if compress else text)
    expected = []
    for number, raw in enumerate(text.split(b"\n"), start=1):
        for part in raw.split(b"\r"):
            if part.strip():
                expected.append((number, None, part[:500].decode()))
    assert read(log, max_line_bytes=500, chunk_bytes=chunk) == expected


def test_random_logs_read_as_a_plain_split_under_any_cap_and_chunk(tmp_path: Path) -> None:
    """200 seeded random logs (over-long lines, '\\r' updates, blank lines, a last line with
    or without its newline), each read under a random cap and chunk size, in one process:
    records are those of a plain split, each capped (no memoised record of another cap)."""
    import random

    rng = random.Random(1)
    for trial in range(200):
        rows = []
        for i in range(rng.randint(1, 60)):
            kind = rng.random()
            rows.append(b"y" * rng.randint(400, 3000) if kind < 0.1
                        else b"\r".join(b"u%d" % j for j in range(rng.randint(1, 5)))
                        if kind < 0.2 else b"" if kind < 0.25 else b"row %d" % i)
        text = b"\n".join(rows) + (b"\n" if rng.random() < 0.5 else b"")
        log = tmp_path / f"r{trial}.log"
        log.write_bytes(text)
        cap, chunk = rng.choice([16, 64, 500]), rng.choice([3, 5, 17, 64, 300, 1000])
        physical = text.split(b"\n")
        if physical[-1] == b"":
            physical.pop()
        expected = [(number, None, part[:cap].decode())
                    for number, raw in enumerate(physical, start=1)
                    for part in raw.split(b"\r") if part.strip()]
        assert read(log, max_line_bytes=cap, chunk_bytes=chunk) == expected, (trial, cap, chunk)
