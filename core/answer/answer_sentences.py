"""The sentence that answers: the passages read, cut into sentences, ranked by how likely the question is after
each one alone (core.answer.rerank's query likelihood, one sentence at a time).

The 135M model judges far better than it writes: handed three passages that hold the fact, it writes it out for
about four questions in ten, while the question's likelihood after each sentence picks the sentence that holds
it more often. That sentence is what the answer is checked against, what the answer may quote, and the first
source shown under it; how likely the question is after it, against how likely it is after no text at all, says
whether the passages answer the question at all (benchmarks/results/devset, "answerable").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from .rerank import Judgement, question_judgements, question_likelihoods
from .text_units import entries

# A sentence ends at . ! ? (with closing quotes or brackets) before whitespace, or at a blank line.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n\s*\n")
# Titles and abbreviations whose stop ends no sentence: "Dr. Nadia Fenn", "St. Aubin", "e.g. the log".
_ABBREVIATION_END = re.compile(
    r"(?:^|\s)(?:Dr|Mr|Mrs|Ms|Mme|Prof|Capt|Gen|Col|Lt|Sgt|Rev|Sr|Jr|St|Mt|No|Nos|Fig|Vol|vs|cf|approx|"
    r"e\.g|i\.e)\.$"
)
# A list mark alone: a numbered or lettered step or item, "c. Rewrote the ...", "2. Install", "iv) Then".
_LIST_MARK = re.compile(r"^\(?(?:\d{1,2}|[a-zA-Z]|[ivx]{1,4})[.)]$")
# A list item: a bullet, or a number or letter with a stop or bracket, then a space ("- globs", "w. New prompt
# string: PS0.", "b) Convey ...", "3. Run").
_LIST_ITEM = re.compile(r"^\s*(?:[-*•·]|\(?(?:\d{1,2}|[a-zA-Z]|[ivx]{1,4})[.)])\s+\S")
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
# A "sentence" longer than this many words is a table, a listing or log lines: it is cut at its line breaks.
_LONGEST_WORDS = 60
# A line that starts with a date, a time or a section number ("2024-11-14T06:03", "12:00", "3.1", a syslog's
# "Mar  9 10:19:04") or a list mark is an item of its own (a log line, a table row, a bullet); "1,206 metres"
# wrapped to a line's start is not.
ITEM_START = re.compile(
    r"\n(?=\s*(?:\d+[-:T./]\d|[-*•·]\s|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d|\(?(?:\d{1,3}|[a-z])[.)]\s+[A-Za-z]))"
)
# A table row as ingest writes HTML and Word tables: its cells joined by " | ".
_TABLE_ROW = re.compile(r"\S \| \S")
# Tokens of a sentence that are scored: a longer one is judged by its start (bounds one batched pass).
_SCORED_TOKENS = 96


@dataclass(frozen=True)
class Sentence:
    text: str  # whitespace collapsed to single spaces
    span: int  # index of the passage it comes from
    score: float  # mean log-probability of the question's tokens after it (higher is likelier)
    # Each question token's log-probability and the last hidden state (judged in detail; None otherwise).
    judgement: Judgement | None = field(default=None, compare=False, repr=False)


def _joined_after_abbreviations(parts: list[str]) -> list[str]:
    """Sentence pieces with a piece that ends in a title or abbreviation ("Dr.", "e.g.") or is a list mark alone
    ("c.", "2.", "iv)") joined to the next."""
    joined: list[str] = []
    for part in parts:
        if joined and (_ABBREVIATION_END.search(joined[-1]) or _LIST_MARK.match(joined[-1].strip())):
            joined[-1] = joined[-1] + " " + part
        else:
            joined.append(part)
    return joined


def split_sentences(text: str) -> list[str]:
    """The units of a passage as the document writes them, in order, whitespace collapsed: its sentences, and
    for a definition list (core.answer.text_units) each term with its description: whole when the description has at
    most _LONGEST_WORDS words ("--check-device: Check device numbers when creating incremental archives
    (default)."), else each of its sentences led by the term. A heading opens its first sentence."""
    units: list[str] = []
    for entry in entries(text):
        sentences = prose_sentences(entry.body)
        if not entry.lead:
            units += sentences
        elif not sentences:
            units.append(entry.lead)
        elif entry.heading:
            units += [f"{entry.lead}: {sentences[0]}", *sentences[1:]]
        elif sum(len(sentence.split()) for sentence in sentences) <= _LONGEST_WORDS:
            units.append(f"{entry.lead}: {' '.join(sentences)}")
        else:
            units += _long_description(entry.lead, sentences)
    return with_lead_ins(units)


# A sentence that states a default ("The default is 22.", "Defaults to 4.", "By default, ...", "Default: on"), not
# one that marks a value "(default)" among others.
_DEFAULT_SENTENCE = re.compile(
    r"\b(?:the )?default(?: value| setting)? (?:is|was|are)\b|\bdefaults to\b|\bby default\b|^default:", re.IGNORECASE
)


def _long_description(term: str, sentences: list[str]) -> list[str]:
    """A term's long description as one unit per sentence, each led by the term; the first also ends with the
    sentence that states the default, when a later one does ("Port: Specifies the port number to connect on ...
    The default is 22."): the term's first unit is what a question about it is answered with."""
    units = [f"{term}: {sentence}" for sentence in sentences]
    default = next((s for s in reversed(sentences[1:]) if _DEFAULT_SENTENCE.search(s)), None)
    if default is not None and not _DEFAULT_SENTENCE.search(sentences[0]):
        units[0] = f"{units[0]} {default}"
    return units


# A numbered or lettered item: "28: Operation timeout." (a code and its description), "2. Failure", "(b) ...".
_NUMBERED_UNIT = re.compile(r"^\(?(?:\d{1,3}|[a-zA-Z])(?:[.):]|:)\s+\S")
# A lead-in's words kept before each item: its last clause ("the exit codes are:").
_LEAD_IN_WORDS = 12


def with_lead_ins(units: list[str]) -> list[str]:
    """The units with each item of a numbered or lettered list led by the list's lead-in, the unit before it that
    ends with a colon (its last clause, at most _LEAD_IN_WORDS words): "the exit codes are: 28: Operation
    timeout." says what 28 is a code of, where "28: Operation timeout." alone does not."""
    out: list[str] = []
    lead_in = ""
    for unit in units:
        if _NUMBERED_UNIT.match(unit) and lead_in:
            out.append(f"{lead_in} {unit}")
            continue
        lead_in = ""
        if unit.endswith(":"):
            clause = re.split(r"[,;]\s+|(?<=[.!?])\s+", unit)[-1]
            lead_in = " ".join(clause.split()[-_LEAD_IN_WORDS:])
        out.append(unit)
    return out


def prose_sentences(text: str) -> list[str]:
    """The sentences of a stretch of text, in order, whitespace collapsed. A line that starts with a date, a time,
    a section number or a list mark starts a sentence (a log line, a table row, a bullet), a table row whose cells
    a " | " joins is a unit of its own, and a list item of at
    most _LONGEST_WORDS words is one unit however many sentences it has ("w. New prompt string: PS0. Expanded and
    displayed by interactive shells ..."); a title or abbreviation ("Dr. Nadia Fenn", "e.g. a log") ends no
    sentence, and a stretch without sentence stops longer than _LONGEST_WORDS words is cut (_long_piece): a table
    or listing at its line breaks, a long sentence at its clauses."""
    pieces = []
    for paragraph in _PARAGRAPH_BREAK.split(text or ""):
        for item in (item for block in _table_rows(paragraph) for item in ITEM_START.split(block)):
            if _LIST_ITEM.match(item) and len(item.split()) <= _LONGEST_WORDS:
                pieces.append(item)
                continue
            stops = _joined_after_abbreviations([part for part in _SENTENCE_END.split(item) if part and part.strip()])
            for part in stops:
                pieces += _long_piece(part) if len(part.split()) > _LONGEST_WORDS else [part]
    return [" ".join(piece.split()) for piece in pieces if piece.strip()]


def _table_rows(text: str) -> list[str]:
    """The text with each table row (_TABLE_ROW) a block of its own, the lines between rows kept together."""
    if not _TABLE_ROW.search(text):
        return [text]
    blocks: list[list[str]] = [[]]
    for line in text.split("\n"):
        if _TABLE_ROW.search(line):
            blocks += [[line], []]
        else:
            blocks[-1].append(line)
    return ["\n".join(block) for block in blocks if block]


# A line of at least this many characters, followed by more, was wrapped by the typesetter (text is set 65-90
# characters wide): the sentence goes on (a licence's long clause). Shorter lines end themselves (a table's rows).
_WRAPPED_CHARS = 60
# Where a long sentence may be cut: after a semicolon or a comma, before the next word (a colon introduces what
# follows it: "Header: 2 CARD16 ...").
_CLAUSE_END = re.compile(r"(?<=[;,])\s+")


def _long_piece(part: str) -> list[str]:
    """A stretch of more than _LONGEST_WORDS words without a sentence stop, cut into units: a table or a listing
    (mostly short lines) at its line breaks; a long sentence wrapped over full lines at its clauses, packed into
    pieces of at most _LONGEST_WORDS words (a clause never cut), so that no piece is a line's fragment ("written
    offer, valid for at least three years and valid for as"); at its line breaks again when a clause is longer."""
    lines = [line for line in part.split("\n") if line.strip()]
    wrapped = sum(len(line.strip()) >= _WRAPPED_CHARS for line in lines[:-1])
    if wrapped < (len(lines) - 1) / 2:
        return lines
    pieces: list[str] = []
    for clause in _CLAUSE_END.split(" ".join(part.split())):
        if pieces and len(pieces[-1].split()) + len(clause.split()) <= _LONGEST_WORDS:
            pieces[-1] += " " + clause
        else:
            pieces.append(clause)
    return lines if any(len(piece.split()) > _LONGEST_WORDS for piece in pieces) else pieces


def ranked_sentences(
    engine, passages: Sequence[str], question: str, most: int = 32, context: str = ""
) -> list[Sentence]:
    """The passages' sentences ranked by the question's likelihood after each, best first (ties: earlier first).
    `context`: earlier questions the question follows up (read before it, not scored; rerank.question_likelihoods).

    Each distinct sentence is scored once. At most `most` sentences are scored, taken from the last passage first
    (the passages arrive likeliest last, core.answer.evidence's order "likelihood"), so a long table in a weaker passage
    cannot crowd out the best one.
    """
    return judged_sentences(engine, passages, question, most, context)[0]


def judged_sentences(
    engine, passages: Sequence[str], question: str, most: int = 32, context: str = ""
) -> tuple[list[Sentence], float]:
    """ranked_sentences, and the question's likelihood after no text at all, scored in the same batched pass (an
    empty row among the shortest: no pass of its own)."""
    ranked, blank = _judged(engine, passages, question, most, context, detail=False)
    return ranked, blank.score


def judged_in_detail(
    engine, passages: Sequence[str], question: str, most: int = 32, context: str = ""
) -> tuple[list[Sentence], Judgement]:
    """judged_sentences with each sentence's Judgement (its question tokens' log-probabilities and the last hidden
    state), and the Judgement after no text: what the learned judge reads. The same forwards."""
    return _judged(engine, passages, question, most, context, detail=True)


def candidate_units(passages: Sequence[str], most: int = 32) -> list[tuple[int, str]]:
    """The distinct units the judge scores, (passage index, text): at most `most`, the last passage's first."""
    candidates: list[tuple[int, str]] = []
    seen: set[str] = set()
    for index in reversed(range(len(passages))):
        for text in split_sentences(passages[index]):
            # A sentence twice (passages that overlap, a repeated heading) is scored once: a copy of the best
            # would hide how far it stands out (core.answer.answer_confidence's `lead`).
            if len(candidates) < most and text not in seen:
                seen.add(text)
                candidates.append((index, text))
    return candidates


def judge_units(
    engine, candidates: Sequence[tuple[int, str]], question: str, context: str = "", detail: bool = False
) -> tuple[list[Sentence], Judgement]:
    """The units ranked by the question's likelihood after each (best first; ties: earlier first), and the
    Judgement after no text."""
    tokenizer = engine.tokenizer
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"][:_SCORED_TOKENS] for _, text in candidates]
    if detail:
        *judged, blank = question_judgements(engine, [*rows, []], question, context)
    else:
        *scores, no_text = question_likelihoods(engine, [*rows, []], question, context)
        judged, blank = [Judgement(score) for score in scores], Judgement(no_text)
    ranked = [
        Sentence(text, index, one.score, one if detail else None)
        for (index, text), one in zip(candidates, judged, strict=True)
    ]
    order = sorted(range(len(ranked)), key=lambda i: (-ranked[i].score, i))
    return [ranked[i] for i in order], blank


def _judged(engine, passages, question, most, context, detail) -> tuple[list[Sentence], Judgement]:
    return judge_units(engine, candidate_units(passages, most), question, context, detail)
