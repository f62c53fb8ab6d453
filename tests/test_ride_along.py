"""The catalyst prompt riding along with the piece that fills the pot, instead of a forward pass of its own."""

import contextlib
import threading

import pytest
import tiny_models
import torch
from tiny_models import random_ids, tiny_loaded
from transformers import MistralConfig, MistralForCausalLM

from infinipot.core import hf_adapter
from infinipot.core import reader as reader_module
from infinipot.core.config import PotConfig
from infinipot.core.distill import catalyst_attention, reduce_trailing_catalyst
from infinipot.core.engine import Engine

# 600 tokens through a 160-entry pot in pieces of at most 24: many compressions, each after a piece that fills it.
CONFIG = PotConfig(pot_size=160, keep_size=64, forward_tokens=24)


def checked_distill(monkeypatch) -> list[str]:
    """Wrap the reader's distill: every ridden catalyst is compared with the separate pass over the same cache."""
    seen: list[str] = []
    original = reader_module.distill

    def distill(model, cache, pot, scorer, catalyst_ids, *args, catalyst=None, **kwargs):
        if catalyst is None:
            seen.append("pass")
        else:
            seen.append("ridden")
            alone = catalyst_attention(model, cache, catalyst_ids, pot.next_position)  # (H_kv, n) per layer
            assert len(catalyst) == len(alone)
            for ridden, expected in zip(catalyst, alone, strict=True):
                assert ridden.shape == expected.shape == (pot.keys[0].shape[1], pot.entries)
                assert torch.allclose(ridden, expected, rtol=1e-4, atol=1e-6)
        return original(model, cache, pot, scorer, catalyst_ids, *args, catalyst=catalyst, **kwargs)

    monkeypatch.setattr(reader_module, "distill", distill)
    return seen


@pytest.mark.parametrize("arch", ["llama", "mistral", "qwen2", "qwen3", "phi3"])
def test_the_ridden_catalyst_equals_a_catalyst_pass_over_the_same_cache(monkeypatch, arch):
    engine = Engine(tiny_loaded(arch), CONFIG)
    seen = checked_distill(monkeypatch)
    pot = engine.read([random_ids(600)])
    assert pot.cycles == len(seen) > 5
    # every compression inside a feed follows the piece that filled the pot; none needed a pass of its own
    assert set(seen) == {"ridden"}
    assert pot.peak_entries == CONFIG.pot_size  # the pot's entries plus the catalyst, as with the separate pass


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_pot_read_with_the_ride_along_equals_one_read_with_catalyst_passes(monkeypatch, arch):
    loaded = tiny_loaded(arch)
    ids = random_ids(600, seed=3)
    ridden = Engine(loaded, CONFIG).read([ids])
    monkeypatch.setattr(reader_module.ContinualReader, "_catalyst_rides_along", lambda self: False)
    alone = Engine(loaded, CONFIG).read([ids])
    assert ridden.cycles == alone.cycles > 5
    assert torch.equal(ridden.origin, alone.origin)  # the same entries kept in every layer and head
    assert torch.equal(ridden.kept_by, alone.kept_by)
    for ours, theirs in zip(ridden.keys + ridden.values, alone.keys + alone.values, strict=True):
        assert torch.allclose(ours, theirs, atol=1e-5)


def test_a_feed_that_ends_on_a_full_pot_compresses_at_the_next_feed_with_a_pass(monkeypatch):
    """Nothing rides along when no compression is certain to follow; the next feed runs the pass instead."""
    loaded = tiny_loaded("llama")
    engine = Engine(loaded, CONFIG)
    seen = checked_distill(monkeypatch)
    reader = engine.new_reader()
    reader.start(engine.prefix_ids)
    room = CONFIG.pot_size - len(engine.catalyst_ids) - reader.pot.entries
    first, second = random_ids(room), random_ids(8, seed=1)
    reader.feed(first)  # exactly fills the pot, then stops
    assert seen == [] and reader.pot.cycles == 0
    reader.feed(second)
    assert seen == ["pass"]
    in_two = reader.finish()
    in_one = Engine(loaded, CONFIG).read([first + second])  # the same pieces, the catalyst ridden this time
    assert seen == ["pass", "ridden"]
    assert in_two.cycles == in_one.cycles == 1
    assert torch.equal(in_two.origin, in_one.origin)


def test_a_model_without_sdpa_reads_with_catalyst_passes(monkeypatch):
    engine = Engine(tiny_loaded("gemma2"), CONFIG)  # eager attention: soft-capped scores are not SDPA's
    assert not hf_adapter.rides_along(engine.model)
    seen = checked_distill(monkeypatch)
    pot = engine.read([random_ids(600)])
    assert pot.cycles == len(seen) > 5 and set(seen) == {"pass"}


