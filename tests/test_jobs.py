"""The read queue and the workspace on a tiny model: one read at a time, live progress, Cancel between chunks,
Resume, failures with their reason, upload checks, settings validation (reads and answers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import make_workspace, tiny_settings, wait_until
from tiny_models import save_model_folder, write_notes

from infinipot.app.ask.modes import AnswerSettings
from infinipot.app.web.jobs import MemoryLog
from infinipot.app.web.settings import AnswerChoices
from infinipot.app.web.workspace import ReadSettings, safe_file_name
from infinipot.core.config import NUC_UNITS


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_model_folder(tmp_path_factory.mktemp("tiny-llama"))


def rows_by_name(workspace):
    return {row["name"]: row for row in workspace.library()}


def test_reads_run_one_at_a_time_cancel_stops_between_chunks_and_resume_finishes(tmp_path, infinipot_home, model_dir):
    first = write_notes(tmp_path / "first.txt", lines=14)
    second = write_notes(tmp_path / "second.txt", lines=6, tag="b")
    workspace = make_workspace(infinipot_home, pace=0.2)
    try:
        results = workspace.add_files([str(first)], tiny_settings(model_dir))
        per_word = {**tiny_settings(model_dir), "nuc_unit": "word"}  # the Settings tab's NuC unit reaches the read
        results += workspace.add_files([str(second)], per_word)
        assert [r["ok"] for r in results] == [True, True]
        first_id = results[0]["doc_id"]

        rows = wait_until(lambda: (r := rows_by_name(workspace)) and r["first.txt"]["state"] == "reading" and r)
        assert rows["second.txt"]["status"] == "queued"  # the second upload waits for the first
        wait_until(lambda: workspace.progress(first_id)["tokens_read"] > 0)
        assert "stopping after the current chunk" in workspace.cancel(first_id)

        cancelled = wait_until(lambda: (p := workspace.progress(first_id))["status"] == "cancelled" and p)
        assert 0 < cancelled["tokens_read"] < cancelled["tokens_total"]
        assert rows_by_name(workspace)["first.txt"]["status"].startswith("cancelled at")
        wait_until(lambda: rows_by_name(workspace)["second.txt"]["state"] == "ready", timeout=180)
        assert rows_by_name(workspace)["first.txt"]["state"] == "cancelled"  # the worker went on to the next read
        (second_pot,) = workspace.service.document(results[1]["doc_id"])["pots"]
        assert second_pot["config"]["nuc_unit"] == "word"

        assert workspace.resume(first_id) == "first.txt: queued again"
        # The resumed read shows where it stands from its first moment, never 0 of the total.
        resumed = wait_until(lambda: (p := workspace.progress(first_id))["status"] in ("reading", "done") and p)
        assert resumed["tokens_read"] >= cancelled["tokens_read"], resumed
        wait_until(lambda: rows_by_name(workspace)["first.txt"]["state"] == "ready", timeout=180)
        done = workspace.progress(first_id)
        assert done["status"] == "done" and done["tokens_read"] == done["tokens_total"] and done["cycles"] > 0
        assert done["resumed_from"] == cancelled["tokens_read"]  # Cancel kept every chunk read before it
        with pytest.raises(ValueError, match="already read"):
            workspace.resume(first_id)
        memory = workspace.memory(first_id)
        assert memory["live"] is False and memory["last"]["tokens"] == done["tokens_total"]
    finally:
        workspace.close()


def test_a_queued_read_can_be_cancelled_before_it_starts(tmp_path, infinipot_home, model_dir):
    first = write_notes(tmp_path / "first.txt", lines=8)
    second = write_notes(tmp_path / "second.txt", lines=4, tag="b")
    workspace = make_workspace(infinipot_home, pace=0.2)
    try:
        results = workspace.add_files([str(first), str(second)], tiny_settings(model_dir))
        assert workspace.cancel(results[1]["doc_id"]) == "second.txt: removed from the queue"
        with pytest.raises(ValueError, match="being read; cancel the read before deleting"):
            workspace.delete(results[0]["doc_id"])
        assert workspace.reads.wait_idle(180)
        rows = rows_by_name(workspace)
        assert rows["first.txt"]["state"] == "ready"
        assert rows["second.txt"]["state"] == "cancelled" and workspace.progress(results[1]["doc_id"])["cycles"] == 0
        assert workspace.delete(results[1]["doc_id"]) == "removed second.txt"
        assert "second.txt" not in rows_by_name(workspace)
    finally:
        workspace.close()


def test_a_failed_read_shows_its_reason_and_the_queue_goes_on(tmp_path, infinipot_home, model_dir):
    notes = write_notes(tmp_path / "notes.txt", lines=4)
    other = write_notes(tmp_path / "other.txt", lines=4, tag="x")
    workspace = make_workspace(infinipot_home)
    try:
        workspace.add_files([str(notes)], tiny_settings(model_dir, pot_size=16, keep_size=8))
        workspace.add_files([str(other)], tiny_settings(model_dir))
        assert workspace.reads.wait_idle(180)
        rows = rows_by_name(workspace)
        assert rows["notes.txt"]["status"].startswith("failed: pot of 16 entries has no room to read")
        assert rows["other.txt"]["state"] == "ready"
        with pytest.raises(ValueError, match="is not ready"):
            workspace.ask(rows["notes.txt"]["doc_id"], "Anything?", {"max_new_tokens": 8}, None)
    finally:
        workspace.close()


def test_uploads_are_checked_and_kept_in_the_data_directory(tmp_path, infinipot_home, model_dir):
    big = tmp_path / "big.log"
    big.write_text("x" * (2 << 20))
    folder = tmp_path / "a folder.txt"
    folder.mkdir()
    notes = write_notes(tmp_path / "notes.txt", lines=4)
    workspace = make_workspace(infinipot_home, pace=0.2)  # 1 MB upload limit; slow enough to still be reading
    try:
        results = workspace.add_files([str(big), str(folder), str(notes)], tiny_settings(model_dir))
        assert [r["ok"] for r in results] == [False, False, True]
        assert "above the upload limit of 1.0 MB" in results[0]["message"]
        assert "is a folder" in results[1]["message"]
        kept = infinipot_home / "uploads" / results[2]["doc_id"] / "notes.txt"
        assert kept.read_bytes() == notes.read_bytes()
        again = workspace.add_files([str(notes)], tiny_settings(model_dir))
        assert not again[0]["ok"] and "already queued or being read" in again[0]["message"]
        assert workspace.reads.wait_idle(180)
    finally:
        workspace.close()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pot_size": 4096.5}, "pot size must be a whole number"),
        ({"pot_size": "many"}, "pot size must be a whole number"),
        ({"keep_size": 5000}, "kept size must be between 1 and the pot size"),
        ({"nuc_ratio": 1.5}, "NuC ratio must be between 0 and 1"),
        ({"cap_mode": "question", "question": " "}, "CaP mode 'question' needs a question"),
        ({"method": "magic"}, "unknown method 'magic'"),
        ({"nuc_unit": "paragraph"}, "NuC unit must be one of sentence, word-edges, word, token"),
        ({"model": "./missing-model"}, "model folder ./missing-model does not exist"),
        ({"model": "not a model id"}, "neither 'default', a model folder, nor a hub id"),
    ],
)
def test_invalid_settings_get_a_clear_message(changes, message):
    settings = ReadSettings(**changes)
    with pytest.raises(ValueError, match=message):
        settings.pot_config()
        settings.model_name()


def test_valid_settings_are_described():
    text = ReadSettings(model="HuggingFaceTB/SmolLM2-360M-Instruct", pot_size=2048, keep_size=None).describe()
    assert "1,024 kept each time it is full" in text and "hub id" in text and "mattering to a summary" in text
    assert "bundled SmolLM2-135M" in ReadSettings().describe()
    assert "50% for surprising the model, per sentence" in ReadSettings().describe()
    assert NUC_UNITS[0] == ReadSettings().nuc_unit  # the Settings tab preselects the first unit
    per_word = ReadSettings(nuc_unit="word")
    assert per_word.pot_config().nuc_unit == "word" and "50% for surprising the model, per word" in per_word.describe()


def test_answer_choices_default_to_the_services_settings_and_are_described():
    assert AnswerChoices().answer_settings() == AnswerSettings()  # the defaults are the service's, not retyped
    text = AnswerChoices().describe()
    assert text.startswith("Answers are valid: from the model's memory of the document plus the passages it points")
    assert "up to 1,024 tokens of passages" in text and "greedy" in text and "stop when they repeat" in text
    assert "the best 3 by the question's likelihood read on their own" in text
    everything = AnswerChoices(evidence_pot="all", evidence_spans=0).describe()
    assert "every one read after the model's whole memory" in everything
    # As the form gives them: floats from number fields, a cleared field refused with its name.
    form = AnswerChoices(max_new_tokens=64.0, answer_from="focus", focus_entries=512.0, temperature=0.7, seed=3.0)
    settings = form.answer_settings()
    assert (settings.answer_from, settings.focus_entries, settings.decoding.seed) == ("focus", 512, 3)
    assert settings.decoding.max_new_tokens == 64 and settings.decoding.temperature == 0.7
    assert "a copy of the model's memory focused on the question (512 tokens)" in form.describe()
    assert "sampled at randomness 0.7, among the likeliest words up to 1, seed 3" in form.describe()
    assert "may repeat themselves" in AnswerChoices(answer_from="pot", stop_on_repeat=False).describe()
    assert "contrasted" not in text
    contrasted = AnswerChoices(contrast=0.5)
    assert contrasted.answer_settings().decoding.contrast == 0.5
    assert "greedy), contrasted with the answer without the document (weight 0.5)" in contrasted.describe()


def test_uploaded_names_cannot_escape_the_upload_folder():
    assert safe_file_name("../../etc/passwd") == "passwd"
    assert safe_file_name("report <final>.pdf") == "report _final_.pdf"
    assert safe_file_name("..") == "document"


class FakePot:
    def __init__(self, tokens: int) -> None:
        self.document_tokens = tokens
        self.tokens_read = tokens + 3
        self.entries = min(tokens + 3, 10)

    def nbytes(self) -> int:
        return self.entries * 100


class FakeProcess:
    def memory_info(self):
        return type("Info", (), {"rss": 123})()


def test_memory_log_keeps_at_most_its_limit_spread_over_the_whole_read():
    log = MemoryLog(limit=8)
    for tokens in range(1, 101):
        log.add(FakePot(tokens), FakeProcess())
    tokens = [sample["tokens"] for sample in log.samples]
    assert len(tokens) <= 8 and tokens == sorted(tokens)
    assert tokens[0] == 1 and tokens[-1] > 80
    last = log.samples[-1]
    assert last["pot_bytes"] == 1000 and last["full_kv_bytes"] == 100 * (last["tokens"] + 3)


def test_pages_navigate_the_kept_view_and_bin_the_retention_map(infinipot_home, model_dir):
    pdf = Path(__file__).parent / "fixtures" / "ingest" / "sample.pdf"
    workspace = make_workspace(infinipot_home)
    try:
        doc_id = workspace.add_files([str(pdf)], tiny_settings(model_dir))[0]["doc_id"]
        assert workspace.reads.wait_idle(180)
        assert rows_by_name(workspace)["sample.pdf"]["pages"] == 5
        fourth = workspace.page_start(doc_id, 4)
        assert 0 < workspace.page_start(doc_id, 2) < fourth < workspace.page_start(doc_id, 5)
        assert workspace.page_start(doc_id, 3) == fourth  # page 3 of the fixture is empty
        window = workspace.kept_window(doc_id, 0, None, fourth, 20)
        assert window["where"] == "page 4, line 1" and window["start"] == fourth
        assert workspace.retention(doc_id, by_page=True)["labels"] == [f"page {i}" for i in range(1, 6)]
        with pytest.raises(ValueError, match="page must be between 1 and 5"):
            workspace.page_start(doc_id, 9)
    finally:
        workspace.close()
