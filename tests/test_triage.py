"""Fleet triage: stable groups, incremental re-runs, jobs of rank logs, Dask, bad inputs, JSON."""

from __future__ import annotations

import csv
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from minrepro.cli import app
from minrepro.triage.engine import DASK_MISSING, DaskEngine, LocalEngine, make_engine
from minrepro.triage.fingerprint import mask_message
from minrepro.triage.groups import Summary
from minrepro.triage.run import run_triage
from minrepro.triage.store import Store

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"
sys.path.insert(0, str(ROOT / "bench"))
from fleet import write_fleet  # noqa: E402

OOM = SAMPLES / "cuda_oom__hf_trainer_new_format.log"
KEYERROR = SAMPLES / "root_config__keyerror_after_driver_warning.log"
WATCHDOG = """\
2026-11-29 03:10:00,000 [rank0]: step 900 loss 1.91
[rank0]:[E1129 03:20:00.123456 4242 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught \
collective operation timeout: WorkNCCL(SeqNum=5120, OpType=ALLREDUCE, NumelIn=1, \
NumelOut=1, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.
"""


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """24 small generated logs and their true groups (bench/fleet.py, capped at 30 KB)."""
    out = tmp_path_factory.mktemp("fleet")
    truth = write_fleet(out, 24, seed=7, max_bytes=30_000)
    with open(truth, encoding="utf-8") as handle:
        return out, {Path(path).name: group for path, group, _ in csv.reader(handle)}


def triage(paths: list[Path], out: Path, engine=None, **kw):  # type: ignore[no-untyped-def]
    store = Store(out)
    engine = engine or LocalEngine(workers=1)
    try:
        stats = run_triage([str(p) for p in paths], store, engine, **kw)
        summary = Summary(store, stats.logs)
        groups = {g.fingerprint: (g, list(summary.logs_of(g.fingerprint)))
                  for g in summary.groups()}
        return stats, groups, list(summary.errors()), summary.roots()
    finally:
        store.close()


def partition(groups: dict) -> set[frozenset[str]]:
    """The groups as sets of file contents' names (independent of folder and order)."""
    return {frozenset(Path(p).name for p in logs) for _, logs in groups.values()}


def test_masking_removes_parameters_only() -> None:
    a = mask_message("CUDA out of memory. Tried to allocate 2.00 GiB on node-17 (rank 3), "
                     "see /home/ana/run_5/ckpt.pt, id 0x7f3a9c, host gpu-a100-03")
    b = mask_message("CUDA out of memory. Tried to allocate 512.50 GiB on node-2 (rank 12), "
                     "see /scratch/kim/run_9/ckpt.pt, id 0x11, host gpu-h100-11")
    assert a == b and "<n>" in a and "<path>" in a and "<hex>" in a
    assert mask_message("KeyError: 'optimizer'") != mask_message("KeyError: 'scheduler'")


