"""Reading a library on Ray workers (a local Ray instance, tiny random models): the pots equal the ones read here,
and a worker killed mid-document does not lose the document."""

import os
import signal

import psutil
import pytest
import torch

from infinipot.app.read.workers import WorkerSettings
from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig
from infinipot.storage.store import Store

pytestmark = pytest.mark.slow
ray = pytest.importorskip("ray", reason="make test installs infinipot[ray]")

CONFIG = PotConfig(pot_size=128, keep_size=48)


def write_documents(folder, count: int, lines: int = 60):
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        text = "\n".join(f"Note {n}.{i}: the {n}th keeper counted {i * (n + 3)} boats at dawn." for i in range(lines))
        (folder / f"note-{n}.txt").write_text(text, encoding="utf-8")
    return folder


def stored_pots(home) -> dict[str, dict]:
    store = Store(home)
    pots = {}
    for document in store.documents.all():
        (pot,) = [p for p in store.pots.for_document(document.id) if p.status == "complete"]
        pots[document.name] = {"tensors": store.load_pot(pot), "counters": pot.counters, "tokens": pot.tokens_read}
    return pots


def read_all(home, folder, model, workers=None, on_progress=None):
    service = DocumentService(home, device="cpu")
    progress, missing, done = service.read_library([str(folder)], CONFIG, model, workers, on_progress)
    return progress, list(done)


def test_two_workers_read_five_documents_into_the_pots_read_here(tmp_path, tiny_model_dir):
    folder = write_documents(tmp_path / "docs", 5)
    torch.set_num_threads(1)  # as each worker reads: the same arithmetic, bit for bit
    _, here = read_all(tmp_path / "here", folder, tiny_model_dir)
    progress, there = read_all(tmp_path / "there", folder, tiny_model_dir, WorkerSettings(workers=2))
    assert [d.error for d in here + there] == [None] * 10
    assert progress.read == 5 and progress.done == 5
    ours, theirs = stored_pots(tmp_path / "here"), stored_pots(tmp_path / "there")
    assert ours.keys() == theirs.keys() and len(ours) == 5
    for name in ours:
        assert ours[name]["counters"] == theirs[name]["counters"], name
        assert ours[name]["tensors"].keys() == theirs[name]["tensors"].keys()
        for key, tensor in ours[name]["tensors"].items():
            assert torch.equal(tensor, theirs[name]["tensors"][key]), (name, key)
    store = Store(tmp_path / "there")
    assert all(store.passages.count(d.id) > 0 for d in store.documents.all())  # the writer indexed them
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def reader_processes() -> list[psutil.Process]:
    """The workers' processes: Ray titles each "ray::PotReader", then ".read" or ".progress" while a call runs
    (the title follows the latest call, so a worker mid-document may read "ray::PotReader" alone)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        if any(part.startswith("ray::PotReader") for part in process.info["cmdline"] or []):
            found.append(process)
    return found


def test_a_worker_killed_mid_document_does_not_lose_it(tmp_path, tiny_model_dir):
    folder = write_documents(tmp_path / "docs", 3, lines=3000)  # long enough to be seen mid-read at one look a second
    killed = []

    def kill_the_readers_mid_document(progress):
        if killed or not any(tokens > 0 for tokens in progress.current.values()):
            return
        for process in reader_processes():
            os.kill(process.pid, signal.SIGKILL)
            killed.append(process.pid)

    progress, done = read_all(
        tmp_path / "home", folder, tiny_model_dir, WorkerSettings(workers=2), kill_the_readers_mid_document
    )
    assert killed, "no worker was seen mid-document"
    assert [d.error for d in done] == [None] * 3
    assert progress.read == 3
    store = Store(tmp_path / "home")
    assert len(store.documents.all()) == 3
    assert all(p.status == "complete" for d in store.documents.all() for p in store.pots.for_document(d.id))
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
