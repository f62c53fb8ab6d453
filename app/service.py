"""The service layer shared by the CLI and the UI: read documents into stored pots, answer from them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import LoadedModel, ModelSpec, load_model
from infinipot.core.pot import Pot
from infinipot.ingest import file_fingerprint, open_document
from infinipot.storage.errors import DamagedFile, NotStored
from infinipot.storage.liveness import is_running
from infinipot.storage.paths import data_home
from infinipot.storage.records import DocumentRecord, PotRecord
from infinipot.storage.store import Store

from .citing import cite_answer
from .growing import plan_read
from .merged_cache import MergedPotCache
from .pot_choice import general_candidates, general_pot
from .potcodec import pot_from_storage
from .reading import ReadOutcome, read_document

# Seconds of reading between two checkpoints: a crash loses at most this much work.
DEFAULT_CHECKPOINT_SECONDS = 60.0


class DocumentNotFound(ValueError):
    """A doc_id or path that names no document."""


@dataclass
class ReadReport:
    doc_id: str
    name: str
    tokens: int
    cycles: int
    pot_entries: int
    peak_entries: int
    seconds: float
    reused: bool
    pot_id: int
    resumed_from: int = 0
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "doc_id": self.doc_id,
            "name": self.name,
            "tokens": self.tokens,
            "cycles": self.cycles,
            "pot_entries": self.pot_entries,
            "peak_entries": self.peak_entries,
            "seconds": round(self.seconds, 3),
            "reused": self.reused,
            "resumed_from": self.resumed_from,
            "warnings": self.warnings,
        }


@dataclass
class AskStats(AnswerStats):
    """AnswerStats plus what happened before generation: finding and loading the stored pot."""

    load_seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    conversation_id: int | None = None
    citations: list[dict] = field(default_factory=list)  # app.citing.Citation.as_json(), best first

    @property
    def first_token_seconds(self) -> float | None:
        """From the ask call to the first answer token: pot lookup and load, request prefill, first token."""
        return None if self.ttft_seconds is None else self.load_seconds + self.ttft_seconds


@dataclass
class StoredPot:
    doc_id: str
    name: str
    record: PotRecord
    pot: Pot
    engine: Engine
    warnings: list[str] = field(default_factory=list)


class DocumentService:
    """Owns loaded models (one per name) and the store under the data directory."""

    def __init__(
        self,
        home: Path | None = None,
        device: str = "auto",
        checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS,
    ) -> None:
        if checkpoint_seconds < 0:
            raise ValueError(f"checkpoint interval must not be negative, got {checkpoint_seconds}")
        self.home = home or data_home()
        self.store = Store(self.home)
        self.device = device
        self.checkpoint_seconds = checkpoint_seconds
        self._models: dict[str, LoadedModel] = {}
        self.merged_pots = MergedPotCache()  # pots merged for questions across documents (app.across)

    def model(self, name: str) -> LoadedModel:
        if name not in self._models:
            self._models[name] = load_model(ModelSpec(name=name, device=self.device), self.home)
        return self._models[name]

    # -- reading -----------------------------------------------------------------------------------
    def read(
        self,
        path: str | Path,
        config: PotConfig,
        model_name: str = "default",
        on_progress: Callable[[Pot], None] | None = None,
        follow: bool = False,
    ) -> ReadReport:
        """Read a document into a stored pot, resume an interrupted read, or reuse the stored pot.

        The same bytes, model weights and pot settings never read twice; a damaged stored pot is reported
        in `warnings` and read again. A text file that only grew continues its stored pot (see app/growing.py);
        `follow` reads a text file only up to its last complete line.
        """
        started = time.perf_counter()
        path = Path(path)
        document = open_document(path)
        fingerprint = file_fingerprint(path)
        engine = Engine(self.model(model_name), config)
        engine.new_reader()  # impossible settings fail here, before anything is recorded
        plan = plan_read(self.store, path, document, fingerprint, engine, follow)
        warnings: list[str] = [plan.warning] if plan.warning else []
        if plan.pot is not None:
            record = self.store.claim_pot(
                plan.document.id, model_name, engine.loaded.identity, config.identity(), config.method
            )
            outcome = read_document(
                self.store, engine, document, record, self.checkpoint_seconds, on_progress, plan.scope
            )
            return self._read_report(plan.document.id, document.name, outcome, started, warnings)
        doc = self.store.documents.record(
            fingerprint,
            document.name,
            str(path.resolve()),
            document.size_bytes,
            path.stat().st_mtime_ns,
            document.kind,
            document.pages,
        )
        existing = self.store.pots.find(doc.id, engine.loaded.identity, config.identity())
        if existing is not None and existing.status == "complete" and plan.may_reuse:
            try:
                self.store.verify_pot(existing)
                return self._reused_report(doc, existing, time.perf_counter() - started)
            except DamagedFile as exc:
                warnings.append(damage_warning(document.name, exc))
        record = self.store.claim_pot(doc.id, model_name, engine.loaded.identity, config.identity(), config.method)
        outcome = read_document(self.store, engine, document, record, self.checkpoint_seconds, on_progress, plan.scope)
        return self._read_report(doc.id, document.name, outcome, started, warnings)

    @staticmethod
    def _read_report(doc_id: str, name: str, outcome: ReadOutcome, started: float, warnings: list[str]) -> ReadReport:
        pot = outcome.pot
        return ReadReport(
            doc_id=doc_id,
            name=name,
            tokens=pot.document_tokens,
            cycles=pot.cycles,
            pot_entries=pot.entries,
            peak_entries=pot.peak_entries,
            seconds=time.perf_counter() - started,
            reused=False,
            pot_id=outcome.record.id,
            resumed_from=outcome.resumed_from,
            warnings=warnings + outcome.warnings,
        )

    @staticmethod
    def _reused_report(doc: DocumentRecord, record: PotRecord, seconds: float) -> ReadReport:
        return ReadReport(
            doc_id=doc.id,
            name=doc.name,
            tokens=record.tokens_read,
            cycles=record.cycles,
            pot_entries=record.entries,
            peak_entries=record.peak_entries,
            seconds=seconds,
            reused=True,
            pot_id=record.id,
        )

    # -- finding documents -------------------------------------------------------------------------
    def find_document(self, doc: str) -> DocumentRecord | None:
        """A stored document named by a doc_id (or unique prefix) or by a path; None when not stored.

        A path is recognised by its size and modification time first, so asking about a stored document
        does not even hash the file; otherwise by the sha256 of its bytes.
        """
        matches = self.store.documents.with_prefix(doc)
        if len(matches) == 1:
            return matches[0]
        path = Path(doc)
        if path.is_file():
            stat = path.stat()
            known = self.store.documents.by_file(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
            return known or self.store.documents.by_hash(file_fingerprint(path))
        if len(matches) > 1:
            raise DocumentNotFound(f"{doc!r} matches several documents; give more of the doc_id")
        return None

    def _document(self, doc: str) -> DocumentRecord:
        found = self.find_document(doc)
        if found is None:
            if Path(doc).is_file():
                raise DocumentNotFound(f"{doc} has not been read (see `infinipot read`)")
            raise DocumentNotFound(f"no document or file named {doc!r} (see `infinipot list`)")
        return found

    # -- answering ---------------------------------------------------------------------------------
    def open_pot(self, doc: str, default_config: PotConfig | None = None) -> tuple[StoredPot, bool]:
        """The stored pot of a doc_id (or unique prefix) or a path; a path not yet read is read first.

        Returns the pot and whether it was reused (False when this call had to read the document).
        The document itself is not opened when its stored pot is intact.
        """
        document = self.find_document(doc)
        warnings: list[str] = []
        reused = True
        if document is None:
            if not Path(doc).exists():
                raise DocumentNotFound(f"no document or file named {doc!r} (see `infinipot read`)")
            report = self.read(doc, default_config or PotConfig())
            document, reused, warnings = self.store.documents.get(report.doc_id), report.reused, report.warnings
        record = general_pot(self.store.pots.for_document(document.id))  # never a question's own pot
        if record is None:
            record, reused = self._read_again(document, None, warnings), False
        engine = Engine(self.model(record.model), PotConfig(**record.config))
        try:
            tensors = self.store.load_pot(record)
        except DamagedFile as exc:
            warnings.append(damage_warning(document.name, exc))
            self.store.pots.mark_damaged(record.id, exc.reason)
            record = self._read_again(document, record, warnings)
            tensors, reused = self.store.load_pot(record), False
        loaded = engine.loaded
        pot = pot_from_storage(tensors, record.counters, loaded.device, next(loaded.model.parameters()).dtype)
        return StoredPot(document.id, document.name, record, pot, engine, warnings), reused

    def _read_again(self, document: DocumentRecord, damaged: PotRecord | None, warnings: list[str]) -> PotRecord:
        """Read a stored document from its file again, with the settings of its damaged or unfinished pot."""
        candidates = [damaged] if damaged else general_candidates(self.store.pots.for_document(document.id))
        source = Path(document.path) if document.path else None
        if not candidates:
            raise DocumentNotFound(f"{document.name} has no pot; read it with `infinipot read`")
        if source is None or not source.is_file() or file_fingerprint(source) != document.content_hash:
            latest = candidates[-1]
            why = f"its last read failed ({latest.error})" if latest.status == "failed" else "it has no finished pot"
            raise DocumentNotFound(
                f"{document.name}: {why} and the file it was read from ({source}) is gone or changed; read it again"
            )
        latest = max(candidates, key=lambda pot: pot.updated_at)
        report = self.read(source, PotConfig(**latest.config), latest.model)
        warnings.extend(report.warnings)
        return self.store.pots.get(report.pot_id)

    def ask(
        self,
        doc: str,
        question: str,
        max_new_tokens: int = 256,
        conversation_id: int | None = None,
        focus: int | None = None,
    ) -> tuple[Iterator[str], AskStats, bool]:
        """Stream an answer from the stored pot; question and answer are recorded once the answer is complete.

        Without a conversation_id a new conversation is started (its id is in stats.conversation_id).
        `focus`: answer from a copy distilled to that many entries with the question as catalyst (Engine.answer).
        """
        started = time.perf_counter()
        stored, reused = self.open_pot(doc)
        if conversation_id is not None:
            try:
                conversation = self.store.conversations.get(conversation_id)
            except NotStored as exc:
                raise DocumentNotFound(str(exc)) from None
            if conversation.document_id != stored.doc_id:
                raise DocumentNotFound(f"conversation {conversation_id} is about another document")
        stats = AskStats(load_seconds=time.perf_counter() - started, warnings=stored.warnings)
        pieces = stored.engine.answer(stored.pot, question, max_new_tokens, stats, focus=focus)
        return self.recorded_answer(pieces, stats, stored, question, conversation_id), stats, reused

    def recorded_answer(
        self, pieces: Iterator[str], stats: AskStats, stored: StoredPot, question: str, conversation_id: int | None
    ) -> Iterator[str]:
        """Pass the answer through; once it is complete, store question and answer (a stopped answer is not)."""
        text = []
        for piece in pieces:
            text.append(piece)
            yield piece
        stats.citations = self.citations(stored, question, stats)
        if conversation_id is None:
            conversation_id = self.store.conversations.create(stored.doc_id, stored.record.id, question[:80]).id
        meta = {
            "pot_id": stored.record.id,
            "ttft_seconds": stats.first_token_seconds,
            "seconds": stats.seconds,
            "new_tokens": stats.new_tokens,
            "citations": stats.citations,
        }
        self.store.conversations.append_many(
            conversation_id, [("user", question, None), ("assistant", "".join(text).strip(), meta)]
        )
        stats.conversation_id = conversation_id

    # -- question-aware re-read and questions across documents -------------------------------------
    def reread_for_question(
        self, doc: str, question: str, max_new_tokens: int = 256, on_progress: Callable[[Pot], None] | None = None
    ) -> tuple[Iterator[str], AskStats, bool]:
        """Answer from the document's CaP-Q pot for this question: read once per question, then reused."""
        from .rereading import reread_for_question  # local import: that module builds on this one

        return reread_for_question(self, doc, question, max_new_tokens, on_progress)

    def ask_across(self, docs: list[str], question: str, max_new_tokens: int = 256):
        """(answer pieces, AcrossStats) from the documents' general pots merged into one (app/across.py)."""
        from .across import ask_across  # local import: that module builds on this one

        return ask_across(self, docs, question, max_new_tokens)

    def citations(self, stored: StoredPot, question: str, stats: AnswerStats) -> list[dict]:
        """The pages or lines a complete answer drew on (app.citing), best first."""
        if stats.answer_pot is None:
            return []
        document = self.store.documents.get(stored.doc_id)
        found = cite_answer(
            stored.engine,
            stats.answer_pot,
            question,
            stats.token_ids,
            self.store.location_map_path(stored.doc_id),
            stored.doc_id,
            document.kind if document else None,
        )
        stats.answer_pot = None  # a distilled copy is not kept alive with the stats
        return [citation.as_json() for citation in found]

    def summarize(self, doc: str, max_new_tokens: int = 256) -> tuple[Iterator[str], AskStats]:
        started = time.perf_counter()
        stored, _ = self.open_pot(doc)
        stats = AskStats(load_seconds=time.perf_counter() - started, warnings=stored.warnings)
        return stored.engine.summarize(stored.pot, max_new_tokens, stats), stats

    # -- listing and deleting ----------------------------------------------------------------------
    def documents(self) -> list[dict]:
        """Every stored document with its pots and disk use, oldest first."""
        return [self._document_entry(document) for document in self.store.documents.all()]

    def document(self, doc_id: str) -> dict | None:
        """One stored document (exact doc_id) in the shape of `documents()`, or None."""
        document = self.store.documents.get(doc_id)
        return None if document is None else self._document_entry(document)

    def _document_entry(self, document: DocumentRecord) -> dict:
        return {
            "doc_id": document.id,
            "name": document.name,
            "path": document.path,
            "kind": document.kind,
            "size_bytes": document.size_bytes,
            "pages": document.pages,
            "tokens": document.tokens,
            "content_hash": document.content_hash,
            "disk_bytes": self.store.document_disk_bytes(document),
            "pots": [self._pot_entry(pot) for pot in self.store.pots.for_document(document.id)],
        }

    def _pot_entry(self, pot: PotRecord) -> dict:
        return {
            "pot_id": pot.id,
            "status": pot.status,
            "error": pot.error,
            # a `reading` pot whose reader is gone (killed, crashed) resumes with the next `read`
            "reader_running": pot.status == "reading" and is_running(pot.reader_pid, pot.reader_started),
            "model": pot.model,
            "model_identity": pot.model_identity,
            "method": pot.method,
            "pot_size": pot.config.get("pot_size"),
            "keep_size": pot.config.get("keep_size"),
            "config": pot.config,
            "tokens_read": pot.tokens_read,
            "cycles": pot.cycles,
            "entries": pot.entries,
            "read_seconds": round(pot.read_seconds, 3),
            "disk_bytes": self.store.pot_disk_bytes(pot),
            "completed_at": pot.completed_at,
        }

    def delete(self, doc: str) -> dict:
        """Delete a document's rows and files (pots, checkpoints, conversations, location map)."""
        document = self._document(doc)
        pots = len(self.store.pots.for_document(document.id))
        freed = self.store.delete_document(document)
        self.merged_pots.forget_document(document.id)
        return {"deleted": document.id, "name": document.name, "pots": pots, "freed_bytes": freed}


def damage_warning(name: str, exc: DamagedFile) -> str:
    return f"stored pot for {name} is damaged ({exc.reason}); reading again"
