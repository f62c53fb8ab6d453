"""Answers a user can trust: what the passages say, or plainly that they do not say it.

The model writes an answer from the passages read, as before; then the answer is checked against the sentence
of those passages after which the question is likeliest (core.answer_sentences): the 135M model judges which
sentence answers far better than it writes the answer out. The written answer is shown as the document's answer
only when it adds something to the question and every content word it adds is in that sentence: its facts are
the passage's. Otherwise the writer and the judge disagree (the model took a name, number or version from its
prior, answered around the question, or the passages do not hold the answer at all), and the answer says
plainly that the document does not seem to say, quoting the closest sentence: `answerable` is then False.

`style` "free" shows the written answer unchecked (the answer before this module); "sentence" always answers
with the sentence (measured beside the others, benchmarks/devset/results/grounded). A question-likelihood margin
(`answerable_margin`) can also mark answers unanswerable; it is off by default: on the development set the
best sentence's margin over no text was as high for unanswerable questions as for answerable ones.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .answer_sentences import Sentence, ranked_sentences
from .decoding import DecodingConfig
from .engine import AnswerStats, Engine
from .grounding import unsupported_words

GROUNDING_STYLES = ("checked", "sentence", "free")
NOT_ANSWERED = "The document does not seem to say."


@dataclass(frozen=True)
class GroundingConfig:
    # How the answer is made from the passages read (the module's docstring); measured on the development set
    # (benchmarks/devset/results/grounded).
    style: str = "checked"
    # The question's mean log-probability per token after the best sentence must exceed its log-probability after
    # no text by this much, or the passages are taken not to answer it; None: no such rule (the default, see the
    # module's docstring).
    answerable_margin: float | None = None
    # Sentences scored at most (each a short row of one batched pass): about the three passages read.
    sentences: int = 32

    def __post_init__(self) -> None:
        if self.style not in GROUNDING_STYLES:
            raise ValueError(f"answer grounding must be one of {', '.join(GROUNDING_STYLES)}, got {self.style!r}")
        if self.sentences < 1:
            raise ValueError(f"at least one sentence must be scored, got {self.sentences}")


@dataclass
class Verdict:
    """What the check found (kept in the answer's stats)."""

    answerable: bool = True
    sentence: Sentence | None = None
    margin: float | None = None  # the best sentence's score above the question's likelihood after no text
    kept_written: bool = True  # the written answer was shown (False: the sentence, or the not-answered line)
    unsupported: tuple[str, ...] = ()  # content words of the written answer that the sentence does not hold
    written: str = ""  # the answer the model wrote, shown or not


def not_answered(closest: Sentence | None) -> str:
    """The answer when the passages do not answer the question: said plainly, with the closest sentence."""
    return NOT_ANSWERED if closest is None else f"{NOT_ANSWERED} The closest it comes: “{closest.text}”"


def grounded_answer(
    engine: Engine,
    pot,
    question: str,
    passages: Sequence[Sequence[int]],
    decoding: DecodingConfig,
    stats: AnswerStats,
    config: GroundingConfig,
    verdict: Verdict,
    *,
    sought: str | None = None,
    history: Sequence[tuple[str, str]] = (),
    pot_entries: int | None = 0,
    question_first: bool = False,
) -> Iterator[str]:
    """Stream the checked answer to `question` from the `passages` read (token ids, in the order read);
    `verdict` is filled before the first piece; without passages the written answer streams unchecked.
    `sought`: what the sentences are ranked for (a follow-up with its earlier question; default the question)."""
    started = time.perf_counter()
    written = engine.answer(
        pot,
        question,
        decoding,
        stats,
        evidence=passages,
        pot_entries=pot_entries,
        question_first=question_first,
        history=history,
    )
    if not passages or (config.style == "free" and config.answerable_margin is None):
        # Nothing to check against (the pot holds the whole document and is read whole), or no check asked.
        yield from written
        return
    text = verdict.written = "".join(written).strip()
    tokenizer = engine.tokenizer
    texts = [tokenizer.decode(list(ids), skip_special_tokens=True) for ids in passages]
    asked = sought or question
    ranked = ranked_sentences(engine, texts, asked, config.sentences)
    verdict.sentence = ranked[0] if ranked else None
    if verdict.sentence is not None and config.answerable_margin is not None:
        verdict.margin = verdict.sentence.score - engine.question_likelihoods([[]], asked)[0]
    answer = text
    if config.answerable_margin is not None and (verdict.margin is None or verdict.margin < config.answerable_margin):
        verdict.answerable, verdict.kept_written = False, False
    elif config.style == "sentence" and verdict.sentence is not None:
        verdict.kept_written, answer = False, verdict.sentence.text
    elif config.style == "checked":
        verdict.unsupported = tuple(unsupported_words(text, [verdict.sentence.text if verdict.sentence else "", asked]))
        if verdict.unsupported or not unsupported_words(text, [asked]):  # an unsupported fact, or nothing added
            verdict.answerable, verdict.kept_written = False, False
    if not verdict.answerable:
        answer = not_answered(verdict.sentence)
    stats.ttft_seconds = time.perf_counter() - started
    yield answer
    stats.seconds = time.perf_counter() - started
    if not verdict.kept_written:
        stats.token_ids = tokenizer(answer, add_special_tokens=False)["input_ids"]
        stats.stopped_by = "end"
