"""The Chat tab's features without a browser, through the workspace and the Gradio handlers: the Settings tab's
answer choices reaching the service, summaries with their progress (stored, made anew, stopped), the re-read
queued in the read queue with both answers side by side, and a question across ready documents."""

from __future__ import annotations

import re
import threading
from dataclasses import fields

import gradio as gr
import pytest
from helpers import answer_args, make_workspace, tiny_settings, wait_until
from tiny_models import write_notes

from infinipot.app.web.page import build_app
from infinipot.app.web.page.handlers import ANSWER_NAMES, Handlers
from infinipot.app.web.page.questions import QuestionFeatures
from infinipot.app.web.page.sources import folded_summary
from infinipot.app.web.settings import AnswerChoices
from infinipot.core.decoding import DecodingConfig
from infinipot.core.summary import SummaryConfig

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

    general, question_aware = desk.side_by_side(first, QUESTION, {"max_new_tokens": 6})
    stored = workspace.service.open_pot(first)
    assert stored.engine.config.cap_mode == "general"
    assert "".join(general) == "".join(stored.engine.answer(stored.pot, QUESTION, 6))
    pieces, _, reused = workspace.service.reread_for_question(first, QUESTION, 6)
    assert reused is True and "".join(question_aware) == "".join(pieces)  # the CaP-Q pot read by the queue
    assert desk.start_reread(first, QUESTION) is False  # stored: nothing is queued
    assert workspace.reads.latest(first).request.config.question == QUESTION


def test_reread_handler_streams_both_answers_and_reports_user_errors(workspace):
    features = QuestionFeatures(workspace, poll_seconds=0.05)
    doc_id = workspace.doc_ids[1]
    updates = list(features.reread(doc_id, "Who is lazy?", [], {}, *answer_args(max_new_tokens=5)))
    # In the chat: the question, then the re-read's progress in the answer's bubble, then both answers.
    assert any("Reading the document again" in chat[-1]["content"] for chat, _, _ in updates)
    chat, state, conversations = updates[-1]
    assert chat[-2] == {"role": "user", "content": "Who is lazy? (read again for this question)"}
    both = chat[-1]["content"]
    assert both.startswith("**From the memory of the first read**")
    assert "**From a read for this question (read now)**" in both
    # Kept in the document's conversation, which the chat now adds to; a follow-up does not take it for a turn.
    assert [m["content"] for m in workspace.messages(state["conversation_id"])] == [chat[-2]["content"], both]
    assert conversations["value"] == state["conversation_id"] and state["doc_id"] == doc_id
    assert workspace.service.earlier_turns(state["conversation_id"]) == []
    with pytest.raises(gr.Error, match="type a question first"):
        list(features.reread(doc_id, "  ", [], {}, *answer_args(max_new_tokens=5)))
    with pytest.raises(gr.Error) as refused:
        list(features.reread(workspace.doc_ids[0], QUESTION, [], {}, *answer_args(seed=-1)))
    assert refused.value.message == "seed must be a non-negative whole number, got -1"
    assert workspace.reads.latest(workspace.doc_ids[0]).request.config.cap_mode == "general"  # no re-read queued


def test_ask_across_ready_documents_names_both_and_needs_two(workspace):
    desk = workspace.questions
    assert sorted(doc_id for _, doc_id in desk.ready_documents()) == sorted(workspace.doc_ids)
    pieces, merge = desk.ask_across(workspace.doc_ids, QUESTION, {"max_new_tokens": 6})
    assert merge["citations"] == []  # filled once the answer is complete
    "".join(pieces)
    assert merge["citations"] and {c["document"] for c in merge["citations"]} <= set(workspace.doc_ids)
    assert all(c["label"].startswith(("first.txt, line", "second.txt, line")) for c in merge["citations"])
    assert [doc["doc_id"] for doc in merge["documents"]] == workspace.doc_ids
    assert merge["peak_entries"] <= merge["pot_size"] == 128 and merge["reused"] is False
    assert desk.ask_across(workspace.doc_ids, QUESTION, {"max_new_tokens": 6})[1]["reused"] is True
    with pytest.raises(ValueError, match="at least two"):
        desk.ask_across(workspace.doc_ids[:1], QUESTION, {"max_new_tokens": 6})

    features = QuestionFeatures(workspace)
    asked = features.ask_across(workspace.doc_ids, QUESTION, None, [], {}, *answer_args(max_new_tokens=6))
    chat, state, _ = list(asked)[-1]
    assert chat[-2]["content"] == f"{QUESTION} (asked across first.txt, second.txt)"
    text = chat[-1]["content"]
    assert "first.txt" in text and "second.txt" in text and "Sources: " in text
    assert "no document is chosen, so it is not kept in a conversation" in text  # asked with none chosen
    chosen = workspace.doc_ids[0]
    chat, state, _ = list(
        features.ask_across(workspace.doc_ids, QUESTION, chosen, [], {}, *answer_args(max_new_tokens=6))
    )[-1]
    assert workspace.messages(state["conversation_id"])[-1]["content"] == chat[-1]["content"]  # kept with it
    update = features.ready_choices([workspace.doc_ids[0], "gone"])
    assert update["value"] == [workspace.doc_ids[0]]


