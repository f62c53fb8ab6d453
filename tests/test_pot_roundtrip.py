"""A Pot through storage and back: tensors, provenance and configuration, bit-exact in fp32, close in fp16."""

import pytest
import torch
from tiny_models import random_ids, tiny_loaded

from infinipot.app.library.pot_files import bulk_names, pot_from_storage, pot_summary
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.storage.store import Store

CONFIG = PotConfig(pot_size=96, keep_size=48, nuc_ratio=0.4, cap_mode="question", question="Where is the key?")


@pytest.fixture(scope="module")
def read_pot():
    engine = Engine(tiny_loaded("qwen3"), CONFIG)
    document = random_ids(900, seed=3)
    pot = engine.read([document[i : i + 200] for i in range(0, len(document), 200)])
    assert pot.cycles > 5 and pot.last_logprobs is not None
    return engine, pot


def store_and_load(tmp_path, engine, pot, halve: bool):
    store = Store(tmp_path / "home")
    doc = store.documents.record("ef" * 32, "doc.txt", None, 10, None, "text", None)
    record = store.claim_pot(doc.id, "tiny", "tiny-qwen3", CONFIG.identity(), CONFIG.method)
    tensors = pot.tensors()
    store.complete_pot(
        record.id, tensors, bulk_names(tensors) if halve else frozenset(), pot.counters(), pot_summary(pot, 1.0)
    )
    reopened = Store(tmp_path / "home")  # a later process
    stored = reopened.pots.find(doc.id, "tiny-qwen3", CONFIG.identity())
    loaded = pot_from_storage(reopened.load_pot(stored), stored.counters, torch.device("cpu"), torch.float32)
    return stored, loaded


def test_fp32_round_trip_is_bit_exact_with_provenance_and_config(tmp_path, read_pot):
    engine, pot = read_pot
    stored, loaded = store_and_load(tmp_path, engine, pot, halve=False)
    assert PotConfig(**stored.config).identity() == CONFIG.identity()  # defaults stored as their effective values
    assert stored.method == CONFIG.method and stored.model_identity == "tiny-qwen3"
    assert loaded.counters() == pot.counters()
    assert (stored.tokens_read, stored.cycles, stored.entries) == (pot.document_tokens, pot.cycles, pot.entries)
    for name, tensor in pot.tensors().items():
        assert loaded.tensors()[name].dtype == tensor.dtype, name
        assert torch.equal(loaded.tensors()[name], tensor), name
    question = "Where is the key?"
    original, restored = AnswerStats(), AnswerStats()
    "".join(engine.answer(pot, question, 12, original))
    "".join(engine.answer(loaded, question, 12, restored))
    assert restored.token_ids == original.token_ids and len(original.token_ids) > 0


def test_fp16_round_trip_is_within_tolerance_and_provenance_exact(tmp_path, read_pot):
    engine, pot = read_pot
    stored, loaded = store_and_load(tmp_path, engine, pot, halve=True)
    exact_bytes = sum(t.numel() * t.element_size() for t in pot.tensors().values())
    bulk = sum(t.numel() for t in pot.keys + pot.values)
    assert stored.tensor_bytes < exact_bytes - 2 * bulk + 4096  # 2 of 4 bytes saved per key and value (+ header)
    for name in ("origin", "kept_by", "novelty", "positions", "last_logprobs"):
        assert torch.equal(getattr(loaded, name), getattr(pot, name)), name
    for original, restored in zip(pot.keys + pot.values, loaded.keys + loaded.values, strict=True):
        assert restored.dtype == torch.float32
        torch.testing.assert_close(restored, original, rtol=1e-3, atol=1e-3)
    assert loaded.counters() == pot.counters()
