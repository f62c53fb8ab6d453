"""Merging documents' pots (core.merge) on tiny random-weight models: the bound, provenance, exact keys, errors."""

import pytest
import torch
from helpers import record_cache_lengths
from tiny_models import random_ids, tiny_loaded

from infinipot.core import hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.errors import PotTooSmallError
from infinipot.core.merge import IncompatiblePots, document_positions, entries_per_document, merge_pots
from infinipot.core.rope import unapply_rotary
from infinipot.core.selection import KEPT_SINK

CONFIG = PotConfig(pot_size=96, keep_size=48, forward_tokens=40)


def read_two(engine: Engine, lengths=(300, 260)):
    return [engine.read([random_ids(length, seed=10 + i)]) for i, length in enumerate(lengths)]


def pre_rope_keys(model, pot, layer: int) -> torch.Tensor:
    """Keys of one layer with their rotation undone: (H_kv, n, D), independent of positions."""
    kind = hf_adapter.rotary_kinds(model)[layer]  # Gemma 3's local and global layers rotate with their own bases
    cos, sin = hf_adapter.rotary_cos_sin(model, pot.positions[layer], kind)  # (H_kv, n, rot)
    return unapply_rotary(pot.keys[layer][0].float(), cos, sin)


@pytest.mark.parametrize("arch", ["llama", "qwen3", "phi3"])
def test_merged_pot_stays_within_the_bound_and_holds_both_documents(arch):
    engine = Engine(tiny_loaded(arch), CONFIG)
    pots = read_two(engine)
    lengths = record_cache_lengths(engine.model)  # every forward of the merge: the catalyst passes
    merged = merge_pots(engine.model, pots, CONFIG, engine.catalyst_ids)

    assert merged.cycles >= 2  # the union (~2 x 90 entries) needs compressing to fit 96
    assert max(lengths) <= CONFIG.pot_size
    assert merged.peak_entries == max(lengths) == CONFIG.pot_size  # full pot + catalyst during each distillation
    assert merged.entries <= CONFIG.pot_size - len(engine.catalyst_ids)
    assert merged.document_tokens == pots[0].document_tokens + pots[1].document_tokens
    # both documents are represented in every layer and head; CR-RoPE left one position axis 0..n-1
    source, tokens = document_positions(merged)
    for layer in range(source.shape[0]):
        for head in range(source.shape[1]):
            assert set(source[layer, head].tolist()) == {0, 1}
    assert bool((merged.positions == torch.arange(merged.entries)).all())
    assert merged.next_position == merged.entries
    # document 0 comes first on the axis, and each document's tokens stay in reading order
    assert bool((source[..., 1:] >= source[..., :-1]).all())
    same_doc = source[..., 1:] == source[..., :-1]
    assert bool((tokens[..., 1:] > tokens[..., :-1])[same_doc].all())
    assert sum(entries_per_document(merged, 2)) == merged.entries


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_every_merged_entry_is_exactly_its_source_entry_moved_to_its_new_position(arch):
    engine = Engine(tiny_loaded(arch), CONFIG)
    pots = read_two(engine)
    merged = merge_pots(engine.model, pots, CONFIG, engine.catalyst_ids)
    source, _ = document_positions(merged)
    for layer in range(len(merged.keys)):
        merged_pre = pre_rope_keys(engine.model, merged, layer)
        originals = [pre_rope_keys(engine.model, pot, layer) for pot in pots]
        for head in range(merged.origin.shape[1]):
            for i in range(merged.entries):
                pot = pots[int(source[layer, head, i])]
                j = int((pot.origin[layer, head] == merged.origin[layer, head, i]).nonzero())
                assert torch.equal(merged.values[layer][0, head, i], pot.values[layer][0, head, j])
                doc = int(source[layer, head, i])
                torch.testing.assert_close(merged_pre[head, i], originals[doc][head, j], atol=1e-4, rtol=1e-4)


