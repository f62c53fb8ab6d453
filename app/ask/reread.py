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

from infinipot.app.ask.stats import AskStats
from infinipot.app.library.documents import DocumentNotFound, unchanged_source
from infinipot.app.library.general_pot import question_config
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot, load_stored_pot
from infinipot.app.read.file_reader import FileReader
from infinipot.core.config import PotConfig
from infinipot.core.decoding import DecodingConfig
from infinipot.core.pot import Pot
from infinipot.core.precision import dtype_name
from infinipot.storage.errors import DamagedFile
from infinipot.storage.records import DocumentRecord, PotRecord


def stored_question_pot(library: Library, general: StoredPot, config: PotConfig) -> PotRecord | None:
    """The complete, intact CaP-Q pot of these settings, or None when it must be read."""
    store = library.store
    record = store.pots.find(general.doc_id, general.engine.loaded.pot_key, config.identity())
    if record is None or record.status != "complete":
        return None
    try:
        store.verify_pot(record)
    except DamagedFile:
        return None  # the reader reports the damage and reads it again
    return record


def source_file(document: DocumentRecord) -> Path:
    """The file a stored document was read from, unchanged since; a re-read needs its text again."""
    source = unchanged_source(document)
    if source is None:
        raise DocumentNotFound(
            f"{document.name}: the file it was read from ({document.path}) is gone or changed, so it cannot be read "
            "again for a question; read it again first"
        )
    return source


def open_question_pot(
    library: Library,
    reader: FileReader,
    general: StoredPot,
    config: PotConfig,
    on_progress: Callable[[Pot], None] | None = None,
) -> tuple[StoredPot, bool]:
    """The document's CaP-Q pot of `config`, read now unless stored; returns it and whether it was reused."""
    store = library.store
    record = stored_question_pot(library, general, config)
    reused, warnings = True, list(general.warnings)
    document = store.documents.get(general.doc_id)
    if record is None:
        dtype = dtype_name(general.engine.loaded.dtype)
        report = reader.read(source_file(document), config, general.record.model, on_progress, dtype=dtype)
        record, reused = store.pots.get(report.pot_id), report.reused
        warnings += report.warnings
    stored = load_stored_pot(store, document, record, general.engine.loaded)
    stored.warnings = warnings
    return stored, reused


def question_read(library: Library, general: StoredPot, question: str) -> tuple[PotConfig, str, str, bool]:
    """A question-aware re-read's settings, model and dtype (the general pot's, CaP-Q), and whether it is stored."""
    config = question_config(general.engine.config, question)
    stored = stored_question_pot(library, general, config) is not None
    return config, general.record.model, dtype_name(general.engine.loaded.dtype), stored


def question_answer(
    library: Library,
    reader: FileReader,
    general: StoredPot,
    question: str,
    decoding: DecodingConfig,
    on_progress: Callable[[Pot], None] | None,
    started: float,
) -> tuple[Iterator[str], AskStats, bool]:
    """Answer from the document's CaP-Q pot for this question (read now unless stored): (pieces, stats, whether the
    pot was reused); load_seconds, since `started` (a perf_counter time), includes any reading."""
    config = question_config(general.engine.config, question)
    stored, reused = open_question_pot(library, reader, general, config, on_progress)
    stats = AskStats(load_seconds=time.perf_counter() - started, warnings=stored.warnings)
    return stored.engine.answer(stored.pot, question, decoding, stats), stats, reused