def test_groups_match_the_truth_and_are_stable_when_shuffled(
        fleet: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    folder, truth = fleet
    _, first, errors, _ = triage([folder], tmp_path / "a", engine=LocalEngine(workers=2))
    assert not errors
    truth_partition: dict[str, set[str]] = {}
    for name, group in truth.items():
        truth_partition.setdefault(group, set()).add(name)
    assert partition(first) == {frozenset(s) for s in truth_partition.values()}
    shuffled = tmp_path / "shuffled"
    names = sorted(truth)
    random.Random(3).shuffle(names)
    for index, name in enumerate(names):  # other folders, another order, same contents
        target = shuffled / f"x{index % 5}" / f"{index:02d}_{name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(next(folder.rglob(name)), target)
    _, second, _, _ = triage([shuffled], tmp_path / "b")
    assert set(second) == set(first)  # the same fingerprints: stable across runs
    renamed = {fp: {Path(p).name.split("_", 1)[1] for p in logs}
               for fp, (_, logs) in second.items()}
    assert renamed == {fp: {Path(p).name for p in logs} for fp, (_, logs) in first.items()}


def test_a_rerun_reads_only_new_logs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for index, sample in enumerate(sorted(SAMPLES.glob("root_*.log"))[:4]):
        shutil.copy(sample, logs / f"old{index}.log")
    stats, groups, _, _ = triage([logs], tmp_path / "out")
    assert (stats.logs, stats.diagnosed) == (4, 4)
    shutil.copy(OOM, logs / "new0.log")
    shutil.copy(KEYERROR, logs / "new1.log")  # the same content as old0: known already
    stats, groups, _, _ = triage([logs], tmp_path / "out")
    assert (stats.logs, stats.diagnosed) == (6, 1)
    assert sum(g.count for g, _ in groups.values()) == 6


def test_a_job_fails_where_its_first_rank_failed(tmp_path: Path) -> None:
    job = tmp_path / "job-81" / "logs"
    job.mkdir(parents=True)
    (job / "rank0.log").write_text(WATCHDOG, encoding="utf-8")  # the cascade
    shutil.copy(OOM, job / "rank3.log")  # the first failure
    shutil.copy(KEYERROR, job / "rank5.log")  # failed too, but a later rank
    (tmp_path / "job-82").mkdir()
    shutil.copy(OOM, tmp_path / "job-82" / "slurm-82.log")  # a lone log is its own job
    stats, groups, errors, _ = triage([tmp_path], tmp_path / "out")
    assert stats.logs == 4 and not errors
    members = sorted(Path(p).relative_to(tmp_path).as_posix()
                     for _, logs in groups.values() for p in logs)
    assert members == ["job-81/logs/rank3.log", "job-82/slurm-82.log"]
    (group, _), = groups.values()
    assert group.cause == "cuda_oom" and group.count == 2


def test_dask_on_a_local_cluster_gives_the_local_groups(
        fleet: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    from distributed import LocalCluster  # the dask extra is installed in CI: no skip

    folder, _ = fleet
    _, local, _, local_roots = triage([folder], tmp_path / "local")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
                      host="127.0.0.1", dashboard_address=None) as cluster:
        engine = make_engine("dask", scheduler=cluster.scheduler_address)
        assert isinstance(engine, DaskEngine)
        try:
            _, remote, _, remote_roots = triage([folder], tmp_path / "dask", engine=engine)
        finally:
            engine.close()
    assert {fp: sorted(logs) for fp, (_, logs) in remote.items()} == \
        {fp: sorted(logs) for fp, (_, logs) in local.items()}
    assert remote_roots == local_roots


def test_bad_inputs_are_reported_per_log_and_the_run_goes_on(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(OOM, logs / "good.log")
    (logs / "binary.log").write_bytes(bytes(range(256)) * 64)
    (logs / "broken.log.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 40)
    os.mkfifo(logs / "pipe.log")
    missing = tmp_path / "missing.log"
    stats, groups, errors, _ = triage([logs, missing, tmp_path / "none*.log"], tmp_path / "out")
    reasons = {Path(path).name: reason for path, reason in errors}
    assert set(reasons) == {"binary.log", "broken.log.gz", "pipe.log", "missing.log",
                            "none*.log"}
    assert "not a text log" in reasons["binary.log"]
    assert "gzip" in reasons["broken.log.gz"]
    assert "not a regular file" in reasons["pipe.log"]
    assert "no such file" in reasons["missing.log"]
    assert "no file matches" in reasons["none*.log"]
    assert all("\n" not in r for r in reasons.values())
    assert [logs for _, logs in groups.values()] == [[str(logs / "good.log")]]


def test_json_csv_shapes_and_markdown_chart(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for name in (OOM, KEYERROR, SAMPLES / "position_overflow__cpu_traceback.log"):
        shutil.copy(name, logs / name.name)
    shutil.copy(OOM, logs / "again.log")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["triage", str(logs), str(tmp_path / "gone.log"),
                                      "--out", str(out), "--json", "--workers", "1"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert {"logs", "groups", "roots", "errors"} <= set(data) and data["logs"] == 4
    for group in data["groups"]:
        assert {"fingerprint", "cause", "root", "count", "logs"} <= set(group)
        assert group["count"] == len(group["logs"])
    assert sorted(g["count"] for g in data["groups"]) == [1, 1, 2]
    assert set(data["roots"]) >= {"config", "data", "code", "environment", "framework",
                                  "hardware"} and data["roots"]["config"] == 4
    assert data["errors"] == [{"path": str(tmp_path / "gone.log"),
                               "reason": f"{tmp_path / 'gone.log'}: no such file"}]
    oom = next(g for g in data["groups"] if g["cause"] == "cuda_oom")
    assert (out / oom["script"]).is_file()  # the group's repro, by minrepro.repro
    result = CliRunner().invoke(app, ["triage", str(logs), "--out", str(out), "--csv"])
    rows = list(csv.DictReader(result.stdout.splitlines()))
    assert result.exit_code == 0 and sorted(int(r["count"]) for r in rows) == [1, 1, 2]
    assert {r["fingerprint"] for r in rows} == {g["fingerprint"] for g in data["groups"]}
    result = CliRunner().invoke(app, ["triage", str(logs), "--out", str(out), "--md"])
    assert result.exit_code == 0 and "](roots.svg)" in result.stdout
    assert (out / "roots.svg").read_text().startswith("<svg")


def test_dask_engine_without_the_extra_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(Exception, match=r"pip install minrepro\[dask\]") as caught:
        make_engine("dask", scheduler="tcp://127.0.0.1:1")
    assert str(caught.value) == DASK_MISSING


def test_a_batch_diagnoses_each_big_log_as_diagnose_does(tmp_path: Path) -> None:
    """A worker reads every log of its batch from its own start: the head of each big log
    is read in full, as `diagnose` reads it (a selector shared across the batch once carried
    the bytes of the logs before over, so the later ones lost their head)."""
    from minrepro.diagnose.pipeline import diagnose_log
    from minrepro.triage.record import diagnose_batch, to_record

    curves = ("loss_stagnation", "lr_divergence", "overfitting", "dataloader_bottleneck")
    names = sorted(p for p in SAMPLES.glob("*.log") if p.name.startswith(curves))
    assert len(names) >= 4
    paths = []
    for index, sample in enumerate(names):  # curves: told by every metric line of the head
        noise = "".join(f"step {i} tokens {i * 7} queue depth {i % 5} ok\n" for i in range(9000))
        path = tmp_path / f"big{index}.log"  # ~400 KB: over the head and tail read in full
        path.write_text(sample.read_text(encoding="utf-8") + noise, encoding="utf-8")
        paths.append(str(path))
    batch = diagnose_batch([(str(i), p) for i, p in enumerate(paths)])
    alone = [to_record(str(i), diagnose_log(p)) for i, p in enumerate(paths)]
    assert batch == alone


def test_first_and_last_seen_come_from_the_logs_dates(tmp_path: Path) -> None:
    """A failure line dated by the log sets when its group was seen; a log without dates
    falls back to the file's mtime."""
    crash = ("{day} 03:00:00,000 - INFO - step 10 loss 2.1\n"
             "{day} 03:00:05,000 - ERROR - Traceback (most recent call last):\n"
             '  File "train.py", line 9, in <module>\n'
             "    cfg['optimizer']\n"
             "KeyError: 'optimizer'\n")
    for name, day in (("a.log", "2026-11-02"), ("b.log", "2026-11-20")):
        (tmp_path / name).write_text(crash.format(day=day))
    undated = tmp_path / "c.log"
    undated.write_text(crash.format(day="").replace(" 03:00", "03:00"))
    os.utime(undated, (1_700_000_000, 1_700_000_000))
    _, groups, _, _ = triage([tmp_path / "a.log", tmp_path / "b.log"], tmp_path / "out")
    (group, _), = groups.values()
    assert time.strftime("%Y-%m-%d", time.gmtime(group.first_seen)) == "2026-11-02"
    assert time.strftime("%Y-%m-%d", time.gmtime(group.last_seen)) == "2026-11-20"
    _, groups, _, _ = triage([undated], tmp_path / "out2")
    (group, _), = groups.values()
    assert group.first_seen == 1_700_000_000


def test_as_epoch_inverts_the_ordering_stamp() -> None:
    import calendar

    from minrepro.diagnose.stamps import as_epoch, timestamp

    for text in ("2024-01-01 00:00:00", "2024-02-29 23:59:59.5", "2023-12-31 12:00:00",
                 "2025-07-31 08:15:00", "2024-12-01 00:00:00"):
        date, clock = text.split()
        expected = calendar.timegm(time.strptime(text.split(".")[0], "%Y-%m-%d %H:%M:%S"))
        assert as_epoch(timestamp(text)) == expected + (0.5 if "." in clock else 0.0), date
    assert as_epoch(timestamp("I0315 12:00:00.000000 main.cc:1] x")) is None
