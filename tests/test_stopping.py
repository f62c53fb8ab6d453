"""Stop within a layer of the model, an answer's stages before it comes, and the turns that keep every question
(issue 55): core.stopping, app.ask.progress, DocumentService.asking(stop=) and its events, app.web.turns."""

from __future__ import annotations

import json
import threading

import pytest
import torch
from tiny_models import build_model, write_notes

from infinipot.app.ask.events import Piece
from infinipot.app.ask.progress import AskStage
from infinipot.core import hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.errors import AnswerStopped
from infinipot.core.stopping import check_stop, stopping_when

# The evidence path needs a document longer than the pot and room beside it for passages.
POT = PotConfig(pot_size=512, keep_size=128)


def test_a_layer_raises_once_its_threads_answer_is_stopped_and_only_there():
    model = build_model()
    hf_adapter.stop_between_layers(model)
    hf_adapter.stop_between_layers(model)  # once per model: a second call adds no second check
    layers = hf_adapter.decoder(model).layers
    assert all(len(layer._forward_pre_hooks) == 1 for layer in layers)
    ids = torch.tensor([[5, 6, 7]])
    calls = []

    def stopped() -> bool:
        calls.append(1)
        return len(calls) > 1  # the first layer runs, the second is stopped

    with torch.no_grad():
        model(ids)  # no block open: never stopped
        with pytest.raises(AnswerStopped), stopping_when(stopped):
            model(ids)
        assert len(calls) == 2  # stopped at the second layer, not at the end of the forward
        other = []
        with stopping_when(lambda: True):  # another thread's block does not stop this one's work
            thread = threading.Thread(target=lambda: other.append(model(ids).logits.shape))
            thread.start()
            thread.join()
        assert other == [torch.Size([1, 3, model.config.vocab_size])]


def test_blocks_nest_and_the_outer_check_is_back_after_an_inner_one():
    with stopping_when(lambda: True):
        with stopping_when(None):
            check_stop()  # the inner block never stops
        with pytest.raises(AnswerStopped):
            check_stop()
    check_stop()


@pytest.fixture
def read_service(tmp_path, infinipot_home, tiny_model_dir):
    from infinipot.app.service import DocumentService

    service = DocumentService(infinipot_home, device="cpu")
    notes = write_notes(tmp_path / "notes.txt", lines=120)
    doc_id = service.read(notes, POT, tiny_model_dir).doc_id
    return service, doc_id


def test_an_answer_tells_its_stages_before_it_comes_with_the_passage_looked_at(read_service):
    service, doc_id = read_service
    answering = service.asking(doc_id, "What does the fox jump over?")
    events = list(answering.events)
    stats = answering.stats
    answer = "".join(event.text for event in events if isinstance(event, Piece))
    stages = [event for event in events if isinstance(event, AskStage)]
    kinds = [stage.kind for stage in stages]
    assert kinds[:2] == ["looking", "weighing"] and set(kinds) <= {"looking", "weighing", "writing"}
    # the stages, then the pieces, then the sources under the complete answer, and last Done with the stats
    order = [type(event).__name__ for event in events]
    assert order.index("Piece") > order.index("AskStage") and order[-2:] == ["Sources", "Done"]
    assert events[-1].stats is stats and events[-2].citations == stats.citations
    assert [label for label, _ in events[-2].lines] == [c["label"] for c in stats.citations]
    looking = stages[0]
    assert looking.citation["label"].startswith("line ") and looking.quote
    assert looking.text.startswith("checking ") and looking.line().startswith(f"looking at {looking.citation['label']}")
    assert 0 < stats.first_evidence_seconds <= stats.first_token_seconds
    assert answer and stats.stopped_by == "end"


@pytest.mark.parametrize("stop_at", ["looking", "weighing", "first piece"])
def test_an_answer_stopped_at_any_stage_ends_there_and_is_kept_as_far_as_it_was_given(read_service, stop_at):
    service, doc_id = read_service
    stop = threading.Event()

    answering = service.asking(doc_id, "What does the fox jump over?", stop=stop.is_set)
    stats, given, kinds = answering.stats, [], []
    for event in answering.events:
        kinds.append(type(event).__name__)
        if isinstance(event, AskStage) and event.kind == stop_at:
            stop.set()
        if isinstance(event, Piece):
            given.append(event.text)
            if stop_at == "first piece":
                stop.set()
    assert stats.stopped_by == "reader"
    assert "Sources" not in kinds and kinds[-1] == "Done"  # a stopped answer gets no sources
    (question, answer) = service.store.conversations.messages(stats.conversation_id)
    assert question.content == "What does the fox jump over?"
    assert answer.content == "".join(given).strip() and answer.meta["stopped"] is True
    if stop_at != "first piece":  # stopped before the checked answer was made: nothing given, nothing completed
        assert given == []


def test_a_piece_made_after_the_stop_is_never_given():
    from infinipot.app.ask.progress import until_stopped
    from infinipot.app.ask.stats import AskStats

    stop = threading.Event()

    def pieces():
        yield "first"
        stop.set()  # the reader pressed Stop while the next piece was made
        yield "second"

    stats = AskStats()
    assert list(until_stopped(pieces(), stop.is_set, stats)) == ["first"] and stats.stopped_by == "reader"
    stats = AskStats()
    assert list(until_stopped(iter(["a", "b"]), lambda: False, stats)) == ["a", "b"] and stats.stopped_by == ""


