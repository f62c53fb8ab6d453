"""The pot that answers a document's questions: its latest complete general pot, loaded; a path that was never
read is read first, and a damaged or unfinished pot is read again from the document's file."""

from __future__ import annotations

from pathlib import Path

from infinipot.app.library.documents import DocumentNotFound, find_document, unchanged_source
from infinipot.app.library.general_pot import general_candidates, general_pot
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot, load_stored_pot
from infinipot.app.read.file_reader import FileReader, damage_warning
from infinipot.core.config import PotConfig
from infinipot.core.precision import dtype_in_key
from infinipot.storage.errors import DamagedFile
from infinipot.storage.records import DocumentRecord, PotRecord


def open_general_pot(library: Library, reader: FileReader, doc: str) -> tuple[StoredPot, bool]:
    """The general pot of a doc_id (or unique prefix) or a path; a path not yet read is read first.

    Returns the pot and whether it was reused (False when this call had to read the document).
    The document itself is not opened when its stored pot is intact.
    """
    store = library.store
    document = find_document(store, doc)
    warnings: list[str] = []
    reused = True
    if document is None:
        if not Path(doc).exists():
            raise DocumentNotFound(f"no document or file named {doc!r} (see `infinipot read`)")
        report = reader.read(doc, PotConfig())
        document, reused, warnings = store.documents.get(report.doc_id), report.reused, report.warnings
    record = general_pot(store.pots.for_document(document.id))  # never a question's own pot
    if record is None:
        record, reused = _read_again(library, reader, document, None, warnings), False
    try:
        stored = load_stored_pot(store, document, record, _model_of(library, record))
    except DamagedFile as exc:
        warnings.append(damage_warning(document.name, exc))
        store.pots.mark_damaged(record.id, exc.reason)
        record = _read_again(library, reader, document, record, warnings)
        stored, reused = load_stored_pot(store, document, record, _model_of(library, record)), False
    stored.warnings = warnings
    return stored, reused


def _model_of(library: Library, record: PotRecord):
    """The model a stored pot was read with, in the dtype it was read in."""
    return library.models.get(record.model, dtype_in_key(record.model_identity))


def _read_again(
    library: Library, reader: FileReader, document: DocumentRecord, damaged: PotRecord | None, warnings: list[str]
) -> PotRecord:
    """Read a stored document from its file again, with the settings of its damaged or unfinished pot."""
    store = library.store
    candidates = [damaged] if damaged else general_candidates(store.pots.for_document(document.id))
    source = Path(document.path) if document.path else None
    if not candidates:
        raise DocumentNotFound(f"{document.name} has no pot; read it with `infinipot read`")
    if unchanged_source(document) is None:
        latest = candidates[-1]
        why = f"its last read failed ({latest.error})" if latest.status == "failed" else "it has no finished pot"
        raise DocumentNotFound(
            f"{document.name}: {why} and the file it was read from ({source}) is gone or changed; read it again"
        )
    latest = max(candidates, key=lambda pot: pot.updated_at)
    report = reader.read(source, PotConfig(**latest.config), latest.model, dtype=dtype_in_key(latest.model_identity))
    warnings.extend(report.warnings)
    return store.pots.get(report.pot_id)


def open_pot_read_with(
    library: Library,
    reader: FileReader,
    doc: str,
    config: PotConfig,
    model_name: str = "default",
    dtype: str | None = None,
) -> tuple[StoredPot, bool]:
    """The document's pot read with exactly these settings, model and dtype, read now when it is not stored.

    A stored document is read again from its file (which must still be there and unchanged); a path that
    was never read is read. Returns the pot and whether it was reused.
    """
    store = library.store
    loaded = library.models.get(model_name, dtype)
    document = find_document(store, doc)
    if document is not None:
        record = store.pots.find(document.id, loaded.pot_key, config.identity())
        if record is not None and record.status == "complete":
            try:
                return load_stored_pot(store, document, record, loaded), True
            except DamagedFile:
                pass  # the reader reports the damage and reads it again
        source = unchanged_source(document)
        if source is None:
            raise DocumentNotFound(
                f"{document.name} has no pot read with these settings, and the file it was read from ({document.path}) "
                "is gone or changed"
            )
    elif Path(doc).is_file():
        source = Path(doc)
    else:
        raise DocumentNotFound(f"no document or file named {doc!r} (see `infinipot list`)")
    report = reader.read(source, config, model_name, dtype=dtype)
    document = store.documents.get(report.doc_id)
    stored = load_stored_pot(store, document, store.pots.get(report.pot_id), loaded)
    stored.warnings = list(report.warnings)
    return stored, report.reused


# Stored pots kept loaded between answers (least recently used goes first): a follow-up question or the kept-token
# view does not load the pot again. One pot of the default model is 178 MiB in float32 (|M|=4096); loading one again
# took a median 1.9 s on a busy 2-core machine. Two let questions alternate between two documents without
# reloading (benchmarks/soak.py); `ui --loaded-pots` sets it.
LOADED_POTS_KEPT = 2
