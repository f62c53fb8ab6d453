"""Word units for Novelty-under-Compression: which tokens start a word, and NuC summed over each word.

Tokenizers split one unit of information over several tokens: SmolLM2 and Llama-style vocabularies write
every digit of "71432" as its own token, so each digit costs only ~log(10) nats while the number as a whole
costs ~11.5. Per-token NuC ranks those digits below ordinary essay words and the number is dropped; summed
over the word, the number is as novel as it really is, and a word is kept or dropped as a whole.

A kept word without its edges still misleads: with "27611." reduced to "27611" the model no longer sees
where the number ends and copies a sixth digit ("276111"). `share_with_edges` gives the token just before
and just after each word the word's score too, so a novel word is kept with the tokens that delimit it.

A kept word without its sentence is a fact about nothing: after seven compressions a 16K pot held
" is 19299." in every head but not "The pass key" before it, and a question-distilled copy answered "1".
`max_over_sentences` gives every token of a sentence the score of its most novel word, so a surprising fact
is kept with what it is about (chunk-level selection, as in ChunkKV); the same copy then found the key.

Words are compared by their keys (`token_keys`): a vocabulary entry's word without case, space marker or a plain
inflection. The answer's word n-gram ban (core.decoding) and the answer stage's word matching (core.answer)
read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

# Byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM) writes a leading space as "Ġ", a newline as "Ċ", a tab as
# "ĉ"; SentencePiece (Llama 2, Mistral, Gemma) writes a leading space as "▁".
SPACE_MARKERS = "ĠĊĉ▁ \n\t\r"
# Byte-level BPE newline, SentencePiece newline byte, and plain text newlines.
_NEWLINES = ("Ċ", "<0x0A>", "\n")
_SENTENCE_STOPS = (".", "!", "?")  # not ":" or ";": "Passcode: 4417" is one statement
# A run of text with no sentence end (a table row, code, a list without stops) is cut into spans of at most
# this many tokens, so one missing full stop cannot tie hundreds of tokens to one score.
LONGEST_SENTENCE = 64
# A vocabulary entry with no letter or digit (punctuation, spaces) has no word key and never matches a word.
NO_KEY = -1
# Endings folded away, longest first; a stem keeps at least _STEM_LETTERS letters ("bus" stays "bus").
_INFLECTIONS = ("ing", "ies", "ed", "es", "s")
_STEM_LETTERS = 3


def token_starts_word(token: str | None) -> bool:
    """Whether a vocabulary entry begins a new word: a space marker, punctuation, or a special token.

    A token that begins with a letter or digit and no space marker continues the word before it.
    """
    if not token:
        return True
    return token[0] in SPACE_MARKERS or not token[0].isalnum()


def vocabulary(tokenizer, vocab_size: int) -> list[str | None]:
    """The vocabulary entries of ids below `vocab_size` that the tokenizer knows."""
    return tokenizer.convert_ids_to_tokens(list(range(min(vocab_size, len(tokenizer)))))


def fold_inflection(word: str) -> str:
    """A lower-case alphabetic word without a plain English inflection and without a final "e", so that
    "line"/"lines", "process"/"processes"/"processed" and "flash"/"flashes" fold alike. Crude on purpose: the
    question and the document are folded the same way, so a wrong stem only merges two rare words."""
    if not word.isalpha():
        return word
    for ending in _INFLECTIONS:
        stem = word[: -len(ending)]
        if word.endswith(ending) and len(stem) >= _STEM_LETTERS and not (ending == "s" and stem.endswith("s")):
            word = stem + ("y" if ending == "ies" else "")
            break
    if word.endswith("e") and len(word) > _STEM_LETTERS:
        word = word[:-1]
    return word


def token_keys(tokenizer, vocab_size: int) -> torch.Tensor:
    """(V,) int64: each vocabulary entry's key, equal for entries that differ only in case, a leading space or
    an inflection (fold_inflection); NO_KEY for entries with no letter or digit and for ids past the tokenizer's
    vocabulary."""
    known = vocabulary(tokenizer, vocab_size)
    keys = torch.full((vocab_size,), NO_KEY, dtype=torch.int64)
    numbering: dict[str, int] = {}
    special = {i for i in tokenizer.all_special_ids if i is not None}
    for index, token in enumerate(known):
        if not token or index in special:
            continue
        word = token.strip(SPACE_MARKERS).lower()
        if any(ch.isalnum() for ch in word):
            keys[index] = numbering.setdefault(fold_inflection(word), len(numbering))
    return keys


def _flags(tokens: list[str | None], vocab_size: int, rule, past_vocabulary: bool) -> torch.Tensor:
    """(V,) bool: `rule` of each known entry; ids past the tokenizer's vocabulary get `past_vocabulary`."""
    flags = torch.full((vocab_size,), past_vocabulary, dtype=torch.bool)
    flags[: len(tokens)] = torch.tensor([rule(token) for token in tokens], dtype=torch.bool)
    return flags


