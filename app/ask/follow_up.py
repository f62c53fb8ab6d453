"""Follow-up questions: which earlier turns a question refers back to, and what the evidence is sought for.

"What version of it?" names nothing the document's words or the pot's attention could find; asked after "Under
which license is this manual distributed?", it means the license's version. A question that refers back (a
pronoun or demonstrative, "and ..." / "what about ...", or no content word of its own) is sought together
with the earlier question, and the answer is written with the earlier turn in view; a question that stands on
its own is answered as if asked first, so an unrelated earlier turn never pulls the evidence away.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from infinipot.core.answer.grounding import content_words

# An earlier answer that found nothing direct, as a follow-up sees it.
NOT_FOUND_TURN = "I did not find a direct answer in the document."
# How an answer given in the document's own words was chosen (core.answer.grounded_answer's Verdict.reason): such an
# answer is a sentence of the document, and a follow-up may be answered by it again ("For how many years had she
# kept it?" after "Who kept the Gull Head light?" -> "... Ida Marlowe ... had kept the light for twenty-seven
# years ..."). "standout" and "agreement" are older names of such answers, which stored conversations still hold.
STATED_REASONS = frozenset({"confident", "sentence", "earlier", "standout", "agreement"})
# Earlier (question, answer) turns a follow-up sees: the last one. A 135M model follows one turn back; longer
# histories fill its context with earlier answers, which may be wrong.
FOLLOW_UP_TURNS = 1


@dataclass(frozen=True)
class RecordedTurn:
    """An earlier question and its answer as a follow-up sees them."""

    question: str
    answer: str  # NOT_FOUND_TURN when it found nothing direct
    stated: bool  # the answer is a sentence of the document (STATED_REASONS)
    source: dict | None = None  # the citation that sentence was quoted from (its first), when stored


_REFERRING = re.compile(r"\b(it|its|they|them|their|theirs|he|him|his|she|her|hers)\b", re.IGNORECASE)
# "this", "that", "these", "those" refer back only standing alone ("Who wrote that?", "What does this mean?"); before
# a noun they name the question's own subject ("Under which license is this manual distributed?").
_DEMONSTRATIVE = re.compile(
    r"\b(this|that|these|those)\b(?=\s*(?:[?.!,]|$)|\s+(?:is|was|are|were|do|does|did|mean|means|say|says)\b)",
    re.IGNORECASE,
)
_OPENINGS = re.compile(r"^\s*(and|also|what about|how about|and what|and who|and when|and where|why|so)\b", re.I)
# A question with fewer content words than this names no subject of its own ("Why?", "When was that?").
_OWN_WORDS = 1
# "How many/much/long ..." with one content word asks a measure of something it does not name: "After how many
# milliseconds?" after "Which card processor timed out?" (where "What is the passkey?" names what it asks).
_MEASURE = re.compile(r"\bhow\s+(many|much|long|far|often|old|big|high|large)\b", re.IGNORECASE)


def refers_back(question: str) -> bool:
    """Whether `question` leans on an earlier turn (see the module's docstring)."""
    leans = _REFERRING.search(question) or _DEMONSTRATIVE.search(question) or _OPENINGS.search(question)
    own_words = len(content_words(question))
    return bool(leans) or own_words < _OWN_WORDS or (own_words == 1 and bool(_MEASURE.search(question)))


def turns_in_view(question: str, history: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The earlier turns the answer to `question` sees: the last FOLLOW_UP_TURNS when it refers back, else none."""
    return history[-FOLLOW_UP_TURNS:] if history and refers_back(question) else []


def writer_turns(history: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The earlier turns the writer sees: those that found an answer. A turn that found nothing gives the writer
    no fact, only a refusal to imitate: after "How high is Mount Aster?" found nothing, "Whom did Elena meet at the
    foot of it?" was written "The document does not provide a specific name ..." beside the passage naming
    Dr. Nadia Fenn. The judge still reads the earlier question (its `earlier`), and the evidence is still sought
    for both questions."""
    return [(asked, answered) for asked, answered in history if answered != NOT_FOUND_TURN]


def follow_up_query(question: str, history: list[tuple[str, str]]) -> str:
    """What the evidence is sought for: the earlier questions in view, then this one."""
    return " ".join([asked.strip() for asked, _ in history] + [question.strip()])
