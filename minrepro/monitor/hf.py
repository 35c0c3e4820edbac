"""`MinreproCallback` for the transformers Trainer (extra: `pip install minrepro[hf]`).

The Trainer's default `logging_nan_inf_filter=True` replaces a NaN/Inf step loss by the
running average before it reaches `on_log`, so the logged loss hides the failure. This
callback reads the raw loss instead, without a sync of its own:

* `callback.attach(trainer)` (most reliable): wraps `trainer.training_step`, whose return is
  the exact per-step loss the Trainer adds up, whatever `compute_loss` does;
* `Trainer(callbacks=[MinreproCallback()])` alone: a forward hook on the model reads
  `outputs.loss` of each training forward (the model's own loss; a custom `compute_loss`
  that computes the loss outside the model is not seen: use `attach`).

Micro-batch losses of one optimizer step are averaged on the device; `on_step_end` hands the
step's loss to `TrainingMonitor.check` with the learning rate; `on_alert="stop"` stops the
Trainer through `control.should_training_stop`.
"""

from __future__ import annotations

from typing import Any

from minrepro.monitor.core import TrainingMonitor

try:
    from transformers import TrainerCallback
except ImportError:  # pragma: no cover - the message is what the user sees
    raise ImportError("minrepro.monitor.hf needs transformers: pip install minrepro[hf]"
                      ) from None


class MinreproCallback(TrainerCallback):
    """minrepro's live checks on a transformers Trainer run (see the module docstring)."""

    def __init__(self, monitor: TrainingMonitor | None = None, **options: Any) -> None:
        self.monitor = monitor or TrainingMonitor(**options)
        self._sum: Any = None
        self._count = 0
        self._batch: Any = None
        self._hook: Any = None
        self._attached = False

    def attach(self, trainer: Any) -> MinreproCallback:
        """Read the loss `trainer.training_step` returns, and join the trainer's callbacks."""
        step = trainer.training_step

        def training_step(model: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            loss = step(model, inputs, *args, **kwargs)
            self._record(loss, inputs)
            return loss

        trainer.training_step = training_step
        self._attached = True
        if self not in trainer.callback_handler.callbacks:
            trainer.add_callback(self)
        return self

    def _record(self, loss: Any, inputs: Any) -> None:
        loss = loss.detach()
        self._sum = loss if self._sum is None else self._sum + loss
        self._count += 1
        self._batch = inputs

    def _forward(self, module: Any, args: Any, kwargs: Any, output: Any) -> None:
        loss = output.get("loss") if hasattr(output, "get") else None
        if module.training and loss is not None:
            self._record(loss, kwargs or (args[0] if args else None))

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None,
                       **kwargs: Any) -> None:
        if not self._attached and model is not None and self._hook is None:
            self._hook = model.register_forward_hook(self._forward, with_kwargs=True)

    def on_step_end(self, args: Any, state: Any, control: Any, optimizer: Any = None,
                    **kwargs: Any) -> Any:
        if self._sum is None:
            return control
        loss = self._sum / self._count if self._count > 1 else self._sum
        lr = optimizer.param_groups[0]["lr"] if optimizer is not None else None
        self.monitor.check(state.global_step, loss, lr=lr, batch=self._batch)
        self._sum, self._count = None, 0
        if self.monitor.should_stop:
            control.should_training_stop = True
        return control

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.monitor.close()
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
