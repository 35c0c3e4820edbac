"""A deterministic generated fleet of failed jobs' logs, each with a known group.

Log i of a fleet is a pure function of (seed, i): a realistic healthy prefix (launcher
chatter, Trainer dict lines, rank-prefixed step lines, tqdm bars, NCCL INFO) with varied
numbers, paths, ranks and host names, then the failure of one sample (samples/*.log, its
home directory, host names and pids varied too). The true group of a log is its sample's,
as the issue defines groups: a failure (an exception, an error line, a kill) is told by its
own message, so each such sample is a group; a symptom without one (a curve, a warning,
prose) is told by its cause alone, so symptom samples of one cause are one group.
`strict_group` keeps every sample apart (the stricter truth the bench also scores).
Sizes run from 10 KB to 5 MB, most of them small, as a week of failed jobs is: 85 % up to
100 KB, 12 % up to 1 MB, 3 % up to 5 MB (log-uniform within each band).

    python bench/fleet.py OUT --n 1000 [--seed 0]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import math
import random
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_log import block  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
BANDS = ((0.85, 10_000, 100_000), (0.12, 100_000, 1_000_000), (0.03, 1_000_000, 5_000_000))
USERS = ("ana", "dev", "kim", "mlee", "ops", "jovyan", "li", "raj", "sven", "t.nguyen")
_HOME = re.compile(r"/home/[\w.-]+/")
_HOST = re.compile(r"\b(?:node|gpu|host|worker)[-_]?\d+\b")
_PID = re.compile(r"\b(pid |Process )\d+")
_FAILURE_LINE = re.compile(r"Traceback|Error|error:|Exception|Killed|killed")


def templates() -> list[Path]:
    """The failure samples a fleet is made of (not the no-failure `none__*` ones)."""
    return sorted(p for p in SAMPLES.glob("*.log") if not p.name.startswith("none__"))


def true_group(sample: Path) -> str:
    """The sample's name for a failure, its cause for a symptom (see the module docstring)."""
    if _FAILURE_LINE.search(sample.read_text(encoding="utf-8")):
        return sample.stem
    return sample.stem.split("__")[0] + ":symptom"


def size_of(rng: random.Random) -> int:
    pick = rng.random()
    for share, low, high in BANDS:
        if pick < share:
            return int(math.exp(rng.uniform(math.log(low), math.log(high))))
        pick -= share
    return BANDS[-1][1]


def prefix(rng: random.Random, size: int) -> Iterator[str]:
    """Healthy lines of about `size` bytes, their host, paths and ranks varied."""
    host = f"{rng.choice(('node', 'gpu', 'dgx'))}-{rng.randrange(1, 999):03d}"
    user, run = rng.choice(USERS), f"{rng.randrange(16**8):08x}"
    world = rng.choice((1, 2, 4, 8))
    head = (f"[2026-11-{rng.randrange(1, 29):02d} 0{rng.randrange(10)}:00:00] launching on"
            f" {host}.cluster.local world_size={world} master_port={rng.randrange(20000, 30000)}\n"
            f"output_dir=/home/{user}/runs/{run} seed={rng.randrange(10**4)}\n")
    yield head
    written, step = len(head), rng.randrange(4000, 8000)  # a loss well below ln(10) and ln(2)
    while written < size:
        chunk = block(rng, step)
        yield chunk
        written += len(chunk)
        step += 1


def vary_failure(text: str, rng: random.Random) -> str:
    """The sample's failure on another machine: another home, host names, pids."""
    text = _HOME.sub(f"/home/{rng.choice(USERS)}/", text)
    text = _HOST.sub(lambda m: f"node{rng.randrange(1, 999)}", text)
    return _PID.sub(lambda m: f"{m[1]}{rng.randrange(1000, 99999)}", text)


def log_text(seed: int, index: int, names: list[Path], max_bytes: int | None = None
             ) -> tuple[str, Iterator[str]]:
    """(sample, the log's text in chunks) of log `index` of the fleet `seed`; `max_bytes`
    caps its size (the tests' small fleets)."""
    rng = random.Random(f"{seed}:{index}")
    sample = rng.choice(names)
    failure = vary_failure(sample.read_text(encoding="utf-8"), rng)
    size = max(min(size_of(rng), max_bytes or BANDS[-1][2]) - len(failure), 0)

    def chunks() -> Iterator[str]:
        yield from prefix(rng, size)
        yield failure

    return sample.stem, chunks()  # the strict group; true_group() maps it


def write_fleet(out: Path, n: int, seed: int = 0, max_bytes: int | None = None) -> Path:
    """Write logs 0..n-1 under `out` (100 a folder) and `truth.csv` (path, true group,
    strict group); the truth file's path. Logs already there are kept when they were made
    from the same samples with the same seed (a stamp says so); else they are made again
    (a sample added or edited changes which sample log i is made of)."""
    names = templates()
    groups = {p.stem: true_group(p) for p in names}
    truth = out / "truth.csv"
    out.mkdir(parents=True, exist_ok=True)
    stamp, wanted = out / "fleet.stamp", _stamp(names, seed, max_bytes)
    if not stamp.exists() or stamp.read_text(encoding="utf-8") != wanted:
        for folder in out.glob("d[0-9][0-9][0-9][0-9]"):
            shutil.rmtree(folder)
        stamp.write_text(wanted, encoding="utf-8")
    with open(truth, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for index in range(n):
            group, chunks = log_text(seed, index, names, max_bytes)
            path = out / f"d{index // 100:04d}" / f"job{index:06d}.log"
            if not path.exists():
                path.parent.mkdir(exist_ok=True)
                with open(path, "w", encoding="utf-8") as log:
                    log.writelines(chunks)
            writer.writerow((str(path), groups[group], group))
    return truth


def _stamp(names: list[Path], seed: int, max_bytes: int | None) -> str:
    """What the fleet's logs are made from: the samples' names and texts, the seed, the cap."""
    digest = hashlib.sha256(f"{seed}/{max_bytes}".encode())
    for path in names:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(write_fleet(args.out, args.n, args.seed))


if __name__ == "__main__":
    main()
