"""Question-aware re-read (the paper's CaP-Q, its best QA setting): read a document again with the question in
the catalyst prompt, keep that pot per question, and answer from it next to the general pot's answer.

The re-read uses the general pot's model and settings (|M|, |C|, method, alpha), so the two answers differ
only in the catalyst prompt. Stored pots are keyed by their settings, the question included, so asking the
same question again finds its pot and reads nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.pot import Pot
from infinipot.ingest import file_fingerprint
from infinipot.storage.errors import DamagedFile
from infinipot.storage.records import DocumentRecord, PotRecord

from .pot_choice import question_config
from .potcodec import pot_from_storage
from .service import AskStats, DocumentNotFound, StoredPot

if TYPE_CHECKING:
    from .service import DocumentService


def question_read_settings(service: DocumentService, doc: str, question: str) -> tuple[StoredPot, PotConfig]:
    """The document's general pot (read first when the document never was) and the re-read's settings."""
    general, _ = service.open_pot(doc)
    return general, question_config(general.engine.config, question)


def stored_question_pot(service: DocumentService, general: StoredPot, config: PotConfig) -> PotRecord | None:
    """The complete, intact CaP-Q pot of these settings, or None when it must be read."""
    record = service.store.pots.find(general.doc_id, general.engine.loaded.identity, config.identity())
    if record is None or record.status != "complete":
        return None
    try:
        service.store.verify_pot(record)
    except DamagedFile:
        return None  # service.read reports the damage and reads it again
    return record


def source_file(document: DocumentRecord) -> Path:
    """The file a stored document was read from, unchanged since; a re-read needs its text again."""
    source = Path(document.path) if document.path else None
    if source is None or not source.is_file() or file_fingerprint(source) != document.content_hash:
        raise DocumentNotFound(
            f"{document.name}: the file it was read from ({source}) is gone or changed, so it cannot be read again "
            "for a question; read it again first"
        )
    return source


def open_question_pot(
    service: DocumentService, doc: str, question: str, on_progress: Callable[[Pot], None] | None = None
) -> tuple[StoredPot, bool]:
    """The document's CaP-Q pot for `question`, read now unless stored; returns it and whether it was reused."""
    general, settings = question_read_settings(service, doc, question)
    record = stored_question_pot(service, general, settings)
    reused, warnings = True, list(general.warnings)
    if record is None:
        document = service.store.documents.get(general.doc_id)
        report = service.read(source_file(document), settings, general.record.model, on_progress)
        record, reused = service.store.pots.get(report.pot_id), report.reused
        warnings += report.warnings
    return load_stored_pot(service, general, record, warnings), reused


def load_stored_pot(service: DocumentService, general: StoredPot, record: PotRecord, warnings: list[str]) -> StoredPot:
    """Another complete pot of the same document and model as `general`, ready to answer from."""
    loaded = general.engine.loaded
    tensors = service.store.load_pot(record)
    pot = pot_from_storage(tensors, record.counters, loaded.device, next(loaded.model.parameters()).dtype)
    return StoredPot(general.doc_id, general.name, record, pot, Engine(loaded, PotConfig(**record.config)), warnings)


def reread_for_question(
    service: DocumentService,
    doc: str,
    question: str,
    max_new_tokens: int = 256,
    on_progress: Callable[[Pot], None] | None = None,
) -> tuple[Iterator[str], AskStats, bool]:
    """Stream the answer from the question's own pot (reading it first if needed); not stored as a conversation.

    Returns the pieces, their stats (load_seconds includes any reading) and whether the pot was reused.
    """
    started = time.perf_counter()
    stored, reused = open_question_pot(service, doc, question, on_progress)
    stats = AskStats(load_seconds=time.perf_counter() - started, warnings=stored.warnings)
    return stored.engine.answer(stored.pot, question, max_new_tokens, stats), stats, reused
