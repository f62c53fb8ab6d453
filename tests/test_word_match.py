"""The question's words found in the whole stored document (core.answer.word_match), the fusion with the pot's
attention, and the pot's verbatim tail left out of the evidence (core.answer.evidence)."""

from __future__ import annotations

import pytest
import torch
from tiny_models import random_ids, tiny_loaded, tiny_tokenizer

from infinipot.core.answer.evidence import EvidenceConfig, verbatim_tail_start, word_ranked_buckets
from infinipot.core.answer.word_match import word_match_scores, word_neighbours
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.words import NO_KEY, fold_inflection, token_keys


def test_keys_ignore_case_and_the_leading_space_and_skip_punctuation():
    tokenizer = tiny_tokenizer()
    keys = token_keys(tokenizer, len(tokenizer) + 5)
    by_token = dict(
        zip(tokenizer.convert_ids_to_tokens(list(range(len(tokenizer)))), keys.tolist()[: len(tokenizer)], strict=True)
    )
    spaced = [t for t in by_token if t.startswith("Ġ") and t[1:].isalpha() and t[1:] in by_token]
    assert spaced, "the tiny vocabulary has words with and without a leading space"
    for token in spaced:
        assert by_token[token] == by_token[token[1:]] != NO_KEY
    assert by_token["."] == NO_KEY and by_token["Ġ"] == NO_KEY
    assert all(keys[i] == NO_KEY for i in tokenizer.all_special_ids)
    assert (keys[len(tokenizer) :] == NO_KEY).all()  # ids past the vocabulary never match


def test_inflections_fold_to_one_key_and_short_words_and_codes_stay_whole():
    same = [("steps", "step"), ("drained", "drain"), ("flashes", "flash"), ("lines", "line"), ("studies", "study")]
    same += [("processes", "process"), ("processing", "processed"), ("classes", "class")]
    for a, b in same:
        assert fold_inflection(a) == fold_inflection(b), (a, b)
    for word in ("bus", "is", "was", "asn1", "42", "x-scheme"):
        assert fold_inflection(word) == word
    assert fold_inflection("steps") != fold_inflection("stop")


class _ListedVocabulary:
    """The two methods token_keys asks a tokenizer for, over a fixed list of entries."""

    all_special_ids = [0]

    def __init__(self, entries: list[str]) -> None:
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]:
        return [self.entries[i] for i in ids]


def test_token_keys_fold_inflected_entries_of_the_vocabulary_together():
    entries = ["<|endoftext|>", "Ġsteps", "step", "ĠDrained", "drain", "Ġstop", ".", "Ġlines", "Line"]
    keys = token_keys(_ListedVocabulary(entries), len(entries)).tolist()
    assert keys[1] == keys[2] != NO_KEY  # " steps" and "step"
    assert keys[3] == keys[4] != NO_KEY  # " Drained" and "drain"
    assert keys[7] == keys[8] != NO_KEY
    assert len({keys[1], keys[3], keys[5], keys[7]}) == 4
    assert keys[0] == keys[6] == NO_KEY


KEYS = torch.arange(100)  # every id its own key, in the index-level tests
KEYS[0] = NO_KEY  # id 0: punctuation


def test_the_bucket_with_the_rare_word_and_the_pair_ranks_first():
    document = [50] * 64 * 6  # six buckets of a word that is everywhere
    document[64 * 2 + 10] = 7  # the rare word alone in bucket 2
    document[64 * 4 + 20 : 64 * 4 + 22] = [7, 8]  # the rare word then its neighbour, in order, in bucket 4
    document[64 * 5 + 30] = 8
    scores, first = word_match_scores(torch.tensor(document), [50, 7, 8], KEYS, bucket_tokens=64)
    assert scores.shape == (6,)
    assert int(scores.argmax()) == 4  # both words and their order
    assert scores[2] > scores[0] and scores[5] > scores[0]  # a rare word outweighs the common one
    assert first.tolist()[4] == 64 * 4 == first.tolist()[0] + 64 * 4  # the common word matches first everywhere
    # punctuation never matches, and a document with none of the words scores nothing
    scores, first = word_match_scores(torch.tensor([0] * 128), [0, 9], KEYS, bucket_tokens=64)
    assert scores.sum() == 0 and first.tolist() == [-1, -1]


def test_word_ranking_leaves_out_buckets_without_a_match_and_the_verbatim_tail():
    document = [50] * 64 * 8
    document[64 * 1 + 3] = 7
    document[64 * 6 + 3] = 7  # in the tail the pot holds verbatim
    config = EvidenceConfig(ranking="words")
    ranked = word_ranked_buckets(torch.tensor(document), [7], KEYS, config, until=64 * 5)
    assert [b.index for b in ranked] == [1]
    assert ranked[0].best == 64 + 3 and ranked[0].share == 1.0


