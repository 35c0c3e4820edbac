"""A training-memory estimate from a transformer's config: weights, gradients, optimizer state
and the activations autograd saves for backward, in bytes.

Why from the config and not from a model: preflight runs before anything is built, often on
a machine without the GPU. The activation terms count, per token, the tensors each block saves
for backward (measured against torch's saved-tensor hooks for BERT-, GPT-2- and LLaMA-like
models; see tests/test_preflight_memory.py). Attention is taken as fused (SDPA flash or
memory-efficient: no seq x seq matrix saved) unless `attention="eager"`. Transient buffers
(the logits' gradient, workspace) are not counted: the estimate is of what stays resident.
"""

from __future__ import annotations

from dataclasses import dataclass

from minrepro.errors import MinreproError

_POST_LN = ("bert", "roberta", "xlm-roberta", "camembert", "electra", "deberta")
_GATED = ("llama", "mistral", "qwen2", "qwen3", "gemma", "phi3", "mixtral")
#: Tensors of intermediate size one MLP saves, by activation (the down projection's input
#: included): gelu saves its input and output; GPT-2's gelu_new is written out in Python ops.
_MLP_SAVES = {"gelu": 2, "gelu_pytorch_tanh": 2, "relu": 1, "gelu_new": 5, "silu": 4,
              "swiglu": 4, "gelu_fast": 5, "quick_gelu": 3}