def test_the_page_wires_the_question_features_and_stop_ends_them(infinipot_home):
    workspace = make_workspace(infinipot_home)  # building the page reads nothing
    try:
        blocks = build_app(workspace)
    finally:
        workspace.close()
    events = {fn.api_name: fn for fn in blocks.fns.values() if fn.api_name}

    def elem_ids(components):
        return [component.elem_id for component in components]

    answers = [
        "ip-answer-length",
        "ip-answer-from",
        "ip-evidence-tokens",
        "ip-evidence-ranking",
        "ip-evidence-pot",
        "ip-evidence-spans",
        "ip-focus-entries",
        "ip-temperature",
        "ip-top-p",
        "ip-seed",
        "ip-contrast",
        "ip-stop-on-repeat",
    ]
    assert [name.replace("_", "-") for name in ANSWER_NAMES] == [
        "max-new-tokens",
        *(elem_id.removeprefix("ip-") for elem_id in answers[1:]),
    ]
    reread, across, ask = events["reread"], events["ask_across"], events["ask"]
    assert (type(reread.fn.__self__), reread.fn.__name__) == (QuestionFeatures, "reread")
    # Both answer in the chat (None: the chat's state, then the conversations chooser, which has no elem_id).
    assert elem_ids(reread.inputs) == ["ip-document", "ip-question", "ip-chat", None, *answers]
    assert elem_ids(reread.outputs) == ["ip-chat", None, None]
    assert (type(across.fn.__self__), across.fn.__name__) == (QuestionFeatures, "ask_across")
    assert elem_ids(across.inputs) == ["ip-across-docs", "ip-question", "ip-document", "ip-chat", None, *answers]
    assert elem_ids(across.outputs) == ["ip-chat", None, None]
    assert elem_ids(ask.inputs) == ["ip-document", "ip-question", None, *answers]  # None: the chat's state
    for name in ("summarize", "summarize_new"):
        assert elem_ids(events[name].inputs) == ["ip-document", None, *answers]  # None: the chat's state
        assert elem_ids(events[name].outputs) == ["ip-summary-status", "ip-chat", None, None]  # state, conversations
    assert reread.concurrency_id == across.concurrency_id == ask.concurrency_id  # one model at a time
    assert events["summarize"].concurrency_id == events["summarize_new"].concurrency_id == ask.concurrency_id

    stop_button = next(id_ for id_, block in blocks.blocks.items() if block.elem_id == "ip-stop")
    cancelled = {i for fn in blocks.fns.values() if (stop_button, "click") in fn.targets for i in fn.cancels or []}
    assert {reread._id, across._id} <= cancelled
    # The chat's answers and summaries end through their turn (handlers.mark_stopped, tests/test_ui_stop.py), so
    # that their own stream stores and shows them: never cancelled in the middle of a piece.
    page = [events[name] for name in ("answer_shown", "answer_submitted", "summary_shown", "new_summary_shown")]
    assert all(fn.concurrency_id == ask.concurrency_id for fn in page)
    assert not {fn._id for fn in page} & cancelled

    # Every answer setting is checked as the user types, into the Answers group's notice.
    notice = next(id_ for id_, block in blocks.blocks.items() if block.elem_id == "ip-answers-notice")
    checked = {
        blocks.blocks[target].elem_id
        for fn in blocks.fns.values()
        if fn.outputs and [o._id for o in fn.outputs] == [notice]
        for target, _ in fn.targets
    }
    assert checked == set(answers)


# -- the Settings tab's answer choices -----------------------------------------------------------------------
def test_answer_names_are_the_fields_of_answer_choices():
    assert ANSWER_NAMES == tuple(f.name for f in fields(AnswerChoices))


