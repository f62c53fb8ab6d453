"""The store: documents, pot status transitions, checkpoints, conversations, deletion and stale readers."""

import subprocess
import sys

import psutil
import pytest
import torch

from infinipot.storage.db import write_transaction
from infinipot.storage.errors import DamagedFile, NotStored
from infinipot.storage.pots import ReadInProgress
from infinipot.storage.store import Store

CONFIG = {"pot_size": 128, "keep_size": 48, "method": "infinipot"}
SUMMARY = {"tokens_read": 10, "cycles": 1, "entries": 30, "peak_entries": 128, "read_seconds": 2.5}


def tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return {"keys.0": torch.randn(1, 2, 30, 8, generator=g), "origin": torch.arange(60).view(1, 2, 30)}


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "home")
    yield store
    store.close()


def record_document(store, content_hash="ab" * 32, name="a.txt"):
    return store.documents.record(content_hash, name, f"/docs/{name}", 100, 123, "text", None)


def test_constructing_a_store_touches_nothing(tmp_path):
    Store(tmp_path / "home")
    assert not (tmp_path / "home").exists()


def test_documents_are_keyed_by_content_and_found_by_prefix_or_file(store):
    first = record_document(store)
    again = store.documents.record("ab" * 32, "renamed.txt", "/docs/renamed.txt", 100, 456, "text", 3)
    assert again.id == first.id == ("ab" * 32)[:16]
    assert again.name == first.name != "renamed.txt"  # a copy under another name keeps the library's name
    assert again.path == "/docs/renamed.txt" and again.pages == 3 and again.created_at == first.created_at
    other = record_document(store, "ac" * 32, "b.txt")
    assert [d.id for d in store.documents.with_prefix("a")] == [first.id, other.id]
    assert store.documents.with_prefix("abab")[0].name == first.name
    assert store.documents.with_prefix("not-hex") == []
    assert store.documents.by_file("/docs/renamed.txt", 100, 456).id == first.id
    assert store.documents.by_file("/docs/renamed.txt", 100, 999) is None  # modified since: hash it again


def test_claim_complete_and_reuse_lookup(store):
    doc = record_document(store)
    pot = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    assert pot.status == "reading" and pot.reader_pid is not None
    assert store.pots.find(doc.id, "model-a", CONFIG).id == pot.id
    assert store.pots.find(doc.id, "model-b", CONFIG) is None  # other weights: another pot
    assert store.pots.find(doc.id, "model-a", {**CONFIG, "keep_size": 40}) is None  # other settings too
    done = store.complete_pot(pot.id, tensors(), frozenset({"keys.0"}), {"cycles": 1}, SUMMARY)
    assert done.status == "complete" and done.reader_pid is None and done.tokens_read == 10
    assert done.config == CONFIG and done.counters == {"cycles": 1}
    loaded = store.load_pot(done)
    torch.testing.assert_close(loaded["keys.0"], tensors()["keys.0"], rtol=1e-3, atol=1e-3)
    assert torch.equal(loaded["origin"], tensors()["origin"])
    assert store.pots.latest_complete(doc.id).id == pot.id


def test_complete_pots_are_grouped_by_document_in_one_lookup(store):
    first, second, reading = (record_document(store, h * 32, f"{h}.txt") for h in ("ab", "ac", "ad"))
    pots = {}
    for doc, model in ((first, "model-a"), (first, "model-b"), (second, "model-a"), (reading, "model-a")):
        pots[doc.id, model] = store.claim_pot(doc.id, "default", model, CONFIG, "infinipot")
    for key in ((first.id, "model-a"), (first.id, "model-b"), (second.id, "model-a")):
        store.complete_pot(pots[key].id, tensors(), frozenset({"keys.0"}), {"cycles": 1}, SUMMARY)
    grouped = store.pots.complete_by_document()
    assert sorted(grouped) == sorted([first.id, second.id])  # the one still being read is not there
    assert [p.id for p in grouped[first.id]] == [pots[first.id, "model-a"].id, pots[first.id, "model-b"].id]
    assert all(p.status == "complete" for group in grouped.values() for p in group)


def test_checkpoints_keep_only_the_latest_and_completion_removes_them(store):
    doc = record_document(store)
    pot = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    files = []
    for step in range(3):
        store.save_checkpoint(pot.id, tensors(step), {"cycles": step}, 10 * step, {"chunk_tokens": 256}, SUMMARY)
        checkpoint = store.checkpoints.latest(pot.id)
        files.append(store.absolute(checkpoint.tensor_file))
        assert checkpoint.document_tokens == 10 * step and checkpoint.stream == {"chunk_tokens": 256}
        assert len(store.checkpoints.for_pot(pot.id)) == 1
        assert torch.equal(store.load_checkpoint(checkpoint)["keys.0"], tensors(step)["keys.0"])  # exact
    assert [f.exists() for f in files] == [False, False, True]
    store.complete_pot(pot.id, tensors(), frozenset(), {}, SUMMARY)
    assert store.checkpoints.for_pot(pot.id) == [] and not files[-1].exists()
    assert [p.name.split("-")[0] for p in store.pot_folder(pot.id).iterdir()] == ["pot"]


