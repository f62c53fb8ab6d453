"""An answer passed through as it streams, then stored in its conversation with the places it drew on."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

from infinipot.app.ask.citing import cite_answer
from infinipot.app.ask.evidence import with_snippets
from infinipot.app.ask.quoting import arranged_citations
from infinipot.app.ask.stats import AskStats
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.core.engine import AnswerStats
from infinipot.storage.errors import NotStored
from infinipot.storage.store import Store


def cited_answer(
    library: Library, pieces: Iterator[str], stats: AskStats, stored: StoredPot, question: str
) -> Iterator[str]:
    """Pass the answer through; once it is complete, fill stats.citations (evidence spans were cited already),
    arranged for a reader: one per place, the one the answer came from first, each with its quote
    (ask.quoting.arranged_citations). The list is changed in place: callers may hold it."""
    text = []
    for piece in pieces:
        text.append(piece)
        yield piece
    if stats.stopped_by == "reader":  # sources show under a complete answer only: a stopped one gets none after
        stats.citations[:] = []
        stats.answer_pot = None
        return
    found = stats.citations or citations(library, stored, question, stats)
    stats.citations[:] = arranged_citations(found, stats.answer_sentence or "".join(text), question)
    stats.answer_pot = None  # a distilled copy is not kept alive with the stats


def recorded_answer(
    library: Library,
    pieces: Iterator[str],
    stats: AskStats,
    stored: StoredPot,
    question: str,
    conversation_id: int | None,
) -> Iterator[str]:
    """Pass the cited answer through; once it is complete, store question and answer. An answer stopped by its
    reader (the stream closed: the app's Stop) is stored as far as it got, marked stopped."""
    store = library.store
    text = []
    try:
        for piece in cited_answer(library, pieces, stats, stored, question):
            text.append(piece)
            yield piece
    except GeneratorExit:
        stats.stopped_by = "reader"
        _record_if_stored(store, stored, question, "".join(text).strip(), stats, conversation_id)
        raise
    _record_if_stored(store, stored, question, "".join(text).strip(), stats, conversation_id)


def _record_if_stored(
    store: Store, stored: StoredPot, question: str, answer: str, stats: AskStats, conversation_id: int | None
) -> None:
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
