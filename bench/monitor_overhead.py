"""What the live monitor costs a training step: the same CPU loop with and without it.

    python bench/monitor_overhead.py [--blocks 20] [--steps 200] [--every 50] [--device cpu]

Blocks of `steps` steps alternate between the plain loop and the monitored one (ABBA, so
machine load falls on both alike); the ratio is the median over neighbouring pairs of the block
time with the monitor over the one without, with its quartiles. A second, steadier figure: the
cost of one `check()` call timed alone, as a share of the plain step time. Target: ratio <= 1.01
at the default interval (every=50).
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import torch

from minrepro.monitor import TrainingMonitor
from minrepro.monitor.core import DEFAULT_EVERY


def make(device: str, hidden: int) -> tuple[torch.nn.Module, torch.optim.Optimizer, tuple]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, 10)).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    batch = (torch.randn(64, 128, device=device), torch.randint(0, 10, (64,), device=device))
    return model, opt, batch


def block(model: torch.nn.Module, opt: torch.optim.Optimizer, batch: tuple, steps: int,
          monitor: TrainingMonitor | None, start: int) -> float:
    x, y = batch
    began = time.perf_counter()
    for step in range(start, start + steps):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if monitor is not None:
            monitor.check(step, loss, lr=1e-3)
    if x.is_cuda:
        torch.cuda.synchronize()
    return time.perf_counter() - began


def check_cost(every: int, device: str, calls: int = 20000) -> float:
    """Seconds per `check()` call, averaged over reads and the steps between them."""
    monitor = TrainingMonitor(every=every, stream=io.StringIO())
    loss = torch.tensor(1.0, device=device)
    began = time.perf_counter()
    for step in range(calls):
        monitor.check(step, loss)
    return (time.perf_counter() - began) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--every", type=int, default=DEFAULT_EVERY)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, opt, batch = make(args.device, args.hidden)
    monitor = TrainingMonitor(every=args.every, stream=io.StringIO())
    block(model, opt, batch, args.steps, None, 0)  # warm up
    plain, watched = [], []
    for index in range(args.blocks):
        start = (index + 1) * args.steps
        order = (None, monitor) if index % 2 == 0 else (monitor, None)  # ABBA: no order bias
        for which in order:
            spent = block(model, opt, batch, args.steps, which, start)
            (plain if which is None else watched).append(spent)
    step = statistics.median(plain) / args.steps
    pairs = sorted(w / p for w, p in zip(watched, plain, strict=True))  # neighbours in time
    ratio = statistics.median(pairs)
    low, high = pairs[len(pairs) // 4], pairs[(3 * len(pairs)) // 4]
    per_check = check_cost(args.every, args.device)
    print(f"device={args.device} threads={args.threads} every={args.every} "
          f"step={step * 1e3:.3f} ms  blocks={args.blocks}x{args.steps} steps")
    print(f"step-time ratio with/without monitor: {ratio:.4f} (median of paired blocks;"
          f" quartiles {low:.4f}..{high:.4f})")
    print(f"check() cost: {per_check * 1e6:.2f} us/step = {per_check / step:.4%} of a step")
    print(f"alerts: {len(monitor.alerts)}")


if __name__ == "__main__":
    main()
