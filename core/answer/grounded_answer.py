"""Answers a user can trust: a sentence of the passages read, or plainly that no direct answer was found.

The passages' sentences, as the document writes them (core.answer.answer_sentences: a term leads its description), are
ranked by how likely the question is after each one alone (the judge). The judge's best few are candidates, and a
calibrated model (core.answer.answer_confidence) gives each the probability that it holds the answer from signals any
document has: the judge's scores, the kind of thing asked, the question's words, the rare names, the passage it
comes from. When the likeliest is sure enough it is the answer at once, in the document's own words
(`answerable` true); when it is far from it, no direct answer was found. In between, the model writes a short
answer of its own (core.answer.written_answer), never shown: the sentence it copied becomes a candidate too, and whether
it agrees with each candidate is weighed with the rest. The likeliest is then the answer when its probability
reaches the threshold; otherwise the answer says plainly that no direct answer was found and quotes that
candidate (`answerable` false): a question the document does not answer has no candidate that adds what is asked.
Not stated, the likeliest is shown as "The passage that seems to answer: “...”" when it is likely enough
(answer_state "closest"), and "not_found" otherwise, always when the question is mostly about words the document
never uses. Where a head was fitted for the model (core.answer.learned_judge), it decides instead.

A name, number or version in a checked answer is always the document's: the model's own words are never shown.

A follow-up asking a number, version, date or name whose fact no candidate holds is answered with the earlier
answer's sentence when that holds one (`earlier_fact`).

`style` "free" shows the model's own answer from the passages, unchecked; "sentence" always answers with the
judge's best sentence. Measured side by side: benchmarks/results/devset/grounded.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace

from ..decoding import DecodingConfig
from ..engine import AnswerStats, Engine
from .answer_confidence import AskedAbout, ConfidenceModel, likeliest
from .answer_sentences import Sentence, judged_in_detail, judged_sentences
from .answer_words import BASE_MODEL_WROTE, NOT_ANSWERED, SEEMS_TO_ANSWER
from .grounding import holds_any_form, word_keys
from .learned_judge import JudgeHead, head_for, learned_likeliest
from .question_kind import holds_kind, question_kind
from .written_answer import written_answer

GROUNDING_STYLES = ("checked", "sentence", "free")
# What an answer is, as `ask --json` says it (answer_state): the document's sentence stated, the passage that
# seems to answer, or nothing read answers.
ANSWER_STATES = ("stated", "closest", "not_found")


@dataclass(frozen=True)
class GroundingConfig:
    # How the answer is made from the passages read (the module's docstring); measured on the development set
    # (benchmarks/results/devset/grounded).
    style: str = "checked"
    # Which candidate answers, and when (core.answer.answer_confidence).
    confidence: ConfidenceModel = field(default_factory=ConfidenceModel)
    # Sentences scored at most (each a short row of one batched pass): about the three passages read.
    sentences: int = 32
    # Decide with the learned judge (core.answer.learned_judge) when a head was fitted for the model; otherwise,
    # and with False, with `confidence`.
    learned: bool = True
    # A name the question uses that the document mentions at most this many times is one the answer should hold
    # (core.answer.question_names; a signal of core.answer.answer_confidence); None: no such names are sought.
    rare_name_mentions: int | None = 2

    def __post_init__(self) -> None:
        if self.style not in GROUNDING_STYLES:
            raise ValueError(f"answer grounding must be one of {', '.join(GROUNDING_STYLES)}, got {self.style!r}")
        if self.sentences < 1:
            raise ValueError(f"at least one sentence must be scored, got {self.sentences}")
        if self.rare_name_mentions is not None and self.rare_name_mentions < 0:
            raise ValueError(f"rare name mentions must be 0 or more, or None, got {self.rare_name_mentions!r}")


@dataclass
class Verdict:
    """What the check found (kept in the answer's stats)."""

    answerable: bool = True
    sentence: Sentence | None = None  # the sentence answered with, or quoted as the closest passage
    ranked: tuple[Sentence, ...] = ()  # the judge's sentences, best first (at most GroundingConfig.sentences)
    confidence: float | None = None  # the likeliest candidate's probability of holding the answer
    kept_written: bool = True  # the written answer was shown (False: the sentence, or the not-found line)
    written: str = ""  # the answer the model wrote: shown ("free" style) or only weighed ("" when not written)
    state: str = "stated"  # one of ANSWER_STATES
    # how the likeliest was decided: "calibrated" (for this model), "strict" (another model: ConfidenceModel.for_model),
    # "learned" (the learned judge's head); "" when nothing was decided
    decided_by: str = ""
    # why the answer is what it is: "confident" (the likeliest candidate reached the threshold), "unsure" (it did
    # not: not found), "earlier" (a follow-up answered with an earlier answer's sentence), "sentence", "free"
    reason: str = ""


def earlier_fact(
    ranked: Sequence[Sentence], first_carried: int, question: str, earlier: str, shortlist: int
) -> Sentence | None:
    """The earlier answer's sentence that answers a follow-up asking a number, version, date or person, when none
    of the judge's best `shortlist` sentences of the passages holds one and it does ("What version of it?" after
    "Under which license is this manual distributed?" was answered "Permission is granted ... under the terms of
    the GNU Free Documentation License, Version 1.3 ..."). The judge ranks such short follow-ups poorly: what they
    ask is in one word ("version") of a few. `first_carried`: the span index from which ranked sentences are
    earlier answers."""
    best_read = [s for s in ranked if s.span < first_carried][:shortlist]
    if question_kind(question) == "other" or any(holds_kind(s.text, question, earlier) for s in best_read):
        return None
    return next((s for s in ranked if s.span >= first_carried and holds_kind(s.text, question, earlier)), None)


def free_answer(
    engine, pot, question, passages, decoding, stats, history=(), pot_entries=0, question_first=False
) -> Iterator[str]:
    """The model's own answer from the passages read after the pot, streamed unchecked ("free" style, or nothing
    to check against); a base model's is followed by a sentence saying so (BASE_MODEL_WROTE)."""
    yield from engine.answer(
        pot,
        question,
        decoding,
        stats,
        evidence=passages,
        pot_entries=pot_entries,
        question_first=question_first,
        history=history,
    )
    if not engine.loaded.follows_instructions:
        yield f"\n\n{BASE_MODEL_WROTE}"


def answers_freely(passages: Sequence[Sequence[int]], config: GroundingConfig) -> bool:
    """Whether the answer is the model's own, streamed unchecked: no check asked, or nothing to check against (the
    pot holds the whole document and is read whole)."""
    return not passages or config.style == "free"


# Words of the closest sentence quoted in a not-found answer: a table or listing taken for one sentence would
# otherwise fill the answer (the whole sentence is the first source shown under it).
CLOSEST_WORDS = 40


def _quoted(sentence: Sentence) -> str:
    words = sentence.text.split()
    return sentence.text if len(words) <= CLOSEST_WORDS else " ".join(words[:CLOSEST_WORDS]) + " …"


def seems_to_answer(closest: Sentence) -> str:
    """The answer when a unit is likely but not sure to answer: said so, quoting it."""
    return f"{SEEMS_TO_ANSWER} “{_quoted(closest)}”"


def not_answered(closest: Sentence | None, absent: Sequence[str] = ()) -> str:
    """The answer when no direct answer was found: said plainly, with the words of the question the document
    never uses (`absent`: "football" asked of a manual says at once why), and the closest sentence (its first
    CLOSEST_WORDS words)."""
    said = NOT_ANSWERED
    if closest is not None:  # a word the quoted passage holds, in any form, is no word the document lacks
        quoted_words = word_keys([closest.text])
        absent = [word for word in absent if not holds_any_form(quoted_words, word)]
    if absent:
        named = " or ".join(f"“{word}”" for word in absent)
        said = f"{NOT_ANSWERED[:-1]}, which never mentions {named}."
    if closest is None:
        return said
    return f"{said} The closest passage: “{_quoted(closest)}”"


@dataclass(frozen=True)
class WritingToWeigh:
    """A step of the check worth telling its reader: the model starts writing its own answer to weigh against the
    candidates (the doubt band), which takes as long as the rest."""


def checking(
    engine: Engine,
    pot,
    question: str,
    passages: Sequence[Sequence[int]],
    decoding: DecodingConfig,
    stats: AnswerStats,
    config: GroundingConfig,
    *,
    earlier: str = "",
    history: Sequence[tuple[str, str]] = (),
    carried: Sequence[str] = (),
    names: Sequence[str] = (),
    pot_entries: int | None = 0,
    question_first: bool = False,
) -> Generator[WritingToWeigh, None, Verdict]:
    """Check what answers `question` in the `passages` read (token ids, in the order read: the likeliest last,
    core.answer.evidence's order "likelihood"; at least one): yields WritingToWeigh when the model writes an answer
    to weigh, and returns the Verdict (final_answer says it). `earlier`: the earlier questions a follow-up leans on
    ("What version of it?"): the judge reads them before the question and scores the question alone
    (rerank.question_likelihoods' context). `carried`: earlier answers given in the document's words; when the
    follow-up asks a number, version, date or name, they are judged with the passages' sentences, since the fact
    asked for is often in the sentence just quoted ("For how many years had she kept it?"). `names`: the names the
    question asks about that the document hardly mentions (core.answer.question_names)."""
    verdict = Verdict()
    tokenizer = engine.tokenizer
    texts = [tokenizer.decode(list(ids), skip_special_tokens=True) for ids in passages]
    first_carried = len(texts)
    if carried and question_kind(question) != "other":
        texts += list(carried)  # last: ranked_sentences takes the last passage's sentences first
    head = _head(engine, config)
    if head is not None:
        ranked, blank = judged_in_detail(engine, texts, question, config.sentences, earlier)
        no_text = blank.score
    else:
        ranked, no_text = judged_sentences(engine, texts, question, config.sentences, earlier)
    verdict.ranked = tuple(ranked)
    verdict.kept_written = False
    asked = AskedAbout(earlier, names, texts, best_span=first_carried - 1)
    if config.style == "sentence":
        verdict.sentence = ranked[0] if ranked else None
        verdict.answerable, verdict.reason = verdict.sentence is not None, "sentence"
        verdict.state = "stated" if verdict.answerable else "not_found"
    elif head is not None:
        verdict.decided_by = "learned"
        _learned_verdict(verdict, ranked, blank, question, head, asked, first_carried)
    else:
        identity = engine.loaded.identity
        model = config.confidence.for_model(identity)
        verdict.decided_by = "calibrated" if config.confidence.fitted_for(identity) else "strict"
        if _calibrated_verdict(verdict, ranked, no_text, question, model, asked, first_carried):
            yield WritingToWeigh()
            verdict.written = written_answer(
                engine, pot, question, passages, decoding, stats, history=history, pot_entries=pot_entries,
                question_first=question_first,
            )  # fmt: skip
            _weigh_written(verdict, ranked, no_text, question, model, asked)
    return verdict


def final_answer(
    engine: Engine, verdict: Verdict, stats: AnswerStats, started: float, absent: Sequence[str] = ()
) -> tuple[Verdict, str]:
    """The checked answer's words, and its verdict as said: a not-found answer names the question's words the
    document never uses (`absent`, asked only when the verdict is not answerable), and a question mostly about
    such words has no passage that seems to answer it. `stats` describe what is said: its seconds since `started`
    (a perf_counter time: the check's start), its token ids, its end."""
    if verdict.state == "closest" and absent:
        verdict = replace(verdict, state="not_found")
    if verdict.answerable:
        answer = verdict.sentence.text
    elif verdict.state == "closest":
        answer = seems_to_answer(verdict.sentence)
    else:
        answer = not_answered(verdict.sentence, absent)
    stats.ttft_seconds = stats.seconds = time.perf_counter() - started
    stats.token_ids = engine.tokenizer(answer, add_special_tokens=False)["input_ids"]
    stats.stopped_by = "end"
    return verdict, answer


def _head(engine: Engine, config: GroundingConfig) -> JudgeHead | None:
    """The learned judge's head for the engine's model, when asked for and fitted for it."""
    if not config.learned or config.style != "checked":
        return None
    return head_for(engine.loaded.identity, engine.model.config.hidden_size)


def _learned_verdict(verdict, ranked, blank, question, head: JudgeHead, asked: AskedAbout, first_carried) -> None:
    """The learned judge's verdict: its likeliest unit stated at head.stated, an earlier answer's sentence for a
    follow-up it holds the fact of, the likeliest shown as seeming to answer at head.closest, else not found."""
    verdict.sentence, verdict.confidence = learned_likeliest(ranked, blank, question, head, asked)
    held = earlier_fact(ranked, first_carried, question, asked.earlier, head.candidates)
    stated = verdict.sentence is not None and verdict.confidence >= head.stated
    _settle(verdict, ranked, stated, held, head.closest)


def _calibrated_verdict(verdict, ranked, no_text, question, model: ConfidenceModel, asked: AskedAbout, first_carried):
    """The verdict of the hand-made signals' calibrated decision (core.answer.answer_confidence); true when the
    likeliest is in its doubt band, where the writer's answer is weighed before it is settled (_weigh_written);
    not stated, "closest" when the likeliest reached model.closest."""
    verdict.sentence, verdict.confidence = likeliest(ranked, question, no_text, model, asked)
    held = earlier_fact(ranked, first_carried, question, asked.earlier, model.candidates)
    stated = verdict.sentence is not None and verdict.confidence >= model.sure
    if not stated and held is None and verdict.sentence is not None and verdict.confidence > model.unsure:
        return True
    _settle(verdict, ranked, stated, held, model.closest)
    return False


def _weigh_written(verdict, ranked, no_text, question, model: ConfidenceModel, asked: AskedAbout) -> None:
    """The doubted verdict settled with the writer's answer (verdict.written) weighed with the rest."""
    verdict.sentence, verdict.confidence = likeliest(ranked, question, no_text, model, asked, verdict.written)
    _settle(verdict, ranked, verdict.confidence >= model.threshold, None, model.closest)


def _settle(verdict: Verdict, ranked, stated: bool, held: Sentence | None, closest: float) -> None:
    """The verdict once its likeliest unit is weighed: `stated`; else a follow-up answered with the earlier answer's
    sentence that holds its fact (`held`); else not stated: "closest" when the likeliest reached `closest`, else
    "not_found", quoting the judge's best unit when no candidate adds to the question."""
    if stated:
        verdict.reason, verdict.state = "confident", "stated"
    elif held is not None:
        verdict.sentence, verdict.reason, verdict.state = held, "earlier", "stated"
    else:
        verdict.answerable, verdict.reason = False, "unsure"
        likely = verdict.sentence is not None and verdict.confidence >= closest
        verdict.state = "closest" if likely else "not_found"
        verdict.sentence = verdict.sentence or (ranked[0] if ranked else None)
