"""The question's own words, found in the whole document: a second pointer to evidence beside the pot's attention.

The pot keeps about |C| of the document's tokens; a fact whose tokens were all compressed away draws no
attention, because nothing of it is left to attend to. The document's token ids are stored whole, though, so
the buckets that contain the question's rarer words (and its word pairs, in order) can be found in every part
of the document. Each bucket is scored like BM25 over the document's own buckets: a word found in few buckets
weighs much, one found everywhere ("the", "is") nearly nothing.

Matching is on token keys: each vocabulary entry lowercased, without its space marker, so " Shared" and
"shared" are one key; entries without a letter or digit (punctuation, spaces) have no key and never match.
An alphabetic entry also loses a plain English inflection (core.words.fold_inflection), so "steps" finds "step" and
"drained" finds "drain": on the development questions the word ranking's spans at 768 tokens then held the
answer for 83.3% instead of 81.5% (docs/experiments.md, "Evidence answers on the development questions").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from ..words import NO_KEY, SPACE_MARKERS, vocabulary
from .grounding import function_word_entries

if TYPE_CHECKING:
    from ..engine import Engine

# BM25's term-frequency saturation: a bucket that repeats a word ten times is not ten times the evidence.
_SATURATION = 1.2


def _bm25(presence: torch.Tensor, buckets: torch.Tensor, count: int) -> torch.Tensor:
    """(B,) float64: one term's BM25 contribution per bucket. presence: (T,) bool over document tokens."""
    frequency = torch.zeros(count, dtype=torch.float64).index_add_(0, buckets, presence.double())  # (B,)
    found_in = int((frequency > 0).sum())
    if found_in == 0:
        return frequency
    weight = torch.log1p(torch.tensor((count - found_in + 0.5) / (found_in + 0.5), dtype=torch.float64))
    return weight * frequency * (_SATURATION + 1) / (frequency + _SATURATION)


def neighbour_keys(
    question_ids: list[int],
    keys: torch.Tensor,
    word_lengths: torch.Tensor,
    embeddings: torch.Tensor,
    norms: torch.Tensor,
    most: int,
    least_similarity: float,
) -> set[int]:
    """Keys of the words the model itself takes for the question's content words. For each question token whose
    word has at least _PROBE_LETTERS characters, the `most` vocabulary entries nearest it by the cosine of the
    model's input embeddings (at least `least_similarity`) whose words have at least _NEIGHBOUR_LETTERS and are
    not among the question's own keys.

    A question in the user's own words shares no content word with the sentence that answers it, but the
    model's embeddings put "vessel" next to "ship", "supplier" next to "vendor", "directory" next to "folder".

    keys: (V,) word keys (core.words.token_keys); word_lengths: (V,) the characters of each entry's word, 0 for an entry
    that is no content word (no key, a function word, anything but letters and digits); embeddings: (V', hidden)
    the model's input embeddings (V' >= V); norms: (V',) their norms in fp32."""
    vocab = keys.shape[0]
    asked = [i for i in dict.fromkeys(question_ids) if 0 <= i < vocab and int(keys[i]) != NO_KEY]
    probes = [i for i in asked if int(word_lengths[i]) >= _PROBE_LETTERS]
    if not probes or most < 1:
        return set()
    own = torch.tensor(sorted({int(keys[i]) for i in asked}), dtype=torch.int64)
    usable = (word_lengths >= _NEIGHBOUR_LETTERS) & ~torch.isin(keys, own)  # (V,)
    similarity = (embeddings[:vocab] @ embeddings[probes].T).float()  # (V, q) on the embeddings' device
    similarity = (similarity / (norms[:vocab, None] * norms[probes][None, :])).cpu()
    similarity[~usable] = -1.0
    nearest = torch.topk(similarity, min(vocab, most * _NEIGHBOUR_SCAN), dim=0)  # (k, q)
    found: set[int] = set()
    for column in range(len(probes)):
        taken: set[int] = set()
        for value, index in zip(nearest.values[:, column].tolist(), nearest.indices[:, column].tolist(), strict=True):
            if value < least_similarity or len(taken) >= most:
                break
            taken.add(int(keys[index]))  # " Vessel", "vessel" and " vessels" are one key, one neighbour
        found |= taken
    return found


