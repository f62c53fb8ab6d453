"""The terminal as a first-time user meets it: a stored document named as `list` prints it, and reading progress
that is a bar on a terminal and whole lines in a log."""

import io
import re

import pytest
from helpers import expect_one_line_error, run_json
from tiny_models import write_notes

from infinipot.app.cli import main
from infinipot.app.cli.progress import ReadProgress
from infinipot.storage.store import Store

POT = ["--pot-size", "128", "--keep", "48"]


class FakePot:
    def __init__(self, tokens: int, cycles: int) -> None:
        self.document_tokens, self.cycles, self.entries = tokens, cycles, 100


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_stored_document_answers_to_the_name_that_list_prints(
    tmp_path, tiny_model_dir, capsys, monkeypatch, infinipot_home
):
    notes = write_notes(tmp_path / "notes.txt", lines=12)
    read = run_json(capsys, ["read", str(notes), "--model", tiny_model_dir, *POT, "--json"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # "notes.txt" is no file here: only the stored name can match
    answer = run_json(capsys, ["ask", "notes.txt", "What does the fox do?", "--max-new-tokens", "6", "--json"])
    conversation = Store(infinipot_home).conversations.get(answer["conversation_id"])
    assert conversation.document_id == read["doc_id"]


def test_a_name_two_stored_documents_share_lists_both(tmp_path, tiny_model_dir, capsys, monkeypatch):
    ids = []
    for folder, tag in (("a", ""), ("b", "-b")):
        (tmp_path / folder).mkdir()
        notes = write_notes(tmp_path / folder / "notes.txt", lines=12, tag=tag)
        ids.append(run_json(capsys, ["read", str(notes), "--model", tiny_model_dir, *POT, "--json"])["doc_id"])
    monkeypatch.chdir(tmp_path)
    expect_one_line_error(capsys, ["ask", "notes.txt", "Anything?"], "2 stored documents are named notes.txt")
    main(["ask", "notes.txt", "Anything?"])
    line = capsys.readouterr().err
    assert all(doc_id in line for doc_id in ids) and "give the doc_id" in line


def test_progress_off_a_terminal_is_whole_lines():
    stream = io.StringIO()
    progress = ReadProgress(stream, plain_every=0.0)
    for step in range(3):
        progress(FakePot(1000 * step, step))
    progress.close()
    assert "\r" not in stream.getvalue()
    assert stream.getvalue().splitlines() == [f"read {1000 * s:,} tokens, {s} compressions" for s in range(3)]


def test_progress_on_a_terminal_is_a_bar_rewritten_in_place():
    stream = Terminal()
    progress = ReadProgress(stream)
    progress(FakePot(0, 0))
    progress(FakePot(2048, 1))
    progress.close()
    shown = stream.getvalue()
    assert shown.count("\r") >= 2 and "\n" not in shown.strip("\n")  # redrawn on one line, cleared at the end
    assert "reading:" in shown and "tokens" in shown


@pytest.mark.slow  # a read long enough for a plain progress line
def test_a_captured_read_never_runs_progress_lines_together(tmp_path, tiny_model_dir, capsys, monkeypatch):
    monkeypatch.setattr("infinipot.app.cli.progress.PLAIN_EVERY_SECONDS", 0.0)
    notes = write_notes(tmp_path / "notes.txt", lines=60)
    assert main(["read", str(notes), "--model", tiny_model_dir, *POT]) == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert all(line.startswith(("read ", "infinipot:")) or not line for line in err.splitlines()), err


def test_a_read_says_what_happened_in_words(tmp_path, tiny_model_dir, capsys):
    notes = write_notes(tmp_path / "notes.txt", lines=30)
    assert main(["read", str(notes), "--model", tiny_model_dir, *POT]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"notes\.txt: read [\d,]+ tokens through a 128-entry memory pot in \d+ compressions; it keeps \d+ entries "
        r"\(peak 128\) in [\d.]+ s\. doc_id [0-9a-f]{16}",
        line,
    ), line
    assert main(["read", str(notes), "--model", tiny_model_dir, *POT]) == 0
    again = capsys.readouterr().out.strip().splitlines()[-1]
    assert "the stored pot is reused" in again


def test_the_make_run_sample_is_the_generated_one_with_its_answer_in_the_middle():
    from benchmarks.devset.make_sample import DEFAULT_OUT, sample_text

    text = sample_text()
    assert DEFAULT_OUT.read_text(encoding="utf-8") == text  # regenerate with python -m benchmarks.devset.make_sample
    assert 0.3 < text.index("is 7419") / len(text) < 0.7
    assert 45_000 < len(text) < 65_000  # about 12K tokens of the default model: several compressions of its pot
