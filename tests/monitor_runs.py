"""Seeded CPU training runs for the monitor tests: one per fault, and healthy ones."""

from __future__ import annotations

import io
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from minrepro.diagnose.pipeline import diagnose_log
from minrepro.monitor import TrainingMonitor


def cause_of(text: str, tmp_path: Path, name: str = "captured.log") -> str | None:
    """What `minrepro diagnose` names for the captured monitor stream."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return diagnose_log(path).cause


def clusters(seed: int, n: int = 2048, classes: int = 10, dim: int = 16
             ) -> tuple[torch.Tensor, torch.Tensor]:
    """A learnable task: Gaussian clusters, one per class."""
    gen = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, dim, generator=gen) * 3
    labels = torch.randint(0, classes, (n,), generator=gen)
    return centres[labels] + torch.randn(n, dim, generator=gen), labels


def batches(x: torch.Tensor, y: torch.Tensor, size: int, steps: int
            ) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    for step in range(steps):
        start = (step * size) % (len(x) - size)
        yield x[start:start + size], y[start:start + size]


def classifier(seed: int, dim: int = 16, classes: int = 10) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(dim, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, classes))


def healthy_training(seed: int, steps: int = 1200, every: int = 50) -> TrainingMonitor:
    """AdamW with linear warmup then cosine decay, noisy mini-batch losses, a timed loader."""
    x, y = clusters(seed)
    model = classifier(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    warm = 100
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (
        1 + math.cos(math.pi * min(s, steps) / steps)))
    monitor = TrainingMonitor(num_classes=10, every=every, stream=io.StringIO())
    for step, (xb, yb) in enumerate(monitor.time_loader(batches(x, y, 32, steps))):
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        monitor.check(step, loss, lr=sched.get_last_lr()[0], batch=(xb, yb))
    monitor.close()
    return monitor


def nan_in_batch(seed: int, at: int, every: int, **options: Any
                 ) -> tuple[TrainingMonitor, io.StringIO]:
    """One sample of the batch at step `at` holds a NaN feature."""
    x, y = clusters(seed)
    model = classifier(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    stream = io.StringIO()
    monitor = TrainingMonitor(num_classes=10, every=every, stream=stream, **options)
    for step, (xb, yb) in enumerate(batches(x, y, 32, 80)):
        if step == at:
            xb = xb.clone()
            xb[3, 5] = math.nan
        loss = torch.nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        monitor.check(step, loss, lr=0.05, batch=(xb, yb))
        if monitor.should_stop:
            break
    return monitor, stream


def exploding(seed: int, bump_at: int, every: int, **options: Any
              ) -> tuple[TrainingMonitor, io.StringIO]:
    """Linear regression; the learning rate jumps past the stable limit at `bump_at`."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(512, 8, generator=gen)
    y = x @ torch.randn(8, 1, generator=gen) + 0.1 * torch.randn(512, 1, generator=gen)
    torch.manual_seed(seed)
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    stream = io.StringIO()
    monitor = TrainingMonitor(every=every, stream=stream, **options)
    for step in range(bump_at + 4 * every):
        if step == bump_at:
            opt.param_groups[0]["lr"] = 3.0
        idx = torch.randint(0, 512, (64,), generator=gen)
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        monitor.check(step, loss, lr=opt.param_groups[0]["lr"])
    return monitor, stream


def leaking(leak: bool, steps: int = 40, every: int = 10) -> tuple[TrainingMonitor, io.StringIO]:
    """Losses kept in a list with their graphs (each holds its 8 MB input), or as numbers."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4096, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    base, labels = torch.randn(512, 4096), torch.randint(0, 10, (512,))
    stream = io.StringIO()
    monitor = TrainingMonitor(every=every, stream=stream)
    kept: list[Any] = []
    for step in range(steps):
        xb = base.clone()  # a fresh input each step, as a loader gives
        loss = torch.nn.functional.cross_entropy(model(xb), labels)
        opt.zero_grad()
        loss.backward(retain_graph=leak)
        opt.step()
        kept.append(loss if leak else loss.item())  # the bug: the list keeps every graph
        monitor.check(step, loss, batch=(xb, labels))
    return monitor, stream


def slow_batches(delay: float, steps: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    x, y = clusters(0, n=256)
    for xb, yb in batches(x, y, 32, steps):
        if delay:
            time.sleep(delay)  # decoding, disk: the work a loader does per batch
        yield xb, yb


def loader_run(delay: float, steps: int = 30, every: int = 5
               ) -> tuple[TrainingMonitor, io.StringIO]:
    model = classifier(0)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    stream = io.StringIO()
    monitor = TrainingMonitor(every=every, stream=stream, memory=False)
    for step, (xb, yb) in enumerate(monitor.time_loader(slow_batches(delay, steps))):
        for _ in range(3):  # some compute, so a fast loader is a small share
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        monitor.check(step, loss)
    return monitor, stream


def stuck_at_ln_c(steps: int = 400, every: int = 50) -> tuple[TrainingMonitor, io.StringIO]:
    """A head whose weights never move from zero: every prediction uniform, loss ln(10)."""
    x, y = clusters(1)
    head = torch.nn.Linear(16, 10)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    opt = torch.optim.SGD(head.parameters(), lr=0.0)  # the bug: lr scheduled to zero
    stream = io.StringIO()
    monitor = TrainingMonitor(num_classes=10, every=every, stream=stream)
    for step, (xb, yb) in enumerate(batches(x, y, 32, steps)):
        loss = torch.nn.functional.cross_entropy(head(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        monitor.check(step, loss, lr=0.0)
    return monitor, stream
