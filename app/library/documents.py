"""Stored documents: finding one by doc_id, prefix, path or name; every file it has; listing; deleting.

Storage keeps a document's rows, pots, checkpoints and location map. Around them the app keeps files of its
own, by doc_id: the uploaded copy, the token ids the kept-token view shows, and the memory log of the latest
read. `DocumentFiles` names them all, so listing counts them and a delete removes them, whichever front end
(the CLI or the web app) made them.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from infinipot.app.library.token_ids import read_window, token_count, token_file, write_token_ids
from infinipot.core.model import LoadedModel
from infinipot.ingest import TokenLocationMap, file_fingerprint
from infinipot.ingest.errors import IngestError
from infinipot.storage.atomic import write_atomically
from infinipot.storage.liveness import is_running
from infinipot.storage.records import DocumentRecord, PotRecord
from infinipot.storage.store import Store, folder_is_writable


class DocumentNotFound(ValueError):
    """A doc_id, name or path that names no stored document (or names several)."""


@dataclass(frozen=True)
class DocumentFiles:
    """Where the app keeps its own files of a document under the data home."""

    home: Path

    def upload_folder(self, doc_id: str) -> Path:
        """Where an uploaded file is kept (read, never executed)."""
        return self.home / "uploads" / doc_id

    def token_ids(self, doc_id: str, model_identity: str, content_hash: str) -> Path:
        return token_file(self.home / "ui" / "tokens", doc_id, model_identity, content_hash)

    def read_log(self, doc_id: str) -> Path:
        return self.home / "ui" / "readlogs" / f"{doc_id}.json"

    def summary(self, doc_id: str) -> Path:
        return self.home / "summaries" / f"{doc_id}.json"

    def outline(self, doc_id: str) -> Path:
        return self.home / "outlines" / f"{doc_id}.json"

    def all(self, doc_id: str) -> list[Path]:
        """Every existing app file of the document."""
        upload = self.upload_folder(doc_id)
        uploads = [p for p in upload.rglob("*") if p.is_file()] if upload.is_dir() else []
        tokens = list((self.home / "ui" / "tokens").glob(f"{doc_id}.*"))
        kept = [self.read_log(doc_id), self.summary(doc_id), self.outline(doc_id)]
        return [p for p in [*tokens, *kept, *uploads] if p.is_file()]

    def disk_bytes(self, doc_id: str) -> int:
        return sum(_size(path) for path in self.all(doc_id))

    def remove(self, doc_id: str) -> int:
        """Delete every app file of the document; returns the bytes freed."""
        files = self.all(doc_id)
        freed = sum(_size(path) for path in files)
        for path in files:
            path.unlink(missing_ok=True)
        shutil.rmtree(self.upload_folder(doc_id), ignore_errors=True)
        return freed

    def save_read_log(self, doc_id: str, log: dict) -> None:
        _save_json(self.read_log(doc_id), log)

    def load_read_log(self, doc_id: str) -> dict | None:
        return _load_json(self.read_log(doc_id))

    def save_summary(self, doc_id: str, summary: dict) -> None:
        _save_json(self.summary(doc_id), summary)

    def load_summary(self, doc_id: str) -> dict | None:
        return _load_json(self.summary(doc_id))

    def save_outline(self, doc_id: str, outline: dict) -> None:
        _save_json(self.outline(doc_id), outline)

    def load_outline(self, doc_id: str) -> dict | None:
        return _load_json(self.outline(doc_id))


def _save_json(path: Path, data: dict) -> None:
    write_atomically(path, lambda p: p.write_text(json.dumps(data)))


def _load_json(path: Path) -> dict | None:
    """The JSON file's object, or None when it is missing or unreadable (it is only ever a cache of work)."""
    try:
        return json.loads(path.read_text()) if path.is_file() else None
    except (OSError, json.JSONDecodeError):
        return None


