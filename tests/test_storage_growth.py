"""Storage of growing logs: a grown document keeps its id, pots record the bytes they read."""

import hashlib

import pytest

from infinipot.storage.db import open_database, schema_version
from infinipot.storage.records import PotRecord
from infinipot.storage.store import Store


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_migration_adds_the_read_prefix_columns(tmp_path):
    db = open_database(tmp_path / "fresh.db")
    assert "0003_pot_read_prefix" in schema_version(db)
    assert {"read_bytes", "prefix_sha256"} <= set(db["pots"].columns_dict)


def test_a_grown_document_keeps_its_id_and_a_copy_of_its_old_content_gets_another(tmp_path):
    documents = Store(tmp_path).documents
    first = documents.record(sha("v1"), "app.log", "/logs/app.log", 3, 1, "text", None)
    documents.grew(first.id, sha("v2"), 6, 2)
    grown = documents.get(first.id)
    assert (grown.content_hash, grown.size_bytes, grown.mtime_ns) == (sha("v2"), 6, 2)
    assert documents.by_hash(sha("v2")).id == first.id and documents.by_hash(sha("v1")) is None
    assert documents.last_read_from("/logs/app.log").id == first.id

    copy = documents.record(sha("v1"), "copy.log", "/tmp/copy.log", 3, 1, "text", None)
    assert copy.id != first.id and copy.id == sha("v1")[:17]  # its 16-digit prefix is taken by the grown log
    assert documents.get(first.id).content_hash == sha("v2")  # the grown log's row is untouched
    again = documents.record(sha("v1"), "copy.log", "/tmp/copy.log", 3, 1, "text", None)
    assert again.id == copy.id and len(documents.all()) == 2


def test_a_completed_pot_records_what_it_read(tmp_path):
    import torch

    store = Store(tmp_path)
    doc = store.documents.record(sha("v1"), "app.log", "/logs/app.log", 3, 1, "text", None)
    pot = store.claim_pot(doc.id, "default", "tiny", {"pot_size": 16}, "infinipot")
    assert (pot.read_bytes, pot.prefix_sha256) == (None, None)
    summary = {"tokens_read": 1, "cycles": 0, "entries": 1, "peak_entries": 1, "read_seconds": 0.1}
    done = store.complete_pot(pot.id, {"origin": torch.zeros(1)}, frozenset(), {}, summary, (3, sha("v1")))
    assert (done.read_bytes, done.prefix_sha256) == (3, sha("v1"))
    with pytest.raises(ValueError, match="together"):
        PotRecord(**{**done.__dict__, "prefix_sha256": None})
