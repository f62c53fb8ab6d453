"""CR-RoPE: keys re-positioned from their old positions equal keys computed at the new positions."""

import pytest
import torch
from tiny_models import build_model, random_ids

from infinipot.core import hf_adapter
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
