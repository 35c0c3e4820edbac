"""LossScaleExtractor, NcclExtractor, WorkerKilledExtractor on real message texts."""

from __future__ import annotations

import pytest

from minrepro.diagnose.extract.events import (
    LossScaleExtractor,
    NcclExtractor,
    WorkerKilledExtractor,
)
from minrepro.model import Line, LossScaleEvent, NcclTimeout, WorkerKilled


def feed_all(extractor, rows: list[str], rank: int | None = None) -> list:
    events = []
    for number, text in enumerate(rows, start=1):
        events.extend(extractor.feed(Line(line=number, text=text, rank=rank)))
    return events + list(extractor.close())


LOSS_SCALE = [
    # corpus fp16_overflow__07.log (apex)
    ("Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.03125, ",
     LossScaleEvent(line=1, scale_to=0.03125)),
    # corpus fp16_overflow__01.log (DeepSpeed)
    ("  9%|| 248/2724 [9:10:28<91:21:51, 132.84s/it][2023-06-07 17:28:19,122] [INFO] "
     "[loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted "
     "loss scale: 2048, reducing to 1024",
     LossScaleEvent(line=1, scale_from=2048.0, scale_to=1024.0, rank=0)),
    # DeepSpeed unfused optimizer (find_string hit, 2023 training log)
    ("[INFO] [unfused_optimizer.py:207:step] [deepspeed] fp16 dynamic loss scale overflow! "
     "Skipping step. Attempted loss scale: 8192.0, reducing to 4096.0",
     LossScaleEvent(line=1, scale_from=8192.0, scale_to=4096.0)),
    # DeepSpeed loss_scaler.py raise
    ("Exception: Current loss scale already at minimum - cannot decrease scale anymore. "
     "Exiting run.",
     LossScaleEvent(line=1, scale_to=None, at_minimum=True)),
    # fairseq trainer (2021 log quoted in a repo)
    ("2021-03-08 12:33:12 | INFO | fairseq.trainer | NOTE: gradient overflow detected, ignoring "
     "gradient, setting loss scale to: 2.0",
     LossScaleEvent(line=1, scale_to=2.0)),
    ("AMP: overflow detected, setting scale to: 64.0", LossScaleEvent(line=1, scale_to=64.0)),
    # fairseq dynamic_loss_scaler.py
    ("FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. ",
     LossScaleEvent(line=1, scale_to=0.0001, at_minimum=True)),
]


@pytest.mark.parametrize("text, expected", LOSS_SCALE)
def test_loss_scale(text: str, expected: LossScaleEvent) -> None:
    assert feed_all(LossScaleExtractor(), [text]) == [expected]


def test_deepspeed_echo_is_one_event() -> None:
    rows = [  # DeepSpeed fused optimizer prints each reduction twice
        "[INFO] [fused_optimizer.py:363:_update_scale] Reducing dynamic loss scale from 65536 to "
        "32768.0",
        "[INFO] [logging.py:96:log_dist] [Rank 0] Overflow detected. Skipping step. Attempted loss "
        "scale: 65536, reducing to 32768.0",
    ]
    events = feed_all(LossScaleExtractor(), rows, rank=0)
    assert [(e.scale_from, e.scale_to) for e in events] == [(65536.0, 32768.0)]


@pytest.mark.parametrize("text", ["scale_factor: 2.0", "Rescaled images to 224",
                                  "setting scale to 0.5 for the augmentation"])
def test_not_loss_scale(text: str) -> None:
    assert feed_all(LossScaleExtractor(), [text]) == []


