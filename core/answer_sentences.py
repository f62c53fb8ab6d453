"""The sentence that answers: the passages read, cut into sentences, ranked by how likely the question is after
each one alone (core.rerank's query likelihood, one sentence at a time).

The 135M model judges far better than it writes: handed three passages that hold the fact, it writes it out for
about four questions in ten, while the question's likelihood after each sentence picks the sentence that holds
it more often. That sentence is what the answer is checked against, what the answer may quote, and the first
source shown under it; how likely the question is after it, against how likely it is after no text at all, says
whether the passages answer the question at all (benchmarks/devset/results, "answerable").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# A sentence ends at . ! ? (with closing quotes or brackets) before whitespace, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n\s*\n")
# Titles and abbreviations whose stop ends no sentence: "Dr. Nadia Fenn", "St. Aubin", "e.g. the log".
_ABBREVIATION_END = re.compile(
    r"(?:^|\s)(?:Dr|Mr|Mrs|Ms|Mme|Prof|Capt|Gen|Col|Lt|Sgt|Rev|Sr|Jr|St|Mt|No|Nos|Fig|Vol|vs|cf|approx|"
    r"e\.g|i\.e)\.$"
)
# A "sentence" longer than this many words is a table, a listing or log lines: it is cut at its line breaks.
_LONGEST_WORDS = 60
# A line that starts with a date, a time or a section number ("2024-11-14T06:03", "12:00", "3.1") or a list mark
# is an item of its own (a log line, a table row, a bullet); "1,206 metres" wrapped to a line's start is not.
_ITEM_START = re.compile(r"\n(?=\s*(?:\d+[-:T./]\d|[-*•·]\s))")
# Tokens of a sentence that are scored: a longer one is judged by its start (bounds one batched pass).
_SCORED_TOKENS = 96
# Where a sentence ends for the reader: a stop after a word or a closing mark, not a table of contents' dot leaders
# (". . . . 12"), with its closing quotes or brackets.
_WHOLE_SENTENCE_END = re.compile(r"(?<=[^\s.])[.!?][\"'”’)\]]*(?=\s|$)")
# Words in a stretch of text: what a written answer copies from a sentence is counted in these.
_RUN_WORD = re.compile(r"[^\W_]+(?:[.'][^\W_]+)*")


@dataclass(frozen=True)
class Sentence:
    text: str  # whitespace collapsed to single spaces
    span: int  # index of the passage it comes from
    score: float  # mean log-probability of the question's tokens after it (higher is likelier)


def _joined_after_abbreviations(parts: list[str]) -> list[str]:
    """Sentence pieces with a piece that ends in a title or abbreviation ("Dr.", "e.g.") joined to the next."""
    joined: list[str] = []
    for part in parts:
        if joined and _ABBREVIATION_END.search(joined[-1]):
            joined[-1] = joined[-1] + " " + part
        else:
            joined.append(part)
    return joined


def split_sentences(text: str) -> list[str]:
    """The sentences of a passage, in order, whitespace collapsed. A line that starts with a date, a time, a
    section number or a list mark starts a sentence (a log line, a table row, a bullet), a title or abbreviation
    ("Dr. Nadia Fenn", "e.g. a log") ends none, and a stretch without sentence stops longer than _LONGEST_WORDS
    words is cut at its line breaks."""
    pieces = []
    stops = _joined_after_abbreviations([part for part in _SENTENCE_END.split(text or "") if part and part.strip()])
    parts = [item for part in stops for item in _ITEM_START.split(part)]
    for part in parts:
        if not part or not part.strip():
            continue
        if len(part.split()) > _LONGEST_WORDS:
            pieces += [line for line in part.split("\n") if line.strip()]
        else:
            pieces.append(part)
    return [" ".join(piece.split()) for piece in pieces]


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
    if not tail.strip() or _ITEM_START.search(tail) or len(tail.strip()) >= len(text[:end].strip()):
        return len(text)
    return end


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


def ranked_sentences(
    engine, passages: Sequence[str], question: str, most: int = 32, context: str = ""
) -> list[Sentence]:
    """The passages' sentences ranked by the question's likelihood after each, best first (ties: earlier first).
    `context`: earlier questions the question follows up (read before it, not scored; Engine.question_likelihoods).

    Each distinct sentence is scored once. At most `most` sentences are scored, taken from the last passage first
    (the passages arrive likeliest last, core.evidence's order "likelihood"), so a long table in a weaker passage
    cannot crowd out the best one.
    """
    candidates: list[tuple[int, str]] = []
    seen: set[str] = set()
    for index in reversed(range(len(passages))):
        for text in split_sentences(passages[index]):
            # A sentence twice (passages that overlap, a repeated heading) is scored once: a copy of the best
            # would hide how far it stands out (core.grounded_answer's `standout`).
            if len(candidates) < most and text not in seen:
                seen.add(text)
                candidates.append((index, text))
    if not candidates:
        return []
    tokenizer = engine.tokenizer
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"][:_SCORED_TOKENS] for _, text in candidates]
    scores = engine.question_likelihoods(rows, question, context)
    ranked = [Sentence(text, index, score) for (index, text), score in zip(candidates, scores, strict=True)]
    order = sorted(range(len(ranked)), key=lambda i: (-ranked[i].score, i))
    return [ranked[i] for i in order]
