"""The lean one-token decoder (core.one_token): the model's own logits, its weights shared, and the model's forward
wherever it does not apply."""

from __future__ import annotations

import pytest
import torch
from tiny_models import build_model

from infinipot.core import generate, hf_adapter, one_token
from infinipot.core.errors import AnswerStopped
from infinipot.core.precision import one_row_products
from infinipot.core.stopping import stopping_when


def _model(dtype: torch.dtype, arch: str = "llama", **config) -> torch.nn.Module:
    model = build_model(arch).to(dtype).eval()
    for name, value in config.items():
        setattr(model.config, name, value)
    if dtype != torch.float32:
        one_row_products(model)  # as core.model loads a bf16 model on a CPU
    hf_adapter.use_reader_sdpa(model)  # as core.engine runs it
    return model


def _greedy(model, cache, steps: int, lean: bool, monkeypatch) -> tuple[list[int], list[torch.Tensor]]:
    """Tokens and logits of `steps` greedy tokens after a 30-token prompt, decoded one token at a time."""
    with monkeypatch.context() as patch:
        if not lean:
            patch.setattr(generate, "decoded_hidden", lambda *args: None)
        tokens, logits_seen = [], []
        with torch.inference_mode():
            logits = generate.prefill(model, cache, list(range(5, 35)), 0)  # (V,)
            for step in range(steps):
                tokens.append(int(logits.argmax()))
                logits = generate.decode_one_token(model, cache, tokens[-1], 30 + step)
                logits_seen.append(logits)
    return tokens, logits_seen


@pytest.mark.parametrize("slab", [False, True], ids=["growing cache", "slab cache"])
def test_the_lean_step_gives_the_models_own_logits_bit_for_bit_in_bfloat16(slab, monkeypatch):
    model = _model(torch.bfloat16)
    assert one_token.one_token_decoder(model) is not None

    def cache():
        return hf_adapter.room_to_grow(hf_adapter.new_cache(), 16) if slab else hf_adapter.new_cache()

    theirs, ours = cache(), cache()
    forward_tokens, forward_logits = _greedy(model, theirs, 8, lean=False, monkeypatch=monkeypatch)
    lean_tokens, lean_logits = _greedy(model, ours, 8, lean=True, monkeypatch=monkeypatch)
    assert lean_tokens == forward_tokens
    assert all(torch.equal(a, b) for a, b in zip(lean_logits, forward_logits, strict=True))
    for (keys, values), (their_keys, their_values) in zip(
        hf_adapter.cache_layers(ours), hf_adapter.cache_layers(theirs), strict=True
    ):
        assert torch.equal(keys, their_keys) and torch.equal(values, their_values)  # the same entries appended


def test_in_float32_the_lean_step_matches_the_forward_to_rounding(monkeypatch):
    model = _model(torch.float32)
    forward_tokens, forward_logits = _greedy(model, hf_adapter.new_cache(), 6, lean=False, monkeypatch=monkeypatch)
    lean_tokens, lean_logits = _greedy(model, hf_adapter.new_cache(), 6, lean=True, monkeypatch=monkeypatch)
    assert lean_tokens == forward_tokens
    for a, b in zip(lean_logits, forward_logits, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_the_fused_weights_are_the_models_own_storage():
    model = _model(torch.bfloat16)
    parameters = sum(p.numel() for p in model.parameters())
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    lean = one_token.one_token_decoder(model)
    assert lean is not None and one_token.one_token_decoder(model) is lean  # made once per model
    assert sum(p.numel() for p in model.parameters()) == parameters
    for name, p in model.named_parameters():
        assert torch.equal(p, before[name]), name
    layer, attention = lean.layers[0], hf_adapter.decoder(model).layers[0].self_attn
    q_rows = attention.q_proj.weight.shape[0]
    assert attention.q_proj.weight.data_ptr() == layer.qkv.data_ptr()  # a view of the side-by-side weights
    assert attention.k_proj.weight.data_ptr() == layer.qkv[q_rows:].data_ptr()
    with torch.no_grad():
        attention.k_proj.weight[0, 0] += 1.0  # a change through the module is seen by the lean step
    assert layer.qkv[q_rows, 0] == attention.k_proj.weight[0, 0]


@pytest.mark.parametrize(
    ("arch", "config"),
    [("llama", {"attention_bias": True}), ("qwen2", {}), ("gemma2", {}), ("llama", {"hidden_act": "gelu"})],
    ids=["biased attention", "qwen2", "gemma2", "another activation"],
)
def test_models_it_is_not_known_to_match_decode_through_their_forward(arch, config):
    model = _model(torch.float32, arch, **config)
    assert one_token.one_token_decoder(model) is None
    with torch.inference_mode():
        cache = hf_adapter.new_cache()
        generate.prefill(model, cache, [5, 6, 7], 0)
        assert one_token.decoded_hidden(model, cache, 8, 3) is None
        assert generate.decode_one_token(model, cache, 8, 3).shape == (model.config.vocab_size,)


def test_a_probe_that_differs_from_the_forward_keeps_the_forward(monkeypatch):
    model = _model(torch.float32)
    monkeypatch.setattr(one_token, "_rotated", lambda heads, cos, signed_sin: heads)  # rotary left out: a wrong step
    assert one_token.one_token_decoder(model) is None


def test_recorded_or_eager_attention_or_a_forward_hook_goes_through_the_forward():
    model = _model(torch.float32)
    with torch.inference_mode():
        cache = hf_adapter.new_cache()
        generate.prefill(model, cache, [5, 6, 7], 0)
        assert one_token.decoded_hidden(model, cache, 8, 3) is not None
        with hf_adapter.trailing_attention(model, 1, lambda layer, weights: weights.shape):
            assert one_token.decoded_hidden(model, cache, 9, 4) is None
        with hf_adapter.eager_attention(model):
            assert one_token.decoded_hidden(model, cache, 9, 4) is None
        seen = []
        handle = hf_adapter.decoder(model).layers[1].self_attn.register_forward_hook(lambda *args: seen.append(1))
        assert one_token.decoded_hidden(model, cache, 9, 4) is None
        generate.decode_one_token(model, cache, 9, 4)
        assert seen == [1]  # the hook saw the step
        handle.remove()
        assert one_token.decoded_hidden(model, cache, 10, 5) is not None


def test_the_stop_check_keeps_the_lean_step_which_stops_within_a_layer():
    """core.engine installs the Stop check on every model it runs (hf_adapter.stop_between_layers): the lean step
    still applies (issue 55's check had sent every decoded token through the slower forward) and makes the check
    itself, before each layer."""
    model = _model(torch.float32)
    hf_adapter.stop_between_layers(model)
    assert not one_token.observed(model)
    with torch.inference_mode():
        cache = hf_adapter.new_cache()
        generate.prefill(model, cache, [5, 6, 7], 0)
        assert one_token.decoded_hidden(model, cache, 8, 3) is not None
        looks = []

        def stopped() -> bool:
            looks.append(1)
            return len(looks) > 1  # the first layer runs, the second is stopped

        with pytest.raises(AnswerStopped), stopping_when(stopped):
            one_token.decoded_hidden(model, cache, 9, 4)
        assert len(looks) == 2
        handle = hf_adapter.decoder(model).layers[1].register_forward_pre_hook(lambda *args: None)
        assert one_token.observed(model)  # any other pre-hook still sends the step through the forward
        handle.remove()
