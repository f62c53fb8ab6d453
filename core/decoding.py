"""Decoding that ends: how an answer picks its next token, and when a looping answer stops.

Repetition control looks at the answer's own tokens and text only, never at the prompt's: an answer about a
document must be free to copy the document (transformers' repetition_penalty and no_repeat_ngram_size count
the prompt too, and made answers worse).

Two rules, which work together:
- `no_repeat_ngram` (token level): a token that would complete an n-gram the answer already contains is banned.
  It breaks loops that have no sentence shape ("and the and the and the"). The same n-gram of the answer's
  words is banned too, words compared by their keys (core.words.token_keys: case, a leading space and an inflection
  aside) with punctuation and line breaks skipped: "The text is a" and "the text is a\ncontinuation" are one
  phrase to it, though their tokens differ.
- `stop_on_repeat` (text level, `RepeatStop`): the answer ends before a sentence or line it already wrote.
  The ban alone would keep a sentence loop going as ever-mangled copies ("The function returns the element.
  The function returns a value. The function ..."), so when both are on, a banned choice in a sentence that is
  so far re-tracing an earlier one also ends the answer there ("starts repeating" is enough).

A third, narrow rule rides with `stop_on_repeat`: a run-on "word" (no whitespace for RUN_ON_CHARS characters)
ends the answer. Copying a document's identifiers, the small model can chain them ("asn1_create_element_node_
value_...") until the token limit; each piece differs, so neither rule above sees a repeat.

A fourth rides with it too: a paragraph after the answer that opens with a question ends the answer before it
(`new_turn`). Having answered, the small model sometimes writes the next user's question itself ("The GNU
Libtasn1 is a library for ASN.1 ... manipulation.\n\nWhat is libtasn2?"); the first sentence of every later
paragraph is held back until it ends, so such a question is never shown.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch


@dataclass(frozen=True)
class DecodingConfig:
    # Most answer tokens. A few paragraphs; the pot keeps this much room free beside the question, so a larger
    # budget makes a full pot be distilled further before answering.
    max_new_tokens: int = 256
    # 0 is greedy: deterministic, reproducible answers (and token-for-token equal to full-KV generation when
    # the document fits); a 135M model gains little from sampling on factual questions.
    temperature: float = 0.0
    # Nucleus sampling keeps the smallest set of tokens whose probability reaches top_p; 1.0 keeps them all.
    # Used only when sampling.
    top_p: float = 1.0
    # Seeds the sampler, so that the same question with the same settings gives the same answer. Unused when greedy.
    seed: int = 0
    # An n-gram of the answer's own tokens may not be produced twice (0 disables; 1 would forbid any repeated
    # token). 4 tokens are about three words: long enough that short phrases an answer legitimately reuses
    # ("of the", "in the text") stay allowed, short enough to break a phrase loop within a few tokens. The same
    # n applies to the answer's words (`banned_words`): a 4-word phrase is not written twice in another case or
    # across a line break.
    no_repeat_ngram: int = 4
    # End the answer when it starts repeating a sentence or a line it already wrote; the repeat is not shown.
    # The looping that a small model falls into is sentence-shaped, and one copy of the sentence is the answer.
    stop_on_repeat: bool = True
    # Context contrast (context-aware decoding, Shi et al. 2024): each token is scored by
    # (1 + w) log p(token | passages, question) - w log p(token | question alone), so what the passages make
    # likelier wins over what the model would say without them (its prior, or an echo of the question).
    # 0 is off; applies to answers to a question (not summaries).
    contrast: float = 0.0
    # Each token is read with up to this many next tokens copied from the prompt where the answer's newest tokens
    # occur in it (core.copy_drafts, core.generate); the ones decoding then chooses need no forward of their own.
    # The answer is the one decoding token by token gives up to rounding, and in bfloat16 that rounding moved
    # answers: on the development set 4 (replayed: 0.73 of token-by-token decoding's cost in bfloat16, 0.90 in
    # float32) cut the writer's forwards by a quarter, but stated one more wrong answer and answered one more
    # unanswerable question (the same two with 8), so 0 (off) stays the default. Ignored with `contrast`.
    copy_draft: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int):
            raise ValueError(f"max new tokens must be a whole number, got {self.max_new_tokens!r}")
        if self.max_new_tokens < 1:
            raise ValueError(f"max new tokens must be positive, got {self.max_new_tokens}")
        temperature = self.temperature
        if not (isinstance(temperature, int | float) and math.isfinite(temperature) and temperature >= 0):
            raise ValueError(f"temperature must be 0 (greedy) or a positive number, got {self.temperature!r}")
        if not (isinstance(self.top_p, int | float) and 0.0 < self.top_p <= 1.0):
            raise ValueError(f"top_p must be above 0 and at most 1, got {self.top_p!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative whole number, got {self.seed!r}")
        ngram = self.no_repeat_ngram
        if isinstance(ngram, bool) or not isinstance(ngram, int) or ngram < 0 or ngram == 1:
            raise ValueError(f"no-repeat n-gram size must be 0 (off) or at least 2, got {ngram!r}")
        contrast = self.contrast
        if isinstance(contrast, bool) or not (isinstance(contrast, int | float) and 0 <= contrast <= 10):
            raise ValueError(f"contrast must be a number from 0 (off) to 10, got {self.contrast!r}")
        draft = self.copy_draft
        if isinstance(draft, bool) or not isinstance(draft, int) or not 0 <= draft <= 64:
            raise ValueError(f"copy draft must be a whole number of tokens from 0 (off) to 64, got {draft!r}")
        if not isinstance(self.stop_on_repeat, bool):
            raise ValueError(f"stop_on_repeat must be true or false, got {self.stop_on_repeat!r}")

    @property
    def sampling(self) -> bool:
        return self.temperature > 0.0


# -- token level ---------------------------------------------------------------------------------------


class WordKeys(NamedTuple):
    """The vocabulary's word keys (core.words.token_keys) in the two forms the word ban reads."""

    tensor: torch.Tensor  # (V,) int64
    listed: list[int]  # the same, for per-token lookups

    @classmethod
    def of(cls, keys: torch.Tensor) -> WordKeys:
        return cls(keys, keys.tolist())


