"""Synthetic retrieval tasks: filler prose with a few facts hidden in it, each with a question that asks for it.

They calibrate which attention heads point at a fact from the question (core.answer.retrieval_heads). Most questions
ask in other words than the fact's sentence ("When does the boat depart for the isle?" of "The ferry to the
island leaves every day at 7:40."), because that is where the pot's attention has to point without the
question's words to help; two repeat them. Everything is drawn from a seeded generator, so the same seed gives
the same tasks on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

_SUBJECTS = (
    "The old miller", "A young clerk", "The harbour master", "Our neighbour", "The schoolteacher",
    "A travelling tinker", "The baker's son", "The village council", "A retired sailor", "The night watchman",
)  # fmt: skip
_VERBS = (
    "walked along", "looked at", "talked about", "repaired", "painted", "visited", "counted", "cleaned",
    "measured", "described",
)  # fmt: skip
_OBJECTS = (
    "the stone bridge", "the long road", "the north field", "the little chapel", "the grain store",
    "the river bank", "the market square", "the wooden fence", "the empty barn", "the orchard wall",
)  # fmt: skip
_ENDINGS = (
    "before the rain came.", "on a quiet morning.", "while the others slept.", "as he always did.",
    "without a word.", "late in the afternoon.", "for the third time that week.", "with great care.",
    "under a grey sky.", "after supper.",
)  # fmt: skip
# (the fact, the question that asks for it): {slot}s are filled from _VALUES.
FACTS = (
    ("The ferry to the island leaves every day at {time}.", "When does the boat depart for the isle?"),
    ("The access code for the {colour} gate is {number}.", "What is the access code for the {colour} gate?"),
    ("Mrs Abernethy was born in the town of {town}.", "Where does Mrs Abernethy come from?"),
    ("The annual fair was moved to {day}.", "On which day will the yearly festival take place?"),
    ("The lighthouse keeper's favourite fruit is the {fruit}.", "Which food does the lighthouse keeper like best?"),
    ("The new roof of the church cost {number} dollars.", "How much did the chapel's repairs overhead come to?"),
    ("The bridge over the canal is {number} metres long.", "What is the length of the crossing above the waterway?"),
    ("Dr Pemberton keeps his spare key under the {thing}.", "Where is Dr Pemberton's extra key hidden?"),
)
_VALUES = {
    "time": ("6:15", "7:40", "9:05", "11:30"),
    "colour": ("red", "blue", "green", "yellow"),
    "number": ("4821", "7390", "1563", "9027"),
    "town": ("Harlow", "Kendal", "Brackley", "Wexford"),
    "day": ("Thursday", "Saturday", "Monday", "Friday"),
    "fruit": ("apricot", "pear", "plum", "quince"),
    "thing": ("doormat", "flowerpot", "third step", "rain barrel"),
}


@dataclass(frozen=True)
class Fact:
    sentence: str
    question: str


@dataclass(frozen=True)
class RetrievalTask:
    """One synthetic document and the facts hidden in it, spread evenly through its filler."""

    text: str
    facts: tuple[Fact, ...]


def _filler_sentence(rng: random.Random) -> str:
    return f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} {rng.choice(_ENDINGS)}"


def retrieval_tasks(
    documents: int, facts_per_document: int, document_tokens: int, count_tokens: Callable[[str], int], seed: int
) -> list[RetrievalTask]:
    """`documents` tasks of about `document_tokens` tokens each (as `count_tokens` counts them), with
    `facts_per_document` facts each; the facts cycle through FACTS so every kind is asked about as often."""
    rng = random.Random(seed)
    tasks = []
    for document in range(documents):
        kinds = [FACTS[(document * facts_per_document + i) % len(FACTS)] for i in range(facts_per_document)]
        facts = []
        for sentence, question in kinds:
            values = {slot: rng.choice(choices) for slot, choices in _VALUES.items()}
            facts.append(Fact(sentence.format(**values), question.format(**values)))
        filler = [_filler_sentence(rng)]
        while count_tokens(" ".join(filler)) < document_tokens - sum(count_tokens(f.sentence) for f in facts):
            filler.extend(_filler_sentence(rng) for _ in range(16))
        # Fact i goes after (i + 1) / (facts + 1) of the filler: the facts sit at evenly spread depths.
        cuts = [len(filler) * (i + 1) // (len(facts) + 1) for i in range(len(facts))]
        pieces: list[str] = []
        start = 0
        for cut, fact in zip(cuts, facts, strict=True):
            pieces.extend(filler[start:cut])
            pieces.append(fact.sentence)
            start = cut
        pieces.extend(filler[start:])
        tasks.append(RetrievalTask(" ".join(pieces), tuple(facts)))
    return tasks
