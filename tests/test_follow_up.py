"""Follow-up questions: which questions refer back, the prompt with the earlier turn, the evidence sought for both
questions, and `ask --conversation ID` continuing a conversation from the CLI."""

from __future__ import annotations

import pytest
from helpers import expect_one_line_error, fake_check, run_json
from tiny_models import tiny_loaded

from infinipot.app.ask.follow_up import NOT_FOUND_TURN, follow_up_query, refers_back, turns_in_view, writer_turns
from infinipot.core.answer.grounded_answer import Verdict
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.prompts import encode


@pytest.mark.parametrize(
    "question",
    [
        "What version of it?",
        "And who wrote it?",
        "Who wrote that?",
        "What about the log?",
        "When?",
        "Why?",
        "After how many milliseconds?",  # a measure of something it does not name
    ],
)
def test_questions_that_lean_on_an_earlier_turn_refer_back(question):
    assert refers_back(question)


@pytest.mark.parametrize(
    "question",
    [
        "What is the passkey?",
        "Under which license is this manual distributed?",  # "this manual" names the question's own subject
        "Who wrote the GNU Libtasn1 manual?",
        "Is there a limit on the file size?",
        "How many stations were surveyed?",
    ],
)
def test_questions_that_name_their_own_subject_stand_alone(question):
    assert not refers_back(question)


def test_only_a_question_that_refers_back_sees_the_last_turn_and_is_sought_with_it():
    history = [("Which license?", "The GFDL."), ("Under which license is this manual distributed?", "The GFDL.")]
    assert turns_in_view("What version of it?", history) == history[-1:]
    assert turns_in_view("What is the passkey?", history) == []
    assert turns_in_view("What version of it?", []) == []
    assert follow_up_query("What version of it?", history[-1:]) == (
        "Under which license is this manual distributed? What version of it?"
    )
    assert follow_up_query("What is the passkey?", []) == "What is the passkey?"


def test_the_prompt_writes_the_earlier_turn_as_chat_turns_after_the_evidence():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=64))
    tokenizer = engine.tokenizer
    evidence = [encode(tokenizer, "the fox jumps over the dog")]
    alone = engine.answer_prompt_ids("what does it do", evidence)
    followed = engine.answer_prompt_ids("what does it do", evidence, history=[("who is lazy", "the dog")])
    # The evidence block, the earlier question's request, its answer, then the follow-up's own turn.
    turn = "the dog" + engine.layout.between + engine.question_instruction("what does it do") + engine.layout.closing
    assert followed == engine.evidence_ids(evidence) + engine.question_ids("who is lazy") + encode(tokenizer, turn)
    assert alone == engine.evidence_ids(evidence) + engine.question_ids("what does it do")


def test_an_earlier_turn_that_does_not_fit_beside_the_pot_is_left_out():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=128, keep_size=48))
    pot = engine.read([list(range(5, 60))])
    long_answer = " ".join(["the dog"] * 60)
    alone = "".join(engine.answer(pot, "what does it do", 4))
    with_history = "".join(engine.answer(pot, "what does it do", 4, history=[("who is lazy", long_answer)]))
    assert with_history == alone