def test_the_answer_mode_and_decoding_chosen_in_settings_reach_the_service(workspace, monkeypatch):
    handlers, doc_id = Handlers(workspace), workspace.doc_ids[0]
    asked = []
    service_asking = workspace.service.asking

    def spy(doc, question, settings=None, *args, **kwargs):
        asked.append(settings)
        return service_asking(doc, question, settings, *args, **kwargs)

    monkeypatch.setattr(workspace.service, "asking", spy)
    chat = {"doc_id": doc_id, "conversation_id": None}
    sampled = dict(max_new_tokens=6, temperature=0.8, top_p=0.9, seed=7, stop_on_repeat=False, contrast=0.5)
    for values in (
        answer_args(answer_from="pot", **sampled),
        answer_args(answer_from="focus", focus_entries=32, max_new_tokens=5),
        answer_args(
            answer_from="evidence", evidence_tokens=100, evidence_pot="all", evidence_spans=2, max_new_tokens=5
        ),
    ):
        *_, (history, _, chat, _) = handlers.ask_api(doc_id, QUESTION, chat, None, *values)

    assert [s.answer_from for s in asked] == ["pot", "focus", "evidence"]
    assert asked[0].decoding == DecodingConfig(
        max_new_tokens=6, temperature=0.8, top_p=0.9, seed=7, stop_on_repeat=False, contrast=0.5
    )
    assert asked[1].focus_entries == 32 and asked[2].evidence.budget_tokens == 100
    assert asked[2].evidence.pot_entries is None and asked[2].evidence.read_spans == 2
    # Recorded with each answer: the service's own record of the mode it answered in.
    records = workspace.service.messages(chat["conversation_id"])
    assert [m["meta"]["answer_from"] for m in records[1::2]] == ["pot", "focus", "evidence"]
    assert [m["answer_from"] for m in workspace.messages(chat["conversation_id"])[1::2]] == ["pot", "focus", "evidence"]
    # The pot-mode answer is the engine's, sampled with exactly the chosen settings (seeded: reproducible).
    stored = workspace.service.open_pot(doc_id)
    expected = "".join(stored.engine.answer(stored.pot, QUESTION, asked[0].decoding)).strip()
    assert records[1]["content"] == expected


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"temperature": -0.5}, "temperature must be 0 (greedy) or a positive number, got -0.5"),
        ({"temperature": None}, "temperature must be a number, got None"),
        ({"top_p": 0}, "top_p must be above 0 and at most 1, got 0.0"),
        ({"seed": 2.5}, "seed must be a whole number, got 2.5"),
        ({"contrast": -1}, "contrast must be a number from 0 (off) to 10, got -1.0"),
        ({"evidence_tokens": 0}, "evidence budget must be at least 1 token, got 0"),
        ({"evidence_ranking": "bm25"}, "evidence ranking must be one of attention, words, both, got 'bm25'"),
        ({"evidence_pot": "half"}, "pot entries before the passages must be 'all' or a whole number, got 'half'"),
        ({"evidence_spans": -1}, "spans read must be 0 (every candidate) or more, got -1"),
        ({"focus_entries": 1}, "focus must be a whole number of entries above 1, got 1"),
        ({"max_new_tokens": "long"}, "answer length must be a whole number, got 'long'"),
        ({"answer_from": "memory"}, "answer from must be one of evidence, pot, focus, got 'memory'"),
    ],
)
def test_bad_answer_settings_get_one_line_as_typed_and_refuse_to_answer(infinipot_home, changes, message):
    workspace = make_workspace(infinipot_home)  # nothing is read: the settings are refused first
    try:
        handlers = Handlers(workspace)
        assert handlers.check_answers(*answer_args(**changes)) == f"Not valid: {message}"
        refusals = [
            lambda values: handlers.ask_api("any", QUESTION, {}, None, *values),
            lambda values: handlers.summary_api("any", {}, None, *values),
            lambda values: handlers.summary_api("any", {}, None, *values, new=True),
            lambda values: QuestionFeatures(workspace).ask_across(["any", "other"], QUESTION, None, [], {}, *values),
            lambda values: QuestionFeatures(workspace).reread("any", QUESTION, [], {}, *values),
        ]
        for refuse in refusals:
            with pytest.raises(gr.Error) as refused:
                list(refuse(answer_args(**changes)))
            assert refused.value.message == message  # one line, before the document is even looked at
    finally:
        workspace.close()


# -- summaries -----------------------------------------------------------------------------------------------
@pytest.fixture
def three_parts(workspace, monkeypatch):
    """Outline summaries of the tiny documents (numbered lines, no headings) cut into 3 equal parts, not the
    default 6: the service's summary config reaches the outline."""
    summarize = workspace.service.summarize
    config = SummaryConfig(equal_parts=3)
    monkeypatch.setattr(workspace.service, "summarize", lambda *a, **k: summarize(*a, config=config, **k))


def stored_summary(workspace, doc_id):
    return workspace.service.library.files.load_summary(doc_id)["summary"]


