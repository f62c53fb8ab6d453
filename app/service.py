"""The service the CLI and the web app share: read documents into stored pots, answer from them, list, delete.

A thin facade: reading lives in app/read, answering in app/ask, the store, models and a document's files in
app/library. What it adds is state that outlives one call: the loaded pots (a follow-up question does not
load its pot again) and the merged pots of questions across documents.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from infinipot.app.ask import across, evidence, library, reread, summary
from infinipot.app.ask.conversation import cited_answer, recorded_answer
from infinipot.app.ask.follow_up import (
    NOT_FOUND_TURN,
    STATED_REASONS,
    RecordedTurn,
    follow_up_query,
    turns_in_view,
    writer_turns,
)
from infinipot.app.ask.holding_stream import HeldStream
from infinipot.app.ask.library import LibraryConfig, LibraryStats
from infinipot.app.ask.modes import AnswerSettings, decoding_with_length, with_overrides
from infinipot.app.ask.pots import open_general_pot, open_pot_read_with
from infinipot.app.ask.progress import WRITING, AskStage, looked_at, passages, until_stopped
from infinipot.app.ask.stats import AskStats
from infinipot.app.library import documents
from infinipot.app.library.documents import DocumentNotFound
from infinipot.app.library.general_pot import general_pot, question_config
from infinipot.app.library.home import Library
from infinipot.app.library.pot_files import StoredPot
from infinipot.app.library.token_ids import read_window, token_count, write_token_ids
from infinipot.app.memory_trim import return_freed_memory
from infinipot.app.read import DEFAULT_CHECKPOINT_SECONDS
from infinipot.app.read.file_reader import FileReader
from infinipot.app.read.many import DocumentDone, LibraryProgress, library_files, read_here, total_bytes
from infinipot.app.read.report import ReadReport
from infinipot.app.read.workers import WorkerSettings
from infinipot.core.answer.evidence import spans_to_read
from infinipot.core.answer.grounded_answer import Verdict, grounded_answer
from infinipot.core.config import PotConfig
from infinipot.core.decoding import DecodingConfig
from infinipot.core.errors import AnswerStopped
from infinipot.core.model import LoadedModel
from infinipot.core.pot import Pot
from infinipot.core.precision import dtype_name
from infinipot.core.stopping import stopping_when
from infinipot.core.summary import SummaryConfig
from infinipot.ingest import Progress, TokenLocationMap, file_fingerprint
from infinipot.storage.errors import NotStored
from infinipot.storage.uses import DocumentHold

# Loaded pots kept in memory: a follow-up question or the kept-token view does not load the pot again.
# Stored pots kept loaded between answers (least recently used goes first). One pot of the default model is
# 178 MiB in float32 (|M|=4096); loading one again took a median 1.9 s on a busy 2-core machine. Two let
# questions alternate between two documents without reloading (benchmarks/soak.py); `ui --loaded-pots` sets it.
LOADED_POTS_KEPT = 2

__all__ = ["AnswerSettings", "AskStats", "DocumentNotFound", "DocumentService", "ReadReport", "StoredPot"]


class DocumentService:
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
        if loaded_pots < 1:
            raise ValueError(f"at least one pot must stay loaded to answer from it, got {loaded_pots}")
        self.loaded_pots = loaded_pots
        self.library = Library(home, device, dtype)
        self.home = self.library.home
        self.store = self.library.store
        self.reader = FileReader(self.library, checkpoint_seconds)
        self.merged_pots = across.MergedPotCache()
        self._pots: OrderedDict[str, StoredPot] = OrderedDict()
        self._pots_lock = threading.Lock()

    def model(self, name: str, dtype: str | None = None) -> LoadedModel:
        return self.library.models.get(name, dtype)

    # -- reading -----------------------------------------------------------------------------------
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
        """Read a document into a stored pot, resume an interrupted read, or reuse the stored pot (read/).

        `checkpoint_seconds`: seconds of reading between resume points for this read (None: the service's).
        `dtype`: what the model runs in for this read (None: the service's)."""
        try:
            report = self.reader.read(path, config, model_name, on_progress, follow, checkpoint_seconds, dtype)
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
        return progress, missing, _then_freed_each(done, self.forget_pot)

    def resume_point(
        self, doc_id: str, config: PotConfig, model_name: str = "default", dtype: str | None = None
    ) -> int:
        """Document tokens an interrupted read of `doc_id` with these settings continues from (0: from the start)."""
        pot = self.store.pots.find(doc_id, self.model(model_name, dtype).pot_key, config.identity())
        if pot is None or pot.status != "reading":
            return 0
        checkpoint = self.store.checkpoints.latest(pot.id)
        return checkpoint.document_tokens if checkpoint is not None else 0

    def count_tokens(
        self, doc_id: str, path: Path, model: str, progress: Callable[[Progress], object], dtype: str | None = None
    ) -> int:
        """The document's token count, storing its token ids (the kept-token view shows them) on the way.

        `dtype`: the one the read will use, so that counting does not load a second copy of the model."""
        loaded = self.model(model, dtype)
        target = self.library.files.token_ids(doc_id, loaded.identity, file_fingerprint(path))
        if target.is_file():
            return token_count(target)
        return write_token_ids(target, path, loaded.tokenizer, progress)

    # -- documents ---------------------------------------------------------------------------------
    def find_document(self, doc: str):
        return documents.find_document(self.store, doc)

    def documents(self) -> list[dict]:
        """Every stored document with its pots and disk use, oldest first."""
        files = self.library.files
        return [documents.document_entry(self.store, files, doc) for doc in self.store.documents.all()]

    def document(self, doc_id: str) -> dict | None:
        """One stored document (exact doc_id) in the shape of `documents()`, or None."""
        document = self.store.documents.get(doc_id)
        return None if document is None else documents.document_entry(self.store, self.library.files, document)

    def document_id(self, path: Path) -> str:
        return documents.document_id(self.store, path)

    def upload_folder(self, doc_id: str) -> Path:
        return self.library.files.upload_folder(doc_id)

    def source_path(self, doc_id: str) -> Path | None:
        """The file a stored document was read from, while it still exists."""
        document = self.store.documents.get(doc_id)
        path = Path(document.path) if document and document.path else None
        return path if path is not None and path.is_file() else None

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
        document = documents.require_document(self.store, stored.doc_id)
        path = documents.stored_token_ids(self.library.files, document, stored.engine.loaded)
        return read_window(path, start, end), token_count(path)

    # -- answering ---------------------------------------------------------------------------------
    def open_pot(self, doc: str) -> StoredPot:
        """The general pot of a doc_id, prefix or path (read first when a path never was), kept loaded."""
        return self.open_pot_reused(doc)[0]

    def open_pot_reused(self, doc: str) -> tuple[StoredPot, bool]:
        """open_pot, and whether the stored pot was reused (False when this call had to read)."""
        with self._pots_lock:
            if doc in self._pots:
                self._pots.move_to_end(doc)
                return replace(self._pots[doc], warnings=[]), True  # its warnings were given when it was opened
        stored, reused = open_general_pot(self.library, self.reader, doc)
        with self._pots_lock:
            self._pots[stored.doc_id] = stored
            while len(self._pots) > self.loaded_pots:
                self._pots.popitem(last=False)
        return stored, reused

    def loaded_documents(self) -> list[str]:
        """The doc_ids whose pots are loaded now, least recently used first."""
        with self._pots_lock:
            return list(self._pots)

    def forget_pot(self, doc_id: str) -> None:
        """Drop a loaded pot (its document was read again, grew or was deleted)."""
        with self._pots_lock:
            self._pots.pop(doc_id, None)

    def ask(
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
        on_stage: Callable[[AskStage], None] | None = None,
    ) -> tuple[Iterator[str], AskStats, bool]:
        """Stream an answer; question and answer are recorded once the answer is complete.

        Without a conversation_id a new conversation is started (its id is in stats.conversation_id);
        `record=False` answers without recording (a side-by-side comparison). `settings`: the answer mode and
        decoding (AnswerSettings' defaults when None). `pot_config`: which stored pot answers (the settings it
        was read with, by `model_name` in `dtype`); None: the document's latest general pot, in the dtype it was
        read in. `answer_from`,
        `max_new_tokens` and `focus` (entries; chooses the focus mode) override `settings`. `stop`: asked from
        the work's own thread, true once its reader stopped it (the app's Stop): the work then ends within a layer
        of the model (core.stopping), also while this call still searches, and the answer is recorded as far as it
        was given, marked stopped. `on_stage` is told each stage of the work before the answer (ask.progress).
        """
        settings = with_overrides(settings, answer_from, max_new_tokens, focus)
        started = time.perf_counter()
        if pot_config is None:
            stored, reused = self.open_pot_reused(doc)
        else:
            stored, reused = open_pot_read_with(self.library, self.reader, doc, pot_config, model_name, dtype)
        hold = self._hold(stored)
        try:
            if conversation_id is not None:
                self.require_conversation(conversation_id, stored.doc_id)
            recorded = self._recorded_turns(conversation_id) if conversation_id is not None else []
            history = turns_in_view(question, [(turn.question, turn.answer) for turn in recorded])
            # The answers in view that were sentences of the document (history is the last turns of `recorded`).
            carried = [turn for turn in recorded[len(recorded) - len(history) :] if turn.stated]
            stats = AskStats(load_seconds=time.perf_counter() - started, warnings=list(stored.warnings))
            if record and self.store.read_only:
                record = False
                stats.warnings.append(f"the data folder {self.home} is read-only, so this answer is not saved")
            stopped = stop or _never
            try:
                with stopping_when(stopped):
                    pieces = self._answer(stored, question, settings, stats, history, carried, on_stage, started)
            except AnswerStopped:  # stopped while the passages were sought: the question is kept, unanswered
                pieces = iter(())
            pieces = until_stopped(pieces, stopped, stats)
        except BaseException:
            hold.release()
            raise
        if not record:
            answer = cited_answer(self.library, pieces, stats, stored, question)
        else:
            answer = recorded_answer(self.library, pieces, stats, stored, question, conversation_id)
        return HeldStream(answer, hold, after=return_freed_memory), stats, reused

    def _hold(self, stored: StoredPot) -> DocumentHold:
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
        try:
            conversation = self.store.conversations.get(conversation_id)
        except NotStored as exc:
            raise DocumentNotFound(str(exc)) from None
        if conversation.document_id != doc_id:
            raise DocumentNotFound(f"conversation {conversation_id} is not about this document")

    def earlier_turns(self, conversation_id: int) -> list[tuple[str, str]]:
        """The conversation's (question, answer) pairs, oldest first; summaries and stopped answers are not turns a
        follow-up refers to. An answer that found nothing direct is given as such (the closest passage it quoted
        is no answer, and a follow-up would take it for one)."""
        return [(turn.question, turn.answer) for turn in self._recorded_turns(conversation_id)]

    def _recorded_turns(self, conversation_id: int) -> list[RecordedTurn]:
        """earlier_turns, each with whether its answer was a sentence of the document (STATED_REASONS) and the
        citation it was quoted from."""
        turns, question = [], None
        for message in self.store.conversations.messages(conversation_id):
            meta = message.meta or {}
            if message.role == "user":
                question = message.content
            elif question is not None and not _side_or_stopped(meta) and message.content:
                answer = message.content if meta.get("answerable", True) is not False else NOT_FOUND_TURN
                cited = meta.get("citations") or []
                stated = meta.get("answered_by") in STATED_REASONS
                turns.append(RecordedTurn(question, answer, stated, cited[0] if stated and cited else None))
                question = None
        return turns

    def _answer(
        self,
        stored: StoredPot,
        question: str,
        settings: AnswerSettings,
        stats: AskStats,
        history: list[tuple[str, str]] | None = None,
        carried: list[RecordedTurn] | None = None,
        on_stage: Callable[[AskStage], None] | None = None,
        asked: float | None = None,
    ) -> Iterator[str]:
        """The answer's pieces in the chosen mode; evidence spans are found before the first piece. With
        `history` (earlier turns), the evidence is sought for the earlier questions and this one together, and
        the answer sees the turns; `carried`: the earlier turns answered in the document's words, which the
        follow-up's judge also weighs (core.answer.grounded_answer). `on_stage` is told the passage the search points at
        as soon as it is found (stats.first_evidence_seconds after `asked`, a perf_counter time), then the
        passages read."""
        stats.answer_from = settings.answer_from
        engine, pot, decoding = stored.engine, stored.pot, settings.decoding
        history = history or []
        if settings.answer_from == "focus":
            return engine.answer(pot, question, decoding, stats, focus=settings.focus_entries, history=history)
        if settings.answer_from == "pot":
            return engine.answer(pot, question, decoding, stats, history=history)
        if not (question or "").strip():
            raise ValueError("the question is empty")
        started = time.perf_counter()
        asked = started if asked is None else asked
        tell = on_stage or _ignore

        def looking(candidates: list) -> None:
            stats.first_evidence_seconds = time.perf_counter() - asked
            cited = [c.as_json() for c in evidence.span_citations(self.library, stored, candidates)]
            stats.looked_at = looked_at(cited, question)
            tell(AskStage("looking", f"checking {passages(len(candidates))}", stats.looked_at))

        sought = follow_up_query(question, history)
        spans, warnings = evidence.gather_evidence(
            self.library, stored, sought, settings.evidence, decoding.max_new_tokens, looking
        )
        stats.warnings += warnings
        to_read = spans_to_read(spans)
        stats.evidence_tokens = sum(len(ids) for ids in to_read)
        stats.citations = [c.as_json() for c in evidence.span_citations(self.library, stored, spans)]
        names = evidence.rare_names(self.library, stored, question, settings.grounding.rare_name_mentions)
        stats.evidence_seconds = time.perf_counter() - started
        if spans:
            likeliest = spans[-1] if settings.evidence.order == "likelihood" else max(spans, key=lambda s: s.score)
            read = next(c for c in stats.citations if c["token"] == likeliest.start)  # cited above: no second load
            stats.looked_at = looked_at([read], question)
            tell(AskStage("weighing", f"weighing the sentences of {passages(len(to_read))}", stats.looked_at))
        return self._checked(stored, question, to_read, settings, stats, history, carried or [], names, tell)

    def _checked(
        self,
        stored: StoredPot,
        question: str,
        passages: list,
        settings: AnswerSettings,
        stats: AskStats,
        history: list[tuple[str, str]],
        carried: Sequence[RecordedTurn] = (),
        names: Sequence[str] = (),
        tell: Callable[[AskStage], None] | None = None,
    ) -> Iterator[str]:
        """The evidence answer checked against the passages (core.answer.grounded_answer), its verdict kept in
        `stats`; a follow-up's sentences are judged after the earlier questions in view (`history`); `names`: the
        question's rare names, which the sentence answered with must hold. A follow-up answered with an earlier answer's
        sentence ("earlier") cites, first, the place that sentence was quoted from."""
        verdict = Verdict()
        pieces = grounded_answer(
            stored.engine,
            stored.pot,
            question,
            passages,
            settings.decoding,
            stats,
            settings.grounding,
            verdict,
            earlier=" ".join(asked.strip() for asked, _ in history),
            history=writer_turns(history),
            carried=[turn.answer for turn in carried],
            names=names,
            pot_entries=settings.evidence.pot_entries,
            question_first=settings.evidence.question_first,
            on_writing=None if tell is None else lambda: tell(AskStage("writing", WRITING)),
            absent=lambda: evidence.absent_words(self.library, stored, question),
        )
        for piece in pieces:
            if verdict.reason == "earlier" and not stats.answered_by:
                source = carried[verdict.sentence.span - len(passages)].source
                stats.citations[:0] = [dict(source)] if source else []
            stats.answerable = verdict.answerable
            stats.answer_state = verdict.state
            stats.answer_sentence = verdict.sentence.text if verdict.sentence else ""
            stats.written_answer = verdict.written
            stats.confidence = verdict.confidence
            stats.answered_by = verdict.reason
            stats.decided_by = verdict.decided_by
            stats.ranked_sentences = [sentence.text for sentence in verdict.ranked]
            stats.ranked_scores = [round(sentence.score, 4) for sentence in verdict.ranked]
            yield piece

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
        kept = None if new else summary.stored_summary(self.library, stored, config)
        if kept is not None:
            stats.reused_summary = True
            stats.summary_parts = list(kept.get("parts") or [])
            return iter([kept["summary"]]), stats
        pieces = summary.summary_pieces(self.library, stored, decoding, stats, config, on_part)
        return _then_freed(pieces), stats

    def record_summary(self, doc_id: str, request: str, summary: str, conversation_id: int | None, meta: dict) -> int:
        """Store a summary in a conversation of the document (a new one when None), after the `request` that asked
        for it ("Summarize this file"), like a question and its answer; returns the conversation's id."""
        return self.record_exchange(doc_id, request, summary, conversation_id, {**meta, "summary": True})

    def record_exchange(self, doc_id: str, request: str, answer: str, conversation_id: int | None, meta: dict) -> int:
        """Store a request and its answer made outside the question's own stream (a summary, a re-read's two
        answers, a question across documents) in a conversation of the document (a new one when None); returns
        the conversation's id. A follow-up does not take them for turns (earlier_turns)."""
        self.store.require_writable("keeping the answer in the conversation")
        conversations = self.store.conversations
        if conversation_id is None:
            conversation_id = conversations.create(doc_id, None, request[:80]).id
        conversations.append_many(conversation_id, [("user", request, None), ("assistant", answer, meta)])
        return conversation_id

    def record_stopped_question(self, doc_id: str, question: str, conversation_id: int | None) -> int:
        """A question stopped before its answer began (the app's Stop while it waited for the model): kept in the
        conversation with an empty answer marked stopped, as a later Stop keeps what was written; returns the
        conversation's id."""
        self.store.require_writable("keeping the stopped question in the conversation")
        conversations = self.store.conversations
        if conversation_id is None:
            conversation_id = conversations.create(doc_id, None, question[:80]).id
        conversations.append_many(conversation_id, [("user", question, None), ("assistant", "", {"stopped": True})])
        return conversation_id

    def conversations(self, doc_id: str) -> list[dict]:
        return [asdict(c) for c in self.store.conversations.for_document(doc_id)]

    def conversation(self, conversation_id: int) -> dict | None:
        """The stored conversation (id, document_id, pot_id, title, created_at), None when there is none."""
        try:
            return asdict(self.store.conversations.get(conversation_id))
        except NotStored:
            return None

    def messages(self, conversation_id: int) -> list[dict]:
        return [asdict(m) for m in self.store.conversations.messages(conversation_id)]

    # -- question-aware re-read and questions across documents -------------------------------------
    def question_read(self, doc: str, question: str) -> tuple[PotConfig, str, str, bool]:
        """A question-aware re-read's settings, model and dtype (the general pot's, CaP-Q), and whether it is
        stored."""
        general = self.open_pot(doc)
        config = question_config(general.engine.config, question)
        stored = reread.stored_question_pot(self.library, general, config) is not None
        return config, general.record.model, dtype_name(general.engine.loaded.dtype), stored

    def reread_for_question(
        self,
        doc: str,
        question: str,
        decoding: DecodingConfig | None = None,
        on_progress: Callable[[Pot], None] | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> tuple[Iterator[str], AskStats, bool]:
        """Answer from the document's CaP-Q pot for this question: read once per question, then reused.

        Not stored as a conversation. load_seconds includes any reading.
        """
        decoding = decoding_with_length(decoding, max_new_tokens)
        started = time.perf_counter()
        general = self.open_pot(doc)
        config = question_config(general.engine.config, question)
        stored, reused = reread.open_question_pot(self.library, self.reader, general, config, on_progress)
        stats = AskStats(load_seconds=time.perf_counter() - started, warnings=stored.warnings)
        return stored.engine.answer(stored.pot, question, decoding, stats), stats, reused

    def ask_across(
        self,
        docs: list[str],
        question: str,
        decoding: DecodingConfig | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> tuple[Iterator[str], across.AcrossStats]:
        """(answer pieces, AcrossStats) from the documents' general pots merged into one (ask/across.py)."""
        if not (question or "").strip():
            raise ValueError("the question is empty")
        decoding = decoding_with_length(decoding, max_new_tokens)
        opened = [self.open_pot(doc) for doc in docs]
        return across.ask_across(self.library, opened, self.merged_pots, question, decoding)

    def library_documents(self, docs: list[str] | None = None) -> list:
        """The documents a library question goes to: those named (each must be stored), or every stored one; only
        those with a complete general pot (a document still being read is not asked yet)."""
        if docs is None:
            records = self.store.documents.all()
        else:
            records = list({d.id: d for d in (documents.require_document(self.store, doc) for doc in docs)}.values())
        complete = self.store.pots.complete_by_document()
        return [r for r in records if general_pot(complete.get(r.id, [])) is not None]

    def _rare_in_all(self, doc_ids: Iterable[str], question: str, most: int | None) -> list[str]:
        """The names `question` asks about that every one of the documents mentions at most `most` times
        (ask.evidence.rare_names): the sentence a library answer is made of must hold them, as for one document."""
        common: list[str] | None = None
        for doc_id in doc_ids:
            rare = evidence.rare_names(self.library, self.open_pot(doc_id), question, most)
            common = rare if common is None else [name for name in common if name in rare]
        return common or []

    def ask_library(
        self,
        question: str,
        docs: list[str] | None = None,
        settings: AnswerSettings | None = None,
        config: LibraryConfig | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> tuple[Iterator[str], LibraryStats]:
        """Stream the answer to a question to every stored document (or those `docs` names), with its citations
        naming their documents (ask/library.py). Not recorded in any conversation."""
        if not (question or "").strip():
            raise ValueError("the question is empty")
        settings = with_overrides(settings, "evidence", max_new_tokens)
        config = config or LibraryConfig()
        started = time.perf_counter()
        records = self.library_documents(docs)
        if not records:
            raise DocumentNotFound("no document has been read yet (see `infinipot read`)")
        stats = LibraryStats(answer_from="evidence")
        loaded = self.library.models.get("default")
        answering, read, others = library.gather_library_evidence(
            self.library,
            self.open_pot,
            records,
            loaded,
            question,
            config,
            settings.evidence,
            settings.decoding.max_new_tokens,
            stats,
        )
        stats.evidence_seconds = time.perf_counter() - started
        if answering is None:
            stats.answerable, stats.answer_state = False, "not_found"
            return library.nothing_matches(len(records)), stats
        names = {record.id: record.name for record in records}
        hold = self._hold(answering)
        try:
            pieces = self._library_answer(answering, read, question, settings, stats, names)
            if others:
                pieces = self._named_answers(answering, pieces, stats, others, question, settings, names, loaded)
        except BaseException:
            hold.release()
            raise
        return HeldStream(pieces, hold, after=return_freed_memory), stats

    def _library_answer(
        self,
        stored: StoredPot,
        read: list,
        question: str,
        settings: AnswerSettings,
        stats: AskStats,
        names: dict[str, str],
    ) -> Iterator[str]:
        """The answer from the library candidates `read`, checked as for one document, its citations naming their
        documents."""
        stats.citations = library.library_citations(self.library, stored, read, names)
        stats.evidence_tokens = sum(len(c.span.ids) for c in read)
        passages = [list(c.span.ids) for c in read]
        most = settings.grounding.rare_name_mentions
        rare = self._rare_in_all(dict.fromkeys(c.doc_id for c in read), question, most)
        pieces = self._checked(stored, question, passages, settings, stats, [], names=rare)
        return cited_answer(self.library, pieces, stats, stored, question)

    def _named_answers(
        self,
        answering: StoredPot,
        first: Iterator[str],
        stats: LibraryStats,
        others: list[library.CloseDocument],
        question: str,
        settings: AnswerSettings,
        names: dict[str, str],
        loaded: LoadedModel,
    ) -> Iterator[str]:
        """The first document's answer and, when it states one, each close document's own (library.named_answers):
        when others state one too, one line per document that does, naming it and its place, with its sentence;
        else the first's answer as it is. Given whole once every document has answered."""
        text = "".join(first)
        if stats.answer_state != "stated":  # the others are named only beside the first (library.named_answers)
            yield text
            return
        answers = [_document_answer(stats, text, answering.doc_id, names)]
        for other in others:  # one at a time, each held in use only while it answers
            stored = self.open_pot(other.doc_id)
            own = LibraryStats(answer_from="evidence")
            hold = self._hold(stored)
            try:
                evidence, tokens = settings.evidence, settings.decoding.max_new_tokens
                read = library.document_candidates(
                    self.library, stored, other.words, loaded, question, evidence, tokens, own
                )
                said = "".join(self._library_answer(stored, read, question, settings, own, names)) if read else ""
            finally:
                hold.release()
            stats.warnings += own.warnings
            stats.documents_pointed += own.documents_pointed
            stats.candidates += len(read)
            stats.evidence_tokens += own.evidence_tokens
            if read:
                answers.append(_document_answer(own, said, stored.doc_id, names))
        stats.answers = [answer.as_json() for answer in answers]
        named = library.named_answers(answers)
        if not named:
            yield text
            return
        stats.citations[:] = library.named_citations(named)  # in place: callers may hold the list
        stats.answerable, stats.answer_state, stats.answered_by = True, "stated", named[0].reason
        stats.answer_sentence = ""
        yield "\n".join(library.named_line(answer) for answer in named)


def _document_answer(stats: AskStats, text: str, doc_id: str, names: dict[str, str]) -> library.DocumentAnswer:
    """One document's own answer to a library question, from its stats once it is complete."""
    return library.DocumentAnswer(
        doc_id=doc_id,
        name=names.get(doc_id, doc_id),
        text=text.strip(),
        state=stats.answer_state or ("stated" if stats.answerable else "not_found"),
        sentence=stats.answer_sentence or "",
        citations=[c for c in stats.citations if c.get("doc_id", doc_id) == doc_id] or list(stats.citations),
        reason=stats.answered_by or "",
    )


def _never() -> bool:
    return False


def _ignore(stage: AskStage) -> None:
    pass


def _then_freed(pieces: Iterator[str]) -> Iterator[str]:
    """The pieces, then the memory they needed given back (app/memory_trim.py), however the stream ends."""
    try:
        yield from pieces
    finally:
        return_freed_memory()


def _then_freed_each(done: Iterator[DocumentDone], forget: Callable[[str], None]) -> Iterator[DocumentDone]:
    """Each finished document, its loaded pot (if any) forgotten, and memory given back after each."""
    for item in done:
        if item.report is not None:
            forget(item.report.doc_id)
        return_freed_memory()
        yield item


def _side_or_stopped(meta: dict) -> bool:
    """A stored answer a follow-up does not refer to: a summary, a side answer (a re-read's, one across documents),
    or one stopped before its end."""
    return bool(meta.get("summary") or meta.get("side") or meta.get("stopped"))
