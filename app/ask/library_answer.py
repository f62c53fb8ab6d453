"""A question to the whole library answered (ask.library finds the documents and passages): the answer checked
as for one document (ask.pipeline.checked_answer), its citations naming their documents, and, when close documents
state an answer too, each named with its place and sentence. Not recorded in any conversation.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Protocol

from infinipot.app.ask import evidence, library
from infinipot.app.ask.conversation import cited_answer
from infinipot.app.ask.holding_stream import HeldStream
from infinipot.app.ask.library import LibraryConfig, LibraryStats
from infinipot.app.ask.modes import AnswerSettings
from infinipot.app.ask.pipeline import Piece, checked_answer
from infinipot.app.ask.stats import AskStats
from infinipot.app.library import documents
from infinipot.app.library.documents import DocumentNotFound
from infinipot.app.library.general_pot import general_pot
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.memory_trim import return_freed_memory
from infinipot.core.model import LoadedModel
from infinipot.storage.store import Store
from infinipot.storage.uses import DocumentHold


class Pots(Protocol):
    """Where the library's pots come from: loaded once and kept (the service's), and held in use while they answer."""

    def open_pot(self, doc: str) -> StoredPot: ...

    def hold(self, stored: StoredPot) -> DocumentHold: ...


def library_documents(store: Store, docs: list[str] | None = None) -> list:
    """The documents a library question goes to: those named (each must be stored), or every stored one; only those
    with a complete general pot (a document still being read is not asked yet)."""
    if docs is None:
        records = store.documents.all()
    else:
        records = list({d.id: d for d in (documents.require_document(store, doc) for doc in docs)}.values())
    complete = store.pots.complete_by_document()
    return [r for r in records if general_pot(complete.get(r.id, [])) is not None]


def ask_library(
    lib: Library, pots: Pots, question: str, records: list, settings: AnswerSettings, config: LibraryConfig
) -> tuple[Iterator[str], LibraryStats]:
    """Stream the answer to a question to the documents `records`, with its citations naming their documents."""
    if not records:
        raise DocumentNotFound("no document has been read yet (see `infinipot read`)")
    started = time.perf_counter()
    stats = LibraryStats(answer_from="evidence")
    loaded = lib.models.get("default")
    tokens = settings.decoding.max_new_tokens
    answering, read, others = library.gather_library_evidence(
        lib, pots.open_pot, records, loaded, question, config, settings.evidence, tokens, stats
    )
    stats.evidence_seconds = time.perf_counter() - started
    if answering is None:
        stats.answerable, stats.answer_state = False, "not_found"
        return library.nothing_matches(len(records)), stats
    names = {record.id: record.name for record in records}
    hold = pots.hold(answering)
    try:
        pieces = _library_answer(lib, pots, answering, read, question, settings, stats, names)
        if others:
            pieces = _named_answers(lib, pots, answering, pieces, stats, others, question, settings, names, loaded)
    except BaseException:
        hold.release()
        raise
    return HeldStream(pieces, hold, after=return_freed_memory), stats


def _library_answer(
    lib: Library,
    pots: Pots,
    stored: StoredPot,
    read: list,
    question: str,
    settings: AnswerSettings,
    stats: AskStats,
    names: dict[str, str],
) -> Iterator[str]:
    """The answer from the library candidates `read`, checked as for one document, its citations naming their
    documents."""
    stats.citations = library.library_citations(lib, stored, read, names)
    stats.evidence_tokens = sum(len(c.span.ids) for c in read)
    passages = [list(c.span.ids) for c in read]
    rare = _rare_in_all(lib, pots, dict.fromkeys(c.doc_id for c in read), question, settings)
    events = checked_answer(lib, stored, question, passages, settings, stats, names=rare)
    pieces = (event.text for event in events if isinstance(event, Piece))
    return cited_answer(lib, pieces, stats, stored, question)


def _rare_in_all(lib: Library, pots: Pots, doc_ids: Iterable[str], question: str, settings: AnswerSettings):
    """The names `question` asks about that every one of the documents mentions rarely (ask.evidence.rare_names):
    the sentence a library answer is made of must hold them, as for one document."""
    most = settings.grounding.rare_name_mentions
    common: list[str] | None = None
    for doc_id in doc_ids:
        rare = evidence.rare_names(lib, pots.open_pot(doc_id), question, most)
        common = rare if common is None else [name for name in common if name in rare]
    return common or []


def _named_answers(
    lib: Library,
    pots: Pots,
    answering: StoredPot,
    first: Iterator[str],
    stats: LibraryStats,
    others: list[library.CloseDocument],
    question: str,
    settings: AnswerSettings,
    names: dict[str, str],
    loaded: LoadedModel,
) -> Iterator[str]:
    """The first document's answer and, when it states one, each close document's own (library.named_answers):
    when others state one too, one line per document that does, naming it and its place, with its sentence; else
    the first's answer as it is. Given whole once every document has answered."""
    text = "".join(first)
    if stats.answer_state != "stated":  # the others are named only beside the first (library.named_answers)
        yield text
        return
    answers = [_document_answer(stats, text, answering.doc_id, names)]
    for other in others:  # one at a time, each held in use only while it answers
        stored = pots.open_pot(other.doc_id)
        own = LibraryStats(answer_from="evidence")
        hold = pots.hold(stored)
        try:
            evidence_config, tokens = settings.evidence, settings.decoding.max_new_tokens
            read = library.document_candidates(lib, stored, other.words, loaded, question, evidence_config, tokens, own)
            said = "".join(_library_answer(lib, pots, stored, read, question, settings, own, names)) if read else ""
        finally:
            hold.release()
        stats.warnings += own.warnings
        stats.documents_pointed += own.documents_pointed
        stats.candidates += len(read)
        stats.evidence_tokens += own.evidence_tokens
        if read:
            answers.append(_document_answer(own, said, stored.doc_id, names))
    stats.answers = [answer.as_json() for answer in answers]
    named = library.named_answers(answers)
    if not named:
        yield text
        return
    stats.citations[:] = library.named_citations(named)  # in place: callers may hold the list
    stats.answerable, stats.answer_state, stats.answered_by = True, "stated", named[0].reason
    stats.answer_sentence = ""
    yield "\n".join(library.named_line(answer) for answer in named)


def _document_answer(stats: AskStats, text: str, doc_id: str, names: dict[str, str]) -> library.DocumentAnswer:
    """One document's own answer to a library question, from its stats once it is complete."""
    return library.DocumentAnswer(
        doc_id=doc_id,
        name=names.get(doc_id, doc_id),
        text=text.strip(),
        state=stats.answer_state or ("stated" if stats.answerable else "not_found"),
        sentence=stats.answer_sentence or "",
        citations=[c for c in stats.citations if c.get("doc_id", doc_id) == doc_id] or list(stats.citations),
        reason=stats.answered_by or "",
    )