def test_an_outline_summary_quotes_the_documents_sentences_with_lines_and_an_older_one_is_not_served(
    workspace,
):
    service, doc_id = workspace.service, workspace.doc_ids[0]
    document = service.source_path(doc_id).read_text(encoding="utf-8")
    pieces, stats = service.summarize(doc_id, new=True)
    summary = "".join(pieces)
    lead, _, outline = summary.partition("\n\nOutline:\n")
    assert outline and stats.summary_parts, summary
    flat = " ".join(document.split())
    points = [point for part in stats.summary_parts for point in part["points"]]
    assert points and all(" ".join(point.split()) in flat for point in points)  # the document's own sentences
    for part in stats.summary_parts:  # each listed with its line: "- <part> (line N): <its points>"
        assert f"- {part['title']} (line {part['line']:,})" in outline
    kept = service.library.files.load_summary(doc_id)
    assert kept["method"] == "outline-4" and kept["summary"] == summary.strip() and kept["parts"] == stats.summary_parts
    # A summary stored by another method (the outline before its opening said what the document is) is made anew.
    service.library.files.save_summary(doc_id, {**kept, "method": "outline-3", "summary": "an old summary"})
    pieces, stats = service.summarize(doc_id)
    assert "".join(pieces) == summary and not stats.reused_summary


def test_a_summary_shows_its_stages_then_streams_is_stored_and_new_summary_makes_another(
    workspace, three_parts, monkeypatch
):
    handlers, doc_id = Handlers(workspace), workspace.doc_ids[0]
    # (status line, the text of the summary's message in the chat) of every update the page gets: the stage of
    # the work in the message's own bubble (the outline's two: its opening, then its parts) until the summary's
    # words replace it
    updates = [
        (u[0], u[1][-1]["content"]) for u in handlers.summary_api(doc_id, {}, None, *answer_args(max_new_tokens=6))
    ]
    stages = [text for _, text in updates if re.fullmatch(r"\*.*…\*", text)]
    assert stages == ["*Summarizing…*", "*Summarizing part 1 of 2…*", "*Summarizing part 2 of 2…*"]
    texts = [text for _, text in updates]
    writing = texts[texts.index(stages[-1]) + 1 : -1]
    assert writing and not any(text in stages for text in writing)
    assert all(
        a == b[: len(a)] for a, b in zip(writing, writing[1:], strict=False)
    )  # streamed: each update extends the last
    assert all(status == "" for status, _ in updates[:-1])  # the stages are in the chat, not below the buttons
    note, shown = updates[-1]
    assert re.fullmatch(r"Summary made from 2 parts in [\d.,]+ s and stored: .*New summary makes a fresh one\.", note)
    kept = workspace.service.library.files.load_summary(doc_id)
    assert [part["title"] for part in kept["parts"]] == ["Part 1 of 3", "Part 2 of 3", "Part 3 of 3"]
    summary = stored_summary(workspace, doc_id)
    assert writing[-1].strip() == summary and all(f"- {part['title']} (line " in summary for part in kept["parts"])
    assert shown == folded_summary(summary) and "<summary>Outline: 3 parts</summary>" in shown  # the outline folded

    # A second click: the stored summary at once, no stages.
    again = [
        (u[0], u[1][-1]["content"]) for u in handlers.summary_api(doc_id, {}, None, *answer_args(max_new_tokens=6))
    ]
    assert [text for _, text in again if text.startswith("*Summarizing part")] == []
    assert again[-1] == ("The stored summary of this document, shown at once. New summary makes a fresh one.", shown)

    # New summary: made again, stage by stage, and stored in place of the first (the same outline: the model's
    # sampling settings change nothing of it).
    made = []
    summarize = workspace.service.summarize
    monkeypatch.setattr(workspace.service, "summarize", lambda *a, **k: made.append(k["new"]) or summarize(*a, **k))
    anew = [
        (u[0], u[1][-1]["content"])
        for u in handlers.summary_api(
            doc_id, {}, None, *answer_args(max_new_tokens=6, temperature=1.5, seed=3), new=True
        )
    ]
    assert made == [True] and "*Summarizing part 2 of 2…*" in [text for _, text in anew]
    assert anew[-1][0].startswith("Summary made from 2 parts in ")
    assert anew[-1][1] == shown and stored_summary(workspace, doc_id) == summary
    # Each summary is kept in a conversation, after the request that asked for it, like an answer.
    kept = [m["content"] for c in workspace.conversations(doc_id) for m in workspace.messages(c["id"])]
    assert kept[::2] == ["Summarize this file"] * 3 and kept[1::2] == [summary] * 3


def test_a_stopped_summary_ends_its_work_and_is_not_stored(workspace):
    doc_id = workspace.doc_ids[1]
    workspace.service.answer_pace = 0.5  # after each stage: the Stop comes before the outline's second one
    stream = workspace.summarize(doc_id, {"max_new_tokens": 6})
    assert next(stream) == ("status", "Summarizing…")
    kind, status = next(stream)
    assert kind == "status" and status.startswith("Summarizing part 1 of ")  # the first part has begun
    stream.close()  # what the page's Stop does to the handler's stream
    wait_until(lambda: not any(t.name == "infinipot-summary" for t in threading.enumerate()), timeout=120)
    assert workspace.service.library.files.load_summary(doc_id) is None
