"""Two processes read the database while a third writes (WAL): no "database is locked", never a torn state."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow  # three subprocesses

WRITER = textwrap.dedent(
    """
    import hashlib, sys, time, torch
    from pathlib import Path
    from infinipot.storage.store import Store

    home = Path(sys.argv[1])
    store = Store(home)
    store.db  # opens (or creates) the database
    deadline = time.monotonic() + 300
    while len(list(home.glob("reader-*.ready"))) < 2:  # both readers are reading: writing overlaps them
        assert time.monotonic() < deadline, "the readers never started"
        time.sleep(0.05)
    summary = {"tokens_read": 1, "cycles": 0, "entries": 8, "peak_entries": 8, "read_seconds": 0.1}
    for i in range(int(sys.argv[2])):
        content_hash = hashlib.sha256(str(i).encode()).hexdigest()
        doc = store.documents.record(content_hash, f"doc-{i}.txt", None, 10, None, "text", None)
        pot = store.claim_pot(doc.id, "tiny", "tiny-model", {"pot_size": 16}, "infinipot")
        for step in range(2):
            tensors = {"keys.0": torch.full((1, 1, 8, 4), float(step)), "origin": torch.arange(8)}
            store.save_checkpoint(pot.id, tensors, {"step": step}, step, {"chunk_tokens": 256}, summary)
        store.complete_pot(pot.id, {"keys.0": torch.full((1, 1, 8, 4), float(i))}, frozenset(), {}, summary)
        conversation = store.conversations.create(doc.id, pot.id)
        store.conversations.append_many(conversation.id, [("user", "q", None), ("assistant", "a", None)])
    print("written")
    """
)

READER = textwrap.dedent(
    """
    import json, os, sys
    from pathlib import Path
    from infinipot.storage.store import Store

    home = Path(sys.argv[1])
    store = Store(home)
    target, seen, reads = int(sys.argv[2]), 0, 0
    while seen < target:
        complete = 0
        for doc in store.documents.all():
            for pot in store.pots.for_document(doc.id):
                if pot.status == "complete":
                    keys = store.load_pot(pot)["keys.0"]  # a complete row always names an intact file
                    assert float(keys[0, 0, 0, 0]) == int(doc.name[4:-4]), (doc.name, keys)
                    complete += 1
            for conversation in store.conversations.for_document(doc.id):
                assert len(store.conversations.messages(conversation.id)) in (0, 2)  # never half an exchange
        assert complete >= seen, "complete pots went missing"
        seen = complete
        reads += 1
        if reads == 1:
            (home / f"reader-{os.getpid()}.ready").touch()
    print(json.dumps({"reads": reads, "seen": seen}))
    """
)


def test_two_readers_and_a_writer_at_once(tmp_path):
    home = tmp_path / "shared-home"
    count = 25
    env = {**os.environ, "INFINIPOT_HOME": str(home)}

    def start(script):
        return subprocess.Popen(
            [sys.executable, "-c", script, str(home), str(count)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    # all three start on an empty folder, so they also race to create the database and apply migrations
    processes = [start(READER), start(WRITER), start(READER)]
    results = [process.communicate(timeout=600) for process in processes]
    for process, (_, err) in zip(processes, results, strict=True):
        assert "locked" not in err
        assert process.returncode == 0, err
    assert results[1][0].strip() == "written"
    for out, _ in (results[0], results[2]):
        report = json.loads(out.strip().splitlines()[-1])
        # the first read came before the writer began, so every reader also read while it was writing
        assert report["seen"] == count and report["reads"] >= 2
