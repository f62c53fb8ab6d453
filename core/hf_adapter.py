"""The one place that touches transformers internals: cache layers, attention modules, rotary embeddings.

transformers changes these between versions (the cache moved from tuples to `cache.layers[i].keys` in 4.5x,
`output_attentions` became hook-recorded in 5.x); pyproject pins the range this module was tested with.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from transformers import AttentionInterface, AttentionMaskInterface, DynamicCache
from transformers.cache_utils import DynamicLayer
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

from .slab import KVSlab
from .stopping import check_stop

# The attention implementation is a setting of the whole model, and the app runs a read (catalyst passes) and
# an answer (citations, answer-time distillation) on one model in two threads: without this lock one thread's
# switch back to SDPA could land in the middle of the other's eager pass, whose weights would then be missing.
_EAGER_LOCK = threading.RLock()

# transformers' SDPA made cheaper on a CPU, able to hand the last queries' weights to a callback (use_reader_sdpa).
_READER_SDPA = "infinipot-sdpa"
# Per thread, while trailing_attention is active in it: (query count, reduce, results). Another thread running the
# same model meanwhile (the app's answer beside a read) finds nothing here and records nothing.
_trailing = threading.local()


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


class _SlabLayer(DynamicLayer):
    """One layer of a cache over a core.slab.KVSlab: a forward's keys and values are written into the slab's rows
    after the entries held, and the layer's keys are a view of its first rows (no concatenation)."""

    def __init__(self, slab, index: int, entries: int) -> None:
        super().__init__()
        self.slab, self.index, self.entries = slab, index, entries
        if slab.allocated:
            self.dtype, self.device = slab.keys.dtype, slab.keys.device
            self.is_initialized = True
            self._show()

    def _show(self) -> None:
        self.keys, self.values = self.slab.layer_view(self.index, self.entries)  # (1, H_kv, entries, D) views

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        if not self.slab.allocated:
            self.slab.allocate_like(key_states, value_states)
        self.dtype, self.device = key_states.dtype, key_states.device
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start, end = self.entries, self.entries + key_states.shape[-2]
        if end > self.slab.capacity:  # the reader's bound keeps every read inside; past it is a broken invariant
            raise RuntimeError(f"{end} entries do not fit the pot's slab of {self.slab.capacity}")
        self.slab.keys[self.index, :, start:end].copy_(key_states[0])
        self.slab.values[self.index, :, start:end].copy_(value_states[0])
        self.entries = end
        self._show()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.entries

    def crop(self, tokens_to_remove: int) -> None:
        if tokens_to_remove > 0:
            raise ValueError("crop takes the number of entries to remove as a negative count")
        self.entries = max(0, self.entries + tokens_to_remove)
        if self.is_initialized:
            self._show()


def slab_cache(slab, entries: int) -> DynamicCache:
    """A cache whose layers write in place into `slab` (core.slab.KVSlab), holding its first `entries` rows.

    What it writes lands in the slab, so two caches over one slab must never both grow (the reader's, and an
    answer's own: room_to_grow).
    """
    cache = DynamicCache()
    cache.layers = [_SlabLayer(slab, index, entries) for index in range(slab.layers)]
    return cache


def room_to_grow(cache: DynamicCache, room: int) -> DynamicCache:
    """A cache holding a copy of `cache`'s entries with `room` more rows preallocated, written in place as an answer
    is decoded (a slab, as the reader's): transformers' own cache concatenates every layer into a new tensor at
    every token, copying all the entries held each time. `cache` itself is not changed."""
    layers = cache_layers(cache)
    if not layers:  # nothing read yet: its layers are made by the first forward
        return cache
    entries = layers[0][0].shape[2]
    slab = KVSlab(len(layers), entries + room)
    if entries:
        slab.fill([keys for keys, _ in layers], [values for _, values in layers])
    return slab_cache(slab, entries)


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


def stop_between_layers(model: torch.nn.Module) -> None:
    """Have each decoder layer look, before it runs, whether its answer was stopped (core.stopping); once per
    model. The look is one attribute read when no answer can be stopped."""
    if getattr(model, "_infinipot_stop_hooks", False):
        return
    for layer in decoder(model).layers:
        layer.register_forward_pre_hook(_check_stop_hook)
    model._infinipot_stop_hooks = True


