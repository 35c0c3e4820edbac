"""The Lightning adapter on tiny runs (CPU, no logger, no checkpoints).

CI installs the `lightning` extra; the importorskip below only spares a bare checkout.
"""

from __future__ import annotations

import io
import math
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

pl = pytest.importorskip("lightning.pytorch", reason="needs the lightning extra (CI installs it)")
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py

from monitor_runs import cause_of, clusters  # noqa: E402

from minrepro.monitor.lightning import MinreproCallback  # noqa: E402


class Classifier(pl.LightningModule):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                       torch.nn.Linear(32, 10))

    def training_step(self, batch: Any, batch_idx: int) -> Any:
        x, y = batch
        return {"loss": torch.nn.functional.cross_entropy(self.net(x), y)}

    def configure_optimizers(self) -> Any:
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def loader(poison_batch: int | None = None) -> Any:
    x, y = clusters(0, n=320)
    if poison_batch is not None:
        x = x.clone()
        x[poison_batch * 16 + 2, 4] = math.nan  # one sample of that batch
    data = torch.utils.data.TensorDataset(x, y)
    return torch.utils.data.DataLoader(data, batch_size=16, shuffle=False)


def fit(callback: MinreproCallback, train: Any, steps: int = 16) -> Any:
    trainer = pl.Trainer(max_steps=steps, accelerator="cpu", devices=1, logger=False,
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[callback])
    trainer.fit(Classifier(), train_dataloaders=train)
    return trainer


def test_a_healthy_lightning_run_raises_nothing() -> None:
    callback = MinreproCallback(num_classes=10, every=4, stream=io.StringIO())
    fit(callback, loader())
    assert callback.monitor.alerts == []
    assert len(callback.monitor.losses.baseline) == 16


def test_nan_inputs_in_a_batch_are_caught_and_named(tmp_path: Path) -> None:
    stream = io.StringIO()
    callback = MinreproCallback(num_classes=10, every=4, stream=stream)
    fit(callback, loader(poison_batch=9))
    first = callback.monitor.alerts[0]
    assert (first.event, first.step) == ("nan_input", 10)  # global_step counts from 1 here
    assert cause_of(stream.getvalue(), tmp_path) == "nan_in_data"


def test_on_alert_stop_stops_the_trainer() -> None:
    callback = MinreproCallback(every=4, stream=io.StringIO(), on_alert="stop")
    trainer = fit(callback, loader(poison_batch=1), steps=20)
    assert trainer.global_step == 4


def test_without_lightning_the_import_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("lightning", "lightning.pytorch", "pytorch_lightning"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "minrepro.monitor.lightning")
    with pytest.raises(ImportError, match=r"pip install minrepro\[lightning\]"):
        import minrepro.monitor.lightning  # noqa: F401
