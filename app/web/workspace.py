"""Everything the UI can do, as plain data: the library, reads in the queue, chat, summaries, what the model kept.

The Gradio handlers call only this class (so they stay short and testable without a browser); it calls the
service, the read queue and the pure functions of web/kept_view.py. User errors are ValueError,
IngestError or InfiniPotError with a one-line message (app.errors.USER_ERRORS).
"""

from __future__ import annotations

import logging
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path

from infinipot.app.ask.modes import ANSWER_MODES
from infinipot.app.ask.progress import until_stopped
from infinipot.app.errors import USER_ERRORS, one_line
from infinipot.app.library.documents import DocumentNotFound
from infinipot.app.library.general_pot import latest_general_entry
from infinipot.app.read.follow import LogFollower
from infinipot.app.service import LOADED_POTS_KEPT, Answering, DocumentService
from infinipot.app.web import kept_view
from infinipot.app.web.follow_dirs import FollowDirs
from infinipot.app.web.jobs import (
    ACTIVE,
    CANCELLED,
    COUNTING,
    DONE,
    FAILED,
    QUEUED,
    READING,
    ReadJob,
    ReadQueue,
    ReadRequest,
)
from infinipot.app.web.question_desk import QuestionDesk
from infinipot.app.web.settings import (
    MODE_WORDS,
    RANKING_WORDS,
    AnswerChoices,
    ReadSettings,
    answer_choices,
    whole_number,
)
from infinipot.app.web.shared_phrases import ALL_DOCUMENTS, RESUME_CONTINUES, SUMMARY_REQUEST, document_options
from infinipot.app.web.turns import SUMMARY, Turn, Turns
from infinipot.app.web.worker import updates_from
from infinipot.core.config import CAP_MODES, NUC_UNITS, PotConfig
from infinipot.core.errors import AnswerStopped
from infinipot.core.precision import DTYPES, dtype_in_key
from infinipot.core.scorers import METHODS
from infinipot.core.stopping import stopping_when
from infinipot.ingest import open_document
from infinipot.ingest.errors import IngestError
from infinipot.storage.errors import NotStored

log = logging.getLogger(__name__)
# A document or conversation deleted while its turn was stored: nothing to keep.
STORE_GONE = (sqlite3.IntegrityError, NotStored, DocumentNotFound)
# How far after a cited place's first token its quoted sentence is looked for (a long page, a run of lines).
QUOTE_SEARCH_TOKENS = 4096
# Tokens shown before a quoted sentence when a source opens it (the end of the sentence before it).
QUOTE_LEAD_TOKENS = 24
_UNSAFE_NAME = re.compile(r"[^\w.\- ()\[\]]")
FOLLOWING_USE = "followed as it grows; stop following it first"
MAX_WINDOW = 4000  # tokens rendered at once in the "what the model kept" view


def safe_file_name(name: str) -> str:
    """The file's own name without folders or unusual characters (uploads are stored, never executed)."""
    cleaned = _UNSAFE_NAME.sub("_", Path(name).name).strip(" .")
    return cleaned[:200] or "document"


def open_workspace(
    home: Path | None = None,
    device: str = "auto",
    max_upload_bytes: int = 1 << 30,
    follow_dirs: FollowDirs | None = None,
    dtype: str = "auto",
    loaded_pots: int = LOADED_POTS_KEPT,
) -> Workspace:
    """The app's objects wired together: the service and the read queue (its worker starts with the first read).

    `dtype`: what models run in unless the page's Settings choose another for a read (core.precision)."""
    service = DocumentService(home, device=device, dtype=dtype, loaded_pots=loaded_pots)
    return Workspace(service, ReadQueue(service), max_upload_bytes, follow_dirs)


