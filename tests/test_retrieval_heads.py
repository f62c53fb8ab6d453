"""Retrieval heads: the synthetic tasks, how heads are scored and chosen, a calibration on a tiny model (stable,
stored, reused), and the evidence ranking that listens to them."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
from tiny_models import tiny_loaded, tiny_tokenizer

from infinipot.app.library.retrieval_heads import RetrievalHeadsShelf, heads_file_name
from infinipot.core.answer.citations import CitationConfig
from infinipot.core.answer.evidence import EvidenceConfig, attention_ranking, ranked_buckets
from infinipot.core.answer.retrieval_heads import (
    CALIBRATION_VERSION,
    HeadsConfig,
    RetrievalHeads,
    bucket_ranks,
    calibrate,
    choose_heads,
    gold_buckets,
)
from infinipot.core.answer.retrieval_tasks import retrieval_tasks
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.prompts import encode

SMALL = HeadsConfig(documents=2, facts_per_document=2, document_tokens=640, bucket_tokens=32)


def count_tokens(text: str) -> int:
    return len(encode(tiny_tokenizer(), text))


def test_tasks_are_seeded_sized_and_hold_each_fact_once_at_spread_depths():
    tasks = retrieval_tasks(3, 4, 800, count_tokens, seed=7)
    assert tasks == retrieval_tasks(3, 4, 800, count_tokens, seed=7)
    assert tasks != retrieval_tasks(3, 4, 800, count_tokens, seed=8)
    for task in tasks:
        assert 800 <= count_tokens(task.text) < 800 + 400  # filler grows 16 sentences at a time
        depths = [task.text.index(fact.sentence) / len(task.text) for fact in task.facts]
        assert all(task.text.count(fact.sentence) == 1 for fact in task.facts)
        assert depths == sorted(depths) and depths[0] > 0.1 and depths[-1] < 0.9
        assert all(fact.question.endswith("?") for fact in task.facts)


def test_bucket_ranks_ranks_the_facts_bucket_under_each_head_alone():
    # 2 layers x 2 heads over 8 entries holding document tokens 0..7 (prefix of 1), buckets of 2 tokens
    origin = torch.arange(1, 9).expand(2, 2, 8)  # (L, H_kv, n)
    attention = torch.zeros(2, 2, 8)
    attention[0, 0, 5] = 0.9  # bucket 2 best: the fact's (tokens 4-5)
    attention[0, 1, 7] = 0.9  # bucket 3 best, bucket 2 second
    attention[0, 1, 4] = 0.5
    attention[1, 0, 6] = 0.2  # pays the fact nothing
    attention[1, 1, 0:2] = 1.0  # all on the sink tokens (not counted), then bucket 2
    attention[1, 1, 4] = 0.1
    config = replace(SMALL, bucket_tokens=2, sink_tokens=2)
    ranks = bucket_ranks(origin, 1, attention, {2}, config, until=8)
    assert ranks.tolist() == [[0, 1], [4, 0]]  # unpaid: ranked past every bucket (4 of them)


def test_gold_buckets_finds_the_fact_by_its_tokens():
    assert gold_buckets([9, 9, 1, 2, 3, 9], [1, 2, 3], 2) == {1, 2}
    assert gold_buckets([9, 9, 1, 2, 9], [2, 1], 2) == set()


def test_choose_heads_keeps_the_heads_that_find_most_facts_ties_broken_by_reciprocal_rank():
    ranks = torch.tensor(
        [  # 3 facts x (1 layer x 4 heads)
            [[0, 5, 1, 9]],
            [[4, 2, 0, 9]],
            [[2, 9, 0, 9]],
        ]
    )
    config = replace(SMALL, head_share=0.5, top=3)
    # head 0 and head 2 find 3 facts, head 1 finds 1; head 2's reciprocal ranks (1/2, 1, 1) beat head 0's
    assert choose_heads(ranks, config) == ((0, 2), (0, 0))
    assert choose_heads(ranks, replace(config, head_share=0.01)) == ((0, 2),)  # at least one head


def test_a_calibration_is_stable_and_keeps_a_few_percent_of_the_heads():
    engine = Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=48))
    first = calibrate(engine, SMALL)
    second = calibrate(engine, SMALL)
    assert first.heads == second.heads and first.found == second.found
    assert (first.layers, first.kv_heads) == (2, 2) and len(first.heads) == 1  # 4% of 4 heads, at least one
    assert first.facts == 4 and 0 <= first.found <= first.facts
    mask = first.mask()
    assert mask.shape == (2, 2) and mask.sum() == 1 and mask[first.heads[0]] == 1
    assert RetrievalHeads.from_dict(json.loads(json.dumps(first.to_dict()))) == first


def test_the_shelf_stores_a_calibration_and_reuses_it_without_calibrating(tmp_path, monkeypatch):
    engine = Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=48))
    shelf = RetrievalHeadsShelf(tmp_path, SMALL)
    heads = shelf.get(engine)
    stored = shelf.stored_path(engine.loaded.identity)
    assert stored == tmp_path / "models" / "retrieval-heads" / heads_file_name("tiny-llama")
    record = json.loads(stored.read_text())
    assert record["model"] == "tiny-llama" and record["version"] == CALIBRATION_VERSION
    assert RetrievalHeads.from_dict(record) == heads

    def refuse(*_args, **_kwargs):
        raise AssertionError("calibrated again")

    monkeypatch.setattr("infinipot.app.library.retrieval_heads.calibrate", refuse)
    assert RetrievalHeadsShelf(tmp_path, SMALL).get(engine) == heads  # another process: from the file
    assert shelf.get(engine) is heads  # the same process: from memory


@pytest.mark.parametrize("damage", ["not json", "old version", "foreign heads"])
def test_a_damaged_or_outdated_calibration_is_redone(tmp_path, damage):
    engine = Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=48))
    heads = RetrievalHeadsShelf(tmp_path, SMALL).get(engine)
    stored = RetrievalHeadsShelf(tmp_path, SMALL).stored_path("tiny-llama")
    record = json.loads(stored.read_text())
    if damage == "not json":
        stored.write_text("{half a record")
    elif damage == "old version":
        stored.write_text(json.dumps({**record, "version": CALIBRATION_VERSION - 1, "heads": [[1, 1]]}))
    else:
        stored.write_text(json.dumps({**record, "heads": [[7, 0]]}))  # a layer the model does not have
    again = RetrievalHeadsShelf(tmp_path, SMALL).get(engine)  # calibrated again (its time may differ)
    assert (again.heads, again.found, again.facts) == (heads.heads, heads.found, heads.facts)
    assert RetrievalHeads.from_dict(json.loads(stored.read_text())) == again  # and written again


def test_forget_drops_the_stored_calibration(tmp_path):
    engine = Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=48))
    shelf = RetrievalHeadsShelf(tmp_path, SMALL)
    shelf.get(engine)
    shelf.forget("tiny-llama")
    assert not shelf.stored_path("tiny-llama").exists() and shelf.stored("tiny-llama") is None


def test_the_evidence_ranking_listens_to_the_retrieval_heads_alone():
    pot = SimpleNamespace(origin=torch.arange(1, 9).expand(2, 2, 8), prefix_len=1, source=None)
    attention = torch.zeros(2, 2, 8)  # (L, H_kv, n)
    attention[1, 0, 6] = 0.9  # the later layer's head 0 points at bucket 3
    attention[0, 1, 4] = 0.5  # an early layer's head 1 (a retrieval head) points at bucket 2
    heads = RetrievalHeads(((0, 1),), layers=2, kv_heads=2, facts=4, found=3, seconds=1.0)
    config = EvidenceConfig(bucket_tokens=2, max_span_tokens=4, attention=CitationConfig(sink_tokens=0))
    engine = SimpleNamespace(model=None)

    def ranked(pointer, calibrated):
        import infinipot.core.answer.evidence as evidence

        original = evidence.answer_attention
        evidence.answer_attention = lambda *_args: attention
        try:
            chosen = replace(config, pointer=pointer)
            return [b.index for b in attention_ranking(engine, pot, [5], [], 8, chosen, None, calibrated)]
        finally:
            evidence.answer_attention = original

    assert ranked("retrieval-heads", heads) == [2]  # every layer counted, the other heads left out
    assert ranked("later-layers", heads) == [3]  # the later half of the layers, every head
    assert ranked("retrieval-heads", None) == [3]  # no calibration at hand: the later layers
    wrong_shape = replace(heads, layers=3)
    assert ranked("retrieval-heads", wrong_shape) == [3]  # another model's heads are not applied
    assert ranked_buckets(pot, attention, 8, config)[0].index == 3


def test_evidence_settings_refuse_an_unknown_pointer_and_a_negative_interleave():
    with pytest.raises(ValueError, match="evidence pointer"):
        EvidenceConfig(pointer="all-heads")
    with pytest.raises(ValueError, match="word buckets per attention bucket"):
        EvidenceConfig(words_per_attention=-1)


def test_the_bundled_models_calibration_ships_and_needs_no_run(tmp_path, monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("calibrated")

    monkeypatch.setattr("infinipot.app.library.retrieval_heads.calibrate", refuse)
    bundled = SimpleNamespace(loaded=SimpleNamespace(identity="smollm2-135m-instruct-q4_1"))
    heads = RetrievalHeadsShelf(tmp_path).get(bundled)
    assert heads is not None and (heads.layers, heads.kv_heads) == (30, 3) and len(heads.heads) == 4
    assert not (tmp_path / "models" / "retrieval-heads").exists()  # nothing written: the shipped file serves
