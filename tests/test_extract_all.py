"""extract_all over the real-log corpus, plus a throughput check run by hand.

    python tests/test_extract_all.py [N]    # feeds N ordinary INFO lines, prints lines/s
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minrepro.diagnose.extract import default_extractors, extract_all
from minrepro.diagnose.literals import any_of
from minrepro.model import (
    EnvFact,
    Line,
    LossScaleEvent,
    MetricRecord,
    NcclTimeout,
    OomReport,
    Traceback,
    WorkerKilled,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "dev"


def lines_of(path: Path) -> list[Line]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [Line(line=n, text=row) for n, row in enumerate(text.split("\n"), start=1)]


def events_of(name: str) -> list:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"corpus file {name} not present")
    return list(extract_all(lines_of(path)))


def short_types(events: list) -> list[str]:
    return [e.short_type for e in events if isinstance(e, Traceback)]


# (file, event type, how many at least, a check on the first of them)
EXPECTED = [
    ("allocator_fragmentation__01.log", OomReport, 1,
     lambda e: e.reserved_bytes > e.allocated_bytes),
    ("allocator_fragmentation__04.log", OomReport, 1, lambda e: e.fmt == "new"),
    ("cuda_env_mismatch__01.log", EnvFact, 3, lambda e: e.key == "gpu_name"),
    ("cuda_env_mismatch__04.log", Traceback, 1, lambda e: e.exc_type == "AssertionError"),
    ("cuda_oom__07.log", OomReport, 1, lambda e: e.requested_bytes == 20 * 2**20),
    ("dataloader_bottleneck__01.log", MetricRecord, 8, lambda e: e.get("data_time") == 1.296),
    ("device_mismatch__01.log", Traceback, 1, lambda e: "same device" in e.message),
    ("dtype_mismatch__01.log", Traceback, 1, lambda e: len(e.frames) == 2),
    ("fp16_overflow__01.log", LossScaleEvent, 1, lambda e: e.scale_to == 1024.0),
    ("fp16_overflow__07.log", LossScaleEvent, 1, lambda e: e.scale_to == 0.03125),
    ("healthy__01.log", MetricRecord, 8, lambda e: e.get("loss") == 0.9233),
    ("healthy__04.log", MetricRecord, 1, lambda e: e.step == 4846),
    ("host_oom_dataloader__01.log", WorkerKilled, 2, lambda e: e.signal == "Bus error"),
    ("host_oom_dataloader__04.log", Traceback, 2, lambda e: e.chained == "cause"),
    ("loss_stagnation__01.log", MetricRecord, 6, lambda e: e.get("loss") == 2.308579206466675),
    ("loss_stagnation__04.log", MetricRecord, 2, lambda e: e.step == 1),
    ("lr_divergence__01.log", MetricRecord, 7, lambda e: e.get("loss") == 0.6623),
    ("nccl_timeout__01.log", NcclTimeout, 2, lambda e: e.seq_num == 1580),
    ("nccl_timeout__04.log", NcclTimeout, 5, lambda e: e.timeout_ms == 1_800_000),
    ("nccl_timeout__07.log", NcclTimeout, 7, lambda e: e.op == "barrier"),
    ("position_overflow__01.log", Traceback, 1, lambda e: "(937)" in e.message),
    ("position_overflow__04.log", Traceback, 1, lambda e: e.chained == "cause"),
    ("single_class_labels__04.log", MetricRecord, 4, lambda e: e.get("eval_accuracy") > 0.49),
    ("softmax_overflow__07.log", EnvFact, 1, lambda e: e.value == "2.11.0+cu128"),
    ("unrelated_error__01.log", Traceback, 1, lambda e: e.exc_type == "FileNotFoundError"),
    ("unrelated_error__07.log", Traceback, 1, lambda e: e.exc_type == "KeyError"),
]


@pytest.mark.parametrize("name, kind, at_least, check", EXPECTED,
                         ids=[f"{row[0]}-{row[1].__name__}" for row in EXPECTED])
def test_corpus_events(name: str, kind: type, at_least: int, check) -> None:
    found = [e for e in events_of(name) if isinstance(e, kind)]
    assert len(found) >= at_least, found
    assert check(found[0]), found[0]


@pytest.mark.parametrize("name", ["undetached_loss_list__01.log", "undetached_loss_list__04.log",
                                  "undetached_loss_list__07.log", "overfitting__04.log",
                                  "single_class_labels__07.log"])
def test_prose_reports_give_no_crash_events(name: str) -> None:
    kinds = {type(e) for e in events_of(name)}
    assert not kinds & {Traceback, OomReport, NcclTimeout, WorkerKilled}


def test_every_corpus_log_runs() -> None:
    if not CORPUS.exists():
        pytest.skip("corpus not present")
    for path in sorted(CORPUS.glob("*.log")):
        list(extract_all(lines_of(path)))


def test_extract_all_flushes_at_eof() -> None:
    rows = ["Traceback (most recent call last):", '  File "a.py", line 1, in f', "    f()",
            "ValueError: boom"]
    events = list(extract_all(Line(n, t) for n, t in enumerate(rows, start=1)))
    assert short_types(events) == ["ValueError"]


def test_default_extractors_are_fresh() -> None:
    first, second = default_extractors(), default_extractors()
    assert all(a is not b for a, b in zip(first, second, strict=True))
    assert Counter(type(e).__name__ for e in first)["TracebackExtractor"] == 1


ALL_TRIGGERS = [word for extractor in default_extractors() for word in extractor.TRIGGERS]


@pytest.mark.parametrize("word", ALL_TRIGGERS)
def test_prefilter_finds_every_trigger(word: str) -> None:
    assert any_of(ALL_TRIGGERS)(f"xx {word} yy")


def test_prefilter_of_nothing_matches_nothing() -> None:
    assert not any_of([])("anything")


_LOGGY = st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzELTFRC0123456789 :=,"
                                                "|[]()'{}./-_%\"")), max_size=80)


@settings(max_examples=300)
@given(_LOGGY)
def test_lines_without_triggers_give_no_events(text: str) -> None:
    """The prefilter may only skip lines that every idle extractor would ignore."""
    if any(word in text for word in ALL_TRIGGERS):
        return
    for extractor in default_extractors():
        assert list(extractor.feed(Line(1, text))) == []
        assert list(extractor.close()) == []


def _throughput(count: int) -> float:
    rows = [f"[2024-03-01 12:00:{n % 60:02d},123] [INFO] [engine.py:1234:step] processed batch "
            f"{n} of shard /data/shard_{n % 97:05d}.arrow ok" for n in range(1000)]
    lines = [Line(line=n + 1, text=rows[n % 1000]) for n in range(count)]  # the reader's part
    start = time.perf_counter()
    events = sum(1 for _ in extract_all(lines))
    elapsed = time.perf_counter() - start
    assert events == 0
    return count / elapsed


if __name__ == "__main__":
    total = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    print(f"{total} ordinary INFO lines: {_throughput(total):,.0f} lines/s")
