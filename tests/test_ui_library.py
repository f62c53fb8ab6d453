"""The app with a library: "All documents" in the Document selector asks every ready document at once and
answers in the chat with each source naming its document; a folder is read like dropped files, under one
progress line for the library. Handler level, tiny random models."""

import json
import re

import gradio as gr
import pytest
from helpers import answer_args, make_workspace, tiny_settings, wait_until

from infinipot.app.web.jobs import folder_seconds_left
from infinipot.app.web.page import render
from infinipot.app.web.page.handlers import ALL_DOCUMENTS_BUTTONS, SETTING_NAMES, Handlers, shown_document
from infinipot.app.web.shared_phrases import ALL_DOCUMENTS

ANIMALS = ("zebra", "walrus", "otter")


def notes(folder, animal: str):
    path = folder / f"{animal}.txt"
    text = "\n".join(f"Entry {i}: the keeper fed the {animal} at {i} o'clock near gate {i * 3}." for i in range(24))
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def library(tmp_path, infinipot_home, tiny_model_dir):
    """A workspace whose three notes are read (room in the pot for passages beside a question), and whose
    library questions use the tiny model in place of the default one."""
    workspace = make_workspace(infinipot_home)
    settings = tiny_settings(tiny_model_dir, pot_size=2048, keep_size=512)
    paths = [str(notes(tmp_path, animal)) for animal in ANIMALS]
    handlers = Handlers(workspace)
    handlers.upload_folder([*paths, str(tmp_path / ".hidden")], *[settings[name] for name in SETTING_NAMES])
    wait_until(lambda: workspace.ready_count() == 3, what="three documents read")
    models = workspace.service.library.models
    real_get = models.get
    models.get = lambda name, dtype=None: real_get(tiny_model_dir, dtype)
    yield workspace, handlers
    workspace.close()


def test_all_documents_answers_in_the_chat_with_each_source_naming_its_document(library):
    workspace, handlers = library
    table, choices, progress = handlers.library(None)
    assert choices["choices"][0] == ("All documents (3 ready)", ALL_DOCUMENTS)
    chat, state, history, hint, _ = handlers.select(ALL_DOCUMENTS)
    assert chat == [] and state["doc_id"] == ALL_DOCUMENTS and "all 3 ready documents" in hint

    answers = answer_args(max_new_tokens=8)
    shown, box, state = handlers.show_question(ALL_DOCUMENTS, "When was the otter fed?", [], state, None, *answers)
    assert shown[-2]["content"] == "When was the otter fed?" and box == ""
    *_, (final, _, _) = handlers.ask(state, None, *answers)
    answer = final[-1]
    text = re.sub(r"<[^>]+>", "", answer["content"])  # each source's label holds its text as hover text
    assert re.search(r"(Sources|Closest passages): otter\.txt, line \d+", text), text
    otter = workspace.service.find_document("otter.txt").id
    first = answer["options"][0]
    assert first["label"].startswith("otter.txt, line ") and json.loads(first["value"])["doc_id"] == otter
    assert workspace.service.conversations(otter) == []  # no document's conversation holds it

    # A second question keeps the first in the chat.
    shown, _, state = handlers.show_question(ALL_DOCUMENTS, "Where was the zebra fed?", final, state, None, *answers)
    *_, (final, _, _) = handlers.ask(state, None, *answers)
    assert len(final) == 4 and "zebra.txt, line" in final[-1]["content"]

    # Its source opens that document's kept view, the Document selector left on All documents.
    start, tabs, quoted, viewed = handlers.open_source(
        gr.SelectData(None, {"index": 0, "value": first["value"]}), ALL_DOCUMENTS
    )
    assert viewed == otter and tabs["selected"] == "kept"
    caption = handlers.show_kept(ALL_DOCUMENTS, 0, "0", start, 200, "position", quoted, viewed)[0]
    assert "Cannot show" not in caption and caption.startswith("**otter.txt** · ")  # which document this is
    assert "Open a source" in handlers.show_kept(ALL_DOCUMENTS, 0, "0", 0, 200, "position", None, None)[0]


def test_with_all_documents_chosen_only_questions_can_be_asked(library):
    workspace, handlers = library
    table, choices, progress, seen, *buttons = handlers.refresh(ALL_DOCUMENTS, {})
    assert [b["interactive"] for b in buttons] == [False, False, False, True, False, False, False]
    assert seen["buttons"] == ALL_DOCUMENTS_BUTTONS
    # Ask across documents is not among them: it follows the documents picked beside it, two or more.
    from infinipot.app.web.page.questions import across_button

    assert [across_button(chosen)["interactive"] for chosen in (None, [], ["a"], ["a", "a"], ["a", "b"])] == [
        False,
        False,
        False,
        False,
        True,
    ]
    with pytest.raises(gr.Error, match="All documents answers questions only"):
        handlers.show_summary_request(ALL_DOCUMENTS, [], {}, None, *answer_args())


