"""Benchmark `minrepro triage` on a generated fleet (bench/fleet.py): speed, memory, accuracy.

    python bench/triage_fleet.py --n 1000            # local engine, then dask (2 workers)
    python bench/triage_fleet.py --n 10000 --no-dask

Prints logs/min (wall), CPU seconds and logs per CPU-minute (what a shared machine does not
blur), the peak RSS of the largest process (the CLI or one of its workers), the
pairwise F1 of the groups against the generated truth (and the strict one-group-a-sample
truth), and the time of the Dask engine on a
2-worker LocalCluster against the local engine's (both from an empty store, 2 workers).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import ROOT, write_fleet  # noqa: E402

OUT = ROOT / "bench" / "out"


def run_cli(args: list[str], out: Path) -> tuple[float, float, int, dict]:
    """(seconds, CPU seconds of the process tree, peak RSS MiB of its largest process, the
    --json object) of one triage."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "minrepro", "triage", *args, "--out", str(out), "--json"]
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env)
    text = child.stdout.read() if child.stdout else b""
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status:
        raise SystemExit(f"triage failed ({status}): {' '.join(argv)}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, cpu, max(usage.ru_maxrss, after.ru_maxrss) // 1024, json.loads(text)


def pairwise_f1(truth: dict[str, str], result: dict) -> tuple[float, float, float]:
    """(precision, recall, F1) over pairs of logs put in one group, from cluster counts."""
    predicted = {path: group["fingerprint"] for group in result["groups"]
                 for path in group["logs"]}
    cells = Counter((truth[p], predicted[p]) for p in truth if p in predicted)
    truths = Counter(truth[p] for p in truth if p in predicted)
    preds = Counter(predicted[p] for p in truth if p in predicted)

    def pairs(counts: Counter) -> int:
        return sum(n * (n - 1) // 2 for n in counts.values())

    both, said, real = pairs(cells), pairs(preds), pairs(truths)
    precision, recall = both / max(said, 1), both / max(real, 1)
    return precision, recall, 2 * precision * recall / max(precision + recall, 1e-12)


def dask_seconds(fleet: Path, out: Path) -> float:
    from distributed import LocalCluster

    os.environ["PYTHONPATH"] = str(ROOT)  # the spawned workers import minrepro from here
    sys.path.insert(0, str(ROOT))  # and the scheduler, in this process, unpickles its tasks
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      host="127.0.0.1", dashboard_address=None) as cluster:
        seconds, _, _, _ = run_cli([str(fleet), "--engine", "dask", "--scheduler",
                                 cluster.scheduler_address], out)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    fleet = OUT / f"fleet_{args.seed}"
    made = time.perf_counter()
    truth_file = write_fleet(fleet, args.n, args.seed)
    made = time.perf_counter() - made
    with open(truth_file, encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    truth = {path: group for path, group, _ in rows}
    strict = {path: sample for path, _, sample in rows}
    size = sum(os.path.getsize(p) for p in truth) / 2**20
    seconds, cpu, rss, result = run_cli([str(fleet)], OUT / "triage_local")
    precision, recall, f1 = pairwise_f1(truth, result)
    strict_f1 = pairwise_f1(strict, result)[2]
    print(f"fleet: {args.n} logs, {size:,.0f} MiB, {len(set(truth.values()))} true groups"
          f" (generated in {made:.0f} s); CPUs: {os.cpu_count()}")
    print("| logs | MiB | groups | local s | logs/min | CPU s | logs/CPU-min | peak RSS MiB |"
          " precision | recall | F1 | F1 strict | dask s | dask/local |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    row = (f"| {result['logs']} | {size:,.0f} | {len(result['groups'])} | {seconds:.1f} |"
           f" {60 * result['logs'] / seconds:,.0f} | {cpu:.0f} | {60 * result['logs'] / cpu:,.0f} |"
           f" {rss} | {precision:.3f} | {recall:.3f} | {f1:.3f} | {strict_f1:.3f} |")
    print(row + " (dask running)" if not args.no_dask else row + " - | - |", flush=True)
    if not args.no_dask:
        dask = dask_seconds(fleet, OUT / "triage_dask")
        print(f"{row} {dask:.1f} | {dask / seconds:.2f} |")


if __name__ == "__main__":
    main()
