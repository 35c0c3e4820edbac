"""The transformers adapter on tiny Trainer runs (a BERT built from a config, random weights).

CI installs the `hf` extra; the importorskip below only spares a bare checkout.
"""

from __future__ import annotations

import io
import math
import os
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers", reason="needs the hf extra (CI installs it)")
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # conftest.py
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from monitor_runs import cause_of  # noqa: E402

from minrepro.monitor.hf import MinreproCallback  # noqa: E402


class Texts(torch.utils.data.Dataset):  # type: ignore[type-arg]
    """Random token ids with a learnable label: whether token 7 is present."""

    def __init__(self, n: int = 256) -> None:
        gen = torch.Generator().manual_seed(0)
        self.ids = torch.randint(1, 50, (n, 12), generator=gen)
        self.labels = (self.ids == 7).any(dim=1).long()

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "attention_mask": torch.ones(12, dtype=torch.long),
                "labels": self.labels[i]}


class PoisonAt(transformers.TrainerCallback):  # type: ignore[misc]
    """Corrupts the classifier's weights at one step: every loss after it is NaN."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None,
                    **kwargs: Any) -> None:
        if state.global_step == self.step:
            with torch.no_grad():
                model.classifier.weight.fill_(math.nan)


def trainer(tmp_path: Path, callbacks: list[Any], steps: int = 16) -> Any:
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=16, num_labels=2)
    model = transformers.BertForSequenceClassification(config)
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=8,
        logging_steps=4, report_to=[], save_strategy="no", disable_tqdm=True, use_cpu=True,
        learning_rate=1e-3, dataloader_num_workers=0, seed=0)
    return transformers.Trainer(model=model, args=args, train_dataset=Texts(),
                                callbacks=callbacks)


@pytest.mark.parametrize("attach", [False, True], ids=["forward-hook", "attach"])
def test_a_healthy_trainer_run_raises_nothing(tmp_path: Path, attach: bool) -> None:
    callback = MinreproCallback(every=4, stream=io.StringIO())
    run = trainer(tmp_path, [] if attach else [callback])
    if attach:
        callback.attach(run)
    run.train()
    assert callback.monitor.alerts == []
    assert len(callback.monitor.losses.baseline) == 16  # one loss per optimizer step


@pytest.mark.parametrize("attach", [False, True], ids=["forward-hook", "attach"])
def test_a_nan_the_trainer_filters_out_is_caught(tmp_path: Path, attach: bool) -> None:
    stream = io.StringIO()
    callback = MinreproCallback(every=4, stream=stream)
    run = trainer(tmp_path, [PoisonAt(6)] + ([] if attach else [callback]))
    if attach:
        callback.attach(run)
    run.train()
    logged = [h["loss"] for h in run.state.log_history if "loss" in h]
    assert logged and all(math.isfinite(x) for x in logged)  # logging_nan_inf_filter hid it
    nan = callback.monitor.alerts[0]
    assert (nan.event, nan.step) == ("nan", 7)
    assert cause_of(stream.getvalue(), tmp_path) == "lr_divergence"


def test_on_alert_stop_stops_the_trainer(tmp_path: Path) -> None:
    callback = MinreproCallback(every=4, stream=io.StringIO(), on_alert="stop")
    run = trainer(tmp_path, [PoisonAt(2), callback], steps=20)
    run.train()
    assert callback.monitor.alerts[0].event == "nan"
    assert run.state.global_step == 4  # the read after the fault, not max_steps


def test_without_transformers_the_import_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)
    monkeypatch.delitem(sys.modules, "minrepro.monitor.hf")
    with pytest.raises(ImportError, match=r"pip install minrepro\[hf\]"):
        import minrepro.monitor.hf  # noqa: F401