def test_the_cli_continues_a_conversation_and_the_follow_up_sees_the_earlier_turn(
    capsys, tiny_model_dir, document, monkeypatch
):
    from infinipot.core import engine as engine_module

    read = ["read", str(document), "--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    doc_id = run_json(capsys, read)["doc_id"]
    ask = ["ask", doc_id, "--max-new-tokens", "4", "--answer-from", "pot", "--json"]
    first = run_json(capsys, ask[:2] + ["Who is lazy?"] + ask[2:])
    seen = []
    answer = engine_module.Engine.answer

    def spy(self, pot, question, *args, **kwargs):
        seen.append((question, list(kwargs.get("history", ()))))
        return answer(self, pot, question, *args, **kwargs)

    monkeypatch.setattr(engine_module.Engine, "answer", spy)
    conversation = ["--conversation", str(first["conversation_id"])]
    second = run_json(capsys, ask[:2] + ["What does it do?"] + ask[2:] + conversation)
    assert second["conversation_id"] == first["conversation_id"]
    assert seen[-1] == ("What does it do?", [("Who is lazy?", first["answer"])])
    third = run_json(capsys, ask[:2] + ["What is the passkey?"] + ask[2:] + conversation)
    assert third["conversation_id"] == first["conversation_id"] and seen[-1] == ("What is the passkey?", [])
    expect_one_line_error(capsys, ask[:2] + ["What does it do?"] + ask[2:] + ["--conversation", "999"], "999")


def test_a_follow_up_weighs_only_the_earlier_answers_given_in_the_documents_words(
    tmp_path, infinipot_home, tiny_model_dir, document, monkeypatch
):
    from infinipot.app.service import DocumentService

    carried_seen: list[list[str]] = []
    reasons = iter(["standout", "none", "free"])

    def decide(engine, question, passages, **kwargs):
        carried_seen.append(list(kwargs.get("carried", ())))
        reason = next(reasons)
        return Verdict(reason=reason, answerable=reason != "none"), f"answer to {question}"

    fake_check(monkeypatch, decide)
    service = DocumentService(infinipot_home, device="cpu")
    service.read(document, PotConfig(pot_size=128, keep_size=48), tiny_model_dir)
    ask = lambda question, cid=None: service.ask(str(document), question, conversation_id=cid)  # noqa: E731
    pieces, first, _ = ask("Who kept the light?")
    assert "".join(pieces) == "answer to Who kept the light?" and carried_seen[-1] == []
    cid = first.conversation_id
    messages = service.store.conversations.messages(cid)
    assert messages[-1].meta["answered_by"] == "standout"  # stored with the answer
    # The follow-up leans on the earlier turn, which was answered in the document's words: it is carried.
    "".join(ask("For how many years had she kept it?", cid)[0])
    assert carried_seen[-1] == ["answer to Who kept the light?"]
    # The last answer found nothing ("none"): a follow-up to it carries nothing.
    "".join(ask("And how tall is it?", cid)[0])
    assert carried_seen[-1] == []


def test_a_follow_up_answered_with_the_earlier_sentence_cites_where_that_sentence_was_quoted_from(
    tmp_path, infinipot_home, tiny_model_dir, document, monkeypatch
):
    from infinipot.app.service import DocumentService
    from infinipot.core.answer.answer_sentences import Sentence

    stated = "Permission is granted under the GNU Free Documentation License, Version 1.3."
    reasons = iter(["standout", "earlier"])

    def decide(engine, question, passages, **kwargs):
        reason = next(reasons)
        # An "earlier" sentence comes after the passages, from the carried answers.
        span = len(passages) + len(kwargs["carried"]) - 1 if reason == "earlier" else 0
        return Verdict(reason=reason, sentence=Sentence(stated, span, 0.0)), stated

    fake_check(monkeypatch, decide)
    service = DocumentService(infinipot_home, device="cpu")
    service.read(document, PotConfig(pot_size=128, keep_size=48), tiny_model_dir)
    pieces, first, _ = service.ask(str(document), "Under which license is this manual distributed?")
    "".join(pieces)
    cid = first.conversation_id
    # The place the first answer was quoted from, as stored with it, is put first among the follow-up's own.
    source = {"label": "page 2", "page": 2, "line": None, "token": 7, "score": 0.3}
    source["snippet"] = f"Some title. {stated} A copy follows."
    messages = service.store.conversations.messages(cid)
    messages[-1].meta["citations"] = [source]
    monkeypatch.setattr(type(service.store.conversations), "messages", lambda self, conversation_id: messages)
    pieces, follow, _ = service.ask(str(document), "What version of it?", conversation_id=cid)
    assert "".join(pieces) == stated and follow.answered_by == "earlier"
    assert follow.citations[0]["label"] == "page 2" and follow.citations[0]["quote"] == stated


def test_the_writer_does_not_see_an_earlier_turn_that_found_nothing():
    found = ("Under which license is this manual distributed?", "Permission is granted under the GNU FDL.")
    missed = ("How high is Mount Aster?", NOT_FOUND_TURN)
    assert writer_turns([found]) == [found]
    assert writer_turns([found, missed]) == [found]
    assert writer_turns([missed]) == []


def test_a_follow_up_after_an_answer_that_found_nothing_is_written_without_that_turn(
    tmp_path, infinipot_home, tiny_model_dir, document, monkeypatch
):
    from infinipot.app.service import DocumentService

    seen: list[tuple[str, list]] = []
    answerable = iter([False, True])

    def decide(engine, question, passages, **kwargs):
        seen.append((kwargs["earlier"], list(kwargs["history"])))
        return Verdict(reason="none", answerable=next(answerable)), f"answer to {question}"

    fake_check(monkeypatch, decide)
    service = DocumentService(infinipot_home, device="cpu")
    service.read(document, PotConfig(pot_size=128, keep_size=48), tiny_model_dir)
    pieces, first, _ = service.ask(str(document), "How high is Mount Aster?")
    "".join(pieces)
    pieces, _, _ = service.ask(
        str(document), "Whom did Elena meet at the foot of it?", conversation_id=first.conversation_id
    )
    "".join(pieces)
    # The judge still reads the earlier question; the writer is not shown the turn that found nothing.
    assert seen[-1] == ("How high is Mount Aster?", [])