def job(name, status, total=None, read=0, first=None, last=None, size=0):
    """A read queue snapshot, as far as the library's line and the folder's ETA use one."""
    return {
        "name": name,
        "status": status,
        "tokens_total": total,
        "tokens_read": read,
        "first_step": first,
        "last_step": last,
        "resumed_at": 0,
        "file_bytes": size,
    }


def test_the_library_line_counts_the_documents_as_the_library_lists_them():
    rows = [
        {"name": "old.pdf", "state": "ready"},  # read before the folder was added
        {"name": "a.txt", "state": "ready"},
        {"name": "b.txt", "state": "reading"},
        {"name": "c.txt", "state": "queued"},
        {"name": "d.pdf", "state": "failed"},
    ]
    batch = {"jobs": [job("a.txt", "done"), job("b.txt", "reading"), job("c.txt", "queued")], "seconds_left": 16.0}
    line = render.library_progress_text(rows, batch)
    assert line == "Library: 2 of 5 documents done (1 not read); reading b.txt; 1 waiting; about 16 s left"
    # Once all are read: every document listed is counted (issue 66 read "3 of 3 documents done" beside 4 listed).
    rows = [{"name": name, "state": "ready"} for name in ("old.pdf", "a.txt", "b.txt", "c.txt")]
    done = {"jobs": [job(name, "done") for name in ("a.txt", "b.txt", "c.txt")], "seconds_left": None}
    assert render.library_progress_text(rows, done) == "Library: 4 of 4 documents done"
    assert render.library_progress_text(rows, {"jobs": done["jobs"][:1], "seconds_left": None}) == ""  # one file


def test_the_folders_eta_is_its_tokens_left_at_its_own_speed_counted_down_between_steps():
    # a.txt read 1,000 tokens, its first step at 10 s; b.txt (its counting and first step in the span) reads at 30 s:
    # 2,000 tokens since the folder's first step, in 20 s: 100 tokens/s.
    batch = [
        job("a.txt", "done", 1000, 1000, first=(10.0, 250), last=(20.0, 1000), size=4000),
        job("b.txt", "reading", 2000, 1250, first=(24.0, 250), last=(30.0, 1250), size=8000),
        job("c.txt", "queued", size=5000),  # not counted yet: 0.25 tokens a byte, as a.txt and b.txt, 1,250 tokens
    ]
    # 750 of b.txt and 1,250 of c.txt left at 100 tokens/s, falling a second a second until the next step (the old
    # ETA, one document's rate up to now, swung between 2 min 41 s and 5 min 22 s every second).
    assert [folder_seconds_left(batch, now) for now in (30.0, 31.0, 32.0, 35.0)] == pytest.approx([20, 19, 18, 15])
    batch[1] = job("b.txt", "reading", 2000, 1450, first=(24.0, 250), last=(32.0, 1450), size=8000)
    assert folder_seconds_left(batch, 32.0) == pytest.approx(18.0)  # the next step measures the same speed again
    assert folder_seconds_left(batch, 500.0) == 1.0  # a step long overdue: about a second, never a negative time
    # Before a second step there is no speed to go by; nothing left to read: no ETA.
    assert folder_seconds_left([job("a.txt", "reading", 1000, 250, (10.0, 250), (10.0, 250)), batch[2]], 11) is None
    assert folder_seconds_left([{**batch[0]}, {**batch[1], "status": "done"}], 40.0) is None


def test_an_upload_behind_a_read_leaves_the_chooser_on_the_document_being_read(
    tmp_path, infinipot_home, tiny_model_dir
):
    workspace = make_workspace(infinipot_home, pace=0.3)
    handlers = Handlers(workspace)
    settings = [tiny_settings(tiny_model_dir)[name] for name in SETTING_NAMES]
    try:
        _, _, choose, _ = handlers.upload([str(notes(tmp_path, "zebra"))], *settings)
        zebra = choose["value"]  # nothing else to read: the upload is read now, and chosen
        wait_until(lambda: workspace.progress(zebra)["status"] == "reading", what="zebra.txt read")
        folder = tmp_path / "folder"
        folder.mkdir()
        _, _, choose = handlers.upload_folder([str(notes(folder, "walrus")), str(notes(folder, "otter"))], *settings)
        assert "value" not in choose and len(choose["choices"]) == 3  # listed, not chosen: they wait their turn
        # A reload (nothing chosen): the document being read, not the last one queued, whose bar would be empty.
        _, choices, progress = handlers.library(None)
        assert choices["value"] == zebra and "zebra.txt: reading" in progress
        assert "Library: 0 of 3 documents done; reading zebra.txt; 2 waiting" in progress
    finally:
        workspace.close()


def test_with_nothing_chosen_the_chooser_shows_the_read_never_a_queued_document():
    def rows(*states):
        return [{"doc_id": f"doc{i}", "state": state} for i, state in enumerate(states)]

    assert shown_document(rows("ready", "reading", "queued", "queued")) == "doc1"
    assert shown_document(rows("ready", "counting", "queued")) == "doc1"
    assert shown_document(rows("ready", "cancelled", "queued")) == "doc1"  # the latest not waiting
    assert shown_document(rows("queued", "queued")) == "doc1"  # only queued ones: the latest
    assert shown_document([]) is None
