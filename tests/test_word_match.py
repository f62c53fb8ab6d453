"""The question's words found in the whole stored document (core.word_match), the fusion with the pot's
attention, and the pot's verbatim tail left out of the evidence (core.evidence)."""

from __future__ import annotations

import torch
from tiny_models import random_ids, tiny_loaded, tiny_tokenizer

from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.evidence import EvidenceConfig, verbatim_tail_start, word_ranked_buckets
from infinipot.core.word_match import NO_KEY, fold_inflection, token_keys, word_match_scores


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