class Workspace:
    def __init__(
        self,
        service: DocumentService,
        reads: ReadQueue,
        max_upload_bytes: int = 1 << 30,
        follow_dirs: FollowDirs | None = None,
    ) -> None:
        if max_upload_bytes < 1:
            raise ValueError("the upload limit must be positive")
        self.service = service
        self.reads = reads
        self.max_upload_bytes = max_upload_bytes
        self.follow_dirs = follow_dirs or FollowDirs()
        # Names of the documents this app has listed, and of those it deleted, so a question queued before a
        # delete (by this app or another process) is told "GPL-3 was deleted", not "no such document" or that
        # it failed (a listing that ran while the delete committed).
        self._names: dict[str, str] = {}
        self._deleted: set[str] = set()
        self.turns = Turns()  # questions and summary requests from when the page shows them until stored
        self.questions = QuestionDesk(service, reads, self.library, self.ready)  # re-read, ask across documents
        # growing logs followed by path; a followed document is in use until following stops
        self.follower = LogFollower(service.read, mark_in_use=lambda doc_id: service.in_use(doc_id, FOLLOWING_USE))

    def warm_up_in_background(self, model: str = "default") -> threading.Thread:
        """Load the model while the page opens, so the first question does not wait for it."""

        def load() -> None:
            try:
                self.service.model(model)
            except Exception as exc:  # the app still works with other models; reading will report the error
                log.warning("could not preload model %s: %s", model, one_line(exc))

        thread = threading.Thread(target=load, name="infinipot-warm-up", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self.follower.close()
        self.reads.close()

    # -- growing logs ------------------------------------------------------------------------------
    def follow_log(self, path: str, settings: dict) -> str:
        """Follow a growing text file on this machine with the current settings (app.log_follower)."""
        read = ReadSettings(**settings)
        allowed = self.follow_dirs.check(path)
        started = self.follower.start(str(allowed), read.pot_config(), read.model_name())
        return f"Following {started['path']}: new lines are read as they are written."

    def stop_following(self, path: str) -> str:
        stopped = self.follower.stop(path)
        return f"Stopped following {stopped['path']} after {stopped['tokens']:,} tokens."

    def followed_logs(self) -> list[dict]:
        return self.follower.snapshots()

    # -- library -----------------------------------------------------------------------------------
    def library(self) -> list[dict]:
        """One row per document: stored ones, then those only known to the read queue (queued, failed...)."""
        stored = {doc["doc_id"]: doc for doc in self.service.documents()}
        jobs = {job["doc_id"]: job for job in self.reads.snapshots()}
        order = list(stored) + [doc_id for doc_id in jobs if doc_id not in stored]
        rows = [self._row(doc_id, stored.get(doc_id), jobs.get(doc_id)) for doc_id in order]
        self._names.update((row["doc_id"], row["name"]) for row in rows)
        return rows

    def _row(self, doc_id: str, doc: dict | None, job: dict | None) -> dict:
        pot = _latest_pot(doc)
        ready = pot is not None and pot["status"] == "complete"
        row = {
            "doc_id": doc_id,
            "name": doc["name"] if doc else job["name"],
            "ready": ready,
            "tokens": doc["tokens"] if doc and doc.get("tokens") else (job or {}).get("tokens_total"),
            "pages": doc.get("pages") if doc else self._job_pages(doc_id),
            "pot_entries": pot["entries"] if ready else None,
            "pot_size": pot["pot_size"] if pot else (job or {}).get("pot_size"),
            "disk_bytes": doc["disk_bytes"] if doc else 0,
        }
        if job is not None and job["status"] != DONE:
            # Being read or stopped: the memory as the progress line shows it.
            row["pot_entries"] = job.get("entries") or None
        if job is not None and job["status"] in ACTIVE:
            row["disk_bytes"] = None  # only once read: the read's resume points come and go meanwhile
        if job is not None and job["status"] != DONE:
            row["state"], row["status"] = job["status"], _job_status(job)
        elif ready:
            row["state"], row["status"] = "ready", "ready"
        elif pot is not None and pot["status"] == "reading":
            row["state"], row["status"] = "interrupted", f"interrupted ({RESUME_CONTINUES})"
        else:
            row["state"] = FAILED
            row["status"] = f"failed: {pot['error'] if pot else 'unknown'}"
        return row

    def _job_pages(self, doc_id: str) -> int | None:
        job = self.reads.latest(doc_id)
        return job.request.pages if job else None

    def check_settings(self, settings: dict) -> str:
        """A sentence describing valid settings (keys of ReadSettings); ValueError for invalid ones."""
        return ReadSettings(**settings).describe()

    def check_answers(self, answer: dict | AnswerChoices) -> str:
        """A sentence describing valid answer settings (keys of AnswerChoices); ValueError for invalid ones."""
        return answer_choices(answer).describe()

    def setting_choices(self) -> dict:
        """The Settings tab's choices and its defaults (PotConfig's for reads, AnswerSettings' for answers)."""
        defaults = PotConfig()
        return {
            "methods": list(METHODS),
            "cap_modes": list(CAP_MODES),
            "nuc_units": list(NUC_UNITS),
            "defaults": {
                "pot_size": defaults.pot_size,
                "keep_size": defaults.keep_size,
                "nuc_ratio": defaults.nuc_ratio,
                "cap_mode": defaults.cap_mode,
                "method": defaults.method,
                "nuc_unit": defaults.nuc_unit,
                "checkpoint_seconds": ReadSettings().checkpoint_seconds,
                "dtype": self.service.library.models.dtype,
            },
            "dtypes": list(DTYPES),
            "answer_modes": [(MODE_WORDS[mode][0].upper() + MODE_WORDS[mode][1:], mode) for mode in ANSWER_MODES],
            "answer_rankings": list(RANKING_WORDS),  # the names, as the CLI's --evidence-ranking takes them
            "answer_defaults": asdict(AnswerChoices()),
        }

    def add_files(self, paths: list[str], settings: dict) -> list[dict]:
        """Keep each file in the data directory and queue it for reading; one result per file.

        `settings` has the fields of ReadSettings. Invalid settings refuse the whole upload (ValueError);
        a bad file only fails its own result.
        """
        settings = ReadSettings(**settings)
        config = settings.pot_config()
        model = settings.model_name()
        checkpoint_seconds = settings.checkpoint_interval()
        dtype = settings.dtype_name()
        results = []
        for path in paths:
            name = safe_file_name(Path(path).name)
            try:
                request = replace(
                    self._keep_upload(Path(path), name, config, model),
                    checkpoint_seconds=checkpoint_seconds,
                    dtype=dtype,
                )
                self.reads.submit(request)
                self._deleted.discard(request.doc_id)
                results.append({"name": name, "doc_id": request.doc_id, "ok": True, "message": "queued"})
            except USER_ERRORS as exc:
                results.append({"name": name, "doc_id": None, "ok": False, "message": one_line(exc)})
        return results

    def _keep_upload(self, source: Path, name: str, config: PotConfig, model: str) -> ReadRequest:
        self.service.store.require_writable(f"reading {name}")
        size = source.stat().st_size
        if size > self.max_upload_bytes:
            raise IngestError(
                f"'{name}' is {size / 2**20:,.1f} MB, above the upload limit of {_mb(self.max_upload_bytes)}"
            )
        document = open_document(source)  # type, damage and encryption are checked before anything is kept
        doc_id = self.service.document_id(source)
        folder = self.service.upload_folder(doc_id)
        kept = folder / name
        if not kept.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, kept)
        return ReadRequest(doc_id, name, kept, config, model, document.pages)

    def cancel(self, doc_id: str) -> str:
        job = self.reads.cancel(_need(doc_id))
        if job is None:
            raise ValueError("this document is not being read")
        if job.status == CANCELLED:
            return f"{job.request.name}: removed from the queue"
        return f"{job.request.name}: stopping after the current chunk"

    def _idle(self, doc_id: str, busy: str) -> tuple[str, ReadJob | None]:
        """The document's id and its latest read job (None: never queued here); ValueError("NAME " + busy) while
        that job is queued or running."""
        doc_id = _need(doc_id)
        job = self.reads.latest(doc_id)
        if job is not None and job.status in ACTIVE:
            raise ValueError(f"{job.request.name} {busy}")
        return doc_id, job

    def resume(self, doc_id: str) -> str:
        """Queue a stopped or failed read again with its settings; the service continues from its checkpoint."""
        doc_id, job = self._idle(doc_id, "is already queued or being read")
        if job is not None and job.status in (CANCELLED, FAILED):
            self.reads.submit(job.request)
            return f"{job.request.name}: queued again"
        doc = self.service.document(doc_id)
        pot = _latest_pot(doc)
        if pot is None:
            raise ValueError("nothing to resume for this document")
        if pot["status"] == "complete":
            raise ValueError(f"{doc['name']} is already read")
        path = self.service.source_path(doc_id)
        if path is None:
            raise ValueError(f"{doc['name']} cannot be resumed: its file is gone")
        request = ReadRequest(
            doc_id,
            doc["name"],
            path,
            PotConfig(**pot["config"]),
            pot["model"],
            doc.get("pages"),
            dtype=dtype_in_key(pot["model_identity"]),  # continues in the dtype it was started in
        )
        self.reads.submit(request)
        return f"{doc['name']}: queued again"

    def delete(self, doc_id: str) -> str:
        doc_id, job = self._idle(doc_id, "is being read; cancel the read before deleting it")
        stored = self.service.document(doc_id) is not None
        if not stored and job is None:
            raise ValueError("no such document")
        self.reads.forget(doc_id)
        if not stored:
            self.service.discard_files(doc_id)
            return f"removed {job.request.name}"
        self._deleted.add(doc_id)  # before the delete commits: a listing meanwhile may see half of it
        try:
            result = self.service.delete(doc_id)
        except BaseException:
            self._deleted.discard(doc_id)
            raise
        return f"deleted {result['name']}: {_mb(result['freed_bytes'])} freed"

    def progress(self, doc_id: str | None) -> dict | None:
        """The latest read of a document as numbers, or the stored pot's numbers once it is read."""
        if not doc_id or doc_id == ALL_DOCUMENTS:
            return None
        job = self.reads.latest(doc_id)
        if job is not None:
            snapshot = job.snapshot()
            if snapshot["status"] == DONE and not snapshot.get("reused"):  # a resumed read: its time in all
                pot = _latest_pot(self.service.document(doc_id))
                if pot is not None and pot.get("read_seconds"):
                    snapshot["elapsed_seconds"] = pot["read_seconds"]
            return snapshot
        doc = self.service.document(doc_id)
        pot = _latest_pot(doc)
        if pot is None:
            return None
        return {
            "doc_id": doc_id,
            "name": doc["name"],
            "status": {"complete": DONE, "reading": "interrupted"}.get(pot["status"], FAILED),
            "error": pot.get("error"),
            "tokens_read": pot["tokens_read"],
            "tokens_total": doc.get("tokens") or pot["tokens_read"],
            "fraction": 1.0 if pot["status"] == "complete" else 0.0,
            "cycles": pot["cycles"],
            "entries": pot["entries"],
            "pot_size": pot["pot_size"],
            "tokens_per_second": pot["tokens_read"] / pot["read_seconds"] if pot["read_seconds"] else None,
            "eta_seconds": None,
            "elapsed_seconds": pot["read_seconds"],
            "reused": False,
        }

    def document_name(self, doc_id: str | None) -> str:
        """The name of a document in the library; ValueError when none is chosen or it is not there."""
        return self._library_row(doc_id)["name"]

    def _library_row(self, doc_id: str | None) -> dict:
        """The document's library row; ValueError when none is chosen or it is not there."""
        doc_id = _need(doc_id)
        row = next((row for row in self.library() if row["doc_id"] == doc_id), None)
        if row is None and doc_id in self._names:
            raise ValueError(f"{self._names[doc_id]} was deleted")
        if row is None:
            raise ValueError("no such document; upload it first")
        return row

    def _ready_row(self, doc_id: str | None) -> dict:
        """The library row of a document that can answer now; ValueError saying why not otherwise."""
        row = self._library_row(doc_id)
        if not row["ready"] and row["state"] == FAILED and doc_id in self._deleted:
            raise ValueError(f"{row['name']} was deleted")  # and is being stored again, not read yet
        if not row["ready"]:
            raise ValueError(f"{row['name']} is not ready ({row['status']}); ask when it is read")
        return row

    def choices(self) -> list[tuple[str, str]]:
        return document_options(self.library())

    # -- chat --------------------------------------------------------------------------------------
    def ready(self, doc_id: str) -> str:
        """The doc_id of a document that can answer now; ValueError saying why not otherwise."""
        return self._ready(doc_id)

    def _ready(self, doc_id: str) -> str:
        if doc_id == ALL_DOCUMENTS:
            raise ValueError("choose one document for this: All documents answers questions only")
        return self._ready_row(doc_id)["doc_id"]

    def read_batch(self) -> dict:
        """The reads queued since the queue was last idle, as numbers, and the seconds left of them all (the
        library's progress line)."""
        return self.reads.batch()

    def ready_count(self) -> int:
        return sum(1 for row in self.library() if row["ready"])

    def ask_library(self, question: str, answer: dict | AnswerChoices):
        """(answer pieces, stats) of a question to every ready document at once (ask/library.py); not stored in
        any conversation."""
        if not (question or "").strip():
            raise ValueError("type a question first")
        if self.ready_count() < 1:
            raise ValueError("no document is ready yet; ask when one is read")
        settings = answer_choices(answer).answer_settings()
        return self.service.ask_library(question.strip(), None, settings)

    def library_updates(
        self, question: str, answer: dict | AnswerChoices, stopped: Callable[[], bool]
    ) -> Iterator[tuple[str, object]]:
        """ask_library's answer on a thread of its own (app/web/worker.py): ("piece", text) for each piece, ("wait",
        None) without news, and ("done", stats) once complete; once `stopped()` (or the stream closed) the work
        ends within a layer of the model, and a stop during the search ends it without "done"."""

        def work(put, closed) -> None:
            def ended() -> bool:
                return stopped() or closed()

            try:
                with stopping_when(ended):
                    pieces, stats = self.ask_library(question, answer)
                    for piece in pieces:
                        if ended():
                            pieces.close()
                            break
                        put("piece", piece)
            except AnswerStopped:
                return
            put("done", stats)

        return updates_from(work)

    def conversations(self, doc_id: str) -> list[dict]:
        return self.service.conversations(doc_id) if doc_id else []

    def conversation_stamp(self, conversation_id: int | None) -> str | None:
        """What tells this conversation from any other that might ever carry its id: when it was started."""
        conversation = self.service.conversation(conversation_id) if conversation_id is not None else None
        return conversation["created_at"] if conversation else None

    def continued_conversation(self, doc_id: str, conversation_id: int, stamp: str | None) -> int | None:
        """`conversation_id` while it is still the conversation a session holds (stored, about `doc_id`, and
        started at `stamp` when one is given); None when that conversation is gone."""
        conversation = self.service.conversation(conversation_id)
        if conversation is None or conversation["document_id"] != doc_id:
            return None
        if stamp is not None and conversation["created_at"] != stamp:
            return None
        return conversation_id

    def messages(self, conversation_id: int | None) -> list[dict]:
        """The conversation's messages: role, content, and for answers the citations and the answer mode."""
        if conversation_id is None:
            return []
        return [
            {
                "role": m["role"],
                "content": m["content"],
                "citations": (m["meta"] or {}).get("citations", []),
                "answer_from": (m["meta"] or {}).get("answer_from"),
                "stopped": bool((m["meta"] or {}).get("stopped")),
                "answerable": (m["meta"] or {}).get("answerable", True) is not False,
                "parts": (m["meta"] or {}).get("parts", []),
                "looked_at": (m["meta"] or {}).get("looked_at"),
            }
            for m in self.service.messages(conversation_id)
        ]

    def ask(
        self,
        doc_id: str,
        question: str,
        answer: dict | AnswerChoices,
        conversation_id: int | None,
        stop: Callable[[], bool] | None = None,
    ) -> Answering:
        """The answer under way (DocumentService.asking) with the Settings tab's answer choices (keys of
        AnswerChoices); its stats' conversation_id names the conversation once the answer is complete. `stop`: as
        DocumentService.asking's."""
        if not (question or "").strip():
            raise ValueError("type a question first")
        settings = answer_choices(answer).answer_settings()
        doc_id = self._ready(doc_id)
        return self.service.asking(doc_id, question.strip(), settings, conversation_id=conversation_id, stop=stop)

    def summarize(self, doc_id: str, answer: dict | AnswerChoices, new: bool = False) -> Iterator[tuple[str, str]]:
        """The document's summary as it is made, as (kind, text) pairs: ("status", line) before the work and
        before each part ("Summarizing part 2 of 5…", "Combining the parts…"), ("piece", text) for each piece
        of the summary, ("wait", "") every worker.TICK_SECONDS without news (so that the reader can stop it), and a
        last ("done", line) saying how it was made. The stored summary comes at once
        as one piece; `new` asks for a fresh one. Settings and the document are checked before it starts."""
        decoding = answer_choices(answer).answer_settings().decoding  # every setting checked, as for questions
        return self._summary_updates(self._ready(doc_id), decoding, new)

    def record_summary(
        self,
        doc_id: str,
        summary: str,
        conversation_id: int | None,
        note: str,
        stopped: bool = False,
        parts: list[dict] | None = None,
    ) -> int | None:
        """Keep a summary in the conversation, like an answer (a stopped one as far as it got, marked so, and not
        as the document's summary), with its outline's `parts`; None when the data folder is read-only or the
        document is gone."""
        if self.service.store.read_only:
            return None
        meta = {"note": note, "stopped": True} if stopped else {"note": note}
        if parts:
            meta["parts"] = parts
        try:
            return self.service.record_summary(doc_id, SUMMARY_REQUEST, summary, conversation_id, meta)
        except STORE_GONE:
            return None

    def model_loaded(self) -> bool:
        return self.service.library.models.any_loaded()

    def record_side_answer(self, doc_id: str | None, request: str, answer: str, chat: dict | None, side: dict):
        """Keep a re-read's answers or an answer across documents in the chosen document's conversation, like a
        summary: (conversation id, None), or (None, why not) when it cannot be kept (no document chosen, a
        read-only data folder, the document gone)."""
        if not doc_id:
            return None, "no document is chosen, so it is not kept in a conversation"
        if self.service.store.read_only:
            return None, "the data folder is read-only, so it is not kept"
        chat = chat or {}
        conversation_id = chat.get("conversation_id") if chat.get("doc_id") == doc_id else None
        if conversation_id is None and chat.get("doc_id") == doc_id:  # the chat's first answer is stored by now
            conversation_id = self.turns.conversation_of(chat.get("turn"))
        if conversation_id is not None:
            conversation_id = self.continued_conversation(doc_id, conversation_id, chat.get("stamp"))
        try:
            return self.service.record_exchange(doc_id, request, answer, conversation_id, {"side": side}), None
        except STORE_GONE:
            return None, "the document was deleted meanwhile, so it is not kept"

    # -- turns: a question or a summary request from the moment the page shows it --------------------------
    def stop_turn(self, turn_id: str | None, wait: float = 10.0) -> Turn | None:
        """Stop a turn (app/web/turns.py); one that had not started is stored here, asked and stopped."""

        def record_unstarted(turn: Turn) -> int | None:
            if turn.doc_id == ALL_DOCUMENTS:  # a question to all documents belongs to no conversation
                return None
            if turn.kind == SUMMARY:
                return self.record_summary(turn.doc_id, "", turn.conversation_id, "stopped", stopped=True)
            if self.service.store.read_only:
                return None
            try:
                return self.service.record_stopped_question(turn.doc_id, turn.text, turn.conversation_id)
            except STORE_GONE:
                return None

        return self.turns.stop(turn_id, record_unstarted, wait)

    def _summary_updates(self, doc_id: str, decoding, new: bool) -> Iterator[tuple[str, str]]:
        """Summarize on a thread of its own (app/web/worker.py), so the parts' progress (reported inside one step
        of the service's stream) reaches the page while the work goes on. Closing this stream (Stop) ends the
        work within a layer of the model, and a stopped summary is not stored."""
        started = time.perf_counter()
        parts: list[int] = []

        def work(put, closed) -> None:
            def on_part(k: int, n: int) -> None:
                if closed():
                    raise AnswerStopped("the summary was stopped")
                parts[:] = [n]
                put("status", f"Summarizing part {k} of {n}…" if k <= n else "Combining the parts…")

            try:
                with stopping_when(closed):
                    pieces, stats = self.service.summarize(doc_id, decoding, new=new, on_part=on_part)
                    for piece in until_stopped(pieces, closed, stats):
                        put("piece", piece)
            except AnswerStopped:
                return
            if closed():  # a new summary ends unstored
                return
            put("parts", stats.summary_parts)
            put("done", _summary_note(stats.reused_summary, parts, time.perf_counter() - started))

        yield "status", "Summarizing…"
        for kind, value in updates_from(work):
            yield kind, "" if value is None else value
            if kind == "done":
                return

    def ask_updates(
        self,
        doc_id: str,
        question: str,
        answer: dict | AnswerChoices,
        conversation_id: int | None,
        stopped: Callable[[], bool],
    ) -> Iterator[tuple[str, object]]:
        """An answer as it is made, on a thread of its own (app/web/worker.py): ("event", its event) for each of its
        events (ask.events: stages, pieces, sources, and last Done once it is stored), ("wait", None) without news.
        Once `stopped()` (the page's Stop) or once this stream is closed, the work ends within a layer of the model
        and the answer is stored as far as it was given, marked stopped."""

        def work(put, closed) -> None:
            def ended() -> bool:
                return stopped() or closed()

            for event in self.ask(doc_id, question, answer, conversation_id, stop=ended).events:
                put("event", event)

        return updates_from(work)

    def source_place(self, doc_id: str, token: int, quote: str = "") -> dict:
        """Where the kept-tokens window opens for a cited place, and the quoted sentence's tokens in it: {"start",
        "quoted": [first, end) or None}. The sentence is looked for from the place's first token on; the window
        opens a few tokens before it."""
        start = self.source_start(doc_id, token)
        if not quote.strip():
            return {"start": start, "quoted": None}
        stored = self.service.open_pot(self._ready(doc_id))
        ids, _ = self.service.token_window(doc_id, start, start + QUOTE_SEARCH_TOKENS)
        found = kept_view.find_quote(kept_view.token_pieces(stored.engine.tokenizer, ids), quote)
        if found is None:
            return {"start": start, "quoted": None}
        first, end = start + found[0], start + found[1]
        return {"start": max(start, first - QUOTE_LEAD_TOKENS), "quoted": [first, end]}

    def source_start(self, doc_id: str, token: int) -> int:
        """Where the kept-tokens window opens for a cited place: its first token (checked against the document)."""
        doc_id = self._ready(doc_id)
        _, total = self.service.token_window(doc_id, 0, 0)
        if not 0 <= token < total:
            raise ValueError(f"token {token:,} is outside the document ({total:,} tokens)")
        return token

    # -- what the model kept -----------------------------------------------------------------------
    def kept_window(self, doc_id: str, layer: int, head: int | None, start: int, size: int) -> dict:
        """Tokens [start, start + size) with why each was kept by (layer, head), or by how many heads of the layer."""
        row = self._ready_row(doc_id)
        stored = self.service.open_pot(row["doc_id"])
        pot = stored.pot
        layer = whole_number("layer", layer)
        head = None if head is None else whole_number("KV head", head)
        kept_view.check_layer_head(pot, layer, head)
        size = max(1, min(whole_number("window size", size), MAX_WINDOW))
        start = max(0, whole_number("start", start))
        _, total = self.service.token_window(doc_id, 0, 0)
        start = min(start, max(0, total - 1))
        ids, total = self.service.token_window(doc_id, start, start + size)
        end = start + len(ids)
        pieces = kept_view.token_pieces(stored.engine.tokenizer, ids)
        layers, heads, entries = pot.origin.shape
        window = {
            "doc_id": doc_id,
            "start": start,
            "end": end,
            "total": total,
            "layer": layer,
            "head": head,
            "layers": layers,
            "kv_heads": heads,
            "entries": entries,
            "where": self._where(doc_id, start),
            "page": self._page(doc_id, start),
            "pages": row["pages"],
            "local_window": stored.engine.local_window(layer),
            "whole": pot.cycles == 0,  # never compressed: the memory holds every token read
        }
        if head is None:
            counts, counted = kept_view.window_head_counts(pot, start, end, layer)
            window.update(mode="all heads", heads_counted=counted, tokens=_tokens(pieces, counts, "count"))
        else:
            states = kept_view.window_states(pot, layer, head, start, end)
            window.update(mode="one head", kept=kept_view.kept_counts(pot, layer, head))
            window["tokens"] = _tokens(pieces, states, "state")
        return window

    def _page(self, doc_id: str, token: int) -> int | None:
        """The page (PDF page index, 1-based) or chapter of a document token; None for text without pages."""
        location_map = self.service.location_map(doc_id)
        if location_map is None or token >= len(location_map):
            return None
        return location_map.location(token).page

    def _where(self, doc_id: str, token: int) -> str:
        location_map = self.service.location_map(doc_id)
        if location_map is None or token >= len(location_map):
            return ""
        return location_map.location(token).describe()

    def page_start(self, doc_id: str, page: int) -> int:
        """First token of a page (or EPUB chapter)."""
        page = whole_number("page", page)
        row = self._ready_row(doc_id)
        doc_id = row["doc_id"]
        if not row["pages"]:
            raise ValueError(f"{row['name']} has no pages; move by token position instead")
        if not 1 <= page <= row["pages"]:
            raise ValueError(f"page must be between 1 and {row['pages']}")
        location_map = self.service.location_map(doc_id)
        if location_map is None:
            raise ValueError("this document's location map is missing; read it again")
        return kept_view.page_starts(location_map, len(location_map), page)[-1]

    def retention(self, doc_id: str, by_page: bool = False, bins: int = 64) -> dict:
        """Which parts of the document each layer still holds (layers x position bins or pages)."""
        row = self._ready_row(doc_id)
        stored = self.service.open_pot(row["doc_id"])
        _, total = self.service.token_window(doc_id, 0, 0)
        starts = None
        if by_page and row["pages"]:
            location_map = self.service.location_map(doc_id)
            if location_map is not None:
                starts = kept_view.page_starts(location_map, len(location_map), min(row["pages"], 400))
        return kept_view.retention_map(stored.pot, total, bins, starts)

    def memory(self, doc_id: str) -> dict:
        """Pot entries and bytes over the latest read, against the full KV cache and the process's memory."""
        doc_id = _need(doc_id)
        job = self.reads.latest(doc_id)
        if job is not None and job.status in (READING, COUNTING, QUEUED):
            samples, live = list(job.memory.samples), True
        else:
            log = self.service.read_log(doc_id)
            samples, live = (log or {}).get("samples", []), False
        last = samples[-1] if samples else None
        return {"live": live, "samples": samples, "rows": kept_view.memory_rows(samples), "last": last}

    def kept_summary(self, doc_id: str) -> dict:
        """What the model remembers of a ready document, as numbers: its tokens and how many each (layer, KV head)
        holds, the memory's bytes against keeping every token, and the settings the paper names."""
        row = self._ready_row(doc_id)
        stored = self.service.open_pot(row["doc_id"])
        pot, config = stored.pot, stored.engine.config
        _, total = self.service.token_window(row["doc_id"], 0, 0)
        # The chat template's opening, which every head holds whole (marked as sinks once the memory was compressed).
        opening = int((pot.origin[0, 0] < pot.prefix_len).sum())
        layers, heads, entries = pot.origin.shape
        nbytes = pot.nbytes()
        return {
            "name": row["name"],
            "total": total,
            "held": entries - opening,  # document tokens each (layer, KV head) holds
            "whole": pot.cycles == 0,
            "entries": entries,
            "sinks": opening,
            "pot_size": config.pot_size,
            "keep_size": config.keep_size,
            "cap_mode": config.cap_mode,
            "cycles": pot.cycles,
            "layers": layers,
            "kv_heads": heads,
            "bytes": nbytes,
            "full_bytes": round(nbytes / max(entries, 1) * pot.tokens_read),  # as MemoryLog counts it
        }


