"""Checks of the config against the model and the card: sequence length, learning rate,
warmup and clipping, precision, the memory estimate."""

from __future__ import annotations

from minrepro.preflight.inputs import Inputs, Outcome, cannot, failed, passed
from minrepro.preflight.memory import DTYPE_BYTES, estimate_memory

#: Position tables that reserve the first slots (RoBERTa's padding_idx + 1 offset).
_OFFSET_MODELS = ("roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart")
_ADAM_LIKE = ("adam", "adamw", "adamw_8bit", "lamb", "rmsprop")
_GIB = float(1 << 30)
#: Of the card's memory, what training may use: the CUDA context and the allocator's
#: fragmentation take the rest.
_USABLE = 0.9


def usable_positions(model: dict[str, object]) -> int | None:
    """max_position_embeddings, less the RoBERTa-family offset of 2."""
    value = model.get("max_position_embeddings", model.get("n_positions"))
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    model_type = str(model.get("model_type", "")).lower()
    return value - 2 if model_type in _OFFSET_MODELS else value


def check_max_length(inputs: Inputs) -> Outcome:
    length = inputs.config.number("max_length")
    if length is None:
        return cannot("the config sets no max length (max_seq_length, max_length, block_size)")
    if inputs.model is None:
        return cannot("no model config (--model-config) to read max_position_embeddings from")
    limit = usable_positions(inputs.model)
    if limit is None:
        return cannot("the model config has no max_position_embeddings")
    if length > limit:
        return failed(f"max length {int(length)} > {limit} positions the model has"
                      f" ({inputs.model.get('model_type', 'model')})")
    return passed(f"max length {int(length)} <= {limit} positions")


def lr_limit(optimizer: str, params: int | None) -> float | None:
    """The largest lr that usually trains stably, by optimizer family and model size (Adam:
    1e-3 for small models down to 1.5e-4 at 10B+, as published pre-training recipes use)."""
    if optimizer in ("adafactor",):
        return None
    if optimizer == "sgd":
        return 1.0
    if optimizer == "lion":
        return 3e-4
    if params is None or params < 100e6:
        return 1e-3
    return 6e-4 if params < 1e9 else 3e-4 if params < 10e9 else 1.5e-4


def check_learning_rate(inputs: Inputs) -> Outcome:
    lr = inputs.config.number("learning_rate")
    if lr is None:
        return cannot("the config sets no learning rate")
    if lr <= 0:
        return failed(f"learning rate {lr:g} is not positive")
    optimizer = str(inputs.config.get("optimizer") or "adamw")
    params = None
    if inputs.shape is not None:
        from minrepro.preflight.memory import count_params

        params = count_params(inputs.shape)
    limit = lr_limit(optimizer, params)
    if limit is None:
        return cannot(f"{optimizer} sets its own step size")
    size = f"{params / 1e6:.0f}M params" if params else "model size unknown"
    if lr > limit:
        return failed(f"lr {lr:g} > {limit:g}, the usual ceiling for {optimizer} ({size})")
    return passed(f"lr {lr:g} <= {limit:g} for {optimizer} ({size})")


def check_warmup_clipping(inputs: Inputs) -> Outcome:
    config = inputs.config
    warmup = (config.number("warmup_steps") or 0) > 0 or (config.number("warmup_ratio") or 0) > 0
    clip = (config.number("max_grad_norm") or 0) > 0
    said = f"warmup {'set' if warmup else 'none'}, clipping {'set' if clip else 'none'}"
    if not warmup and not clip:
        return failed(f"{said}: nothing stops an early large update from diverging")
    return passed(said)


def check_precision_gpu(inputs: Inputs) -> Outcome:
    precision, capability = inputs.config.precision, inputs.machine.capability
    if precision == "fp32":
        return passed("fp32: no precision requirement")
    if capability is None:
        return cannot(f"{precision} set, but no GPU here (name one with --gpu)")
    sm = f"sm_{capability[0]}{capability[1]}"
    if precision == "bf16" and capability < (8, 0):
        return failed(f"bf16 needs sm_80+ (Ampere); {inputs.machine.gpu_name} is {sm}")
    if precision == "fp16" and capability < (6, 0):
        return failed(f"fp16 tensor math needs sm_60+; {inputs.machine.gpu_name} is {sm}")
    return passed(f"{precision} on {inputs.machine.gpu_name} ({sm})")


def check_fp16_scaler(inputs: Inputs) -> Outcome:
    config = inputs.config
    if config.precision != "fp16":
        return passed(f"{config.precision}: no loss scaling needed")
    if config.loss_scaling is None:
        return cannot("fp16 set; whether a GradScaler is used is not in the config")
    if not config.loss_scaling:
        return failed("fp16 without a loss scaler: small gradients underflow, large ones "
                      "overflow to inf")
    return passed("fp16 with dynamic loss scaling")


def _fits(inputs: Inputs) -> tuple[int, int] | str:
    config, shape = inputs.config, inputs.shape
    if shape is None:
        return "no model config with sizes (--model-config)"
    batch, length = config.number("batch_size"), config.number("max_length")
    if batch is None or length is None:
        return "the config needs a batch size and a max length"
    if inputs.machine.gpu_memory is None:
        return "no GPU here (name one with --gpu)"
    precision = config.precision if config.precision in DTYPE_BYTES else "fp32"
    eager = any(k.endswith("attn_implementation") and v == "eager" for k, v in config.flat.items())
    estimate = estimate_memory(shape, batch=int(batch), seq_len=int(length), precision=precision,
                               optimizer=str(config.get("optimizer") or "adamw"),
                               attention="eager" if eager else "sdpa")
    return estimate.total, int(inputs.machine.gpu_memory * _USABLE)


def check_memory(inputs: Inputs) -> Outcome:
    fits = _fits(inputs)
    if isinstance(fits, str):
        return cannot(fits)
    need, have = fits
    said = (f"estimate {need / _GIB:.1f} GiB vs {have / _GIB:.1f} GiB usable on "
            f"{inputs.machine.gpu_name}")
    if need > have and inputs.config.get("gradient_checkpointing") is True:
        return cannot(said + "; with gradient checkpointing the estimate is an upper bound")
    return failed(said) if need > have else passed(said)
