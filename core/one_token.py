"""Decoding one token on a CPU without transformers' per-module overhead: the same products, in the same order.

A decoded token of the bundled 135M model is 211 small matrix-vector products and some 2,000 other torch calls
through 30 layers of nn.Module wrappers. On two CPU cores the products take about 26 ms and the rest about 10 ms
(docs/experiments.md). This module runs a Llama-architecture decoder's one-token step as plain torch
calls on the model's own weights, with each layer's query, key and value projections as one product and its gate
and up projections as another (their weights are laid side by side once, and the model's projection weights become
views of those: no memory is added). The logits are those of transformers' forward, bit for bit in bfloat16 on a
CPU (the products compute each output row alone; tests/test_one_token.py), and a decoder whose probe step differs
from the model's own forward is not used.

Only what is known to match is taken this way: transformers' Llama layers (SmolLM2, Llama 2/3, TinyLlama) on a
CPU, without attention or MLP biases, attention running on SDPA with nothing recording it and no forward hook on
the decoder but the app's Stop check (core.stopping), which the lean step makes itself before each layer. Anything
else decodes through the model's forward as before (core.generate).
"""

from __future__ import annotations

import threading
import weakref

import torch
import torch.nn.functional as F

from . import hf_adapter
from .stopping import check_stop

_LLAMA_PARTS = ("q_proj", "k_proj", "v_proj", "o_proj")
_MLP_PARTS = ("gate_proj", "up_proj", "down_proj")
# A probe step of the lean decoder must give the model's own logits within this (bf16 on a CPU gives 0: the same
# products; float32 may round a last bit differently where transformers multiplies a row as a matrix).
_PROBE_TOLERANCE = 1e-3

_decoders: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # model -> OneTokenDecoder, or None: not taken
_decoders_lock = threading.Lock()


class OneTokenDecoder:
    """One token's final hidden state after a cache, computed from a Llama model's weights directly."""

    def __init__(self, model: torch.nn.Module) -> None:
        decoder = hf_adapter.decoder(model)
        config = model.config
        self.model = model
        self.embed = decoder.embed_tokens.weight  # (V, hidden)
        self.rotary = decoder.rotary_emb
        self.final_norm = (decoder.norm.weight, decoder.norm.variance_epsilon)
        self.heads = config.num_attention_heads
        self.kv_heads = hf_adapter.kv_heads(model)
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.layers = [_FusedLayer(layer) for layer in decoder.layers]

    def hidden(self, cache, token: int, position: int) -> torch.Tensor:
        """The final hidden state (hidden,) of `token` read at rotary `position` after `cache`; its keys and values
        are appended to `cache`, as the model's forward appends them."""
        hidden = self.embed[token]  # (hidden,)
        positions = torch.tensor([[position]], device=hidden.device)  # (1, 1)
        cos, sin = self.rotary(hidden[None, None], positions)  # (1, 1, D) each, in the hidden states' dtype
        cos, sin = cos[0, 0], sin[0, 0]  # (D,)
        half = self.head_dim // 2
        signed_sin = torch.cat((-sin[:half], sin[half:]))  # (D,): _rotated's form of the sines
        rotated_heads = self.heads + self.kv_heads
        for index, layer in enumerate(self.layers):
            check_stop()  # as the model's own layers do (hf_adapter.stop_between_layers)
            normed = _rms_norm(hidden, *layer.input_norm)
            qkv = torch.mv(layer.qkv, normed)  # (q_size + 2 kv_size,)
            # The queries' and keys' heads rotated together: (H_q + H_kv, D).
            heads = qkv[: rotated_heads * self.head_dim].view(rotated_heads, self.head_dim)
            rotated = _rotated(heads, cos, signed_sin)
            query, key = rotated[: self.heads], rotated[self.heads :]  # (H_q, D), (H_kv, D)
            value = qkv[rotated_heads * self.head_dim :].view(self.kv_heads, self.head_dim)  # (H_kv, D)
            keys, values = cache.update(key[None, :, None], value[None, :, None], index)  # (1, H_kv, T, D) each
            attended = F.scaled_dot_product_attention(
                query[None, :, None],
                keys,
                values,
                scale=layer.scaling,
                enable_gqa=self.heads != self.kv_heads,
            )  # (1, H_q, 1, D)
            hidden = hidden + torch.mv(layer.output, attended.reshape(-1))
            normed = _rms_norm(hidden, *layer.post_norm)
            gate, up = torch.mv(layer.gate_up, normed).chunk(2)  # (I,) each
            hidden = hidden + torch.mv(layer.down, F.silu(gate) * up)
        return _rms_norm(hidden, *self.final_norm)  # (hidden,)


class _FusedLayer:
    """One decoder layer's weights, with q/k/v and gate/up laid side by side; the modules' own weights become
    views of these (transformers' forward, for prompts, reads the same storage)."""

    def __init__(self, layer: torch.nn.Module) -> None:
        attention, mlp = layer.self_attn, layer.mlp
        self.qkv = _side_by_side([attention.q_proj, attention.k_proj, attention.v_proj])  # (q + 2 kv, hidden)
        self.output = attention.o_proj.weight  # (hidden, q)
        self.gate_up = _side_by_side([mlp.gate_proj, mlp.up_proj])  # (2 I, hidden)
        self.down = mlp.down_proj.weight  # (hidden, I)
        self.scaling = attention.scaling
        self.input_norm = (layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon)
        self.post_norm = (layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon)