def test_another_thread_running_the_model_meanwhile_records_nothing():
    """The app answers on the same model while a read runs: only the reading thread's forward records."""
    loaded = tiny_loaded("qwen2")
    hf_adapter.use_reader_sdpa(loaded.model)
    ids = torch.tensor([random_ids(40)])
    with torch.inference_mode():
        expected = loaded.model(ids).logits
        outputs = []
        with hf_adapter.trailing_attention(loaded.model, 4, reduce_trailing_catalyst(36)) as recorded:
            other = threading.Thread(target=lambda: outputs.append(loaded.model(ids).logits))
            other.start()
            other.join()
            assert recorded == [None] * loaded.model.config.num_hidden_layers
            loaded.model(ids)
            assert all(layer is not None for layer in recorded)  # this thread's own forward did
    assert torch.equal(outputs[0], expected)


def sliding_mistral() -> torch.nn.Module:
    """A tiny Mistral whose 12-token sliding window hides most of a 40-token stream from each query."""
    torch.manual_seed(0)
    config = MistralConfig(**tiny_models._common(len(tiny_models.tiny_tokenizer())), sliding_window=12)
    return MistralForCausalLM(config).eval()


@pytest.mark.parametrize("arch", ["llama", "qwen2", "phi3", "sliding-mistral"])
def test_the_reader_sdpa_gives_transformers_sdpa_outputs(arch):
    """A piece read after a cache (the mask matters there) and a whole prompt, before and after the switch."""
    model = sliding_mistral() if arch == "sliding-mistral" else tiny_loaded(arch).model
    assert model.config._attn_implementation == "sdpa"
    ids = torch.tensor([random_ids(40, seed=5)])

    def logits() -> tuple[torch.Tensor, torch.Tensor]:
        cache = hf_adapter.new_cache()
        with torch.inference_mode():
            model(ids[:, :25], past_key_values=cache, use_cache=True)
            piece = model(ids[:, 25:], past_key_values=cache, use_cache=True).logits  # 15 queries after 25 keys
            return piece, model(ids).logits

    stock = logits()
    hf_adapter.use_reader_sdpa(model)
    assert hf_adapter.rides_along(model)
    ours = logits()
    for a, b in zip(ours, stock, strict=True):
        assert torch.allclose(a, b, atol=1e-5)
    if arch == "sliding-mistral":  # the window is honoured: without it the piece's logits differ
        model.config.sliding_window = None
        assert not torch.allclose(logits()[0], stock[0], atol=1e-3)


def test_a_model_on_eager_attention_is_left_on_it():
    model = tiny_loaded("gemma2").model
    hf_adapter.use_reader_sdpa(model)
    assert model.config._attn_implementation == "eager" and not hf_adapter.rides_along(model)


def test_trailing_weights_match_eager_attention_weights():
    """The recorded weights are eager attention's for the last queries, per KV head and query head of its group."""
    loaded = tiny_loaded("qwen2")
    model = loaded.model
    hf_adapter.use_reader_sdpa(model)
    ids = torch.tensor([random_ids(30)])
    groups = model.config.num_attention_heads // model.config.num_key_value_heads
    eager: list[torch.Tensor] = []

    def keep_eager(_layer, weights):  # (1, H_q, T, T)
        eager.append(weights[0, :, -5:].reshape(-1, groups, 5, weights.shape[-1]))  # (H_kv, g, 5, T)

    with torch.inference_mode():
        with hf_adapter.eager_attention(model), hf_adapter.captured_attention(model, keep_eager):
            model(ids)
        with hf_adapter.trailing_attention(model, 5, lambda _layer, weights: weights) as recorded:
            model(ids)
    for ours, theirs in zip(recorded, eager, strict=True):
        assert torch.allclose(ours, theirs.float(), atol=1e-6)
        assert torch.allclose(ours.sum(dim=-1), torch.ones(ours.shape[:-1]))


def test_a_ride_that_recorded_nothing_in_some_layer_falls_back_to_a_catalyst_pass(monkeypatch):
    engine = Engine(tiny_loaded("llama"), CONFIG)
    seen = checked_distill(monkeypatch)
    original = hf_adapter.trailing_attention

    @contextlib.contextmanager
    def losing_a_layer(model, count, reduce):
        with original(model, count, reduce) as results:
            yield results
        results[1] = None  # as if another thread had run that layer on eager attention

    monkeypatch.setattr(hf_adapter, "trailing_attention", losing_a_layer)
    pot = engine.read([random_ids(600)])
    assert pot.cycles == len(seen) > 5 and set(seen) == {"pass"}
