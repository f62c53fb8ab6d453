"""Reading a file into a stored pot: reuse an intact stored pot, resume an interrupted read, continue a grown log.

The same bytes, model weights and pot settings never read twice; a damaged stored pot is reported in the
report's warnings and read again. A text file that only grew continues its stored pot (read/growing.py).
A read also keeps the document's token ids, so its answers can quote it after the file is gone.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from infinipot.app.library.documents import stored_token_ids
from infinipot.app.library.home import Library
from infinipot.app.library.passage_index import index_document
from infinipot.app.read import DEFAULT_CHECKPOINT_SECONDS
from infinipot.app.read.checkpointed import ReadOutcome, ReadScope, read_document
from infinipot.app.read.growing import plan_read
from infinipot.app.read.report import ReadReport
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.pot import Pot
from infinipot.ingest import Document, IngestError, file_fingerprint, open_document
from infinipot.storage.errors import DamagedFile
from infinipot.storage.records import DocumentRecord, PotRecord


class FileReader:
    def __init__(self, library: Library, checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS) -> None:
        if checkpoint_seconds < 0:
            raise ValueError(f"checkpoint interval must not be negative, got {checkpoint_seconds}")
        self.library = library
        self.checkpoint_seconds = checkpoint_seconds

    def read(
        self,
        path: str | Path,
        config: PotConfig,
        model_name: str = "default",
        on_progress: Callable[[Pot], None] | None = None,
        follow: bool = False,
        checkpoint_seconds: float | None = None,
        dtype: str | None = None,
    ) -> ReadReport:
        """Read a document into a stored pot, resume an interrupted read, or reuse the stored pot.

        `follow` reads a text file only up to its last complete line. `checkpoint_seconds`: this read's interval
        between resume points (None: the reader's own). `dtype`: what the model runs in (None: the library's);
        a pot read in another dtype is not reused.
        """
        if checkpoint_seconds is not None and not checkpoint_seconds >= 0:
            raise ValueError(f"checkpoint interval must not be negative, got {checkpoint_seconds}")
        interval = self.checkpoint_seconds if checkpoint_seconds is None else checkpoint_seconds
        job = self.prepare(path, config, model_name, follow, dtype)
        if isinstance(job, ReadReport):
            return job
        store = self.library.store
        outcome = read_document(store, job.engine, job.document, job.record, interval, on_progress, job.scope)
        return self.finish(job, outcome)

    def prepare(
        self,
        path: str | Path,
        config: PotConfig,
        model_name: str = "default",
        follow: bool = False,
        dtype: str | None = None,
        fingerprint: str | None = None,
    ) -> ReadReport | ReadJob:
        """Everything before the reading itself: the report of a reused pot, or the claimed pot to read into.
        `fingerprint`: the file's, when the caller read its bytes already (ingest.file_bytes)."""
        started = time.perf_counter()
        store = self.library.store
        path = Path(path)
        store.require_writable(f"reading {path.name}")
        document = open_document(path)
        fingerprint = fingerprint or file_fingerprint(path)
        engine = Engine(self.library.models.get(model_name, dtype), config)
        engine.new_reader()  # impossible settings fail here, before anything is recorded
        plan = plan_read(store, path, document, fingerprint, engine, follow)
        warnings: list[str] = [plan.warning] if plan.warning else []
        created = False
        if plan.pot is not None:
            doc_id, name = plan.document.id, plan.document.name
        else:
            stat = path.stat()
            created = store.documents.by_hash(fingerprint) is None
            doc = store.documents.record(
                fingerprint,
                document.name,
                str(path.resolve()),
                document.size_bytes,
                stat.st_mtime_ns,
                document.kind,
                document.pages,
            )
            doc_id, name = doc.id, doc.name
            if doc.name != document.name:
                warnings.append(f"{document.name} has the same content as {doc.name}, already in the library")
            existing = store.pots.find(doc.id, engine.loaded.pot_key, config.identity())
            if existing is not None and existing.status == "complete" and plan.may_reuse:
                try:
                    store.verify_pot(existing)
                    return _reused_report(doc, existing, time.perf_counter() - started, warnings)
                except DamagedFile as exc:
                    warnings.append(damage_warning(document.name, exc))
        record = store.claim_pot(doc_id, model_name, engine.loaded.pot_key, config.identity(), config.method)
        created = plan.pot is None and created
        job = ReadJob(path, document, engine, record, doc_id, name, plan.scope, follow, warnings, started, fingerprint)
        return replace(job, created=created)

    def finish(self, job: ReadJob, outcome: ReadOutcome) -> ReadReport:
        """After the pot is stored: the document's token ids and word index (not for a followed log, whose ids
        would go stale at its next growth: they are written when it is first asked), and the report."""
        store = self.library.store
        if not job.follow and file_fingerprint(job.path) != job.fingerprint:
            raise FileChangedWhileRead(
                f"{job.name} changed while it was read; its pot holds it as it was when the read began",
                job.doc_id if job.created else None,
            )
        if not job.follow:
            document_record = store.documents.get(job.doc_id)
            token_ids = stored_token_ids(self.library.files, document_record, job.engine.loaded)
            index_document(store, token_ids, document_record, job.engine.loaded)
        return _read_report(job.doc_id, job.name, outcome, job.started, job.warnings)


@dataclass(frozen=True)
class ReadJob:
    """A read prepared and its pot claimed: what is read, by which engine, into which pot record."""

    path: Path
    document: Document
    engine: Engine
    record: PotRecord
    doc_id: str
    name: str
    scope: ReadScope
    follow: bool
    warnings: list[str]
    started: float  # perf_counter when the read was asked for
    fingerprint: str  # the file's sha256 when the read began
    created: bool = False  # the document was new to the library with this read


class FileChangedWhileRead(IngestError):
    """The file's bytes changed during its read: its pot is stored as the file was, and a read now continues it
    (a text file that grew) or reads the new content. `new_doc_id`: the document this read added to the library
    (None when it was there before), which a read of the new content makes stale."""

    def __init__(self, message: str, new_doc_id: str | None = None) -> None:
        super().__init__(message)
        self.new_doc_id = new_doc_id


def damage_warning(name: str, exc: DamagedFile) -> str:
    return f"stored pot for {name} is damaged ({exc.reason}); reading again"


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


def _reused_report(doc: DocumentRecord, record: PotRecord, seconds: float, warnings: list[str]) -> ReadReport:
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
        warnings=warnings,
    )