def _side_by_side(linears: list[torch.nn.Linear]) -> torch.Tensor:
    """The linears' weights stacked by rows into one tensor; each linear's weight becomes a view of its rows."""
    stacked = torch.cat([linear.weight.detach() for linear in linears]).contiguous()  # (sum of rows, in)
    first = 0
    for linear in linears:
        rows = linear.weight.shape[0]
        linear.weight = torch.nn.Parameter(stacked[first : first + rows], requires_grad=False)
        first += rows
    return stacked


def _rms_norm(hidden: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' Llama RMSNorm: normalised in float32, cast back, then scaled."""
    upcast = hidden.float()
    upcast = upcast * torch.rsqrt(upcast.pow(2).mean(-1, keepdim=True) + eps)
    return weight * upcast.to(hidden.dtype)


def _rotated(heads: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding of (H, D) as transformers applies it, heads * cos + rotate_half(heads) * sin, in fewer ops:
    rotate_half(x) * sin is x with its halves swapped times the sines with their first half negated (`signed_sin`);
    a negation is exact, so the products are the same bits."""
    return heads * cos + heads.roll(heads.shape[-1] // 2, dims=-1) * signed_sin


def _llama_like(model: torch.nn.Module) -> bool:
    config = model.config
    if getattr(config, "model_type", None) != "llama" or next(model.parameters()).device.type != "cpu":
        return False
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        return False
    if getattr(config, "hidden_act", "silu") != "silu" or getattr(config, "pretraining_tp", 1) != 1:
        return False
    try:
        decoder = hf_adapter.decoder(model)
        for layer in decoder.layers:
            attention, mlp = layer.self_attn, layer.mlp
            parts = [getattr(attention, name) for name in _LLAMA_PARTS] + [getattr(mlp, name) for name in _MLP_PARTS]
            if any(not isinstance(part, torch.nn.Linear) or part.bias is not None for part in parts):
                return False
            for norm in (layer.input_layernorm, layer.post_attention_layernorm):
                if not hasattr(norm, "variance_epsilon"):
                    return False
        return hasattr(decoder.norm, "variance_epsilon") and hasattr(attention, "scaling")
    except AttributeError:
        return False


@torch.inference_mode()
def _agrees_with_model(model: torch.nn.Module, lean: OneTokenDecoder) -> bool:
    """Whether a probe step (a few tokens read, then one decoded) gives the model's own final hidden state."""
    theirs, ours = hf_adapter.new_cache(), hf_adapter.new_cache()
    device = next(model.parameters()).device
    prompt = torch.tensor([[1, 2, 3]], device=device)  # (1, 3)
    positions = torch.arange(3, device=device)[None]  # (1, 3)
    hf_adapter.run_decoder(model, theirs, prompt, positions)
    hf_adapter.run_decoder(model, ours, prompt, positions)
    expected = hf_adapter.run_decoder(model, theirs, torch.tensor([[4]], device=device), positions[:, -1:] + 1)
    got = lean.hidden(ours, 4, 3)
    return bool(torch.allclose(got.float(), expected[0, 0].float(), rtol=_PROBE_TOLERANCE, atol=_PROBE_TOLERANCE))


def one_token_decoder(model: torch.nn.Module) -> OneTokenDecoder | None:
    """The model's lean one-token decoder, made (and probed) on first use; None where the model is not one this
    module knows to match, or its probe step differed from the model's own forward."""
    with _decoders_lock:
        if model in _decoders:
            return _decoders[model]
        lean = None
        if _llama_like(model) and hf_adapter.plain_sdpa_now(model):
            lean = OneTokenDecoder(model)
            if not _agrees_with_model(model, lean):
                lean = None
        _decoders[model] = lean
        return lean


def observed(model: torch.nn.Module) -> bool:
    """Whether a forward hook is registered on the decoder, a layer or its attention, or on every module: the lean
    step would bypass it (instrumentation, a test's counter of forwards). The Stop check before each layer
    (hf_adapter.stop_between_layers) is no such hook: the lean step makes the same check itself."""
    module_hooks = torch.nn.modules.module
    if module_hooks._global_forward_hooks or module_hooks._global_forward_pre_hooks:
        return True
    decoder = hf_adapter.decoder(model)
    watched = [decoder, *decoder.layers, *(layer.self_attn for layer in decoder.layers)]
    return any(
        module._forward_hooks or any(not hf_adapter.is_stop_check(hook) for hook in module._forward_pre_hooks.values())
        for module in watched
    )


def decoded_hidden(model: torch.nn.Module, cache, token: int, position: int) -> torch.Tensor | None:
    """The final hidden state (hidden,) of one decoded token by the lean decoder, or None where it does not apply
    now (then the caller runs the model's forward, and the lean decoder is not even made)."""
    if not hf_adapter.plain_sdpa_now(model) or observed(model):
        return None
    lean = one_token_decoder(model)
    return None if lean is None else lean.hidden(cache, token, position)
