"""Asking a document a question, as one pipeline: find the passages, weigh them, state or write the answer, cite it
and keep it in its conversation. Each step is an event its reader renders (the CLI prints it, the page draws it);
nothing here calls back up.

The events, in order: AskStage "looking" (the passage the search points at, within a second or two), "weighing"
(the passages read), maybe "writing" (the model writes an answer to weigh); a Piece for each piece of the answer
(a checked answer is one piece); Sources under a complete answer; Done with the answer's stats. A Stop ends the
work within a layer of the model and the answer is kept as far as it was given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field

from infinipot.app.ask import evidence
from infinipot.app.ask.conversation import arrange_sources, record_answer
from infinipot.app.ask.events import AskEvent, Done, Piece, Sources
from infinipot.app.ask.follow_up import RecordedTurn, follow_up_query, writer_turns
from infinipot.app.ask.modes import AnswerSettings
from infinipot.app.ask.progress import WRITING, AskStage, looked_at, passages, until_stopped
from infinipot.app.ask.quoting import source_lines
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.core.answer.evidence import spans_to_read
from infinipot.core.answer.grounded_answer import (
    Verdict,
    WritingToWeigh,
    answers_freely,
    checking,
    final_answer,
    free_answer,
)


@dataclass(frozen=True)
class Answering:
    """An answer under way: its events (the document held in use until they end or are closed), its stats as they
    fill, and whether the stored pot was reused (False when asking had to read the document first)."""

    events: Iterator[AskEvent]
    stats: AskStats
    reused: bool

    def pieces(self) -> Iterator[str]:
        """The answer's pieces alone; the other events pass by (what they say is in `stats` too). Closing this
        closes the events (the answer is kept as far as it was given)."""
        try:
            for event in self.events:
                if isinstance(event, Piece):
                    yield event.text
        finally:
            close = getattr(self.events, "close", None)
            if close is not None:
                close()


@dataclass(frozen=True)
class Question:
    """What is asked: the question, how it is answered, and the earlier turns it sees."""

    text: str
    settings: AnswerSettings
    # The earlier (question, answer) turns in view (ask.follow_up.turns_in_view); the evidence is sought for their
    # questions and this one together, and the answer sees them.
    history: list[tuple[str, str]] = field(default_factory=list)
    # The turns in view answered in the document's words, which a follow-up's judge also weighs.
    carried: list[RecordedTurn] = field(default_factory=list)
    asked: float = field(default_factory=time.perf_counter)  # when it was asked (a perf_counter time)


def never_stopped() -> bool:
    return False


@dataclass(frozen=True)
class Keeping:
    """Where the answer is kept once complete: the conversation (None: a new one), or nowhere (`record` False)."""

    record: bool = True
    conversation_id: int | None = None


def answer_events(
    library: Library,
    stored: StoredPot,
    question: str,
    steps: Iterator[AskStage | Piece],
    stats: AskStats,
    stopped: Callable[[], bool],
    keeping: Keeping,
) -> Iterator[AskEvent]:
    """The answer to `question` from the stored pot as events (the module's docstring): its `steps`
    (answer_steps), then its sources, kept as `keeping` says; `stats` is filled as it goes. `stopped` is asked from
    the work's own thread: once true (the app's Stop) the work ends within a layer of the model, and the answer is
    kept as far as it was given, marked stopped, with no sources. Closing the stream does the same."""
    text: list[str] = []
    try:
        for event in until_stopped(steps, stopped, stats):
            if isinstance(event, Piece):
                text.append(event.text)
            yield event
    except GeneratorExit:  # the reader closed the stream: the answer is kept as far as it was given
        stats.stopped_by = "reader"
        _keep(library, stored, question, "".join(text), stats, keeping)
        raise
    answer = "".join(text)
    arrange_sources(library, stats, stored, question, answer)
    try:
        if stats.citations:
            yield Sources(list(stats.citations), stats.answerable, source_lines(stats.citations, answer))
    finally:  # complete, it is kept whether or not its reader took the sources
        _keep(library, stored, question, answer, stats, keeping)
    yield Done(stats)


def _keep(library: Library, stored: StoredPot, question: str, answer: str, stats: AskStats, keeping: Keeping) -> None:
    if keeping.record:
        record_answer(library.store, stored, question, answer.strip(), stats, keeping.conversation_id)


def answer_steps(
    library: Library, stored: StoredPot, question: Question, stats: AskStats
) -> Iterator[AskStage | Piece]:
    """The answer's stages and pieces in the chosen mode: from the pot, a focused copy of it, or the passages it
    points to, checked (the default)."""
    settings = question.settings
    stats.answer_from = settings.answer_from
    engine, pot, decoding, history = stored.engine, stored.pot, settings.decoding, question.history
    if settings.answer_from == "focus":
        pieces = engine.answer(pot, question.text, decoding, stats, focus=settings.focus_entries, history=history)
    elif settings.answer_from == "pot":
        pieces = engine.answer(pot, question.text, decoding, stats, history=history)
    else:
        yield from _from_evidence(library, stored, question, stats)
        return
    for piece in pieces:
        yield Piece(piece)


def _from_evidence(
    library: Library, stored: StoredPot, question: Question, stats: AskStats
) -> Iterator[AskStage | Piece]:
    """Answer mode `evidence`: the passages the pot points to are sought (for the earlier questions in view and
    this one), the one to look at shown at once (stats.first_evidence_seconds after the question was asked), read,
    then the answer checked against them."""
    settings, text = question.settings, question.text
    started = time.perf_counter()
    sought = follow_up_query(text, question.history)
    search = evidence.search_evidence(library, stored, sought, settings.evidence, settings.decoding.max_new_tokens)
    if search.candidates:
        stats.first_evidence_seconds = time.perf_counter() - question.asked
        seen = [c.as_json() for c in evidence.span_citations(library, stored, search.candidates)]
        stats.looked_at = looked_at(seen, text)
        yield AskStage("looking", f"checking {passages(len(search.candidates))}", stats.looked_at)
    spans = search.read()
    stats.warnings += search.warnings
    to_read = spans_to_read(spans)
    stats.evidence_tokens = sum(len(ids) for ids in to_read)
    stats.citations = [c.as_json() for c in evidence.span_citations(library, stored, spans)]
    names = evidence.rare_names(library, stored, text, settings.grounding.rare_name_mentions)
    stats.evidence_seconds = time.perf_counter() - started
    if spans:
        likeliest = spans[-1] if settings.evidence.order == "likelihood" else max(spans, key=lambda s: s.score)
        read = next(c for c in stats.citations if c["token"] == likeliest.start)  # cited above: no second load
        stats.looked_at = looked_at([read], text)
        yield AskStage("weighing", f"weighing the sentences of {passages(len(to_read))}", stats.looked_at)
    turns = question.history, question.carried
    yield from checked_answer(library, stored, text, to_read, settings, stats, *turns, names)


def checked_answer(
    library: Library,
    stored: StoredPot,
    question: str,
    read: list,
    settings: AnswerSettings,
    stats: AskStats,
    history: Sequence[tuple[str, str]] = (),
    carried: Sequence[RecordedTurn] = (),
    names: Sequence[str] = (),
) -> Iterator[AskStage | Piece]:
    """The answer checked against the passages `read` (token ids; core.answer.grounded_answer), its verdict kept in
    `stats`; unchecked, the model's own answer streamed, when there is nothing to check against. A follow-up's
    sentences are judged after the earlier questions in view (`history`); `names`: the question's rare names, which
    the sentence answered with must hold. A follow-up answered with an earlier answer's sentence ("earlier") cites,
    first, the place that sentence was quoted from."""
    engine, grounding, decoding = stored.engine, settings.grounding, settings.decoding
    entries, question_first = settings.evidence.pot_entries, settings.evidence.question_first
    if answers_freely(read, grounding):
        _keep_verdict(stats, Verdict(reason="free"))
        for piece in free_answer(
            engine, stored.pot, question, read, decoding, stats, writer_turns(list(history)), entries, question_first
        ):
            yield Piece(piece)
        return
    started = time.perf_counter()
    verdict = yield from _told(
        checking(
            engine, stored.pot, question, read, decoding, stats, grounding,
            earlier=" ".join(asked.strip() for asked, _ in history), history=writer_turns(list(history)),
            carried=[turn.answer for turn in carried], names=names, pot_entries=entries, question_first=question_first,
        )
    )  # fmt: skip
    absent = () if verdict.answerable else evidence.absent_words(library, stored, question)
    verdict, answer = final_answer(engine, verdict, stats, started, absent)
    if verdict.reason == "earlier":
        source = carried[verdict.sentence.span - len(read)].source
        stats.citations[:0] = [dict(source)] if source else []
    _keep_verdict(stats, verdict)
    yield Piece(answer)


def _told(check: Generator[WritingToWeigh, None, Verdict]) -> Generator[AskStage, None, Verdict]:
    """The check's steps as the stages a reader sees; its verdict."""
    while True:
        try:
            next(check)
        except StopIteration as done:
            return done.value
        yield AskStage("writing", WRITING)


def _keep_verdict(stats: AskStats, verdict: Verdict) -> None:
    stats.answerable = verdict.answerable
    stats.answer_state = verdict.state
    stats.answer_sentence = verdict.sentence.text if verdict.sentence else ""
    stats.written_answer = verdict.written
    stats.confidence = verdict.confidence
    stats.answered_by = verdict.reason
    stats.decided_by = verdict.decided_by
    stats.ranked_sentences = [sentence.text for sentence in verdict.ranked]
    stats.ranked_scores = [round(sentence.score, 4) for sentence in verdict.ranked]