class Choice(NamedTuple):
    token: int
    banned_best: bool  # the model's most likely token was banned: it wanted to repeat an n-gram of the answer


def sampler(config: DecodingConfig, device: torch.device | str = "cpu") -> torch.Generator | None:
    """The seeded generator sampling draws from (None when greedy)."""
    return torch.Generator(device=device).manual_seed(config.seed) if config.sampling else None


def banned_tokens(answer_ids: Sequence[int], n: int) -> set[int]:
    """Tokens that would complete an n-gram the answer already contains (its own ids only; n = 0: none)."""
    if n == 0 or len(answer_ids) < n:
        return set()
    context = list(answer_ids[len(answer_ids) - n + 1 :])  # the n-1 newest tokens
    return {answer_ids[i + n - 1] for i in range(len(answer_ids) - n + 1) if list(answer_ids[i : i + n - 1]) == context}


def banned_words(answer_ids: Sequence[int], keys: Sequence[int] | None, n: int) -> set[int]:
    """Word keys that would complete a word n-gram the answer already contains (n = 0 or no keys: none): the
    token rule (`banned_tokens`) over the answer's words.

    keys: each vocabulary entry's key (core.words.token_keys, as a list), NO_KEY (negative) for entries
    without a letter or digit; the answer's tokens with a key are its words, in order, the others are skipped."""
    if keys is None:
        return set()
    return banned_tokens([keys[t] for t in answer_ids if 0 <= t < len(keys) and keys[t] >= 0], n)


# Contrast scores only tokens at least this share as likely as the best one given the passages: below it, the
# difference of two small log-probabilities is noise (the plausibility limit of contrastive decoding, Li et al.).
PLAUSIBLE_SHARE = 0.1


def contrasted(logits: torch.Tensor, prior_logits: torch.Tensor, weight: float) -> torch.Tensor:
    """Context-aware scores (V,) from the logits with the passages and without them (V,) each; implausible
    tokens get -inf."""
    with_context = torch.log_softmax(logits.float(), dim=-1)  # (V,)
    without = torch.log_softmax(prior_logits.float(), dim=-1)  # (V,)
    scores = (1.0 + weight) * with_context - weight * without  # (V,)
    return scores.masked_fill(with_context < with_context.max() + math.log(PLAUSIBLE_SHARE), -math.inf)