def word_start_flags(tokenizer, vocab_size: int, tokens: list[str | None] | None = None) -> torch.Tensor:
    """(V,) bool: True where token id v starts a word; ids past the tokenizer's vocabulary start one.

    `tokens`: the vocabulary's entries when the caller has them already (`vocabulary`).
    """
    tokens = vocabulary(tokenizer, vocab_size) if tokens is None else tokens
    flags = _flags(tokens, vocab_size, token_starts_word, past_vocabulary=True)
    special = [i for i in tokenizer.all_special_ids if i is not None and 0 <= i < vocab_size]
    flags[special] = True
    return flags


def token_ends_line(token: str | None) -> bool:
    """Whether a vocabulary entry holds a newline."""
    return bool(token) and any(mark in token for mark in _NEWLINES)


def token_ends_sentence(token: str | None) -> bool:
    """Whether a vocabulary entry ends a sentence: it ends with a stop or holds a newline."""
    if not token:
        return False
    return token_ends_line(token) or token.rstrip("Ġ▁ \t").endswith(_SENTENCE_STOPS)


@dataclass(frozen=True)
class TokenBoundaries:
    """Per vocabulary entry: whether it starts a word, whether it ends a sentence, whether it holds a newline. Each
    (V,) bool."""

    word_starts: torch.Tensor
    sentence_ends: torch.Tensor
    line_ends: torch.Tensor

    def to(self, device) -> TokenBoundaries:
        return TokenBoundaries(self.word_starts.to(device), self.sentence_ends.to(device), self.line_ends.to(device))


def token_boundaries(tokenizer, vocab_size: int) -> TokenBoundaries:
    """Word starts, sentence ends and line ends of every id below `vocab_size` (ids past the tokenizer's vocabulary
    start a word and end no sentence or line)."""
    tokens = vocabulary(tokenizer, vocab_size)  # one pass over the vocabulary for all three
    ends = _flags(tokens, vocab_size, token_ends_sentence, past_vocabulary=False)
    lines = _flags(tokens, vocab_size, token_ends_line, past_vocabulary=False)
    return TokenBoundaries(word_start_flags(tokenizer, vocab_size, tokens), ends, lines)


def sum_over_words(scores: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """Each token's score replaced by the sum over its word.

    scores: (T,) float; starts: (T,) bool, True where a word begins. The first token always begins one:
    a word cut by the edge of a forward piece is summed per part (pieces are the same on every read of the
    same stream, so a resumed or followed read sums exactly as a one-go read does).
    """
    starts = starts.clone()
    starts[0] = True
    word = torch.cumsum(starts.long(), dim=0) - 1  # (T,) word number of each token
    # T slots for the W <= T words: sized without reading W back from the device
    totals = torch.zeros(scores.shape[0], dtype=scores.dtype, device=scores.device)
    totals.scatter_add_(0, word, scores)  # (T,), the first W used
    return totals[word]


def share_with_edges(word_scores: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
    """Each word's edge tokens raised to the score of the word beside them.

    word_scores: (T,) float, constant within a word (sum_over_words); starts: (T,) bool as there. A word's
    first token takes the higher of its own and the previous word's score, its last token the higher of its
    own and the next word's, so the boundary tokens around a novel word rank with it.
    """
    starts = starts.clone()
    starts[0] = True
    shared = word_scores.clone()
    shared[1:] = torch.where(starts[1:], torch.maximum(shared[1:], word_scores[:-1]), shared[1:])
    ends = torch.zeros_like(starts)
    ends[:-1] = starts[1:]  # (T,) True on a word's last token (the piece's last token has no next word)
    shared[:-1] = torch.where(ends[:-1], torch.maximum(shared[:-1], word_scores[1:]), shared[:-1])
    return shared


def max_over_sentences(word_scores: torch.Tensor, ends: torch.Tensor, longest: int = LONGEST_SENTENCE) -> torch.Tensor:
    """Each token's score replaced by the highest score in its sentence.

    word_scores: (T,) float (sum_over_words); ends: (T,) bool, True on a token that ends a sentence. A
    sentence is cut into spans of at most `longest` tokens; one cut by the edge of a forward piece is scored
    per part, as words are.
    """
    starts = torch.zeros_like(ends)
    starts[0] = True
    starts[1:] = ends[:-1]
    index = torch.arange(word_scores.shape[0], device=word_scores.device)  # (T,)
    first = torch.cummax(torch.where(starts, index, 0), dim=0).values  # (T,) first token of each's sentence
    starts = starts | ((index - first) % longest == 0)
    span = torch.cumsum(starts.long(), dim=0) - 1  # (T,) span number of each token
    best = torch.full_like(word_scores, float("-inf"))  # (T,): a slot per span, sized without a host sync
    best.scatter_reduce_(0, span, word_scores, reduce="amax", include_self=True)  # (T,), the first spans used
    return best[span]
