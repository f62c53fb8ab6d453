"""The app's one door into the service layer: every call that the read queue, the workspace and the UI make
to DocumentService (and to storage) goes through this class.

The storage rewrite (issue 5) moves document listing, deletion, conversations and resumable reads into the
service. Until it lands, the methods marked STOP-GAP do that work over main's JSON pot index and
app/chat_history.py; each note says which service call replaces it after the rebase. Nothing outside this
file calls the service.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats
from infinipot.core.pot import Pot
from infinipot.ingest import Progress, TokenLocationMap, file_fingerprint
from infinipot.ingest.errors import IngestError
from infinipot.storage.atomic import write_atomically

from .chat_history import ChatHistory
from .service import DocumentNotFound, DocumentService, StoredPot
from .token_cache import read_window, token_count, token_file, write_token_ids

# Loaded pots kept in memory: a follow-up question or a visualization does not load the pot again.
_CACHED_POTS = 2


@dataclass
class ChatStats(AnswerStats):
    """AnswerStats plus the conversation the question and answer were stored in (the service's AskStats)."""

    conversation_id: int | None = None


class Backend:
    def __init__(self, service: DocumentService) -> None:
        self.service = service
        self.home = service.home
        self.ui_home = self.home / "ui"
        self.history = ChatHistory(self.ui_home / "conversations.json")
        self._model_lock = threading.Lock()
        self._pots: OrderedDict[str, StoredPot] = OrderedDict()
        self._pots_lock = threading.Lock()

    # -- models ------------------------------------------------------------------------------------
    def loaded_model(self, name: str):
        """Load a model once even when the read worker and a question ask for it at the same moment."""
        with self._model_lock:
            return self.service.model(name)

    # -- reading -----------------------------------------------------------------------------------
    def read(self, path: Path, config: PotConfig, model: str, on_step: Callable[[Pot], None]) -> dict:
        """Read into a stored pot; on_step runs after every forward piece and may raise to stop the read.

        After the storage rewrite the service keeps a checkpoint and resumes from it on the next read with
        the same settings; here a stopped read starts again from the beginning.
        """
        self.loaded_model(model)
        report = self.service.read(path, config, model, on_progress=on_step)
        self.forget_pot(report.doc_id)
        return report.as_json()

    def count_tokens(self, doc_id: str, path: Path, model: str, progress: Callable[[Progress], object]) -> int:
        """The document's token count, storing its token ids for the visualization on the way."""
        loaded = self.loaded_model(model)
        target = token_file(self.ui_home / "tokens", doc_id, loaded.identity)
        if target.is_file():
            return token_count(target)
        return write_token_ids(target, path, loaded.tokenizer, progress)

    # -- documents ---------------------------------------------------------------------------------
    def documents(self) -> list[dict]:
        """Stored documents in the shape of the storage rewrite's DocumentService.documents().

        STOP-GAP: becomes `return self.service.documents()` (plus app files in disk_bytes).
        """
        listing = []
        pot_files = self._pot_files_by_document()
        for doc_id, entry in self.service.files.documents().items():
            meta = self._pot_meta(entry.get("latest_pot"))
            settings = meta.get("settings", {})
            pot = {
                "pot_id": entry.get("latest_pot"),
                "status": "complete" if meta else "failed",
                "error": None if meta else "the stored pot is missing; read the document again",
                "model": entry.get("model", "default"),
                "method": settings.get("method"),
                "pot_size": settings.get("pot_size"),
                "keep_size": settings.get("keep_size"),
                "config": settings,
                "tokens_read": meta.get("tokens", 0),
                "cycles": meta.get("counters", {}).get("cycles", 0),
                "entries": meta.get("pot_entries", 0),
                "read_seconds": meta.get("seconds", 0.0),
            }
            listing.append(
                {
                    "doc_id": doc_id,
                    "name": entry.get("name", doc_id),
                    "path": entry.get("path"),
                    "kind": entry.get("kind"),
                    "size_bytes": entry.get("size_bytes", 0),
                    "pages": entry.get("pages"),
                    "tokens": entry.get("tokens"),
                    "disk_bytes": sum(_size(p) for p in self._document_files(doc_id, pot_files)),
                    "pots": [pot],
                }
            )
        return listing

    def delete(self, doc_id: str) -> dict:
        """Delete a document's pots, map, conversations, token ids and uploaded copy.

        STOP-GAP: becomes `self.service.delete(doc_id)` plus removing the app files below.
        """
        index = self.service.files.documents()
        if doc_id not in index:
            raise DocumentNotFound(f"no stored document {doc_id}")
        files = self._document_files(doc_id, self._pot_files_by_document())
        freed = sum(_size(p) for p in files)
        name = index.pop(doc_id).get("name", doc_id)
        write_atomically(self.service.files.index_path, lambda p: p.write_text(json.dumps(index, indent=1)))
        for path in files:
            path.unlink(missing_ok=True)
        self.history.delete_document(doc_id)
        shutil.rmtree(self.upload_folder(doc_id), ignore_errors=True)
        self.forget_pot(doc_id)
        return {"deleted": doc_id, "name": name, "freed_bytes": freed}

    def discard_files(self, doc_id: str) -> None:
        """Remove the app's files of a document that was never stored (a failed or cancelled first read)."""
        for path in [*(self.ui_home / "tokens").glob(f"{doc_id}.*"), self._read_log_path(doc_id)]:
            path.unlink(missing_ok=True)
        shutil.rmtree(self.upload_folder(doc_id), ignore_errors=True)

    def _pot_meta(self, key: str | None) -> dict:
        # STOP-GAP: main's pot metadata file; the storage rewrite has these columns in the pots table.
        path = self.home / "pots" / f"{key}.json"
        try:
            return json.loads(path.read_text()) if key else {}
        except (OSError, json.JSONDecodeError):
            return {}

    def _pot_files_by_document(self) -> dict[str, list[Path]]:
        # STOP-GAP: every pot file (any settings) by document, from main's pot metadata files.
        found: dict[str, list[Path]] = {}
        for meta_path in sorted((self.home / "pots").glob("*.json")):
            doc_id = _json_field(meta_path, "doc_id")
            found.setdefault(doc_id, []).extend([meta_path, meta_path.with_suffix(".safetensors")])
        return found

    def _document_files(self, doc_id: str, pot_files: dict[str, list[Path]]) -> list[Path]:
        pots = pot_files.get(doc_id, [])
        app_files = [*(self.ui_home / "tokens").glob(f"{doc_id}.*"), self._read_log_path(doc_id)]
        upload = self.upload_folder(doc_id)
        uploads = [p for p in upload.rglob("*") if p.is_file()] if upload.is_dir() else []
        return [p for p in [*pots, self.location_map_path(doc_id), *app_files, *uploads] if p.is_file()]

    @staticmethod
    def document_id(path: Path) -> str:
        """The id the service gives a file's content (the storage rewrite: content_hash[:DOC_ID_LENGTH])."""
        return file_fingerprint(path)[:16]

    def upload_folder(self, doc_id: str) -> Path:
        """Where an uploaded file is kept (read, never executed), by the document id of its bytes."""
        return self.home / "uploads" / doc_id

    def location_map_path(self, doc_id: str) -> Path:
        return self.home / "maps" / f"{doc_id}.map"

    def location_map(self, doc_id: str) -> TokenLocationMap | None:
        try:
            return TokenLocationMap.load(self.location_map_path(doc_id))
        except IngestError:
            return None

    # -- answering ---------------------------------------------------------------------------------
    def open_pot(self, doc_id: str) -> StoredPot:
        with self._pots_lock:
            if doc_id in self._pots:
                self._pots.move_to_end(doc_id)
                return self._pots[doc_id]
        with self._model_lock:  # open_pot may load the model
            stored, _ = self.service.open_pot(doc_id)
        with self._pots_lock:
            self._pots[doc_id] = stored
            while len(self._pots) > _CACHED_POTS:
                self._pots.popitem(last=False)
        return stored

    def forget_pot(self, doc_id: str) -> None:
        with self._pots_lock:
            self._pots.pop(doc_id, None)

    def ask(
        self, doc_id: str, question: str, max_new_tokens: int, conversation_id: int | None
    ) -> tuple[Iterator[str], ChatStats]:
        """Stream an answer; the question and the complete answer are stored in the conversation.

        STOP-GAP: becomes `pieces, stats, _ = self.service.ask(doc_id, question, max_new_tokens,
        conversation_id)`; the service then stores the messages and sets stats.conversation_id.
        """
        stored = self.open_pot(doc_id)
        if conversation_id is not None and self.history.document_of(conversation_id) != stored.doc_id:
            raise DocumentNotFound(f"conversation {conversation_id} is not about this document")
        stats = ChatStats()
        pieces = stored.engine.answer(stored.pot, question, max_new_tokens, stats)
        return self._recorded(pieces, stats, stored.doc_id, question, conversation_id), stats

    def _recorded(
        self, pieces: Iterator[str], stats: ChatStats, doc_id: str, question: str, conversation_id: int | None
    ) -> Iterator[str]:
        text = []
        for piece in pieces:
            text.append(piece)
            yield piece
        if conversation_id is None:
            conversation_id = self.history.create(doc_id, question[:80])
        meta = {"ttft_seconds": stats.ttft_seconds, "seconds": stats.seconds, "new_tokens": stats.new_tokens}
        self.history.append_many(
            conversation_id, [("user", question, None), ("assistant", "".join(text).strip(), meta)]
        )
        stats.conversation_id = conversation_id

    def summarize(self, doc_id: str, max_new_tokens: int) -> tuple[Iterator[str], AnswerStats]:
        stored = self.open_pot(doc_id)
        stats = AnswerStats()
        return stored.engine.summarize(stored.pot, max_new_tokens, stats), stats

    def conversations(self, doc_id: str) -> list[dict]:
        """STOP-GAP: becomes self.service.store.conversations.for_document(doc_id) (records, not dicts)."""
        return self.history.for_document(doc_id)

    def messages(self, conversation_id: int) -> list[dict]:
        """STOP-GAP: becomes self.service.store.conversations.messages(conversation_id)."""
        return self.history.messages(conversation_id)

    # -- what the visualization needs --------------------------------------------------------------
    def token_window(self, doc_id: str, start: int, end: int) -> tuple[list[int], int]:
        """Token ids [start, end) of a stored document and its token count, tokenizing it once if needed."""
        stored = self.open_pot(doc_id)
        loaded = stored.engine.loaded
        path = token_file(self.ui_home / "tokens", doc_id, loaded.identity)
        if not path.is_file():
            source = self.source_path(doc_id)
            if source is None:
                raise DocumentNotFound(f"the file of {doc_id} is gone, so its text cannot be shown")
            write_token_ids(path, source, loaded.tokenizer)
        return read_window(path, start, end), token_count(path)

    def source_path(self, doc_id: str) -> Path | None:
        entry = next((d for d in self.documents() if d["doc_id"] == doc_id), None)
        path = Path(entry["path"]) if entry and entry.get("path") else None
        return path if path is not None and path.is_file() else None

    def _read_log_path(self, doc_id: str) -> Path:
        return self.ui_home / "readlogs" / f"{doc_id}.json"

    def save_read_log(self, doc_id: str, log: dict) -> None:
        """Memory samples of the latest read of a document (kept by the app, next to the storage)."""
        write_atomically(self._read_log_path(doc_id), lambda p: p.write_text(json.dumps(log)))

    def read_log(self, doc_id: str) -> dict | None:
        path = self._read_log_path(doc_id)
        try:
            return json.loads(path.read_text()) if path.is_file() else None
        except (OSError, json.JSONDecodeError):
            return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _json_field(path: Path, name: str):
    try:
        return json.loads(path.read_text()).get(name)
    except (OSError, json.JSONDecodeError, AttributeError):
        return None
