"""The app's one door into the service layer: every call that the read queue, the workspace and the UI make
to DocumentService (and to storage) goes through this class.

Listing, deletion, conversations and resumable reads are the service's (over the SQLite store); this class
adds what only the app keeps: uploaded copies, token ids for the visualization and memory samples of a read.
Nothing outside this file calls the service.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats
from infinipot.core.pot import Pot
from infinipot.ingest import Progress, TokenLocationMap, file_fingerprint
from infinipot.ingest.errors import IngestError
from infinipot.storage.atomic import write_atomically

from .rereading import open_question_pot, question_read_settings, stored_question_pot
from .service import AskStats, DocumentNotFound, DocumentService, StoredPot
from .token_cache import read_window, token_count, token_file, write_token_ids

# Loaded pots kept in memory: a follow-up question or a visualization does not load the pot again.
_CACHED_POTS = 2


ChatStats = AskStats  # AnswerStats plus the conversation the question and answer were stored in


class Backend:
    def __init__(self, service: DocumentService) -> None:
        self.service = service
        self.home = service.home
        self.ui_home = self.home / "ui"
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

        The service checkpoints while reading, so a stopped read resumes from its last checkpoint next time.
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
        """Stored documents with their pots, the app's own files counted in their disk use."""
        return [self._with_app_files(doc) for doc in self.service.documents()]

    def document(self, doc_id: str) -> dict | None:
        """One stored document in the shape of `documents()`, or None, without listing the others."""
        doc = self.service.document(doc_id)
        return None if doc is None else self._with_app_files(doc)

    def _with_app_files(self, doc: dict) -> dict:
        doc["disk_bytes"] += sum(_size(p) for p in self._app_files(doc["doc_id"]))
        return doc

    def delete(self, doc_id: str) -> dict:
        """Delete a document's rows and stored files (the service), then its token ids and uploaded copy."""
        app_files = self._app_files(doc_id)
        result = self.service.delete(doc_id)
        result["freed_bytes"] += sum(_size(p) for p in app_files)
        for path in app_files:
            path.unlink(missing_ok=True)
        shutil.rmtree(self.upload_folder(doc_id), ignore_errors=True)
        self.forget_pot(doc_id)
        return result

    def discard_files(self, doc_id: str) -> None:
        """Remove the app's files of a document that was never stored (a failed or cancelled first read)."""
        for path in [*(self.ui_home / "tokens").glob(f"{doc_id}.*"), self._read_log_path(doc_id)]:
            path.unlink(missing_ok=True)
        shutil.rmtree(self.upload_folder(doc_id), ignore_errors=True)

    def _app_files(self, doc_id: str) -> list[Path]:
        app_files = [*(self.ui_home / "tokens").glob(f"{doc_id}.*"), self._read_log_path(doc_id)]
        upload = self.upload_folder(doc_id)
        uploads = [p for p in upload.rglob("*") if p.is_file()] if upload.is_dir() else []
        return [p for p in [*app_files, *uploads] if p.is_file()]

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
        """Stream an answer; the service stores the question and the complete answer in the conversation."""
        stored = self.open_pot(doc_id)
        if conversation_id is not None:
            conversation = next((c for c in self.conversations(stored.doc_id) if c["id"] == conversation_id), None)
            if conversation is None:
                raise DocumentNotFound(f"conversation {conversation_id} is not about this document")
        stats = ChatStats()
        pieces = stored.engine.answer(stored.pot, question, max_new_tokens, stats)
        return self.service.recorded_answer(pieces, stats, stored, question, conversation_id), stats

    def summarize(self, doc_id: str, max_new_tokens: int) -> tuple[Iterator[str], AnswerStats]:
        stored = self.open_pot(doc_id)
        stats = AnswerStats()
        return stored.engine.summarize(stored.pot, max_new_tokens, stats), stats

    def answer_unrecorded(self, doc_id: str, question: str, max_new_tokens: int) -> Iterator[str]:
        """The general pot's answer for a side-by-side comparison (not added to a conversation)."""
        stored = self.open_pot(doc_id)
        return stored.engine.answer(stored.pot, question, max_new_tokens)

    def question_read(self, doc_id: str, question: str) -> tuple[PotConfig, str, bool]:
        """A question-aware re-read's settings and model (the general pot's, CaP-Q), and whether it is stored."""
        with self._model_lock:  # may load the model
            general, config = question_read_settings(self.service, doc_id, question)
        return config, general.record.model, stored_question_pot(self.service, general, config) is not None

    def answer_question_aware(self, doc_id: str, question: str, max_new_tokens: int) -> Iterator[str]:
        """The answer from the document's stored CaP-Q pot for `question` (the read queue reads it first)."""
        with self._model_lock:
            stored, _ = open_question_pot(self.service, doc_id, question)
        return stored.engine.answer(stored.pot, question, max_new_tokens)

    def ask_across(self, doc_ids: list[str], question: str, max_new_tokens: int):
        """(answer pieces, AcrossStats) from the documents' pots merged into one (kept for follow-up questions)."""
        with self._model_lock:  # the merge loads pots and may load the model
            return self.service.ask_across(doc_ids, question, max_new_tokens)

    def conversations(self, doc_id: str) -> list[dict]:
        return [asdict(c) for c in self.service.store.conversations.for_document(doc_id)]

    def messages(self, conversation_id: int) -> list[dict]:
        return [asdict(m) for m in self.service.store.conversations.messages(conversation_id)]

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
        entry = self.service.document(doc_id)
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
