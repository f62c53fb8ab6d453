"""The app with a library: "All documents" in the Document selector asks every ready document at once and
answers in the chat with each source naming its document; a folder is read like dropped files, under one
progress line for the library. Handler level, tiny random models."""

import json
import re

import gradio as gr
import pytest
from helpers import answer_args, make_workspace, tiny_settings, wait_until

from infinipot.app.web.page import render
from infinipot.app.web.page.handlers import ALL_DOCUMENTS_BUTTONS, SETTING_NAMES, Handlers
from infinipot.app.web.wording import ALL_DOCUMENTS

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
    assert "Cannot show" not in caption and caption
    assert "Open a source" in handlers.show_kept(ALL_DOCUMENTS, 0, "0", 0, 200, "position", None, None)[0]


def test_with_all_documents_chosen_only_questions_can_be_asked(library):
    workspace, handlers = library
    table, choices, progress, seen, *buttons = handlers.refresh(ALL_DOCUMENTS, {})
    assert [b["interactive"] for b in buttons] == [False, False, False, True, False, False, False, True]
    assert seen["buttons"] == ALL_DOCUMENTS_BUTTONS
    with pytest.raises(gr.Error, match="All documents answers questions only"):
        handlers.show_summary_request(ALL_DOCUMENTS, [], {}, None, *answer_args())


def test_the_library_line_counts_the_documents_read_together():
    batch = [
        {"name": "a.txt", "status": "done", "tokens_per_second": 100.0, "tokens_total": 1000, "tokens_read": 1000},
        {"name": "b.txt", "status": "reading", "tokens_per_second": 100.0, "tokens_total": 1000, "tokens_read": 400},
        {"name": "c.pdf", "status": "failed", "tokens_per_second": None, "tokens_total": None, "tokens_read": 0},
        {"name": "d.txt", "status": "queued", "tokens_per_second": None, "tokens_total": None, "tokens_read": 0},
    ]
    line = render.library_progress_text(batch)
    assert line.startswith("Library: 2 of 4 documents done (1 not read); reading b.txt; 1 waiting; about ")
    assert "16 s left" in line  # 600 tokens of b.txt and a mean document (1,000) for d.txt, at 100 tokens/s
    assert render.library_progress_text(batch[:1]) == ""  # one file: its own line says it all
