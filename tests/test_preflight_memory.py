"""The memory estimate against what torch holds in one training step of tiny models built
from configs with random weights (no downloads).

Measured on CPU as: the storage of parameters, gradients and optimizer state after
`optimizer.step()`, plus the distinct storages autograd saved for backward, seen through
`torch.autograd.graph.saved_tensors_hooks` (parameters excluded). On CUDA the same sum is
what `torch.cuda.max_memory_allocated` sees, less transient buffers.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from minrepro.preflight.memory import count_params, estimate_memory, shape_from_config

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

BATCH, SEQ = 4, 128


def _configs() -> dict[str, tuple[Any, str]]:
    t = transformers
    return {
        "bert": (t.BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                              intermediate_size=512, vocab_size=1000, num_labels=3,
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
                 "BertForSequenceClassification"),
        "bert-dropout": (t.BertConfig(hidden_size=96, num_hidden_layers=3, num_attention_heads=4,
                                      intermediate_size=256, vocab_size=800, num_labels=5,
                                      hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.0),
                         "BertForSequenceClassification"),
        "bert-attention-dropout": (t.BertConfig(
            hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
            vocab_size=1000, num_labels=3, hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.1), "BertForSequenceClassification"),
        "roberta": (t.RobertaConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                    intermediate_size=512, vocab_size=1000, num_labels=2,
                                    max_position_embeddings=514, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0),
                    "RobertaForSequenceClassification"),
        "gpt2": (t.GPT2Config(n_embd=128, n_layer=2, n_head=4, vocab_size=1000, n_positions=256,
                              resid_pdrop=0.1, embd_pdrop=0.1, attn_pdrop=0.0, use_cache=False,
                              bos_token_id=0, eos_token_id=0),
                 "GPT2LMHeadModel"),
        "qwen2": (t.Qwen2Config(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                num_key_value_heads=2, intermediate_size=320, vocab_size=1200,
                                use_cache=False, max_position_embeddings=256),
                  "Qwen2ForCausalLM"),
        "xlm-roberta": (t.XLMRobertaConfig(hidden_size=192, num_hidden_layers=2,
                                           num_attention_heads=6, intermediate_size=768,
                                           vocab_size=1500, num_labels=4,
                                           max_position_embeddings=514, hidden_dropout_prob=0.1,
                                           attention_probs_dropout_prob=0.0),
                        "XLMRobertaForSequenceClassification"),
        "llama": (t.LlamaConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=4,
                                num_key_value_heads=2, intermediate_size=344, vocab_size=1000,
                                max_position_embeddings=256, use_cache=False),
                  "LlamaForCausalLM"),
    }


def _measured(model: Any, batch: dict[str, Any], optimizer: Any,
              autocast: bool = False) -> tuple[int, int]:
    """Bytes resident after one step (weights, grads, optimizer state, saved activations),
    and of those the saved activations."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}

    def pack(tensor: Any) -> Any:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in params:
            saved[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast), \
            torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    state = sum(v.nbytes for s in optimizer.state.values() for v in s.values()
                if torch.is_tensor(v) and v.dim() > 0)
    weights = sum(p.nbytes for p in model.parameters())
    grads = sum(p.grad.nbytes for p in model.parameters() if p.grad is not None)
    return weights + grads + state + sum(saved.values()), sum(saved.values())


def _model_and_batch(name: str, attention: str = "sdpa",
                     ) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    config, architecture = _configs()[name]
    config.architectures = [architecture]
    config._attn_implementation = attention
    torch.manual_seed(0)
    model = getattr(transformers, architecture)(config)
    model.train()
    ids = torch.randint(0, config.vocab_size, (BATCH, SEQ))
    labels = torch.randint(0, config.num_labels, (BATCH,)) if "Classification" in architecture \
        else ids
    return model, {"input_ids": ids, "labels": labels}, config.to_dict()


def estimate_error(name: str, optimizer: str = "adamw", precision: str = "fp32",
                   attention: str = "sdpa") -> tuple[float, float]:
    """The estimate's relative error for the named tiny model and optimizer: in total, and
    in the activations alone (the part no weights-only estimator has)."""
    model, batch, config = _model_and_batch(name, attention)
    shape = shape_from_config(config)
    assert count_params(shape) == sum(p.numel() for p in model.parameters()), name
    opt = (torch.optim.AdamW(model.parameters(), lr=1e-4) if optimizer == "adamw"
           else torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    measured, activations = _measured(model, batch, opt, autocast=precision == "bf16")
    estimate = estimate_memory(shape, batch=BATCH, seq_len=SEQ, precision=precision, optimizer=(
        "adamw" if optimizer == "adamw" else "sgd_momentum"), attention=attention, device="cpu")
    return ((estimate.total - measured) / measured,
            (estimate.activations - activations) / activations)


@pytest.mark.parametrize(("name", "optimizer", "precision"), [
    ("bert", "adamw", "fp32"), ("bert-dropout", "adamw", "fp32"), ("roberta", "sgd", "fp32"),
    ("gpt2", "adamw", "fp32"), ("llama", "adamw", "fp32"), ("llama", "sgd", "fp32"),
    ("bert-dropout", "adamw", "bf16"), ("gpt2", "adamw", "bf16"), ("llama", "adamw", "bf16"),
    ("qwen2", "adamw", "bf16"), ("xlm-roberta", "adamw", "fp32"),
    ("bert-attention-dropout", "adamw", "fp32-eager"), ("llama", "adamw", "fp32-eager")])
def test_estimate_within_15_percent_of_measured(name: str, optimizer: str,
                                                precision: str) -> None:
    """fp32, bf16 autocast (mixed precision, as HF's bf16=True runs it), eager attention."""
    dtype, _, attention = precision.partition("-")
    total, activations = estimate_error(name, optimizer, dtype, attention or "sdpa")
    print(f"memory {name} {optimizer} {precision}: total error {total:+.1%}, "
          f"activations error {activations:+.1%}")
    assert abs(total) <= 0.15
    assert abs(activations) <= 0.15


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ["bert", "gpt2", "llama"])
def test_estimate_against_cuda_max_memory_allocated(name: str) -> None:
    """On a GPU: the estimate against `torch.cuda.max_memory_allocated` over one step
    (transient buffers included there, so this bound is the looser one)."""
    model, batch, config = _model_and_batch(name)
    model.cuda()
    batch = {k: v.cuda() for k, v in batch.items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    model(**batch).loss.backward()
    optimizer.step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base + sum(p.nbytes for p in model.parameters())
    estimate = estimate_memory(shape_from_config(config), batch=BATCH, seq_len=SEQ).total
    error = (estimate - peak) / peak
    print(f"memory {name} cuda: estimate {estimate} max_memory_allocated {peak} {error:+.1%}")
    assert abs(error) <= 0.15