def test_the_passage_looked_at_is_the_one_sharing_the_questions_words_and_never_an_index_line():
    from infinipot.app.ask.progress import looked_at

    index = {"label": "page 35", "snippet": "asn1Coding program . . . . . . . . . . . . . . . . 8"}
    licence = {"label": "page 27", "snippet": "This License applies to any manual."}
    usage = {"label": "page 8", "snippet": "See above. Usage: asn1Coding [OPTION] generates a DER encoding."}
    shown = looked_at([index, licence, usage], "What does asn1Coding do?")
    assert shown["label"] == "page 8" and shown["snippet"].startswith("…Usage: asn1Coding")
    assert looked_at([index], "What does asn1Coding do?")["label"] == "page 35"  # nothing else: it is shown


def test_the_cli_prints_the_stages_on_stderr_and_json_gains_first_evidence_seconds(tmp_path, tiny_model_dir, capsys):
    from infinipot.app.cli import main

    notes = write_notes(tmp_path / "notes.txt", lines=120)
    pot = ["--model", tiny_model_dir, "--pot-size", "512", "--keep", "128"]
    assert main(["read", str(notes), *pot]) == 0
    capsys.readouterr()
    assert main(["ask", str(notes), "What does the fox jump over?", *pot]) == 0
    err = capsys.readouterr().err
    assert "infinipot: looking at line " in err and "(checking " in err and "weighing the sentences of " in err
    assert main(["ask", str(notes), "What does the fox jump over?", *pot, "--json"]) == 0
    out, err = capsys.readouterr()
    assert "looking at" not in err
    result = json.loads(out)
    assert 0 < result["first_evidence_seconds"] <= result["ttft_seconds"]


def test_each_sessions_events_take_their_own_turns_in_order_and_show_their_place():
    from infinipot.app.web.turns import QUESTION, SUMMARY, Turns

    turns = Turns()
    a1 = turns.open("doc", QUESTION, "first?", None, session="a")
    b1 = turns.open("doc", QUESTION, "other session?", None, session="b")
    a2 = turns.open("doc", QUESTION, "second?", None, previous=a1, session="a")
    a3 = turns.open("doc", SUMMARY, "Summarize this file", None, previous=a2, session="a")
    # A session's question event takes its first waiting question, whatever the page's state says now.
    assert turns.start_next("a", QUESTION)[0] == a1
    assert [(t.text, place) for t, place in turns.queued_after(a1)] == [("second?", 2), ("Summarize this file", 3)]
    assert turns.place(b1) == 1  # one turn not done before it
    turns.finish(a1, 7)  # stored in conversation 7
    turn_id, turn = turns.start_next("a", QUESTION)
    assert turn_id == a2 and turn.conversation_id == 7  # the new chat's second question joins the first's conversation
    assert turns.start_next("a", QUESTION) == (None, None)
    assert turns.start_next("a", SUMMARY)[0] == a3 and turns.conversation_of(a3) == 7
    assert turns.to_stop("a") == a2 and turns.to_stop("b") == b1  # the earliest not done of the session


def test_a_waiting_question_stopped_is_kept_after_the_one_still_ending_before_it():
    from infinipot.app.web.turns import QUESTION, Turns

    turns = Turns()
    first = turns.open("doc", QUESTION, "first?", None, session="s")
    second = turns.open("doc", QUESTION, "second?", None, previous=first, session="s")
    turns.start_next("s", QUESTION)
    turns.stop(first, lambda turn: None, wait=0)  # its work still ends
    recorded = []

    def record(turn):
        recorded.append((turn.text, turn.conversation_id, turns.get(first).finished.is_set()))
        return turn.conversation_id

    threading.Timer(0.3, lambda: turns.finish(first, 4)).start()
    stopped = turns.stop(second, record, wait=5)
    assert recorded == [("second?", 4, True)]  # after the first was stored, in its conversation
    assert stopped.finished.is_set() and turns.start_next("s", QUESTION) == (None, None)


@pytest.mark.parametrize("closed_at", ["Piece", "Sources"])
def test_an_answer_closed_by_its_reader_is_kept_as_far_as_it_was_taken(read_service, closed_at):
    """Closed after its last piece, before it ended, the answer is kept marked stopped (its reader left it); closed
    after its sources, it was complete and is kept as such."""
    service, doc_id = read_service
    answering = service.asking(doc_id, "What does the fox jump over?")
    given = []
    for event in answering.events:
        if isinstance(event, Piece):
            given.append(event.text)
        if type(event).__name__ == closed_at:
            answering.events.close()
            break
    (question, answer) = service.store.conversations.messages(answering.stats.conversation_id)
    assert answer.content == "".join(given).strip() and answer.content
    assert answer.meta["stopped"] is (closed_at == "Piece")
    assert bool(answer.meta["citations"]) is (closed_at == "Sources")