def find_document(store: Store, doc: str) -> DocumentRecord | None:
    """A stored document named by a doc_id (or unique prefix), by a path, or by its name as `list` prints it
    (when one stored document has it); None when not stored.

    A path is recognised by its size and modification time first, so asking about a stored document
    does not even hash the file; otherwise by the sha256 of its bytes.
    """
    matches = store.documents.with_prefix(doc)
    if len(matches) == 1:
        return matches[0]
    path = Path(doc)
    if path.is_file():
        stat = path.stat()
        known = store.documents.by_file(str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        return known or store.documents.by_hash(file_fingerprint(path))
    if len(matches) > 1:
        raise DocumentNotFound(f"{doc!r} matches several documents; give more of the doc_id")
    named = store.documents.named(doc)
    if len(named) > 1:
        candidates = "; ".join(f"{d.id} (read from {d.path})" for d in named)
        raise DocumentNotFound(f"{len(named)} stored documents are named {doc}: {candidates}; give the doc_id")
    return named[0] if named else None


def unchanged_source(document: DocumentRecord) -> Path | None:
    """The file the document was read from, if it is still there with the same bytes; None otherwise."""
    source = Path(document.path) if document.path else None
    if source is None or not source.is_file() or file_fingerprint(source) != document.content_hash:
        return None
    return source


def stored_token_ids(files: DocumentFiles, document: DocumentRecord, loaded: LoadedModel) -> Path:
    """The file of the document's token ids for this model, written now from its file if missing.

    DocumentNotFound when it is missing and the file the document was read from is gone or changed.
    """
    path = files.token_ids(document.id, loaded.identity, document.content_hash)
    if path.is_file():
        return path
    source = unchanged_source(document)
    if source is None:
        raise DocumentNotFound(f"the file {document.name} was read from is gone or changed, so its text cannot be read")
    if not folder_is_writable(path.parent):
        raise DocumentNotFound(f"the text of {document.name} was never kept and the data folder is read-only")
    write_token_ids(path, source, loaded.tokenizer)
    return path


def require_document(store: Store, doc: str) -> DocumentRecord:
    found = find_document(store, doc)
    if found is None:
        if Path(doc).is_file():
            raise DocumentNotFound(f"{doc} has not been read (see `infinipot read`)")
        raise DocumentNotFound(f"no document or file named {doc!r} (see `infinipot list`)")
    return found


def document_id(store: Store, path: Path) -> str:
    """The doc_id the file's content has or will get: storage's own rule (the hash's shortest free prefix)."""
    return store.documents.id_for(file_fingerprint(path))


def location_map(store: Store, doc_id: str) -> TokenLocationMap | None:
    try:
        return TokenLocationMap.load(store.location_map_path(doc_id))
    except IngestError:
        return None


def document_entry(store: Store, files: DocumentFiles, document: DocumentRecord) -> dict:
    """A stored document with its pots and its disk use (storage's files and the app's), as plain data."""
    return {
        "doc_id": document.id,
        "name": document.name,
        "path": document.path,
        "kind": document.kind,
        "size_bytes": document.size_bytes,
        "pages": document.pages,
        "tokens": document.tokens,
        "content_hash": document.content_hash,
        "disk_bytes": store.document_disk_bytes(document) + files.disk_bytes(document.id),
        "pots": [pot_entry(store, pot) for pot in store.pots.for_document(document.id)],
    }


def pot_entry(store: Store, pot: PotRecord) -> dict:
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
        "disk_bytes": store.pot_disk_bytes(pot),
        "completed_at": pot.completed_at,
    }


def delete_document(store: Store, files: DocumentFiles, document: DocumentRecord) -> dict:
    """Delete the document's rows and every file of it, storage's and the app's."""
    pots = len(store.pots.for_document(document.id))
    freed = store.delete_document(document) + files.remove(document.id)
    return {"deleted": document.id, "name": document.name, "pots": pots, "freed_bytes": freed}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def resume_point(store: Store, doc_id: str, pot_key: str, config_identity: dict) -> int:
    """Document tokens an interrupted read of `doc_id` with these settings continues from (0: from the start)."""
    pot = store.pots.find(doc_id, pot_key, config_identity)
    if pot is None or pot.status != "reading":
        return 0
    checkpoint = store.checkpoints.latest(pot.id)
    return checkpoint.document_tokens if checkpoint is not None else 0


def counted_tokens(files: DocumentFiles, doc_id: str, path: Path, loaded: LoadedModel, progress) -> int:
    """The document's token count, storing its token ids (the kept-token view shows them) on the way."""
    target = files.token_ids(doc_id, loaded.identity, file_fingerprint(path))
    if target.is_file():
        return token_count(target)
    return write_token_ids(target, path, loaded.tokenizer, progress)


def source_path(store: Store, doc_id: str) -> Path | None:
    """The file a stored document was read from, while it still exists."""
    document = store.documents.get(doc_id)
    path = Path(document.path) if document and document.path else None
    return path if path is not None and path.is_file() else None


def token_window(store: Store, files: DocumentFiles, stored, start: int, end: int) -> tuple[list[int], int]:
    """Token ids [start, end) of the document of a loaded pot (pot_files.StoredPot) and its token count,
    tokenizing it once if needed."""
    path = stored_token_ids(files, require_document(store, stored.doc_id), stored.engine.loaded)
    return read_window(path, start, end), token_count(path)