def test_interrupted_read_keeps_its_checkpoint_and_a_failed_one_does_not(store):
    doc = record_document(store)
    pot = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    store.save_checkpoint(pot.id, tensors(), {}, 20, {"chunk_tokens": 256}, SUMMARY)
    store.pots.release(pot.id, "interrupted")
    again = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    assert again.id == pot.id and again.tokens_read == 10 and again.error is None
    assert store.checkpoints.latest(pot.id).document_tokens == 20
    store.fail_pot(pot.id, "the file contains no text")
    failed = store.pots.get(pot.id)
    assert failed.status == "failed" and failed.error == "the file contains no text"
    assert store.checkpoints.latest(pot.id) is None and list(store.pot_folder(pot.id).iterdir()) == []
    restarted = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    assert restarted.status == "reading" and restarted.tokens_read == 0 and restarted.error is None


def test_claim_sweeps_files_no_row_names(store):
    doc = record_document(store)
    pot = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    store.save_checkpoint(pot.id, tensors(), {}, 20, {"chunk_tokens": 256}, SUMMARY)
    orphan = store.pot_folder(pot.id) / "checkpoint-left-by-a-crash.safetensors"
    orphan.write_bytes(b"x" * 10)
    store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    assert not orphan.exists()
    store.load_checkpoint(store.checkpoints.latest(pot.id))  # the named one is intact


@pytest.mark.slow  # a subprocess
def test_a_live_reader_blocks_a_second_reader_but_a_dead_one_does_not(store):
    doc = record_document(store)
    pot = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = psutil.Process(other.pid).create_time()
        with write_transaction(store.db):
            store.db.execute(
                "UPDATE pots SET reader_pid = ?, reader_started = ? WHERE id = ?", [other.pid, started, pot.id]
            )
        with pytest.raises(ReadInProgress, match=str(other.pid)):
            store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
        with pytest.raises(ReadInProgress):
            store.delete_document(doc)
    finally:
        other.kill()
        other.wait()
    assert store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot").reader_pid != other.pid


def test_conversations_record_messages_in_order(store):
    doc = record_document(store)
    conversation = store.conversations.create(doc.id, title="first chat")
    store.conversations.append_many(
        conversation.id, [("user", "Who is it?", None), ("assistant", "The narrator.", {"ttft_seconds": 0.4})]
    )
    store.conversations.append(conversation.id, "user", "And then?")
    with pytest.raises(ValueError, match="role"):
        store.conversations.append_many(conversation.id, [("assistant", "fine", None), ("system", "x", None)])
    messages = store.conversations.messages(conversation.id)
    assert [(m.role, m.content) for m in messages] == [
        ("user", "Who is it?"),
        ("assistant", "The narrator."),
        ("user", "And then?"),
    ]  # the rejected pair left nothing behind
    assert messages[1].meta == {"ttft_seconds": 0.4}
    assert [c.id for c in store.conversations.for_document(doc.id)] == [conversation.id]
    with pytest.raises(NotStored):
        store.conversations.append(9999, "user", "hello?")


def test_deleting_a_document_removes_rows_and_files(store):
    doc = record_document(store)
    keep = record_document(store, "cd" * 32, "keep.txt")
    pots = []
    for d in (doc, keep):
        pot = store.claim_pot(d.id, "default", "model-a", CONFIG, "infinipot")
        store.complete_pot(pot.id, tensors(), frozenset(), {}, SUMMARY)
        pots.append(pot)
    reading = store.claim_pot(doc.id, "default", "model-a", {**CONFIG, "keep_size": 40}, "infinipot")
    store.save_checkpoint(reading.id, tensors(), {}, 5, {"chunk_tokens": 256}, SUMMARY)
    map_path = store.location_map_path(doc.id)
    map_path.parent.mkdir(parents=True)
    map_path.write_bytes(b"m" * 50)
    store.documents.set_read(doc.id, 10, store.relative(map_path))
    conversation = store.conversations.create(doc.id, pots[0].id)
    store.conversations.append(conversation.id, "user", "hi")
    expected = store.document_disk_bytes(store.documents.get(doc.id))
    assert expected > 50
    # left by a crash in the middle of an earlier delete: no rows name them
    stray_folder, stray_map = store.home / "pots" / "999", store.home / "maps" / "0123456789abcdef.map"
    stray_folder.mkdir()
    (stray_folder / "pot-1.safetensors").write_bytes(b"x")
    stray_map.write_bytes(b"x")

    freed = store.delete_document(store.documents.get(doc.id))
    assert freed == expected
    assert store.documents.get(doc.id) is None and store.pots.for_document(doc.id) == []
    assert store.db.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0
    assert store.db.execute("SELECT count(*) FROM messages").fetchone()[0] == 0
    assert not store.pot_folder(pots[0].id).exists() and not store.pot_folder(reading.id).exists()
    assert not map_path.exists()
    assert not stray_folder.exists() and not stray_map.exists()
    survivor = store.pots.latest_complete(keep.id)  # the other document is untouched
    store.verify_pot(survivor)


def test_damage_is_reported_by_load_and_verify(store):
    doc = record_document(store)
    pot = store.claim_pot(doc.id, "default", "model-a", CONFIG, "infinipot")
    done = store.complete_pot(pot.id, tensors(), frozenset(), {}, SUMMARY)
    path = store.absolute(done.tensor_file)
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(DamagedFile, match="truncated"):
        store.verify_pot(done)
    with pytest.raises(DamagedFile, match="truncated"):
        store.load_pot(done)