def test_only_the_first_documents_opening_stays_and_it_is_never_evicted():
    engine = Engine(tiny_loaded("llama"), CONFIG)
    pots = read_two(engine)
    merged = merge_pots(engine.model, pots, CONFIG, engine.catalyst_ids)
    prefix = len(engine.prefix_ids)
    source, tokens = document_positions(merged)
    assert bool((merged.origin[..., :prefix] == torch.arange(prefix)).all())
    assert bool((source[..., :prefix] == 0).all())
    assert bool((merged.kept_by[..., :prefix] == KEPT_SINK).all())
    assert not bool(((source == 1) & (tokens < 0)).any())  # the second copy of the opening was dropped


def test_pots_that_fit_together_are_concatenated_without_compression_and_answer():
    config = PotConfig(pot_size=512, keep_size=256, forward_tokens=40)
    engine = Engine(tiny_loaded("llama"), config)
    pots = read_two(engine, lengths=(120, 90))
    merged = merge_pots(engine.model, pots, config, engine.catalyst_ids)
    prefix = len(engine.prefix_ids)
    assert merged.cycles == 0
    assert merged.entries == pots[0].entries + pots[1].entries - prefix
    assert entries_per_document(merged, 2) == [pots[0].entries, pots[1].entries - prefix]
    stats = AnswerStats()
    "".join(engine.answer(merged, "What is the passkey?", max_new_tokens=8, stats=stats))
    assert 0 < stats.new_tokens <= 8
    assert not stats.compressed_for_answer  # 512 entries leave room to answer beside the merged pot


def test_a_merged_pot_is_compressed_again_for_a_long_answer_and_keeps_its_sources():
    engine = Engine(tiny_loaded("llama"), CONFIG)
    merged = merge_pots(engine.model, read_two(engine), CONFIG, engine.catalyst_ids)
    lengths = record_cache_lengths(engine.model)
    stats = AnswerStats()
    "".join(engine.answer(merged, "What is the passkey?", max_new_tokens=16, stats=stats))
    assert stats.compressed_for_answer
    assert max(lengths) <= CONFIG.pot_size


def test_pots_of_another_head_layout_or_already_merged_are_refused():
    engine = Engine(tiny_loaded("llama"), CONFIG)
    first, second = read_two(engine)
    one_head = engine.read([random_ids(200, seed=3)])
    one_head.keys = [k[:, :1] for k in one_head.keys]
    one_head.values = [v[:, :1] for v in one_head.values]
    with pytest.raises(IncompatiblePots, match="only pots of the same model can merge"):
        merge_pots(engine.model, [first, one_head], CONFIG, engine.catalyst_ids)
    merged = merge_pots(engine.model, [first, second], CONFIG, engine.catalyst_ids)
    with pytest.raises(IncompatiblePots, match="already a merged pot"):
        merge_pots(engine.model, [merged, second], CONFIG, engine.catalyst_ids)
    with pytest.raises(ValueError, match="at least two"):
        merge_pots(engine.model, [first], CONFIG, engine.catalyst_ids)


def test_a_bound_without_room_beside_the_catalyst_is_a_clear_error():
    engine = Engine(tiny_loaded("llama"), CONFIG)
    pots = read_two(engine)
    tight = PotConfig(pot_size=96, keep_size=96 - len(engine.catalyst_ids))
    with pytest.raises(PotTooSmallError, match="no room to merge"):
        merge_pots(engine.model, pots, tight, engine.catalyst_ids)


def test_merged_pot_round_trips_through_its_tensors_with_sources():
    engine = Engine(tiny_loaded("llama"), CONFIG)
    merged = merge_pots(engine.model, read_two(engine), CONFIG, engine.catalyst_ids)
    restored = type(merged).from_tensors(merged.tensors(), merged.counters())
    assert torch.equal(restored.source, merged.source)
    assert torch.equal(restored.origin, merged.origin)
