"""An answer decodes into a cache with room preallocated (hf_adapter.room_to_grow): the same logits as transformers'
growing cache, the pot it was copied from unchanged, and drafted tokens dropped from it as from the other."""

from __future__ import annotations

import pytest
import torch
from tiny_models import build_model

from infinipot.core import hf_adapter
from infinipot.core.generate import decode_one_token, prefill


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_an_answer_cache_with_room_decodes_as_the_growing_cache_and_leaves_its_source_alone(dtype):
    torch.manual_seed(0)
    model = build_model("llama").to(dtype).eval()
    with torch.inference_mode():
        pot = hf_adapter.new_cache()
        prefill(model, pot, list(range(5, 45)), 0)  # 40 entries, as a pot would hold
        before = [(k.clone(), v.clone()) for k, v in hf_adapter.cache_layers(pot)]
        growing = hf_adapter.cache_from_layers(hf_adapter.cache_layers(pot))
        room = hf_adapter.room_to_grow(pot, 12)
        for cache in (growing, room):
            logits = prefill(model, cache, [7, 8, 9], 40)  # (V,)
            token, position, steps = int(logits.argmax()), 43, []
            for _ in range(5):
                logits = decode_one_token(model, cache, token, position)
                steps.append(logits)
                token, position = int(logits.argmax()), position + 1
            cache.steps = steps
        for ours, theirs in zip(room.steps, growing.steps, strict=True):
            assert torch.equal(ours, theirs)
        assert hf_adapter.cache_length(room) == hf_adapter.cache_length(growing) == 48
        for (k, v), (k0, v0) in zip(hf_adapter.cache_layers(pot), before, strict=True):
            assert torch.equal(k, k0) and torch.equal(v, v0) and k.shape[2] == 40  # the pot is as it was
        # A draft not taken is dropped from the end, as from the growing cache, and decoding goes on from there.
        hf_adapter.drop_last(room, 2)
        hf_adapter.drop_last(growing, 2)
        assert torch.equal(decode_one_token(model, room, 11, 46), decode_one_token(model, growing, 11, 46))


def test_the_room_is_bounded_and_a_cache_with_no_layers_is_left_as_it_is():
    model = build_model("llama").eval()
    with torch.inference_mode():
        pot = hf_adapter.new_cache()
        prefill(model, pot, list(range(5, 15)), 0)
        room = hf_adapter.room_to_grow(pot, 2)
        prefill(model, room, [7, 8], 10)
        with pytest.raises(RuntimeError, match="do not fit"):
            prefill(model, room, [9], 12)
    empty = hf_adapter.new_cache()
    assert hf_adapter.room_to_grow(empty, 5) is empty