def choose_token(
    logits: torch.Tensor,
    answer_ids: Sequence[int],
    config: DecodingConfig,
    generator: torch.Generator | None = None,
    word_keys: WordKeys | None = None,
) -> Choice:
    """The next answer token from fp32 logits (V,): n-gram bans (tokens, and words when `word_keys` are given),
    then greedy or temperature + nucleus sampling."""
    banned = banned_tokens(answer_ids, config.no_repeat_ngram)
    words = banned_words(answer_ids, None if word_keys is None else word_keys.listed, config.no_repeat_ngram)
    best = int(logits.argmax())
    best_banned = best in banned
    if banned or words:
        logits = logits.clone()
        logits[list(banned)] = -math.inf
        if words:
            keys = word_keys.tensor.to(logits.device)
            by_word = torch.isin(keys[: logits.shape[-1]], torch.tensor(sorted(words), device=logits.device))  # (V,)
            logits[: by_word.shape[0]][by_word] = -math.inf
            best_banned = best_banned or (best < by_word.shape[0] and bool(by_word[best]))
    if not config.sampling:
        return Choice(int(logits.argmax()), best_banned)
    probs = torch.softmax(logits / config.temperature, dim=-1)  # (V,)
    if config.top_p < 1.0:
        sorted_probs, order = torch.sort(probs, descending=True, stable=True)  # (V,), ties keep argmax's order
        before = torch.cumsum(sorted_probs, dim=-1) - sorted_probs  # (V,) mass of the more likely tokens
        sorted_probs[before >= config.top_p] = 0.0  # the most likely token always stays (its `before` is 0)
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)  # (V,)
    token = int(torch.multinomial(probs, 1, generator=generator))
    return Choice(token, best_banned)


# -- text level ----------------------------------------------------------------------------------------

# A sentence ends at . ! ? (and closing quotes or brackets) once whitespace follows; a line ends at a newline.
# Waiting for the whitespace keeps "3.5" and "example.com" whole.
_BOUNDARY = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|\n")
_TRAILING = ".!?\"'”’)] "
# Shorter pieces are not compared: they are often abbreviations or list markers ("e.g.", "Dr.", "The U.S."),
# and short loops are the n-gram ban's job.
MIN_WORDS = 3
# A stretch without whitespace this long is a run-on chain, not a word: it is dropped and the answer ends there.
# Long enough for the longest real identifiers, paths and URLs an answer quotes (rarely above 80 characters).
RUN_ON_CHARS = 120
# A word is held back (not streamed) from this length on, until it ends, so that at most this much of a run-on
# chain is ever shown; longer than most words, so ordinary text streams as it comes. (At 48, the fp32 answer on
# libtasn1.pdf showed "asn1_creation_list_list_create_list_element_" before the stop.)
HOLD_WORD_CHARS = 24


def normalized(sentence: str) -> str:
    """Whitespace collapsed, case folded, end punctuation dropped: "The  end!" and "the end." compare equal."""
    return " ".join(sentence.split()).casefold().rstrip(_TRAILING)


