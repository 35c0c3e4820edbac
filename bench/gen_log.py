"""Deterministic synthetic training logs for the benchmark (no randomness beyond a seed).

A mix of Hugging Face Trainer dict lines, `key=value` step lines with rank prefixes, tqdm
'\\r' bars, INFO noise, and a CUDA OOM failure with its traceback at the end.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

FAILURE = """Traceback (most recent call last):
  File "train.py", line 212, in <module>
    main()
  File "train.py", line 188, in main
    loss.backward()
  File "/usr/lib/python3.11/site-packages/torch/_tensor.py", line 626, in backward
    torch.autograd.backward(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free. Process 4242 has 78.12 GiB memory in use. Of the allocated memory 75.31 GiB is allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""


def block(rng: random.Random, step: int) -> str:
    loss = 2.5 * 0.9995 ** step + rng.random() * 0.05
    lr = 5e-5 * min(1.0, step / 500)
    parts = [
        f"{{'loss': {loss:.4f}, 'grad_norm': {0.8 + rng.random():.4f}, "
        f"'learning_rate': {lr:.4e}, 'epoch': {step / 1000:.2f}}}\n",
        f"[rank{step % 4}]: step={step} loss={loss:.4f} lr={lr:.3e} "
        f"tokens_per_sec={9000 + step % 500}\n",
        "".join(f"\r{p:3d}%|{'#' * (p // 10):<10}| {p}/100 [00:{p % 60:02d}<00:10, 9.{p % 9}it/s]"
                for p in range(0, 100, 20)) + "\n",
        f"2026-11-29 03:{step % 60:02d}:00,123 - INFO - trainer - Saving step {step}; "
        f"dataloader queue depth {step % 7}; "
        f"NCCL INFO Channel {step % 8}/8 : 0[0] -> 1[1] via P2P\n",
        f"2026-11-29 03:{step % 60:02d}:01,456 - INFO - data - shard {step % 128} opened, "
        f"{rng.randrange(10**6)} samples, prefetch ok\n",
    ]
    return "".join(parts)


def write_log(path: Path, size_bytes: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    written = 0
    step = 0
    with open(path, "w", encoding="utf-8") as out:
        while written < size_bytes - len(FAILURE):
            chunk = "".join(block(rng, step + i) for i in range(200))
            step += 200
            out.write(chunk)
            written += len(chunk)
        out.write(FAILURE)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("path", type=Path)
    parser.add_argument("--mib", type=int, default=10)
    args = parser.parse_args()
    write_log(args.path, args.mib * 2**20)


if __name__ == "__main__":
    main()
