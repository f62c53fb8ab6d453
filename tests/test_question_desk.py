"""The app's question features without a browser: the re-read queued in the read queue with both answers side by
side, and a question across ready documents, through the workspace and the Gradio handlers."""

from __future__ import annotations

import gradio as gr
import pytest
from helpers import make_workspace, tiny_settings
from tiny_models import write_notes

from infinipot.app.web.page import build_app
from infinipot.app.web.page.questions import QuestionFeatures

QUESTION = "What does the fox do?"


@pytest.fixture
def workspace(infinipot_home, tmp_path, tiny_model_dir):
    workspace = make_workspace(infinipot_home)
    paths = [write_notes(tmp_path / "first.txt", lines=30), write_notes(tmp_path / "second.txt", lines=20, tag="b")]
    results = workspace.add_files([str(p) for p in paths], tiny_settings(tiny_model_dir, pot_size=128, keep_size=48))
    assert workspace.reads.wait_idle(300)
    workspace.doc_ids = [r["doc_id"] for r in results]
    yield workspace
    workspace.close()


def test_reread_goes_through_the_queue_keeps_the_general_pot_and_is_reused(workspace):
    desk, first = workspace.questions, workspace.doc_ids[0]
    assert desk.start_reread(first, QUESTION) is True
    assert workspace.reads.wait_idle(300)
    assert desk.reread_status(first) == {"finished": True, "ok": True, "fraction": 1.0, "message": ""}

    doc = workspace.service.document(first)
    assert [pot["config"]["cap_mode"] for pot in doc["pots"]] == ["general", "question"]
    row = next(row for row in workspace.library() if row["doc_id"] == first)
    assert row["ready"] and row["pot_entries"] == doc["pots"][0]["entries"]
    assert workspace.service.read_log(first)["settings"]["cap_mode"] == "general"  # memory view: the general read

    general, question_aware = desk.side_by_side(first, QUESTION, 6)
    stored = workspace.service.open_pot(first)
    assert stored.engine.config.cap_mode == "general"
    assert "".join(general) == "".join(stored.engine.answer(stored.pot, QUESTION, 6))
    pieces, _, reused = workspace.service.reread_for_question(first, QUESTION, 6)
    assert reused is True and "".join(question_aware) == "".join(pieces)  # the CaP-Q pot read by the queue
    assert desk.start_reread(first, QUESTION) is False  # stored: nothing is queued
    assert workspace.reads.latest(first).request.config.question == QUESTION


def test_reread_handler_streams_both_answers_and_reports_user_errors(workspace):
    features = QuestionFeatures(workspace, poll_seconds=0.05)
    updates = list(features.reread(workspace.doc_ids[1], "Who is lazy?", 5))
    assert any("Reading again" in update[0] for update in updates)
    status, general, question_aware = updates[-1]
    assert "read now" in status
    assert general.startswith("**General pot**") and question_aware.startswith("**Question-aware pot (read now)**")
    with pytest.raises(gr.Error, match="type a question first"):
        list(features.reread(workspace.doc_ids[1], "  ", 5))


def test_ask_across_ready_documents_names_both_and_needs_two(workspace):
    desk = workspace.questions
    assert sorted(doc_id for _, doc_id in desk.ready_documents()) == sorted(workspace.doc_ids)
    pieces, merge = desk.ask_across(workspace.doc_ids, QUESTION, 6)
    assert merge["citations"] == []  # filled once the answer is complete
    "".join(pieces)
    assert merge["citations"] and {c["document"] for c in merge["citations"]} <= set(workspace.doc_ids)
    assert all(c["label"].startswith(("first.txt, line", "second.txt, line")) for c in merge["citations"])
    assert [doc["doc_id"] for doc in merge["documents"]] == workspace.doc_ids
    assert merge["peak_entries"] <= merge["pot_size"] == 128 and merge["reused"] is False
    assert desk.ask_across(workspace.doc_ids, QUESTION, 6)[1]["reused"] is True
    with pytest.raises(ValueError, match="at least two"):
        desk.ask_across(workspace.doc_ids[:1], QUESTION, 6)

    features = QuestionFeatures(workspace)
    text = list(features.ask_across(workspace.doc_ids, QUESTION, 6))[-1]
    assert "first.txt" in text and "second.txt" in text and "Sources: " in text
    update = features.ready_choices([workspace.doc_ids[0], "gone"])
    assert update["value"] == [workspace.doc_ids[0]]


def test_the_page_wires_the_question_features_and_stop_cancels_them(infinipot_home):
    workspace = make_workspace(infinipot_home)  # building the page reads nothing
    try:
        blocks = build_app(workspace)
    finally:
        workspace.close()
    events = {fn.api_name: fn for fn in blocks.fns.values() if fn.api_name}

    def elem_ids(components):
        return [component.elem_id for component in components]

    reread, across = events["reread"], events["ask_across"]
    assert (type(reread.fn.__self__), reread.fn.__name__) == (QuestionFeatures, "reread")
    assert elem_ids(reread.inputs) == ["ip-document", "ip-question", "ip-answer-length"]
    assert elem_ids(reread.outputs) == ["ip-reread-status", "ip-general-answer", "ip-question-answer"]
    assert (type(across.fn.__self__), across.fn.__name__) == (QuestionFeatures, "ask_across")
    assert elem_ids(across.inputs) == ["ip-across-docs", "ip-question", "ip-answer-length"]
    assert elem_ids(across.outputs) == ["ip-across-answer"]
    assert reread.concurrency_id == across.concurrency_id == events["ask"].concurrency_id  # one model at a time

    stop_button = next(id_ for id_, block in blocks.blocks.items() if block.elem_id == "ip-stop")
    cancelled = {i for fn in blocks.fns.values() if (stop_button, "click") in fn.targets for i in fn.cancels or []}
    assert {reread._id, across._id, events["ask"]._id, events["summarize"]._id} <= cancelled