class RepeatStop:
    """Passes an answer's text through as it streams, ending it before a sentence or line it already wrote.

    Streaming is kept: text is held back only while the unfinished sentence is, so far, the beginning of an
    earlier sentence (it could become a repeat); once it differs from every earlier one it can no longer become
    one, and it flows again. So a normal answer streams piece by piece, and the final text never contains a
    sentence twice: a sentence found to repeat was never shown, and `push` returns nothing after it. A word
    grown past HOLD_WORD_CHARS is held back too, and one that reaches RUN_ON_CHARS ends the text (`run_on`).
    With `enabled=False` everything passes straight through.
    """

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.text = ""  # everything received (minus a dropped repeat)
        self.start = 0  # where the unfinished sentence begins in `text`
        self.shown = 0  # how much of `text` has been returned
        self.earlier: list[str] = []  # normalized sentences and lines written so far (MIN_WORDS or more)
        self.repeated = False  # the text ended early: a repeat (or a run-on word, or a new turn) was dropped
        self.run_on = False
        self.new_turn = False

    def push(self, piece: str) -> str:
        """Take the next piece of answer text; return what may be shown now ("" while holding back)."""
        if not self.enabled:
            return piece
        if self.repeated:
            return ""
        self.text += piece
        while (end := _BOUNDARY.search(self.text, self.start)) is not None:
            sentence = normalized(self.text[self.start : end.end()])
            if sentence in self.earlier:
                self.drop_unfinished()
                return self._show(len(self.text))
            if self._asks_anew(self.text[self.start : end.end()]):
                self.drop_unfinished()
                self.new_turn = True
                return self._show(len(self.text))
            if len(sentence.split()) >= MIN_WORDS:
                self.earlier.append(sentence)
            self.start = end.end()
        word = self._word_start()
        if len(self.text) - word >= RUN_ON_CHARS:
            self.text = self.text[: max(word, self.shown)]  # what was shown stays; the held-back rest is dropped
            self.repeated = self.run_on = True
            return ""
        shown_until = self.start if self._could_repeat() or self._opens_paragraph() else len(self.text)
        if len(self.text) - word >= HOLD_WORD_CHARS:
            shown_until = min(shown_until, word)
        return self._show(shown_until)

    def _opens_paragraph(self) -> bool:
        """The unfinished sentence is the first of a paragraph after some answer text (a blank line before it)."""
        before = self.text[: self.start]
        return bool(before.strip()) and before.rstrip(" \t").endswith("\n\n")

    def _asks_anew(self, sentence: str) -> bool:
        """`sentence`, ending at the unfinished one's end, opens a later paragraph and is a question."""
        return self._opens_paragraph() and sentence.strip().endswith("?")

    def _word_start(self) -> int:
        """Where the trailing whitespace-free stretch of the text begins."""
        start = len(self.text)
        while start > 0 and not self.text[start - 1].isspace():
            start -= 1
        return start

    def retracing(self) -> bool:
        """Whether the unfinished sentence has words, and they are so far the beginning of an earlier sentence."""
        return self.enabled and not self.repeated and bool(normalized(self.text[self.start :])) and self._could_repeat()

    def _could_repeat(self) -> bool:
        """The unfinished sentence is not shown yet and is, so far, the beginning of an earlier one (or blank)."""
        partial = normalized(self.text[self.start :])
        return self.shown <= self.start and any(sentence.startswith(partial) for sentence in self.earlier)

    def drop_unfinished(self) -> None:
        """End here: the unfinished sentence (held back, never shown) is a repeat and is dropped."""
        self.text = self.text[: self.start]
        self.repeated = True

    def finish(self) -> str:
        """The held-back rest once generation has ended: shown unless it is itself a whole repeated sentence."""
        if not self.enabled or self.repeated:
            return ""
        rest = self.text[self.start :]
        repeat = normalized(rest) in self.earlier
        if repeat or self._asks_anew(rest):
            self.new_turn = not repeat
            self.drop_unfinished()
        return self._show(len(self.text))

    def _show(self, end: int) -> str:
        end = min(end, len(self.text))
        piece, self.shown = self.text[self.shown : end], max(self.shown, end)
        return piece


def decoding_for(decoding: DecodingConfig | int | None, max_new_tokens: int | None = None) -> DecodingConfig:
    """The settings an answer runs with: `decoding`, else the defaults. An int in place of `decoding` (how callers
    passed the answer length before DecodingConfig existed) or `max_new_tokens` sets the answer length alone."""
    if isinstance(decoding, int) and not isinstance(decoding, bool):
        if max_new_tokens is not None:
            raise ValueError("the answer length is given twice (as decoding and as max_new_tokens)")
        decoding, max_new_tokens = None, decoding
    if decoding is None:
        decoding = DecodingConfig()
    elif not isinstance(decoding, DecodingConfig):
        raise ValueError(f"decoding must be a DecodingConfig or an answer length, got {decoding!r}")
    return decoding if max_new_tokens is None else replace(decoding, max_new_tokens=max_new_tokens)
