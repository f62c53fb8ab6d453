"""Storage through the `infinipot` command: kill -9 and resume, damaged pots, list, delete, conversations."""

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
import torch
from helpers import run_json, run_json_and_stderr, wait_until

from infinipot.app.cli import main
from infinipot.app.service import DocumentService
from infinipot.storage.store import DATABASE_NAME, Store

POT = ["--pot-size", "512", "--keep", "256"]  # a few compressions: these tests are about storage


def only_pot(home):
    store = Store(home)
    (document,) = store.documents.all()
    (pot,) = store.pots.for_document(document.id)
    return store, pot


def cli_process(home, *args):
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    return subprocess.Popen(
        [sys.executable, "-m", "infinipot.app.cli", "--device", "cpu", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def checkpointed_tokens(home) -> int:
    """Document tokens of the newest checkpoint, read the way another process would (0 when none yet)."""
    path = home / DATABASE_NAME
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
            row = conn.execute("SELECT max(document_tokens) FROM checkpoints").fetchone()
    except sqlite3.OperationalError:  # the schema is not there yet
        return 0
    return row[0] or 0


@pytest.mark.slow  # subprocesses
def test_reader_killed_with_sigkill_resumes_to_the_same_kept_indices(tmp_path, tiny_model_dir):
    path = tmp_path / "big.log"
    path.write_text("\n".join(f"{i:05d} worker-{i % 5} served item {i * 13 % 101}." for i in range(80)))
    pot = ["--pot-size", "128", "--keep", "48"]  # many compressions before and after the kill
    argv = ["read", str(path), "--model", tiny_model_dir, *pot, "--checkpoint-seconds", "0", "--json"]

    killed_home = tmp_path / "killed"
    reader = cli_process(killed_home, *argv)

    def checkpoint_past_600_tokens():
        assert reader.poll() is None, f"the reader ended before it could be killed: {reader.communicate()[1]}"
        return checkpointed_tokens(killed_home) >= 600

    wait_until(checkpoint_past_600_tokens, timeout=600, every=0.05, what="a checkpoint past 600 tokens")
    reader.send_signal(signal.SIGKILL)
    reader.communicate()
    assert reader.returncode == -signal.SIGKILL
    store, pot = only_pot(killed_home)
    assert pot.status == "reading" and store.checkpoints.latest(pot.id).document_tokens >= 600
    (listed,) = DocumentService(home=killed_home).documents()[0]["pots"]
    assert listed["status"] == "reading" and listed["reader_running"] is False  # its reader is dead

    resumed = cli_process(killed_home, *argv)
    out, err = resumed.communicate()
    assert resumed.returncode == 0, err
    resumed_json = json.loads(out.strip().splitlines()[-1])
    assert resumed_json["reused"] is False and resumed_json["resumed_from"] >= 600

    clean_home = tmp_path / "clean"
    clean = cli_process(clean_home, *argv)
    out, err = clean.communicate()
    assert clean.returncode == 0, err
    clean_json = json.loads(out.strip().splitlines()[-1])
    assert clean_json["resumed_from"] == 0 and clean_json["cycles"] > 20
    for key in ("tokens", "cycles", "pot_entries", "peak_entries"):
        assert resumed_json[key] == clean_json[key], key

    store, pot = only_pot(killed_home)
    clean_store, clean_pot = only_pot(clean_home)
    resumed_tensors, clean_tensors = store.load_pot(pot), clean_store.load_pot(clean_pot)
    assert torch.equal(resumed_tensors["origin"], clean_tensors["origin"])  # the same kept indices
    assert torch.equal(resumed_tensors["kept_by"], clean_tensors["kept_by"])
    for name in clean_tensors:
        torch.testing.assert_close(resumed_tensors[name], clean_tensors[name], rtol=1e-3, atol=1e-3)
    # nothing left of the killed process: no checkpoint rows, no half-written temporary files
    assert store.checkpoints.for_pot(pot.id) == []
    assert [p.name for p in store.pot_folder(pot.id).iterdir()] == [pot.tensor_file.rsplit("/", 1)[-1]]


def damage_missing(path):
    path.unlink()


def damage_truncated(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def damage_flipped(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("damage", "reason"),
    [(damage_missing, "file missing"), (damage_truncated, "truncated"), (damage_flipped, "checksum mismatch")],
    ids=["missing", "truncated", "checksum"],
)
def test_damaged_stored_pot_is_reported_in_one_line_and_read_again(
    capsys, infinipot_home, tiny_model_dir, document, damage, reason
):
    argv = ["read", str(document), "--model", tiny_model_dir, *POT, "--json"]
    first = run_json(capsys, argv)
    store, pot = only_pot(infinipot_home)
    origin = store.load_pot(pot)["origin"]
    damage(store.absolute(pot.tensor_file))

    again, err = run_json_and_stderr(capsys, argv)
    warnings = err.strip().splitlines()
    assert len(warnings) == 1
    assert warnings[0].startswith("infinipot: warning: stored pot for notes.txt is damaged (" + reason)
    assert warnings[0].endswith("); reading again")
    assert again["reused"] is False and again["tokens"] == first["tokens"]
    store, repaired = only_pot(infinipot_home)
    assert repaired.id == pot.id and repaired.status == "complete" and repaired.tensor_file != pot.tensor_file
    assert torch.equal(store.load_pot(repaired)["origin"], origin)
    assert run_json(capsys, argv)["reused"] is True


def test_ask_on_a_damaged_pot_warns_reads_again_and_answers(capsys, infinipot_home, tiny_model_dir, document):
    first = run_json(capsys, ["read", str(document), "--model", tiny_model_dir, *POT, "--json"])
    store, pot = only_pot(infinipot_home)
    damage_flipped(store.absolute(pot.tensor_file))
    argv = ["ask", first["doc_id"], "What does the fox do?", "--max-new-tokens", "4", "--json"]
    answer, err = run_json_and_stderr(capsys, argv)
    assert err.strip().splitlines() == [
        "infinipot: warning: stored pot for notes.txt is damaged (checksum mismatch); reading again"
    ]
    assert answer["reused_pot"] is False
    store, repaired = only_pot(infinipot_home)
    store.verify_pot(repaired)


def test_ask_answers_from_the_stored_pot_without_the_document_and_records_the_conversation(
    capsys, infinipot_home, tiny_model_dir, document
):
    first = run_json(capsys, ["read", str(document), "--model", tiny_model_dir, *POT, "--json"])
    document.rename(document.with_name("moved-away.txt"))  # the stored pot is all `ask` needs
    question = "What does the fox do?"
    argv = ["ask", first["doc_id"][:6], question, "--max-new-tokens", "6", "--json"]
    answer, err = run_json_and_stderr(capsys, argv)
    assert err == ""
    assert answer["reused_pot"] is True and answer["ttft_seconds"] <= answer["seconds"]
    store = Store(infinipot_home)
    messages = store.conversations.messages(answer["conversation_id"])
    assert [(m.role, m.content) for m in messages] == [("user", question), ("assistant", answer["answer"])]
    assert messages[1].meta["pot_id"] == only_pot(infinipot_home)[1].id
    conversation = store.conversations.get(answer["conversation_id"])
    assert conversation.document_id == first["doc_id"]


def folder_bytes(folder):
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def test_list_shows_documents_pots_and_disk_use_and_delete_removes_them(
    capsys, infinipot_home, tiny_model_dir, document, tmp_path
):
    other = tmp_path / "other.txt"
    other.write_text("\n".join(f"Entry {i}: grass is green and the sky is blue." for i in range(40)))
    notes = run_json(capsys, ["read", str(document), "--model", tiny_model_dir, *POT, "--json"])
    run_json(capsys, ["read", str(document), "--model", tiny_model_dir, "--pot-size", "512", "--keep", "200", "--json"])
    kept = run_json(capsys, ["read", str(other), "--model", tiny_model_dir, *POT, "--json"])
    run_json(capsys, ["ask", notes["doc_id"], "Which dog?", "--max-new-tokens", "3", "--json"])

    listing = run_json(capsys, ["list", "--json"])
    by_id = {doc["doc_id"]: doc for doc in listing["documents"]}
    assert set(by_id) == {notes["doc_id"], kept["doc_id"]}
    entry = by_id[notes["doc_id"]]
    assert entry["name"] == "notes.txt" and entry["tokens"] == notes["tokens"] and entry["kind"] == "text"
    assert sorted(pot["keep_size"] for pot in entry["pots"]) == [200, 256]
    assert {pot["status"] for pot in entry["pots"]} == {"complete"}
    stored = folder_bytes(infinipot_home / "pots") + folder_bytes(infinipot_home / "maps")
    assert listing["disk_bytes"] == stored + folder_bytes(infinipot_home / "ui")  # and the token ids read kept
    main(["list"])
    human = capsys.readouterr().out
    assert "notes.txt" in human and "other.txt" in human and "complete" in human

    deleted = run_json(capsys, ["delete", str(document), "--json"])
    assert deleted == {"deleted": notes["doc_id"], "name": "notes.txt", "pots": 2, "freed_bytes": entry["disk_bytes"]}
    listing = run_json(capsys, ["list", "--json"])
    assert [doc["doc_id"] for doc in listing["documents"]] == [kept["doc_id"]]
    for pot in entry["pots"]:
        assert not (infinipot_home / "pots" / str(pot["pot_id"])).exists()
    assert not (infinipot_home / "maps" / f"{notes['doc_id']}.map").exists()
    store = Store(infinipot_home)
    assert store.db.execute("SELECT count(*) FROM messages").fetchone()[0] == 0  # its conversation went too
    store.verify_pot(store.pots.latest_complete(kept["doc_id"]))  # the other document is untouched

    for argv in (["delete", notes["doc_id"]], ["ask", notes["doc_id"], "Anything?"]):
        code = main(argv)
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("infinipot: error: no document"), err


def test_list_of_an_empty_store(capsys):
    listing = run_json(capsys, ["list", "--json"])
    assert listing == {"documents": [], "disk_bytes": 0}
