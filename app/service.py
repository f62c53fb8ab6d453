"""The service the CLI and the web app share: read documents into stored pots, answer from them, list, delete.

A thin facade: reading lives in app/read, answering in app/ask, the store, models and a document's files in
app/library. What it adds is state that outlives one call: the loaded pots (a follow-up question does not
load its pot again) and the merged pots of questions across documents.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path

from infinipot.app.ask import across, summary
from infinipot.app.ask.conversation import (
    conversation_row,
    record_exchange,
    recorded_turns,
    require_conversation,
    turns_seen,
)
from infinipot.app.ask.holding_stream import HeldStream
from infinipot.app.ask.modes import AnswerSettings, decoding_with_length, with_overrides
from infinipot.app.ask.pipeline import Answering, Keeping, Question, answer_events, answer_steps, never_stopped
from infinipot.app.ask.pots import LOADED_POTS_KEPT, open_general_pot, open_pot_read_with
from infinipot.app.ask.recently_used import RecentlyUsed
from infinipot.app.ask.side_questions import SideQuestions
from infinipot.app.ask.stats import AskStats
from infinipot.app.library import documents
from infinipot.app.library.documents import DocumentNotFound
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.memory_trim import return_freed_memory
from infinipot.app.read import DEFAULT_CHECKPOINT_SECONDS
from infinipot.app.read.file_reader import FileReader
from infinipot.app.read.many import DocumentDone, LibraryProgress, each_forgotten, library_files, read_here, total_bytes
from infinipot.app.read.report import ReadReport
from infinipot.app.read.workers import WorkerSettings
from infinipot.core.config import PotConfig
from infinipot.core.decoding import DecodingConfig
from infinipot.core.model import LoadedModel
from infinipot.core.summary import SummaryConfig
from infinipot.ingest import Progress, TokenLocationMap
from infinipot.storage.errors import NotStored
from infinipot.storage.uses import DocumentHold

__all__ = ["AnswerSettings", "Answering", "AskStats", "DocumentNotFound", "DocumentService", "ReadReport", "StoredPot"]


class DocumentService(SideQuestions):
    # How an answer's steps are made (ask.pipeline.answer_steps): the service keeps, cites and stops them.
    answer_steps = staticmethod(answer_steps)

    def __init__(
        self,
        home: Path | None = None,
        device: str = "auto",
        checkpoint_seconds: float = DEFAULT_CHECKPOINT_SECONDS,
        dtype: str = "auto",
        loaded_pots: int = LOADED_POTS_KEPT,
    ) -> None:
        """`dtype`: what models run in unless a call names one (core.precision: auto, float32, bfloat16).
        `loaded_pots`: how many stored pots stay loaded between answers (memory against reloading)."""
        self.loaded = RecentlyUsed(
            loaded_pots, f"at least one pot must stay loaded to answer from it, got {loaded_pots}"
        )
        self.library = Library(home, device, dtype)
        self.home = self.library.home
        self.store = self.library.store
        self.reader = FileReader(self.library, checkpoint_seconds)
        self.merged_pots = across.MergedPotCache()

    def model(self, name: str, dtype: str | None = None) -> LoadedModel:
        return self.library.models.get(name, dtype)

    # -- reading -----------------------------------------------------------------------------------
    def read(self, path: str | Path, config: PotConfig, *args, **kwargs) -> ReadReport:
        """Read a document into a stored pot, resume an interrupted read, or reuse the stored pot (FileReader.read
        and its arguments); the memory the read needed is given back, and the document's loaded pot forgotten."""
        try:
            report = self.reader.read(path, config, *args, **kwargs)
        finally:
            return_freed_memory()
        self.forget_pot(report.doc_id)
        return report

    def read_library(
        self,
        paths: list[str],
        config: PotConfig,
        model_name: str = "default",
        workers: WorkerSettings | None = None,
        on_progress: Callable[[LibraryProgress], None] | None = None,
        dtype: str | None = None,
    ) -> tuple[LibraryProgress, list[tuple[str, str]], Iterator[DocumentDone]]:
        """Read every file under `paths` (folders, files, globs): (the progress, the paths that named no file with
        why, each document as it finishes). Here one after another, or on Ray `workers` (read/workers.py)."""
        files, missing = library_files(paths)
        progress = LibraryProgress(total=len(files), total_bytes=total_bytes(files))
        if workers is None:

            def read_one(path: Path, on_pot) -> ReadReport:
                return self.read(path, config, model_name, on_progress=on_pot, dtype=dtype)

            done = read_here(read_one, files, progress, on_progress, discard=self.delete)
        else:
            from infinipot.app.read.workers import read_on_workers

            done = read_on_workers(self.reader, files, config, model_name, dtype, workers, progress, on_progress)
        return progress, missing, each_forgotten(done, self.forget_pot)

    def resume_point(
        self, doc_id: str, config: PotConfig, model_name: str = "default", dtype: str | None = None
    ) -> int:
        """Document tokens an interrupted read of `doc_id` with these settings continues from (0: from the start)."""
        return documents.resume_point(self.store, doc_id, self.model(model_name, dtype).pot_key, config.identity())

    def count_tokens(
        self, doc_id: str, path: Path, model: str, progress: Callable[[Progress], object], dtype: str | None = None
    ) -> int:
        """The document's token count, storing its token ids on the way; `dtype`: the one the read will use, so
        that counting does not load a second copy of the model."""
        return documents.counted_tokens(self.library.files, doc_id, path, self.model(model, dtype), progress)

    # -- documents ---------------------------------------------------------------------------------
    def find_document(self, doc: str):
        return documents.find_document(self.store, doc)

    def documents(self) -> list[dict]:
        """Every stored document with its pots and disk use, oldest first."""
        return [documents.document_entry(self.store, self.library.files, d) for d in self.store.documents.all()]

    def document(self, doc_id: str) -> dict | None:
        """One stored document (exact doc_id) in the shape of `documents()`, or None."""
        found = self.store.documents.get(doc_id)
        return None if found is None else documents.document_entry(self.store, self.library.files, found)

    def document_id(self, path: Path) -> str:
        return documents.document_id(self.store, path)

    def upload_folder(self, doc_id: str) -> Path:
        return self.library.files.upload_folder(doc_id)

    def source_path(self, doc_id: str) -> Path | None:
        return documents.source_path(self.store, doc_id)

    def location_map(self, doc_id: str) -> TokenLocationMap | None:
        return documents.location_map(self.store, doc_id)

    def delete(self, doc: str) -> dict:
        """Delete a document's rows and every file of it (pots, checkpoints, map, upload, token ids, read log)."""
        document = documents.require_document(self.store, doc)
        result = documents.delete_document(self.store, self.library.files, document)
        self.merged_pots.forget_document(document.id)
        self.forget_pot(document.id)
        return result

    def in_use(self, doc_id: str, what: str):
        """Hold the document in use for a `with` block: a delete from any process refuses meanwhile."""
        return self.store.in_use(doc_id, what)

    def discard_files(self, doc_id: str) -> None:
        """Remove the app's files of a document that was never stored (a failed or cancelled first read)."""
        self.library.files.remove(doc_id)

    def save_read_log(self, doc_id: str, log: dict) -> None:
        """Memory samples of the latest read of a document."""
        self.library.files.save_read_log(doc_id, log)

    def read_log(self, doc_id: str) -> dict | None:
        return self.library.files.load_read_log(doc_id)

    def token_window(self, doc_id: str, start: int, end: int) -> tuple[list[int], int]:
        """Token ids [start, end) of a stored document and its token count, tokenizing it once if needed."""
        stored = self.open_pot(doc_id)
        return documents.token_window(self.store, self.library.files, stored, start, end)

    # -- answering ---------------------------------------------------------------------------------
    def open_pot(self, doc: str) -> StoredPot:
        """The general pot of a doc_id, prefix or path (read first when a path never was), kept loaded."""
        return self.open_pot_reused(doc)[0]

    def open_pot_reused(self, doc: str) -> tuple[StoredPot, bool]:
        """open_pot, and whether the stored pot was reused (False when this call had to read)."""
        kept = self.loaded.get(doc)
        if kept is not None:
            return replace(kept, warnings=[]), True  # its warnings were given when it was opened
        stored, reused = open_general_pot(self.library, self.reader, doc)
        self.loaded.put(stored.doc_id, stored)
        return stored, reused

    def loaded_documents(self) -> list[str]:
        """The doc_ids whose pots are loaded now, least recently used first."""
        return self.loaded.keys()

    def forget_pot(self, doc_id: str) -> None:
        """Drop a loaded pot (its document was read again, grew or was deleted)."""
        self.loaded.drop(lambda key, stored: key == doc_id)

    def asking(
        self,
        doc: str,
        question: str,
        settings: AnswerSettings | None = None,
        conversation_id: int | None = None,
        record: bool = True,
        pot_config: PotConfig | None = None,
        model_name: str = "default",
        *,
        dtype: str | None = None,
        answer_from: str | None = None,
        max_new_tokens: int | None = None,
        focus: int | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Answering:
        """Start answering: the answer's events (ask.pipeline), the document held in use until they end, the answer
        recorded once complete in the conversation (None: a new one) unless `record` is False. `settings`: the
        answer mode and decoding (with `answer_from`, `max_new_tokens` and `focus` entries overriding it).
        `pot_config`: the stored pot read with these settings by `model_name` in `dtype`; None: the document's
        latest general pot. `stop`: asked from the work's own thread, true once its reader stopped it (the app's
        Stop): the work ends within a layer of the model, and the answer is kept as far as it was given."""
        settings = with_overrides(settings, answer_from, max_new_tokens, focus)
        started = time.perf_counter()
        if pot_config is None:
            stored, reused = self.open_pot_reused(doc)
        else:
            stored, reused = open_pot_read_with(self.library, self.reader, doc, pot_config, model_name, dtype)
        hold = self.hold(stored)
        try:
            if conversation_id is not None:
                self.require_conversation(conversation_id, stored.doc_id)
            if settings.answer_from == "evidence" and not (question or "").strip():
                raise ValueError("the question is empty")
            history, carried = turns_seen(self.store, question, conversation_id)
            stats = AskStats(load_seconds=time.perf_counter() - started, warnings=list(stored.warnings))
            if record and self.store.read_only:
                record = False
                stats.warnings.append(f"the data folder {self.home} is read-only, so this answer is not saved")
            asked = Question(question, settings, history, carried, started)
            steps = self.answer_steps(self.library, stored, asked, stats)
            keeping = Keeping(record, conversation_id)
            events = answer_events(self.library, stored, question, steps, stats, stop or never_stopped, keeping)
        except BaseException:
            hold.release()
            raise
        return Answering(HeldStream(events, hold, after=return_freed_memory), stats, reused)

    def ask(self, doc: str, question: str, *args, **kwargs) -> tuple[Iterator[str], AskStats, bool]:
        """asking()'s answer as (its pieces, its stats, whether the stored pot was reused), for callers that show
        only the answer's words."""
        answering = self.asking(doc, question, *args, **kwargs)
        return answering.pieces(), answering.stats, answering.reused

    def hold(self, stored: StoredPot) -> DocumentHold:
        """Mark the document in use from now until the answer is recorded or dropped, so a delete from any
        process waits for it (storage/uses.py); DocumentNotFound, naming it, when it was deleted meanwhile (a
        question queued behind others)."""
        try:
            return self.store.hold(stored.doc_id, "answering a question")
        except NotStored:
            self.forget_pot(stored.doc_id)
            raise DocumentNotFound(f"{stored.name} was deleted") from None

    def require_conversation(self, conversation_id: int, doc_id: str) -> None:
        """DocumentNotFound unless the conversation is stored and about this document."""
        require_conversation(self.store, conversation_id, doc_id)

    def earlier_turns(self, conversation_id: int) -> list[tuple[str, str]]:
        """The conversation's (question, answer) pairs a follow-up refers to, oldest first (ask.conversation)."""
        return [(turn.question, turn.answer) for turn in recorded_turns(self.store, conversation_id)]

    def summarize(
        self,
        doc: str,
        decoding: DecodingConfig | None = None,
        *,
        max_new_tokens: int | None = None,
        new: bool = False,
        on_part: Callable[[int, int], None] | None = None,
        config: SummaryConfig | None = None,
    ) -> tuple[Iterator[str], AskStats]:
        """Stream the document's summary: the stored one (stats.reused_summary), or, with `new` or when there is
        none for its pot, a new one made part by part (`on_part(k, n)` before part k of n; k = n + 1 before they
        are combined), which is stored once complete."""
        decoding = decoding_with_length(decoding, max_new_tokens)
        started = time.perf_counter()
        stored = self.open_pot(doc)
        stats = AskStats(load_seconds=time.perf_counter() - started, warnings=stored.warnings)
        config = config or SummaryConfig()
        return summary.document_summary(self.library, stored, decoding, config, new, on_part, stats), stats

    def record_summary(self, doc_id: str, request: str, summary: str, conversation_id: int | None, meta: dict) -> int:
        """Store a summary in a conversation of the document (a new one when None), after the `request` that asked
        for it ("Summarize this file"), like a question and its answer; returns the conversation's id."""
        return self.record_exchange(doc_id, request, summary, conversation_id, {**meta, "summary": True})

    def record_exchange(self, doc_id: str, request: str, answer: str, conversation_id: int | None, meta: dict) -> int:
        """Store a request and its answer made outside the question's own stream (a summary, a re-read's two
        answers, a question across documents) in a conversation of the document (a new one when None); returns
        the conversation's id. A follow-up does not take them for turns (earlier_turns)."""
        return record_exchange(self.store, doc_id, request, answer, conversation_id, meta)

    def record_stopped_question(self, doc_id: str, question: str, conversation_id: int | None) -> int:
        """A question stopped before its answer began (the app's Stop while it waited): kept with an empty answer
        marked stopped, as a later Stop keeps what was written; returns the conversation's id."""
        return record_exchange(self.store, doc_id, question, "", conversation_id, {"stopped": True})

    def conversations(self, doc_id: str) -> list[dict]:
        return [asdict(c) for c in self.store.conversations.for_document(doc_id)]

    def conversation(self, conversation_id: int) -> dict | None:
        """The stored conversation (id, document_id, pot_id, title, created_at), None when there is none."""
        return conversation_row(self.store, conversation_id)

    def messages(self, conversation_id: int) -> list[dict]:
        return [asdict(m) for m in self.store.conversations.messages(conversation_id)]