def _summary_note(reused: bool, parts: list[int], seconds: float) -> str:
    if reused:
        return "The stored summary of this document, shown at once. New summary makes a fresh one."
    made = f"from {parts[0]} parts " if parts else ""
    return (
        f"Summary made {made}in {seconds:,.1f} s and stored: Summarize this file shows it again at once, "
        "New summary makes a fresh one."
    )


def _tokens(pieces: list[str], marks: list, key: str) -> list[dict]:
    return [{"text": text, key: mark} for text, mark in zip(pieces, marks, strict=True)]


def _latest_pot(doc: dict | None) -> dict | None:
    return latest_general_entry(doc["pots"]) if doc else None


def _job_status(job: dict) -> str:
    percent = f"{100 * job['fraction']:.0f}%"
    if job["status"] == QUEUED:
        return "queued"
    if job["status"] == COUNTING:
        return f"counting tokens ({job['tokens_counted']:,})"
    if job["status"] == READING:
        return f"reading {percent}"
    if job["status"] == CANCELLED:
        return f"cancelled at {percent} ({RESUME_CONTINUES})"
    return f"failed: {job['error']}"


def _need(doc_id: str | None) -> str:
    if not doc_id:
        raise ValueError("choose a document first")
    return doc_id


def _mb(nbytes: int) -> str:
    return f"{nbytes / 2**20:,.1f} MB"
