"""Benchmark `minrepro diagnose` against `grep -c -E` on deterministic synthetic logs.

    python bench/run.py                 # 10 MiB, 256 MiB, 1 GiB (logs cached in bench/out/)
    python bench/run.py --sizes 10      # the CI smoke size

Prints wall time, MiB/s, the ratio to grep, peak RSS and the diagnosis per size, then the
start-up time of `minrepro diagnose` on a 2-line log against `python -c "import typer"`.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_log import write_log  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
TRIGGERS = ("Traceback|Error|Exception|out of memory|OVERFLOW|Watchdog|Assertion|"
            "killed by signal|timed out|nan")


def timed(argv: list[str]) -> tuple[float, int, str]:
    """(seconds, peak RSS in MiB, stdout) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = child.stdout.read() if child.stdout else b""
    _, _, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    return seconds, usage.ru_maxrss // 1024, out.decode(errors="replace")


def log_of(mib: int) -> Path:
    OUT.mkdir(exist_ok=True)
    path = OUT / f"synthetic_{mib}MiB.log"
    if not path.exists() or path.stat().st_size < mib * 2**20 * 0.99:
        write_log(path, mib * 2**20)
    return path


def cause_of(json_text: str) -> str:
    import json

    try:
        data = json.loads(json_text)
    except ValueError:
        return "?"
    params = data.get("params", {})
    return f"{data.get('cause')} (requested_bytes={params.get('requested_bytes')})"


def bench_size(mib: int, repeat: int) -> dict:
    path = log_of(mib)
    minrepro = [sys.executable, "-m", "minrepro", "diagnose", "--json", str(path)]
    grep = ["grep", "-c", "-E", TRIGGERS, str(path)]
    runs = [timed(minrepro) for _ in range(repeat)]
    greps = [timed(grep)[0] for _ in range(repeat)]
    seconds = min(r[0] for r in runs)
    return {"size": f"{mib} MiB", "seconds": seconds, "mib_s": mib / seconds,
            "grep": min(greps), "ratio": seconds / min(greps), "rss": max(r[1] for r in runs),
            "cause": cause_of(runs[0][2])}


def startup(repeat: int = 21) -> tuple[float, float]:
    """Median wall time of `diagnose` on a 2-line log and of `import typer`, both with their
    bytecode cached as an installed package has it (`main` compiles it first: pip compiles
    on install; an editable install under PYTHONDONTWRITEBYTECODE=1 would recompile minrepro
    on every run, ~30 ms).
    The two alternate, run by run, so that a machine slowing down or speeding up mid-way
    (a VM's neighbours, a CPU's clock) weighs on both alike."""
    OUT.mkdir(exist_ok=True)
    tiny = OUT / "two_lines.log"
    tiny.write_text("epoch 1 loss 2.3\nepoch 2 loss 2.1\n")
    ours, typer = [], []
    for _ in range(repeat):
        ours.append(timed([sys.executable, "-m", "minrepro", "diagnose", str(tiny)])[0])
        typer.append(timed([sys.executable, "-c", "import typer"])[0])
    return statistics.median(ours), statistics.median(typer)


def machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()},"
            f" {platform.system()} {platform.release()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10,256,1024", help="MiB, comma-separated")
    parser.add_argument("--repeat", type=int, default=2, help="runs per size (best is shown)")
    args = parser.parse_args()
    if not shutil.which("grep"):
        print("bench: grep not found", file=sys.stderr)
        return 2
    from minrepro.diagnose.engines import best_engine

    # bytecode cached as an installed package has it, for the sizes and the start-up alike
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "minrepro")], check=True)

    engine = best_engine()
    print(f"machine: {machine()}; scan engine: {engine}")
    print(f"{'size':>9} {'minrepro s':>10} {'MiB/s':>7} {'grep s':>7} {'x grep':>7}"
          f" {'peak RSS':>9}  diagnosis")
    for mib in (int(s) for s in args.sizes.split(",")):
        row = bench_size(mib, args.repeat)
        print(f"{row['size']:>9} {row['seconds']:>10.2f} {row['mib_s']:>7.0f} {row['grep']:>7.2f}"
              f" {row['ratio']:>7.1f} {row['rss']:>6} MB  {row['cause']}")
    ours, typer = startup()
    print(f"start-up: minrepro diagnose (2-line log) {ours:.3f} s;"
          f" python -c 'import typer' {typer:.3f} s; ratio {ours / typer:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
