"""An answer's sources arranged once it is complete, and the answer stored in its conversation; the turns a
follow-up sees."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import asdict

from infinipot.app.ask.citing import cite_answer
from infinipot.app.ask.evidence import with_snippets
from infinipot.app.ask.follow_up import NOT_FOUND_TURN, STATED_REASONS, RecordedTurn, turns_in_view
from infinipot.app.ask.quoting import arranged_citations
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.documents import DocumentNotFound
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.core.engine import AnswerStats
from infinipot.storage.errors import NotStored
from infinipot.storage.store import Store


def cited_answer(
    library: Library, pieces: Iterator[str], stats: AskStats, stored: StoredPot, question: str
) -> Iterator[str]:
    """Pass the answer through; once it is complete, its sources arranged in stats.citations (arrange_sources)."""
    text = []
    for piece in pieces:
        text.append(piece)
        yield piece
    arrange_sources(library, stats, stored, question, "".join(text))


def arrange_sources(library: Library, stats: AskStats, stored: StoredPot, question: str, answer: str) -> None:
    """Fill stats.citations once the answer is complete (evidence spans were cited already), arranged for a
    reader: one per place, the one the answer came from first, each with its quote (ask.quoting.arranged_citations);
    none under a stopped answer (sources show under a complete answer only). The list is changed in place:
    callers may hold it."""
    if stats.stopped_by == "reader":
        stats.citations[:] = []
    else:
        found = stats.citations or citations(library, stored, question, stats)
        stats.citations[:] = arranged_citations(found, stats.answer_sentence or answer, question)
    stats.answer_pot = None  # a distilled copy is not kept alive with the stats


def record_answer(
    store: Store, stored: StoredPot, question: str, answer: str, stats: AskStats, conversation_id: int | None
) -> None:
    """Store the question and its answer (one stopped by its reader as far as it got, marked stopped) in the
    conversation (a new one when None: stats.conversation_id names it); a warning instead when the document was
    deleted meanwhile."""
    deleted = f"{stored.name} was deleted while this answer was written, so it is not saved"
    if store.documents.get(stored.doc_id) is None:  # a delete that ran before this answer marked it in use
        stats.warnings.append(deleted)
        return
    try:
        _record(store, stored, question, answer, stats, conversation_id)
    except (sqlite3.IntegrityError, NotStored):  # the same delete, committed between the look and the write
        stats.warnings.append(deleted)


def _record(
    store: Store, stored: StoredPot, question: str, answer: str, stats: AskStats, conversation_id: int | None
) -> None:
    if conversation_id is None:
        conversation_id = store.conversations.create(stored.doc_id, stored.record.id, question[:80]).id
    stopped = stats.stopped_by == "reader"
    meta = {
        "pot_id": stored.record.id,
        "ttft_seconds": stats.first_token_seconds,
        "seconds": stats.seconds,
        "new_tokens": stats.new_tokens,
        # A stopped answer keeps what was on screen: its words, or the passage looked at before them; no sources.
        "citations": [] if stopped else stats.citations,
        "answer_from": stats.answer_from,
        "stopped": stopped,
        "answerable": stats.answerable,
        "answer_state": stats.answer_state,
        "answered_by": stats.answered_by,
    }
    if stopped and not answer and stats.looked_at:
        meta["looked_at"] = stats.looked_at
    store.conversations.append_many(conversation_id, [("user", question, None), ("assistant", answer, meta)])
    stats.conversation_id = conversation_id


def citations(library: Library, stored: StoredPot, question: str, stats: AnswerStats) -> list[dict]:
    """The pages or lines a complete answer drew on (ask.citing), best first, each with its text."""
    if stats.answer_pot is None:
        return []
    document = library.store.documents.get(stored.doc_id)
    found = cite_answer(
        stored.engine,
        stats.answer_pot,
        question,
        stats.token_ids,
        library.store.location_map_path(stored.doc_id),
        stored.doc_id,
        document.kind if document else None,
    )
    return [citation.as_json() for citation in with_snippets(library, stored, found)]


def recorded_turns(store: Store, conversation_id: int) -> list[RecordedTurn]:
    """The conversation's turns a follow-up refers to, oldest first, each with whether its answer was a sentence of
    the document (STATED_REASONS) and the citation it was quoted from. Summaries, side answers and stopped answers
    are no such turns; an answer that found nothing direct is given as such (the closest passage it quoted is no
    answer, and a follow-up would take it for one)."""
    turns, question = [], None
    for message in store.conversations.messages(conversation_id):
        meta = message.meta or {}
        if message.role == "user":
            question = message.content
        elif question is not None and not _side_or_stopped(meta) and message.content:
            answer = message.content if meta.get("answerable", True) is not False else NOT_FOUND_TURN
            cited = meta.get("citations") or []
            stated = meta.get("answered_by") in STATED_REASONS
            turns.append(RecordedTurn(question, answer, stated, cited[0] if stated and cited else None))
            question = None
    return turns


def _side_or_stopped(meta: dict) -> bool:
    """A stored answer a follow-up does not refer to: a summary, a side answer (a re-read's, one across documents),
    or one stopped before its end."""
    return bool(meta.get("summary") or meta.get("side") or meta.get("stopped"))


def record_exchange(
    store: Store, doc_id: str, request: str, answer: str, conversation_id: int | None, meta: dict
) -> int:
    """Store a request and its answer in a conversation of the document (a new one when None); its id."""
    store.require_writable("keeping the answer in the conversation")
    conversations = store.conversations
    if conversation_id is None:
        conversation_id = conversations.create(doc_id, None, request[:80]).id
    conversations.append_many(conversation_id, [("user", request, None), ("assistant", answer, meta)])
    return conversation_id


def turns_seen(store: Store, question: str, conversation_id: int | None) -> tuple[list, list[RecordedTurn]]:
    """The earlier (question, answer) turns a new question sees (ask.follow_up.turns_in_view), and those of them
    answered in the document's words."""
    recorded = recorded_turns(store, conversation_id) if conversation_id is not None else []
    history = turns_in_view(question, [(turn.question, turn.answer) for turn in recorded])
    # history is the last turns of `recorded`
    return history, [turn for turn in recorded[len(recorded) - len(history) :] if turn.stated]


def require_conversation(store: Store, conversation_id: int, doc_id: str) -> None:
    """DocumentNotFound unless the conversation is stored and about this document."""
    try:
        conversation = store.conversations.get(conversation_id)
    except NotStored as exc:
        raise DocumentNotFound(str(exc)) from None
    if conversation.document_id != doc_id:
        raise DocumentNotFound(f"conversation {conversation_id} is not about this document")


def conversation_row(store: Store, conversation_id: int) -> dict | None:
    """The stored conversation as a dict, None when there is none."""
    try:
        return asdict(store.conversations.get(conversation_id))
    except NotStored:
        return None
