"""The one place that touches transformers internals: cache layers, attention modules, rotary embeddings.

transformers changes these between versions (the cache moved from tuples to `cache.layers[i].keys` in 4.5x,
`output_attentions` became hook-recorded in 5.x); pyproject pins the range this module was tested with.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers import DynamicCache

# The attention implementation is a setting of the whole model, and the app runs a read (catalyst passes) and
# an answer (citations, answer-time distillation) on one model in two threads: without this lock one thread's
# switch back to SDPA could land in the middle of the other's eager pass, whose weights would then be missing.
_EAGER_LOCK = threading.RLock()


def new_cache() -> DynamicCache:
    """An empty cache whose every layer is a plain growing layer (no sliding-window eviction of ours)."""
    return DynamicCache()


def cache_from_layers(layers: list[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    """A cache over the given per-layer (keys, values), each (1, H_kv, T, D), sharing their storage.

    Sharing is safe: a DynamicLayer grows by concatenation into new tensors and never writes in place.
    """
    cache = DynamicCache()
    for layer_idx, (keys, values) in enumerate(layers):
        cache.update(keys[:, :, :0], values[:, :, :0], layer_idx)
        cache.layers[layer_idx].keys = keys
        cache.layers[layer_idx].values = values
    return cache


def cache_layers(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The per-layer (keys, values) of a cache, each (1, H_kv, T, D), without copying."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def cache_length(cache: DynamicCache) -> int:
    """Entries per head currently held (the same in every layer here)."""
    return cache.get_seq_length() if cache.layers else 0


def drop_last(cache: DynamicCache, count: int) -> None:
    """Remove the newest `count` entries of every layer (used to take the catalyst prompt back out)."""
    if count > 0:
        cache.crop(-count)


def decoder(model: torch.nn.Module) -> torch.nn.Module:
    """The base transformer (embeddings, layers, final norm) under the LM head."""
    return model.get_decoder()


def run_decoder(
    model: torch.nn.Module, cache: DynamicCache, input_ids: torch.Tensor, positions: torch.Tensor
) -> torch.Tensor:
    """The final hidden states (1, T, hidden) of `input_ids` (1, T) read at rotary `positions` (1, T) after `cache`.

    The tokens' keys and values are appended to `cache`. Positions are explicit because after CR-RoPE they
    no longer follow the number of entries held.
    """
    return decoder(model)(
        input_ids=input_ids, position_ids=positions, past_key_values=cache, use_cache=True
    ).last_hidden_state  # (1, T, hidden)


def kv_heads(model: torch.nn.Module) -> int:
    """Key/value heads per layer (fewer than query heads under GQA)."""
    config = model.config
    return getattr(config, "num_key_value_heads", None) or config.num_attention_heads


def attention_modules(model: torch.nn.Module) -> list[torch.nn.Module]:
    return [layer.self_attn for layer in decoder(model).layers]


def mean_per_kv_head(per_query_head: torch.Tensor, kv_heads: int) -> torch.Tensor:
    """(H_q, n) -> (H_kv, n): each KV head's value is the mean over the query heads that share it (GQA).

    transformers' repeat_kv serves KV head h to the consecutive query heads h * g .. h * g + g - 1.
    """
    return per_query_head.view(kv_heads, -1, per_query_head.shape[-1]).mean(dim=1)  # (H_kv, n)


def has_rope(model: torch.nn.Module) -> bool:
    """Whether the base transformer applies rotary position embeddings (one module shared by its layers)."""
    return getattr(decoder(model), "rotary_emb", None) is not None


def rotary_cos_sin(model: torch.nn.Module, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of the model's own rotary embedding at integer `positions` (..., T) -> (..., T, rot_dim), fp32.

    Using the model's module keeps every scaling variant (linear, dynamic, llama3, yarn with its attention
    factor folded into cos/sin) exact.
    """
    rotary = decoder(model).rotary_emb
    flat = positions.reshape(1, -1).to(device=next(model.parameters()).device)
    probe = torch.zeros(1, flat.shape[1], 1, device=flat.device, dtype=torch.float32)
    cos, sin = rotary(probe, flat)
    shape = (*positions.shape, cos.shape[-1])
    return cos.float().reshape(shape), sin.float().reshape(shape)


def final_logit_softcap(model: torch.nn.Module) -> float | None:
    """Gemma2-style tanh capping of the output logits, which the LM head call below must repeat."""
    return getattr(model.config, "final_logit_softcapping", None)


def vocab_logits(model: torch.nn.Module, hidden: torch.Tensor, upcast: bool = True) -> torch.Tensor:
    """LM-head logits for final hidden states (..., hidden) -> (..., vocab), capped like the model's own; fp32,
    or with upcast=False in the model's dtype."""
    logits = model.get_output_embeddings()(hidden)
    logits = logits.float() if upcast else logits
    cap = final_logit_softcap(model)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


@contextmanager
def eager_attention(model: torch.nn.Module) -> Iterator[None]:
    """Run the model with eager attention, the only implementation that returns attention weights.

    The short catalyst-prompt pass goes through here (|P| queries against the pot), and the whole reading
    pass for strategies that score by the reading pass's own attention (h2o, tova).
    """
    with _EAGER_LOCK:
        previous = model.config._attn_implementation
        if previous == "eager":
            yield
            return
        model.set_attn_implementation("eager")
        try:
            yield
        finally:
            model.set_attn_implementation(previous)


@contextmanager
def captured_attention(model: torch.nn.Module, reduce) -> Iterator[list]:
    """Collect `reduce(layer_idx, weights)` for each layer's attention weights (1, H_q, T_q, T_kv).

    Reducing inside the hook keeps only one layer's weights alive at a time.
    """
    results: list = [None] * len(attention_modules(model))
    handles = []
    for layer_idx, module in enumerate(attention_modules(model)):

        def hook(_module, _args, output, layer_idx=layer_idx):
            weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
            if weights is None:
                raise RuntimeError("attention weights were not returned; eager attention is required")
            results[layer_idx] = reduce(layer_idx, weights)

        handles.append(module.register_forward_hook(hook))
    try:
        yield results
    finally:
        for handle in handles:
            handle.remove()
