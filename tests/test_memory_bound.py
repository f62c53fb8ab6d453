"""What stays in memory between answers is bounded: the loaded-pot cache keeps `loaded_pots` pots, and a pot it
dropped is freed (no answer, stream or stats keeps it alive)."""

from __future__ import annotations

import gc
import weakref

import pytest
from tiny_models import write_notes

from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig

SMALL_POT = PotConfig(pot_size=128, keep_size=48)


def test_the_loaded_pot_cache_keeps_its_bound_and_frees_what_it_drops(tmp_path, tiny_model_dir, infinipot_home):
    service = DocumentService(home=infinipot_home, device="cpu", loaded_pots=1)
    first = service.read(write_notes(tmp_path / "a.txt", lines=20), SMALL_POT, tiny_model_dir).doc_id
    second = service.read(write_notes(tmp_path / "b.txt", lines=24), SMALL_POT, tiny_model_dir).doc_id

    pieces, stats, _ = service.ask(first, "What does the fox do?", answer_from="pot", max_new_tokens=6)
    "".join(pieces)
    first_pot = weakref.ref(service.open_pot(first).pot)
    for doc_id in (second, first, second):  # alternating documents, as a team asks
        pieces, stats, _ = service.ask(doc_id, "What does the fox do?", answer_from="pot", max_new_tokens=6)
        "".join(pieces)
        assert service.loaded_documents() == [doc_id]
    del pieces, stats
    gc.collect()
    assert first_pot() is None  # the dropped pot's tensors went with it


def test_at_least_one_pot_stays_loaded(infinipot_home):
    with pytest.raises(ValueError, match="at least one pot must stay loaded to answer from it, got 0"):
        DocumentService(home=infinipot_home, device="cpu", loaded_pots=0)
