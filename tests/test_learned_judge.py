"""The learned judge (core.answer.learned_judge) on a tiny model: the judge's pass gives each unit its question
tokens' log-probabilities and last hidden state from the same forwards as its score; a head over them decides
"stated", "closest" or "not_found"; a head fitted for another model is never used."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import checked_verdict
from tiny_models import tiny_loaded

from infinipot.core.answer import learned_judge
from infinipot.core.answer.answer_confidence import ConfidenceModel
from infinipot.core.answer.answer_sentences import judged_in_detail, judged_sentences
from infinipot.core.answer.grounded_answer import (
    NOT_ANSWERED,
    SEEMS_TO_ANSWER,
    GroundingConfig,
    Verdict,
    checking,
    final_answer,
)
from infinipot.core.answer.learned_judge import (
    SIGNALS,
    TOKEN_FEATURES,
    JudgeHead,
    feature_count,
    head_for,
    load_head,
    save_head,
)
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.prompts import encode

PASSAGES = [
    "Some other page. The cover is green.",
    "Permission is granted under the GNU Free Documentation License, Version 1.3. Copies are allowed.",
]
QUESTION = "Which license covers this manual?"


@pytest.fixture(scope="module")
def engine():
    return Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=64))


def head_on(engine, input_name: str, weight: float, bias: float, stated: float, closest: float) -> JudgeHead:
    """A head for the engine's model whose logit is `weight` * tanh(the named input) + `bias` (inputs not
    standardised: mean 0, std 1), without the hidden states unless the input is one of them."""
    names = [*SIGNALS, *TOKEN_FEATURES]
    count = feature_count(0, uses_states=False)
    w1 = torch.zeros(1, count)
    w1[0, names.index(input_name)] = 1.0
    return JudgeHead(
        w1, torch.zeros(1), torch.tensor([weight]), bias, torch.zeros(count), torch.ones(count),
        engine.loaded.identity, 0, stated, closest, candidates=8, uses_states=False,
    )  # fmt: skip


def ask(engine, monkeypatch, head: JudgeHead | None):
    monkeypatch.setattr(learned_judge, "shipped_head", lambda: head)
    monkeypatch.setattr(
        "infinipot.core.answer.grounded_answer.head_for",
        lambda identity, hidden: head if head is not None and head.model == identity else None,
    )
    return checked(engine, GroundingConfig())


def checked(engine, config: GroundingConfig) -> tuple[str, Verdict]:
    stats = AnswerStats()
    ids = [encode(engine.tokenizer, text) for text in PASSAGES]
    verdict = checked_verdict(checking(engine, None, QUESTION, ids, None, stats, config))
    verdict, text = final_answer(engine, verdict, stats, 0.0)
    return text, verdict


def test_the_judge_in_detail_gives_the_same_scores_from_the_same_forwards(engine):
    ranked, no_text = judged_sentences(engine, PASSAGES, QUESTION)
    detailed, blank = judged_in_detail(engine, PASSAGES, QUESTION)
    assert [s.text for s in detailed] == [s.text for s in ranked]
    assert [s.score for s in detailed] == pytest.approx([s.score for s in ranked], abs=1e-5)
    assert blank.score == pytest.approx(no_text, abs=1e-5)
    question_tokens = len(engine.question_parts(QUESTION)[1])
    hidden = engine.model.config.hidden_size
    for sentence in [*detailed]:
        judgement = sentence.judgement
        assert len(judgement.tokens) == question_tokens
        assert sum(judgement.tokens) / question_tokens == pytest.approx(sentence.score, abs=1e-5)
        assert judgement.state.shape == (hidden,) and torch.isfinite(judgement.state).all()
    # no text's state differs from a sentence's: the head reads the difference
    assert not torch.allclose(detailed[0].judgement.state, blank.state)


def test_a_head_above_its_stated_threshold_states_the_documents_sentence(engine, monkeypatch):
    # logit 6 * tanh(1) - 1 = 3.57 for the first-ranked unit: p = 0.97
    text, verdict = ask(engine, monkeypatch, head_on(engine, "first", 6.0, -1.0, stated=0.9, closest=0.5))
    assert verdict.state == "stated" and verdict.answerable and verdict.reason == "confident"
    assert text == verdict.sentence.text == verdict.ranked[0].text
    assert verdict.confidence == pytest.approx(1 / (1 + math.exp(-(6 * math.tanh(1) - 1))), abs=1e-5)


def test_between_the_thresholds_the_passage_that_seems_to_answer_is_shown_not_stated(engine, monkeypatch):
    text, verdict = ask(engine, monkeypatch, head_on(engine, "first", 6.0, -1.0, stated=0.99, closest=0.5))
    assert verdict.state == "closest" and not verdict.answerable
    assert text == f"{SEEMS_TO_ANSWER} “{verdict.ranked[0].text}”"


def test_below_the_closest_threshold_nothing_read_answers(engine, monkeypatch):
    text, verdict = ask(engine, monkeypatch, head_on(engine, "first", 6.0, -6.0, stated=0.9, closest=0.5))
    assert verdict.state == "not_found" and not verdict.answerable and verdict.confidence < 0.5
    assert text.startswith(NOT_ANSWERED)


def test_a_head_fitted_for_another_model_is_not_used(engine, monkeypatch):
    other = head_on(engine, "first", 6.0, -1.0, stated=0.9, closest=0.5)
    other = JudgeHead(**{**other.__dict__, "model": "another-model"})
    monkeypatch.setattr(learned_judge, "shipped_head", lambda: other)
    assert head_for(engine.loaded.identity, 0) is None
    assert head_for("another-model", 0) is other
    assert head_for("another-model", 576) is None  # hidden states of another width


def test_a_head_round_trips_through_its_file(engine, tmp_path):
    head = head_on(engine, "gain_max", 2.5, 0.25, stated=0.7, closest=0.4)
    save_head(head, tmp_path / "head.safetensors")
    loaded = load_head(tmp_path / "head.safetensors")
    assert (loaded.model, loaded.stated, loaded.closest, loaded.b2) == (head.model, 0.7, 0.4, 0.25)
    assert torch.equal(loaded.w1, head.w1) and torch.equal(loaded.w2, head.w2)


def test_impossible_heads_are_refused(engine):
    with pytest.raises(ValueError, match="thresholds"):
        head_on(engine, "first", 1.0, 0.0, stated=0.4, closest=0.6)
    count = feature_count(0, uses_states=False)
    with pytest.raises(ValueError, match="inputs"):
        JudgeHead(torch.zeros(1, count), torch.zeros(1), torch.zeros(1), 0.0, torch.zeros(count),
                  torch.ones(count), "m", 8, 0.5, 0.5, uses_states=True)  # fmt: skip


def test_without_a_head_for_the_model_the_calibrated_decision_decides(engine, monkeypatch):
    monkeypatch.setattr(learned_judge, "shipped_head", lambda: None)
    assert head_for(engine.loaded.identity, engine.model.config.hidden_size) is None
    config = GroundingConfig(
        confidence=ConfidenceModel(sure=0.0, unsure=0.0, threshold=0.0, closest=0.0, fitted_on=None)
    )
    text, verdict = checked(engine, config)
    assert verdict.state == "stated" and text == verdict.sentence.text
    assert all(s.judgement is None for s in verdict.ranked)  # judged without the detail a head reads