def test_the_verbatim_tail_is_what_every_head_holds_since_the_last_compression():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=128, keep_size=48, forward_tokens=40))
    document = random_ids(500, seed=5)
    pot = engine.read([document])
    assert pot.cycles > 0
    start = verbatim_tail_start(pot)
    assert 0 < start < len(document)
    held = pot.origin - pot.prefix_len  # (L, H_kv, n) document tokens
    for token in range(start, len(document)):
        assert bool((held == token).any(dim=-1).all()), f"token {token} is in every head"
    assert not bool((held == start - 1).any(dim=-1).all()) or start == 0
    # nothing compressed: the whole document is verbatim
    whole = Engine(tiny_loaded("llama"), PotConfig(pot_size=512, keep_size=256)).read([document[:100]])
    assert verbatim_tail_start(whole) == 0


def test_evidence_config_rejects_an_unknown_ranking():
    import pytest

    with pytest.raises(ValueError, match="ranking"):
        EvidenceConfig(ranking="bm25")


def _embeddings_with(pairs: dict[int, int], vocab: int, seed: int = 0) -> torch.Tensor:
    """Random input embeddings (vocab, 16) where each of `pairs`' values is made a near copy of its key."""
    embeddings = torch.randn(vocab, 16, generator=torch.Generator().manual_seed(seed))
    for probe, twin in pairs.items():
        embeddings[twin] = embeddings[probe] + 0.05 * embeddings[twin]
    return embeddings


def test_neighbour_keys_are_the_words_nearest_the_questions_content_words():
    from infinipot.core.answer.word_match import neighbour_keys

    keys = torch.tensor([0, 1, 2, 3, 4, 5, 1, NO_KEY])  # entry 6 is entry 1's word again ("Ship" beside "ship")
    lengths = torch.tensor([4, 4, 6, 5, 2, 0, 4, 0])  # entry 4 is short ("db"), entry 5 a function word
    embeddings = _embeddings_with({0: 2, 3: 4}, vocab=8)  # 2 beside 0 ("vessel" by "ship"), 4 beside 3
    embeddings[5] = embeddings[0]  # a function word as close as can be: never a neighbour
    embeddings[6] = embeddings[1]  # the question's own word under another entry: not a neighbour either
    norms = embeddings.norm(dim=1)

    found = neighbour_keys([0, 1, 3], keys, lengths, embeddings, norms, most=1, least_similarity=0.9)
    assert found == {2, 4}  # each probe's nearest word; a short neighbour counts ("db" beside "database")
    assert neighbour_keys([4], keys, lengths, embeddings, norms, most=1, least_similarity=0.9) == set()  # short
    assert neighbour_keys([5, 7], keys, lengths, embeddings, norms, 1, 0.0) == set()  # no content word asked
    assert neighbour_keys([0], keys, lengths, embeddings, norms, most=1, least_similarity=0.999) == set()
    assert neighbour_keys([0], keys, lengths, embeddings, norms, most=0, least_similarity=0.0) == set()
    assert len(neighbour_keys([0], keys, lengths, embeddings, norms, most=3, least_similarity=-1.0)) == 3


def test_a_neighbour_scores_its_buckets_as_a_question_word_would():
    keys = torch.arange(10)
    document = torch.tensor([7, 8, 9, 9, 5, 6, 9, 8, 9, 9, 8, 7])  # buckets of 4: only the second holds 5
    plain, _ = word_match_scores(document, [3], keys, 4)
    assert float(plain.sum()) == 0.0  # the question's word is not in the document
    expanded, first = word_match_scores(document, [3], keys, 4, neighbours={5})
    assert int(torch.argmax(expanded)) == 1 and first.tolist() == [-1, 4, -1]
    alone, _ = word_match_scores(document, [5], keys, 4)
    assert torch.equal(expanded, alone)


def test_evidence_seeks_the_neighbours_only_when_asked():
    from infinipot.core.answer.evidence import EvidenceConfig

    assert EvidenceConfig().word_neighbours == 0
    for bad in (-1, True, 2.5):
        with pytest.raises(ValueError, match="word neighbours"):
            EvidenceConfig(word_neighbours=bad)
    engine = Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=48, forward_tokens=40))
    question = engine.tokenizer("the passkey green", add_special_tokens=False)["input_ids"]
    found = word_neighbours(engine, question, 4, -1.0)
    keys = engine.word_keys()
    assert found and not found & {int(keys[i]) for i in question}  # other words than the question's own
    assert word_neighbours(engine, question, 4, 1.01) == set()