# A question token of fewer characters ("C", "db") has neighbours by spelling, not by meaning; a neighbour may be
# that short ("db" beside "database").
_PROBE_LETTERS = 3
_NEIGHBOUR_LETTERS = 2
# Entries scanned per neighbour wanted: several entries share one key.
_NEIGHBOUR_SCAN = 4


def content_word_lengths(
    vocabulary: list[str | None], keys: torch.Tensor, function_words: torch.Tensor
) -> torch.Tensor:
    """(V,) int64: the characters of each vocabulary entry's word (lower case, without its space marker) where it
    is letters and digits alone and no function word; 0 elsewhere (neighbour_keys' `word_lengths`)."""
    lengths = torch.zeros(keys.shape[0], dtype=torch.int64)
    for index, token in enumerate(vocabulary[: keys.shape[0]]):
        if token and int(keys[index]) != NO_KEY and not function_words[index]:
            word = token.strip(SPACE_MARKERS)
            lengths[index] = len(word) if word.isalnum() else 0
    return lengths


def word_neighbours(engine: Engine, question_ids: list[int], most: int, least_similarity: float) -> set[int]:
    """The word keys the engine's model's input embeddings put nearest the question's content words
    (neighbour_keys); the entries' word lengths and the embeddings' norms are made once per model."""
    embeddings = engine.model.get_input_embeddings().weight.detach()  # (V', hidden)
    lengths = engine.table(
        "content word lengths",
        lambda: content_word_lengths(
            vocabulary(engine.tokenizer, engine.vocab_size), engine.word_keys(), function_word_entries(engine)
        ),
    )  # (V,)
    norms = engine.table("embedding norms", lambda: embeddings.float().norm(dim=1))  # (V',) fp32
    return neighbour_keys(question_ids, engine.word_keys(), lengths, embeddings, norms, most, least_similarity)


def word_match_scores(
    document_ids: torch.Tensor,
    question_ids: list[int],
    keys: torch.Tensor,
    bucket_tokens: int,
    neighbours: set[int] | frozenset[int] = frozenset(),
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per bucket (document token // bucket_tokens): its score for the question's words, and its first token
    that matches one (-1 where none does). Both (B,).

    document_ids: (T,) int64, the whole document. Each distinct question key scores once, and so does each
    pair of consecutive question keys found consecutive in the document (a name split into several tokens,
    "asn1_create_element", counts as its pieces and as their order). `neighbours` (neighbour_keys): more keys,
    each scoring as a question word of its own.
    """
    total = int(document_ids.numel())
    count = (total + bucket_tokens - 1) // bucket_tokens
    scores = torch.zeros(count, dtype=torch.float64)
    if total == 0:
        return scores, torch.full((count,), -1, dtype=torch.int64)
    vocab = keys.shape[0]
    inside = (document_ids >= 0) & (document_ids < vocab)
    document_keys = torch.where(inside, keys[document_ids.clamp(0, vocab - 1)], NO_KEY)  # (T,)
    asked = [int(keys[i]) if 0 <= i < vocab else NO_KEY for i in question_ids]
    buckets = torch.arange(total) // bucket_tokens  # (T,)
    matched = torch.zeros(total, dtype=torch.bool)  # (T,)
    own = list(dict.fromkeys(k for k in asked if k != NO_KEY))
    for key in own + sorted(set(neighbours) - set(asked)):  # each scores once, the question's own keys first
        presence = document_keys == key
        scores += _bm25(presence, buckets, count)
        matched |= presence
    pairs = {(a, b) for a, b in zip(asked, asked[1:], strict=False) if NO_KEY not in (a, b)}
    for a, b in pairs:
        presence = torch.zeros(total, dtype=torch.bool)
        presence[1:] = (document_keys[:-1] == a) & (document_keys[1:] == b)
        scores += _bm25(presence, buckets, count)
    where = torch.nonzero(matched).squeeze(1)  # (k,) matching document tokens
    first = torch.full((count,), total, dtype=torch.int64).scatter_reduce_(0, buckets[where], where, "amin")  # (B,)
    return scores, torch.where(first < total, first, -1)
