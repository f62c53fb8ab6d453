"""The writer: the model's own short answer from the passages read, and the sentence it points at.

A 135M model writes a fact out of three passages for about four questions in ten, so what it writes is never shown
for a checked answer. It is a second pointer: the sentence it copies its words from, wherever the judge ranked it
("She took a room at an inn called The Copper Kettle ..." ranked sixth), and whether it agrees with a candidate
(most content words it adds to the question are in that sentence). core.answer.answer_confidence weighs both when the
judge's signals alone leave the answer in doubt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..decoding import DecodingConfig, decoding_for
from .answer_sentences import ITEM_START, Sentence
from .grounding import unsupported_words

# Where a sentence ends for the reader: a stop after a word or a closing mark, not a table of contents' dot leaders
# (". . . . 12"), with its closing quotes or brackets.
_WHOLE_SENTENCE_END = re.compile(r"(?<=[^\s.])[.!?][\"'”’)\]]*(?=\s|$)")
# Words in a stretch of text: what a written answer copies from a sentence is counted in these.
_RUN_WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*")
# Most tokens the writer writes: its claim is in its first sentence, and more only costs seconds.
WRITTEN_TOKENS = 48
# A written answer that copies at least this many consecutive words of a sentence points at it.
COPIED_WORDS = 4
# Share of the content words the written answer adds to the question that must be in a sentence to agree with it.
AGREEMENT = 0.8


def whole_sentences_end(text: str) -> int:
    """How much of a passage a reader takes so that it ends with a whole sentence: the text after the passage's
    last sentence stop is left out when it holds no item of its own (a log line, a table row) and is shorter than
    what comes before it; otherwise (no stop at all, or a long tail of lines) the whole text.

    A passage widened to the lines around its sentences can end with the start of what follows: "... included in
    the section entitled “GNU Free Documentation License”. i Table of Contents 1 Introduction . . . . ." A 135M
    writer handed that continues the table of contents ("i ii iii iv ...") instead of answering."""
    stops = list(_WHOLE_SENTENCE_END.finditer(text))
    if not stops:
        return len(text)
    end = stops[-1].end()
    tail = text[end:]
    if not tail.strip() or ITEM_START.search(tail) or len(tail.strip()) >= len(text[:end].strip()):
        return len(text)
    return end


def to_whole_sentences(tokenizer, ids: Sequence[int]) -> list[int]:
    """The passage's tokens up to its last whole sentence (whole_sentences_end), cut between tokens: the longest
    prefix whose text stays within the kept characters."""
    ids = list(ids)
    text = tokenizer.decode(ids, skip_special_tokens=True)
    keep = whole_sentences_end(text)
    if keep >= len(text):
        return ids
    low, high = 1, len(ids)  # the longest prefix of tokens whose text is at most `keep` characters
    while low < high:
        middle = (low + high + 1) // 2
        if len(tokenizer.decode(ids[:middle], skip_special_tokens=True)) <= keep:
            low = middle
        else:
            high = middle - 1
    return ids[:low]


def longest_copied_run(written: str, sentence: str) -> int:
    """The most consecutive words (case folded) that `written` shares with `sentence`."""
    ours = [word.lower() for word in _RUN_WORD.findall(written)]
    theirs = [word.lower() for word in _RUN_WORD.findall(sentence)]
    best, previous = 0, [0] * (len(theirs) + 1)
    for word in ours:
        current = [0] * (len(theirs) + 1)
        for j, other in enumerate(theirs, start=1):
            if word == other:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def copied_index(written: str, ranked: Sequence[Sentence], least: int = COPIED_WORDS) -> int | None:
    """The index of the ranked sentence `written` copies the longest run of consecutive words from, if that run
    has at least `least` words (ties: the better ranked)."""
    if not written or not ranked:
        return None
    runs = [longest_copied_run(written, sentence.text) for sentence in ranked]
    best = max(range(len(runs)), key=lambda i: (runs[i], -i))
    return best if runs[best] >= least else None


def agrees(written: str, sentence: str, question: str, share: float = AGREEMENT) -> bool:
    """Whether the written answer adds content words to the question, `share` of them are in the sentence, and
    every one with a digit is (a number, version or date the sentence does not hold is the fact asked for)."""
    if not written:
        return False
    added = unsupported_words(written, [question])
    if not added:
        return False
    missing = unsupported_words(written, [sentence, question])
    if any(any(ch.isdigit() for ch in word) for word in missing):
        return False
    return (len(added) - len(missing)) / len(added) >= share


def written_answer(
    engine, pot, question: str, passages, decoding: DecodingConfig | None, stats, *, history=(), pot_entries=0,
    question_first=False,
) -> str:  # fmt: skip
    """The writer's short answer (WRITTEN_TOKENS at most) from the passages, each read up to its last whole
    sentence."""
    short = decoding_for(decoding, None)
    short = replace(short, max_new_tokens=min(short.max_new_tokens, WRITTEN_TOKENS))
    reads = [to_whole_sentences(engine.tokenizer, ids) for ids in passages]
    pieces = engine.answer(
        pot,
        question,
        short,
        stats,
        evidence=reads,
        pot_entries=pot_entries,
        question_first=question_first,
        history=history,
    )
    return "".join(pieces).strip()