def _check_stop_hook(module: torch.nn.Module, args) -> None:
    check_stop()


def is_stop_check(hook) -> bool:
    """Whether a layer's forward pre-hook is stop_between_layers' check (a lean path that makes the check itself
    may run the layer's work without its module)."""
    return hook is _check_stop_hook


def run_decoder(
    model: torch.nn.Module,
    cache: DynamicCache,
    input_ids: torch.Tensor,
    positions: torch.Tensor,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """The final hidden states (B, T, hidden) of `input_ids` (B, T) read at rotary `positions` (B, T) after `cache`.

    The tokens' keys and values are appended to `cache`. Positions are explicit because after CR-RoPE they
    no longer follow the number of entries held. `mask`: an additive (B, 1, T, cached + T) mask in the model's
    dtype, used as given (see takes_custom_masks); None: causal.
    """
    return decoder(model)(
        input_ids=input_ids, position_ids=positions, past_key_values=cache, attention_mask=mask, use_cache=True
    ).last_hidden_state  # (B, T, hidden)


def takes_custom_masks(model: torch.nn.Module) -> bool:
    """Whether the model's attention applies a 4D mask given to run_decoder as it is (SDPA, ours, eager);
    flash-attn and others take only padding masks. Not for a model with sliding-window layers: transformers gives
    a custom mask to those layers unchanged, past their window."""
    windowed = any(window is not None for window in layer_windows(model))
    return model.config._attn_implementation in ("sdpa", _READER_SDPA, "eager") and not windowed


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


def rotary_kinds(model: torch.nn.Module) -> list[str | None]:
    """Per layer, which of the model's rotary embeddings rotates its keys: None for every layer of a model with one
    (most), the layer's type where the rotary module takes one (Gemma 3: its local "sliding_attention" layers
    rotate with another base than its global "full_attention" layers)."""
    layers = len(decoder(model).layers)
    types = getattr(model.config, "layer_types", None)
    rotary = decoder(model).rotary_emb
    if not types or "layer_type" not in inspect.signature(rotary.forward).parameters:
        return [None] * layers
    return list(types[:layers])


def rotary_cos_sin(
    model: torch.nn.Module, positions: torch.Tensor, kind: str | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of the model's own rotary embedding at integer `positions` (..., T) -> (..., T, rot_dim), fp32.

    `kind`: the layers' rotary kind (rotary_kinds), None for a model with one. Using the model's module keeps
    every scaling variant (linear, dynamic, llama3, yarn with its attention factor folded into cos/sin) exact.
    """
    rotary = decoder(model).rotary_emb
    flat = positions.reshape(1, -1).to(device=next(model.parameters()).device)
    probe = torch.zeros(1, flat.shape[1], 1, device=flat.device, dtype=torch.float32)
    cos, sin = rotary(probe, flat) if kind is None else rotary(probe, flat, kind)
    shape = (*positions.shape, cos.shape[-1])
    return cos.float().reshape(shape), sin.float().reshape(shape)


def layer_windows(model: torch.nn.Module) -> list[int | None]:
    """Per layer, how many of the latest entries its attention sees (a sliding-window, "local" layer), None for a
    layer that sees every entry held. The model's own masks count the window in entries of the cache (the
    position of a query among the keys held), so a pot's local layer sees its newest `window` entries."""
    config = model.config
    layers = len(decoder(model).layers)
    window = getattr(config, "sliding_window", None)
    if not window:
        return [None] * layers
    types = getattr(config, "layer_types", None)
    if types is None:  # Mistral, Starcoder2: one window for every layer
        return [int(window)] * layers
    return [int(window) if kind == "sliding_attention" else None for kind in types[:layers]]


def windowed_layers(model: torch.nn.Module, entries: int) -> list[int]:
    """The layers whose window is shorter than `entries`: of a pot that holds that many, they see only the newest."""
    return [layer for layer, window in enumerate(layer_windows(model)) if window is not None and window < entries]


def final_logit_softcap(model: torch.nn.Module) -> float | None:
    """Gemma2-style tanh capping of the output logits, which the LM head call below must repeat."""
    return getattr(model.config, "final_logit_softcapping", None)


def vocab_logits(model: torch.nn.Module, hidden: torch.Tensor, upcast: bool = True) -> torch.Tensor:
    """LM-head logits for final hidden states (..., hidden) -> (..., vocab), capped like the model's own; fp32,
    or with upcast=False in the model's dtype."""
    logits = model.get_output_embeddings()(hidden)
    return _capped_in_place(model, logits.float() if upcast else logits)


def vocab_logits_into(model: torch.nn.Module, hidden: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """`vocab_logits(model, hidden, upcast=False)` for (r, hidden) rows, written into `out` (r, vocab).

    The same values (the head's own matrix product), without a fresh (r, vocab) tensor per call: on a CPU each
    new tensor of that size is tens of megabytes of first-touch page faults, which cost as much as the
    product itself (docs/experiments.md).
    """
    head = model.get_output_embeddings()
    if isinstance(head, torch.nn.Linear):
        if head.bias is None:
            torch.mm(hidden, head.weight.t(), out=out)
        else:
            torch.addmm(head.bias, hidden, head.weight.t(), out=out)
    else:
        out.copy_(head(hidden))
    return _capped_in_place(model, out)


def _capped_in_place(model: torch.nn.Module, logits: torch.Tensor) -> torch.Tensor:
    """The model's final tanh soft-capping applied to freshly computed logits, in place (none for most models)."""
    cap = final_logit_softcap(model)
    if cap:
        logits.div_(cap).tanh_().mul_(cap)
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


def use_reader_sdpa(model: torch.nn.Module) -> None:
    """Run a model that uses transformers' SDPA on ours instead: the same attention and outputs, cheaper on a CPU,
    and able to record the last queries' weights (`trailing_attention`). Eager and flash-attn stay as they are.

    On a CPU two things cost about a tenth of a read's attention with transformers' SDPA: a boolean mask that
    torch turns into an additive one in every layer, and keys and values repeated per query head whenever there
    is a mask. Ours builds the additive mask once per forward (transformers' own mask, sliding windows included)
    and lets torch group the query heads (`enable_gqa`); the outputs are equal (tests/test_ride_along.py).
    """
    with _EAGER_LOCK:  # another thread's eager pass ends first, so its model is seen on SDPA again
        if model.config._attn_implementation != "sdpa":
            return
        if _READER_SDPA not in AttentionInterface._global_mapping:
            AttentionInterface.register(_READER_SDPA, _reader_sdpa)
            AttentionMaskInterface.register(_READER_SDPA, _reader_sdpa_mask)
        model.set_attn_implementation(_READER_SDPA)


def plain_sdpa_now(model: torch.nn.Module) -> bool:
    """Whether the model's next forward in this thread runs on SDPA with nothing recording its attention (no eager
    pass of another thread's catalyst, no `trailing_attention` here): a step computed outside the model's forward
    then misses nothing."""
    implementation = model.config._attn_implementation
    return implementation in ("sdpa", _READER_SDPA) and getattr(_trailing, "request", None) is None


def rides_along(model: torch.nn.Module) -> bool:
    """Whether `trailing_attention` can record on this model (it runs on `use_reader_sdpa`'s attention)."""
    return model.config._attn_implementation == _READER_SDPA


@contextmanager
def trailing_attention(model: torch.nn.Module, count: int, reduce) -> Iterator[list]:
    """Collect `reduce(layer_idx, weights)` for the attention of the last `count` queries of the next forward.

    `weights` is (H_kv, g, count, T_kv) in fp32: query head h * g + j of GQA group h is [h, j] (transformers'
    repeat_kv order), softmax over the same mask and scale as the pass that computes every query's output.
    This lets a short prompt ride along at the end of a long forward piece instead of running a pass of its
    own. Held under the eager lock, so no other thread switches the model to eager meanwhile; a layer that
    recorded nothing all the same stays None.
    """
    if not rides_along(model):
        raise RuntimeError(f"trailing attention needs use_reader_sdpa, not {model.config._attn_implementation}")
    results: list = [None] * len(attention_modules(model))
    with _EAGER_LOCK:
        _trailing.request = (count, reduce, results)
        try:
            yield results
        finally:
            _trailing.request = None


def _reader_sdpa_mask(*args, dtype: torch.dtype = torch.float32, **kwargs) -> torch.Tensor | None:
    """transformers' SDPA mask (None where SDPA's is_causal does), made additive once on a CPU: 0 where a query
    sees a key, the dtype's lowest value where not (as transformers' eager mask)."""
    mask = sdpa_mask(*args, **kwargs)  # (B, 1, T_q, T_kv) bool, True: attend
    if mask is None or mask.device.type != "cpu":
        return mask
    return additive_mask(mask, dtype)


def additive_mask(allowed: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A boolean attention mask (True: attend) as the additive one SDPA runs cheapest on: 0 where a query sees a
    key, the dtype's lowest value where not (as transformers' eager mask)."""
    return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill_(~allowed, torch.finfo(dtype).min)


def _reader_sdpa(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """Attention output (B, T_q, H_q, D) for query (B, H_q, T_q, D) over key, value (B, H_kv, T_kv, D).

    With an additive mask on a CPU torch's SDPA runs once on the grouped heads; anything else (no mask, CUDA,
    a position bias, a paged cache, soft-capped scores or attention sinks, which transformers' SDPA refuses or
    handles) goes to transformers' SDPA. For this thread's `trailing_attention` the last queries' weights are
    recorded as well.
    """
    plain = (
        attention_mask is not None
        and attention_mask.dtype != torch.bool
        and query.device.type == "cpu"
        and all(kwargs.get(name) is None for name in ("position_bias", "cache", "softcap", "s_aux"))
    )
    if plain:
        output = torch.nn.functional.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attention_mask,
            dropout_p=dropout,
            scale=scaling,
            enable_gqa=query.shape[1] != key.shape[1],
        )  # (B, H_q, T_q, D)
        output = output.transpose(1, 2).contiguous()  # (B, T_q, H_q, D)
    else:
        output, _ = sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    request = getattr(_trailing, "request", None)
    if request is not None:
        count, reduce, results = request
        weights = _last_queries_weights(query, key, attention_mask, count, scaling)  # (H_kv, g, count, T_kv)
        results[module.layer_idx] = reduce(module.layer_idx, weights)
    return output, None


def _last_queries_weights(query, key, attention_mask, count: int, scaling: float | None) -> torch.Tensor:
    """Softmax weights (H_kv, g, count, T_kv) fp32 of the last `count` queries (1, H_q, T_q, D) over `key`
    (1, H_kv, T_kv, D), grouped by KV head so the keys are never repeated per query head.

    Scores and softmax in fp32, from the model's queries and keys. Three passes over the (H_kv, g * count, T_kv)
    scores and no more: on a CPU each extra pass (a bf16 product then its upcast, a scaling, an out-of-place
    mask) cost more than the product itself (the upcast keys are a tenth of that size).
    """
    kv_heads, kv_length, dim = key.shape[1], key.shape[2], key.shape[3]
    groups = query.shape[1] // kv_heads
    scale = scaling or dim**-0.5
    grouped = (query[0, :, -count:].float() * scale).reshape(kv_heads, groups * count, dim)  # (H_kv, g * count, D)
    keys = key[0].float().transpose(1, 2)  # (H_kv, D, T_kv)
    scores = torch.bmm(grouped, keys).view(kv_heads, groups, count, kv_length)  # fp32
    if attention_mask is None:  # SDPA's is_causal case: query i of T_q sees the keys up to its own position
        first = kv_length - count
        keys_seen = torch.arange(kv_length, device=key.device)
        hidden = keys_seen[None, :] > torch.arange(first, kv_length, device=key.device)[:, None]  # (count, T_kv)
        scores.masked_fill_(hidden, float("-inf"))
    elif attention_mask.dtype == torch.bool:
        scores.masked_fill_(~attention_mask[0, 0, -count:], float("-inf"))  # (count, T_kv) True: attend
    else:  # an additive float mask
        scores.add_(attention_mask[0, 0, -count:])
    return torch.softmax(scores, dim=-1)  # (H_kv, g, count, T_kv)