_OPTIMIZER_BYTES = {"adamw": 8, "adam": 8, "sgd_momentum": 4, "sgd": 0, "adafactor": 0,
                    "adamw_8bit": 2, "lion": 4, "rmsprop": 4, "adagrad": 4}
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs from a model config (HF names normalised)."""

    family: str  # "bert" (post-LN), "gpt2" (pre-LN, fused qkv), "llama" (RMSNorm, gated MLP)
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab: int
    max_positions: int
    activation: str = "gelu"
    type_vocab: int = 0
    tied: bool = True
    head: str = "lm"  # "lm" (logits over the vocab) or "classification"
    num_labels: int = 2
    dropout: bool = False  # hidden dropout > 0: a mask per dropout site is saved
    qkv_bias: bool = False  # LLaMA-family models with q/k/v biases (Qwen2, attention_bias)
    attention_dropout: bool = False  # dropout on the attention probabilities (eager only)


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes of one training step's resident memory, by part."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    params: int

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.activations


def _int(config: dict[str, object], *names: str, default: int | None = None) -> int:
    for name in names:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if default is None:
        raise MinreproError(f"model config has no {names[0]}")
    return default


def _positive(config: dict[str, object], *names: str) -> bool:
    value = next((config[n] for n in names if n in config), 0.0)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _family(config: dict[str, object]) -> str:
    model_type = str(config.get("model_type", "")).lower()
    if model_type.startswith(_GATED) or "num_key_value_heads" in config:
        return "llama"
    if model_type.startswith("gpt2") or "n_embd" in config:
        return "gpt2"
    return "bert"


def shape_from_config(config: dict[str, object]) -> ModelShape:
    """A `config.json` (BERT/RoBERTa, GPT-2, LLaMA-like) -> ModelShape; MinreproError if it
    lacks the sizes."""
    family = _family(config)
    hidden = _int(config, "hidden_size", "n_embd", "d_model", "dim")
    heads = _int(config, "num_attention_heads", "n_head", "n_heads")
    architectures = " ".join(str(a) for a in config.get("architectures") or [])  # type: ignore[attr-defined]
    classify = "SequenceClassification" in architectures or (
        family == "bert" and "LM" not in architectures)
    drop = config.get("hidden_dropout_prob", config.get("resid_pdrop", 0.0))
    return ModelShape(
        family=family, hidden=hidden,
        layers=_int(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers"),
        heads=heads, kv_heads=_int(config, "num_key_value_heads", default=heads),
        intermediate=_int(config, "intermediate_size", "n_inner", "ffn_dim", default=4 * hidden),
        vocab=_int(config, "vocab_size"),
        max_positions=_int(config, "max_position_embeddings", "n_positions", default=0),
        activation=str(config.get("hidden_act", config.get("activation_function",
                                                           "silu" if family == "llama"
                                                           else "gelu"))),
        type_vocab=_int(config, "type_vocab_size", default=2 if family == "bert" else 0)
        if family == "bert" else 0,
        tied=bool(config.get("tie_word_embeddings", family != "llama")),
        head="classification" if classify else "lm",
        num_labels=_int(config, "num_labels", default=len(config.get("id2label") or {}) or 2),  # type: ignore[arg-type]
        dropout=isinstance(drop, (int, float)) and drop > 0,
        attention_dropout=_positive(config, "attention_probs_dropout_prob", "attn_pdrop",
                                    "attention_dropout"),
        qkv_bias=family == "llama" and (config.get("attention_bias") is True or str(
            config.get("model_type", "")).startswith("qwen2")))


def count_params(shape: ModelShape) -> int:
    """The parameter count the config implies (embeddings, blocks, head)."""
    h, i, v = shape.hidden, shape.intermediate, shape.vocab
    kv = shape.kv_heads * (h // shape.heads)
    if shape.family == "llama":
        block = 2 * h * h + 2 * h * kv + 3 * h * i + 2 * h + (h + 2 * kv if shape.qkv_bias else 0)
        embed, final = v * h, h + (0 if shape.tied else v * h)
    else:
        block = 4 * h * h + 4 * h + 2 * h * i + i + h + 4 * h
        embed = (v + shape.max_positions + shape.type_vocab) * h + 2 * h
        final = 0 if shape.family == "bert" or shape.tied else v * h
    if shape.head == "classification":
        final += (h * h + h if shape.family == "bert" else 0) + h * shape.num_labels + (
            shape.num_labels if shape.family == "bert" else 0)
    return embed + shape.layers * block + final


def _attention_elems(shape: ModelShape, seq_len: int, eager: bool) -> float:
    """Per token: q, k, v and the attention output; eager attention adds the probabilities
    (and, with dropout, the mask and the dropped probabilities), and with grouped kv heads
    the keys and values repeated to every head."""
    h = shape.hidden
    kv = shape.kv_heads * (h // shape.heads)
    core = h + 2 * kv + h
    if eager:
        core += shape.heads * seq_len * (3 if shape.attention_dropout else 1)
        core += 2 * (h - kv)
    return core


#: Of a block's residual-stream tensors (h per token each): how many it saves, and how many
#: of those stay fp32 under autocast (the norms' inputs; RMSNorm's normalised value too).
_NORM_TERMS = {"bert": (4, 2), "gpt2": (4, 2), "llama": (6, 4)}
_FINAL_NORM = {"bert": (0, 0), "gpt2": (1, 0), "llama": (2, 1)}
#: Under autocast an fp32 input is cast once per linear that reads it: separate q, k, v
#: projections (and LLaMA's gate and up) each keep their own half copy; fused ones one.
_EXTRA_CASTS = {"bert": 2, "gpt2": 0, "llama": 3}


def _layer_elems(shape: ModelShape, seq_len: int, eager: bool,
                 mixed: bool) -> tuple[float, float]:
    """Elements one block saves per token: (in the activation dtype, in fp32 under autocast)."""
    h = shape.hidden
    mlp = _MLP_SAVES.get(shape.activation, 2) * shape.intermediate
    attention = _attention_elems(shape, seq_len, eager)
    terms, full = _NORM_TERMS[shape.family]
    casts = _EXTRA_CASTS[shape.family] * h if mixed else 0
    return attention + mlp + (terms - full) * h + casts, full * h


def _small_bytes(shape: ModelShape) -> float:
    """fp32 per-token statistics: the norms' mean/rstd and the attention's logsumexp."""
    per_norm = 4 if shape.family == "llama" else 8
    return shape.layers * (2 * per_norm + 4 * shape.heads)


def linear_params(shape: ModelShape) -> int:
    """Weights of the matrix multiplies: what autocast casts to half and keeps for backward."""
    h, i, v = shape.hidden, shape.intermediate, shape.vocab
    kv = shape.kv_heads * (h // shape.heads)
    block = 2 * h * h + 2 * h * kv + 3 * h * i if shape.family == "llama" else 4 * h * h + 2 * h * i
    head = v * h if shape.head == "lm" else h * shape.num_labels + (
        h * h if shape.family == "bert" else 0)
    return shape.layers * block + head


def activation_bytes(shape: ModelShape, *, batch: int, seq_len: int, dtype: str = "fp32",
                     attention: str = "sdpa", device: str = "cuda") -> int:
    """Bytes autograd keeps for backward in one step of `batch` sequences of `seq_len`.

    `dtype` fp16/bf16 means autocast (mixed precision): matmul inputs and outputs are half,
    the residual stream and the norms stay fp32, and the half copies of the weights are kept.
    """
    low = DTYPE_BYTES[dtype]
    mixed = dtype != "fp32"
    half_mask, full_mask = (low, 4) if device == "cpu" else (1, 1)  # CPU keeps float masks
    h = shape.hidden
    in_low, in_full = _layer_elems(shape, seq_len, attention == "eager", mixed)
    final_terms, final_full = _FINAL_NORM[shape.family]
    per_token = shape.layers * (low * in_low + 4 * in_full) if mixed else (
        low * shape.layers * (in_low + in_full))
    per_token += 4 * h + (full_mask * h if shape.dropout else 0)  # embeddings: fp32
    if shape.dropout and shape.family != "llama":
        per_token += half_mask * shape.layers * 2 * h
    per_token += (low * (final_terms - final_full) + 4 * final_full) * h
    per_token += 4 * shape.vocab if shape.head == "lm" else 0  # log-softmax output, fp32
    per_token += _small_bytes(shape) + 16  # input ids and labels
    total = per_token * batch * seq_len
    if shape.head == "classification":  # the pooled token (a view of the whole last layer)
        total += low * h * batch * (seq_len if shape.family == "bert" and not mixed else 1)
    if mixed:
        total += low * linear_params(shape)
    return int(total)


def estimate_memory(shape: ModelShape, *, batch: int, seq_len: int, precision: str = "fp32",
                    optimizer: str = "adamw", attention: str = "sdpa",
                    device: str = "cuda") -> MemoryEstimate:
    """Weights and gradients (fp32 master copies under fp16/bf16 mixed precision), optimizer
    state (Adam: two fp32 moments; SGD with momentum: one) and saved activations."""
    params = count_params(shape)
    state = _OPTIMIZER_BYTES.get(optimizer, 8)
    return MemoryEstimate(
        weights=4 * params, gradients=4 * params, optimizer=state * params,
        activations=activation_bytes(shape, batch=batch, seq_len=seq_len, dtype=precision,
                                     attention=attention, device=device),
        params=params)
