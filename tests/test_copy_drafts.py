"""Copy drafts: proposals from the prompt, and answers decoded with them equal to answers decoded token by token."""

import pytest
import torch
from helpers import record_cache_lengths
from test_decoding import QUESTION, SENTENCE, looping_loaded
from tiny_models import random_ids, tiny_loaded, tiny_tokenizer

from infinipot.core import generate as generation
from infinipot.core import hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.copy_drafts import CopyDrafts
from infinipot.core.decoding import DecodingConfig
from infinipot.core.engine import AnswerStats, Engine

# -- proposals -------------------------------------------------------------------------------------------


def test_the_tokens_after_the_answers_tail_are_proposed_longest_match_first():
    source = [5, 6, 7, 8, 9, 1, 6, 2, 3]
    drafts = CopyDrafts(source, length=3, shortest=1)
    assert drafts.propose([4, 5, 6]) == [7, 8, 9]  # "5 6" matches before "6" alone (which last occurs before 2)
    assert drafts.propose([4, 6]) == [2, 3]  # one token: its last occurrence, cut at the source's end
    assert drafts.propose([4, 5, 6], most=1) == [7]
    assert drafts.propose([4, 5, 6], most=0) == []
    assert drafts.propose([42]) == [] and drafts.propose([]) == []
    # By default a single token is too weak a match to draft after.
    assert CopyDrafts(source, length=3).propose([4, 6]) == []
    assert CopyDrafts(source, length=3).propose([4, 5, 6]) == [7, 8, 9]


def test_a_match_longer_than_longest_is_not_needed_and_the_last_occurrence_wins():
    source = [1, 2, 3, 10, 1, 2, 3, 20, 21]
    drafts = CopyDrafts(source, length=2, longest=2)
    assert drafts.propose([9, 1, 2, 3]) == [20, 21]  # "2 3" is the longest compared; it last comes before 20
    assert CopyDrafts(source, length=2, longest=1, shortest=1).propose([3]) == [20, 21]


@pytest.mark.parametrize("length,longest,shortest", [(0, 3, 2), (4, 0, 0), (4, 2, 3), (4, 3, 0)])
def test_impossible_drafts_are_refused(length, longest, shortest):
    with pytest.raises(ValueError):
        CopyDrafts([1, 2, 3], length=length, longest=longest, shortest=shortest)


@pytest.mark.parametrize("bad", [-1, 65, 2.5, True, "8"])
def test_impossible_copy_draft_settings_are_refused(bad):
    with pytest.raises(ValueError, match="copy draft"):
        DecodingConfig(copy_draft=bad)


# -- decoding with drafts --------------------------------------------------------------------------------


def _decoded(model, request: list[int], decoding: DecodingConfig, drafts: CopyDrafts | None, forwards: list[int]):
    """(answer tokens, cache lengths after each forward) of core.generate after an empty cache."""
    lengths = record_cache_lengths(model)
    cache = hf_adapter.new_cache()
    tokens = [
        choice.token
        for choice in generation.generate(model, cache, request, 0, decoding, set(), None, None, None, drafts)
    ]
    forwards.append(len(lengths) - 1)  # the request's prefill aside
    return tokens, list(lengths)


@pytest.fixture
def counted_model():
    return tiny_loaded().model


def test_drafts_change_no_choice_and_save_forwards_where_they_are_right(counted_model):
    request = random_ids(40, seed=3)
    decoding = DecodingConfig(max_new_tokens=24, no_repeat_ngram=0)
    forwards: list[int] = []
    alone, _ = _decoded(counted_model, request, decoding, None, forwards)
    assert len(alone) == 24
    # A source holding the answer itself: every draft is right until the length limit.
    right, lengths = _decoded(counted_model, request, decoding, CopyDrafts(request + alone, length=8), forwards)
    # A source of other tokens: drafts are proposed (its tokens overlap the answer's) and mostly dropped.
    wrong_source = random_ids(200, seed=11)
    assert any(token in wrong_source for token in alone)
    wrong, _ = _decoded(counted_model, request, decoding, CopyDrafts(wrong_source, length=8, shortest=1), forwards)
    assert right == alone and wrong == alone
    assert forwards[0] == 23  # one forward per token after the first (the last token is never read)
    assert forwards[1] <= 23 // 8 + 2  # about one forward per 9 tokens
    # Drafted entries never take the cache past what token-by-token decoding would hold at its end.
    assert max(lengths) <= len(request) + 24 - 1


def test_drafts_dropped_midway_leave_the_cache_as_token_by_token_decoding_would(counted_model):
    request = random_ids(30, seed=5)
    decoding = DecodingConfig(max_new_tokens=16, no_repeat_ngram=0)
    alone, _ = _decoded(counted_model, request, decoding, None, [])
    # Every other draft goes wrong after its first token: the wrong tail must leave the cache before the next read.
    source = []
    for index, token in enumerate(alone):
        source += [token, (token + 1) % 200 if index % 2 else alone[min(index + 1, len(alone) - 1)]]
    crossed, lengths = _decoded(
        counted_model, request, decoding, CopyDrafts(source, length=4, longest=1, shortest=1), []
    )
    assert crossed == alone
    assert lengths[-1] <= len(request) + 16 - 1


def test_sampled_answers_are_the_same_with_drafts(counted_model):
    request = random_ids(40, seed=8)
    decoding = DecodingConfig(max_new_tokens=20, temperature=0.9, seed=4, no_repeat_ngram=0)
    alone, _ = _decoded(counted_model, request, decoding, None, [])
    drafted, _ = _decoded(counted_model, request, decoding, CopyDrafts(request + alone, length=6), [])
    assert drafted == alone


def test_the_engine_drafts_from_the_request_and_answers_as_before(monkeypatch):
    """The looping model writes SENTENCE, which the question holds: with drafts, it is copied in a few forwards."""
    forwards = []
    original = generation.read_after

    def counted(*args, **kwargs):
        forwards.append(len(args[2]))
        return original(*args, **kwargs)

    monkeypatch.setattr(generation, "read_after", counted)
    answers = {}
    for draft in (0, 8):
        engine = Engine(looping_loaded(ends=True), PotConfig(pot_size=256, keep_size=128, forward_tokens=64))
        pot = engine.read([tiny_tokenizer()(SENTENCE, add_special_tokens=False)["input_ids"]])
        forwards.clear()
        stats = AnswerStats()
        answers[draft] = (
            "".join(engine.answer(pot, QUESTION, DecodingConfig(max_new_tokens=40, copy_draft=draft), stats)),
            stats.new_tokens,
        )
        if draft == 0:
            assert set(forwards) == {1} and len(forwards) == stats.new_tokens
        else:
            assert len(forwards) <= stats.new_tokens // 4 and max(forwards) > 1
    assert answers[0] == answers[8]
    assert answers[8][0].strip() == SENTENCE.strip()


def test_contrast_decodes_token_by_token(counted_model, monkeypatch):
    read = []
    original = generation.read_after
    monkeypatch.setattr(generation, "read_after", lambda *a, **k: read.append(len(a[2])) or original(*a, **k))
    request = random_ids(20, seed=2)
    prior = generation.Prior(hf_adapter.new_cache(), request[-5:], 0)
    decoding = DecodingConfig(max_new_tokens=8, contrast=0.5, no_repeat_ngram=0)
    with torch.inference_mode():
        list(
            generation.generate(
                counted_model,
                hf_adapter.new_cache(),
                request,
                0,
                decoding,
                set(),
                prior,
                None,
                None,
                CopyDrafts(request, 4),
            )
        )
    assert read and set(read) == {1}
