"""CR-RoPE: keys re-positioned from their old positions equal keys computed at the new positions."""

import pytest
import torch
from tiny_models import build_model, random_ids

from infinipot.core import hf_adapter
from infinipot.core.eviction import layer_runs, move_keys
from infinipot.core.rope import apply_rotary, reposition_keys

ROPE_VARIANTS = {
    "default": {"rope_type": "default", "rope_theta": 10000.0},
    "linear": {"rope_type": "linear", "factor": 4.0, "rope_theta": 10000.0},
    "llama3": {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 512,
        "rope_theta": 500000.0,
    },
    "yarn": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512, "rope_theta": 10000.0},
}


@pytest.mark.parametrize("variant", ROPE_VARIANTS)
def test_reposition_matches_rotation_at_new_positions(variant):
    model = build_model("llama", rope_parameters=ROPE_VARIANTS[variant])
    torch.manual_seed(1)
    heads, count, dim = 2, 50, 16
    pre = torch.randn(1, heads, count, dim)  # pre-RoPE keys
    old = torch.sort(torch.randint(0, 4000, (heads, count)), dim=-1).values  # per-head original positions
    new = torch.arange(count).expand(heads, count)
    old_cos, old_sin = hf_adapter.rotary_cos_sin(model, old)
    new_cos, new_sin = hf_adapter.rotary_cos_sin(model, new)
    cached = apply_rotary(pre, old_cos[None], old_sin[None])
    moved = reposition_keys(cached, (old_cos[None], old_sin[None]), (new_cos[None], new_sin[None]))
    expected = apply_rotary(pre, new_cos[None], new_sin[None])
    torch.testing.assert_close(moved, expected, atol=2e-5, rtol=1e-5)
    if variant != "default":  # the variant really changes the angles, so the test covers its scaling
        plain = hf_adapter.rotary_cos_sin(build_model("llama"), old)[0]
        assert not torch.allclose(plain, old_cos)


@pytest.mark.parametrize("variant", ROPE_VARIANTS)
def test_model_keys_moved_to_new_positions_equal_recomputed_keys(variant):
    """Layer-0 keys depend only on the token and its position, so a real forward can check CR-RoPE."""
    model = build_model("llama", rope_parameters=ROPE_VARIANTS[variant])
    ids = torch.tensor([random_ids(40, seed=3)])
    far = torch.arange(40)[None] * 37 + 1000  # tokens first seen at scattered, far positions
    near = torch.arange(40)[None]

    def layer0_keys(positions):
        cache = hf_adapter.new_cache()
        with torch.no_grad():
            hf_adapter.decoder(model)(input_ids=ids, position_ids=positions, past_key_values=cache, use_cache=True)
        return hf_adapter.cache_layers(cache)[0][0]  # (1, H_kv, T, D)

    far_keys, near_keys = layer0_keys(far), layer0_keys(near)
    moved = reposition_keys(far_keys, hf_adapter.rotary_cos_sin(model, far), hf_adapter.rotary_cos_sin(model, near))
    torch.testing.assert_close(moved, near_keys, atol=1e-4, rtol=1e-4)
    assert not torch.allclose(far_keys, near_keys, atol=1e-3)


def test_each_gemma3_layer_moves_its_keys_with_its_own_rotary_base():
    """Gemma 3's local layers rotate with base 10K and its global layers with 1M: a compression's CR-RoPE must move
    each layer's keys with its own. Checked on a real forward: the keys read at far positions, moved to near ones,
    equal the keys read at the near positions, in every layer whose keys depend on positions alone (the first
    of each kind here: a one-layer model of each kind)."""
    for kinds in (["sliding_attention"], ["full_attention"]):
        model = build_model("gemma3", layer_types=kinds)
        assert hf_adapter.rotary_kinds(model) == kinds
        ids = torch.tensor([random_ids(30, seed=3)])
        far = torch.arange(30)[None] * 37 + 1000
        near = torch.arange(30)[None]

        def layer0_keys(positions, model=model, ids=ids):
            cache = hf_adapter.new_cache()
            with torch.no_grad():
                hf_adapter.decoder(model)(input_ids=ids, position_ids=positions, past_key_values=cache, use_cache=True)
            return hf_adapter.cache_layers(cache)[0][0]  # (1, H_kv, T, D)

        far_keys, near_keys = layer0_keys(far), layer0_keys(near)
        keys = far_keys[0][None].clone()  # (L=1, H_kv, T, D)
        move_keys(model, keys, far.expand(1, keys.shape[1], -1).clone(), 0, int(far.max()) + 1)
        torch.testing.assert_close(keys[0], near_keys[0], atol=1e-4, rtol=1e-4)
        # the other kind's base would have moved them elsewhere: the test tells the two apart
        other = "full_attention" if kinds == ["sliding_attention"] else "sliding_attention"
        wrong = reposition_keys(
            far_keys,
            hf_adapter.rotary_cos_sin(build_model("gemma3", layer_types=[other]), far, other),
            hf_adapter.rotary_cos_sin(build_model("gemma3", layer_types=[other]), near, other),
        )
        assert not torch.allclose(wrong, near_keys, atol=1e-2)


def test_layer_runs_group_consecutive_layers_of_one_kind():
    assert layer_runs([None, None, None]) == [(None, slice(0, 3))]
    kinds = ["sliding_attention"] * 2 + ["full_attention"] + ["sliding_attention"]
    assert layer_runs(kinds) == [
        ("sliding_attention", slice(0, 2)),
        ("full_attention", slice(2, 3)),
        ("sliding_attention", slice(3, 4)),
    ]