NCCL = [
    # corpus nccl_timeout__01.log (torch 2.4+; rank prefix still in the text)
    ("[80746] [rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
     "collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, "
     "NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
     NcclTimeout(line=1, op="ALLREDUCE", timeout_ms=600000, seq_num=1580, rank=0)),
    # corpus nccl_timeout__04.log (torch 1.10-era wording)
    ("[E ProcessGroupNCCL.cpp:737] [Rank 3] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=469508, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1802211 milliseconds "
     "before timing out.",
     NcclTimeout(line=1, op="ALLREDUCE", timeout_ms=1800000, seq_num=469508, rank=3)),
    # sgl-project/sglang#1693: c10::DistBackendError what() with a PG prefix
    ("  what():  [PG 3 Rank 5] Process group watchdog thread terminated with exception: [Rank 5] "
     "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9141, OpType=_ALLGATHER_BASE, "
     "NumelIn=19008, NumelOut=152064, Timeout(ms)=600000) ran for 600020 milliseconds before "
     "timing out.",
     NcclTimeout(line=1, op="_ALLGATHER_BASE", timeout_ms=600000, seq_num=9141, rank=5)),
    # corpus nccl_timeout__07.log
    ("INFO:root:Waiting in store based barrier to initialize process group for rank: 5, key: "
     "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
     NcclTimeout(line=1, op="barrier", timeout_ms=1_800_000, rank=5)),
    ("RuntimeError: Timed out initializing process group in store based barrier on rank: 4, for "
     "key: store_based_barrier_key:1 (world_size=8, worker_count=5, timeout=0:30:00)",
     NcclTimeout(line=1, op="barrier", timeout_ms=1_800_000, rank=4)),
    ("torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
     "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
     "Socket Timeout",
     NcclTimeout(line=1, op=None, timeout_ms=None)),
]


@pytest.mark.parametrize("text, expected", NCCL)
def test_nccl(text: str, expected: NcclTimeout) -> None:
    assert feed_all(NcclExtractor(), [text]) == [expected]


def test_nccl_rank_from_line_wins_and_repeats_are_dropped() -> None:
    text = NCCL[3][0]
    events = feed_all(NcclExtractor(), [text, text, text], rank=2)
    assert [e.rank for e in events] == [2]


WORKERS = [
    # corpus host_oom_dataloader__01.log
    ("RuntimeError: DataLoader worker (pid 325) is killed by signal: Bus error.",
     WorkerKilled(line=1, signal="Bus error", pid=325)),
    # corpus host_oom_dataloader__04.log
    ("RuntimeError: DataLoader worker (pid 108439) is killed by signal: Killed.",
     WorkerKilled(line=1, signal="Killed", pid=108439)),
    ("RuntimeError: DataLoader worker (pid(s) 123, 456) exited unexpectedly",
     WorkerKilled(line=1, signal="exited", pid=123)),
    ("RuntimeError: DataLoader worker (pid 4321) exited unexpectedly with exit code 1. Details "
     "are lost due to multiprocessing.",
     WorkerKilled(line=1, signal="exited", pid=4321)),
    ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
     "shared memory (shm).",
     WorkerKilled(line=1, signal="Bus error")),
    ("ERROR: Unexpected segmentation fault encountered in worker.",
     WorkerKilled(line=1, signal="Segmentation fault")),
]


@pytest.mark.parametrize("text, expected", WORKERS)
def test_worker_killed(text: str, expected: WorkerKilled) -> None:
    assert feed_all(WorkerKilledExtractor(), [text]) == [expected]


def test_repeated_shm_errors_are_one_event() -> None:
    rows = [WORKERS[4][0]] * 3  # corpus host_oom_dataloader__01.log prints it three times
    assert len(feed_all(WorkerKilledExtractor(), rows)) == 1


def test_a_worker_kill_typed_by_hand_still_counts() -> None:
    """An issue title: 'Dataloader' and 'signaled' as the user typed them."""
    from minrepro.diagnose.extract.events import WorkerKilledExtractor

    text = "RuntimeError: Dataloader worker (pid 15623) is killed by signaled: Killed"
    events = WorkerKilledExtractor().feed(Line(1, text))
    assert [(e.pid, e.signal) for e in events] == [(15623, "Killed")]
