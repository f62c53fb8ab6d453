"""What the Chat tab's question features can do, as plain data: read a document again for a question (through
the read queue) and answer from both pots side by side, and ask one question across several documents.

The Gradio handlers reach this through `Workspace.questions`; it calls the service and the read queue only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from infinipot.app.service import DocumentService
from infinipot.app.web.jobs import ACTIVE, DONE, ReadQueue, ReadRequest
from infinipot.app.web.settings import AnswerChoices, answer_choices


class QuestionDesk:
    def __init__(
        self,
        service: DocumentService,
        reads: ReadQueue,
        library: Callable[[], list[dict]],
        ready: Callable[[str], str],
    ) -> None:
        self.service = service
        self.reads = reads
        self.library = library  # the workspace's library rows
        self.ready = ready  # the doc_id of a document that can answer now, or ValueError saying why not

    def ready_documents(self) -> list[tuple[str, str]]:
        """(label, doc_id) of every document that can answer now: the choices for asking across documents."""
        return [(f"{row['name']} ({row['doc_id'][:8]})", row["doc_id"]) for row in self.library() if row["ready"]]

    # -- question-aware re-read --------------------------------------------------------------------
    def start_reread(self, doc_id: str, question: str) -> bool:
        """Queue the document's CaP-Q read for `question`; False when that pot is stored already (nothing queued)."""
        question = _question(question)
        doc_id = self.ready(doc_id)
        config, model, dtype, stored = self.service.question_read(doc_id, question)
        if stored:
            return False
        path = self.service.source_path(doc_id)
        document = self.service.document(doc_id)
        if path is None:
            raise ValueError(f"{document['name']} cannot be read again: its file is gone")
        pages = document.get("pages")
        self.reads.submit(
            ReadRequest(doc_id, document["name"], path, config, model, pages, keeps_read_log=False, dtype=dtype)
        )
        return True

    def reread_status(self, doc_id: str) -> dict:
        """The latest read of the document: whether it is finished, whether it succeeded, and how far it got."""
        job = self.reads.latest(doc_id)
        if job is None:
            return {"finished": True, "ok": True, "fraction": 1.0, "message": ""}
        snapshot = job.snapshot()
        finished = snapshot["status"] not in ACTIVE
        ok = snapshot["status"] == DONE
        message = "" if ok or not finished else (snapshot["error"] or f"the read was {snapshot['status']}")
        return {"finished": finished, "ok": ok, "fraction": snapshot["fraction"], "message": message}

    def side_by_side(
        self, doc_id: str, question: str, answer: dict | AnswerChoices
    ) -> tuple[Iterator[str], Iterator[str]]:
        """(general pot's answer, question-aware pot's answer) as streams; call once the re-read is done.

        The two pots are compared as they are: both answer from the pot alone, whatever the chosen answer
        mode, with the chosen decoding (answer length, temperature, top-p, seed, repeat stop).
        """
        question = _question(question)
        settings = replace(answer_choices(answer).answer_settings(), answer_from="pot")
        doc_id = self.ready(doc_id)
        general, _, _ = self.service.ask(doc_id, question, settings, record=False)
        return general, self._later(lambda: self.service.reread_for_question(doc_id, question, settings.decoding)[0])

    @staticmethod
    def _later(start) -> Iterator[str]:
        """Open the second pot only when its answer is wanted (after the first answer streamed)."""
        yield from start()

    # -- questions across documents ----------------------------------------------------------------
    def ask_across(self, doc_ids: list[str], question: str, answer: dict | AnswerChoices) -> tuple[Iterator[str], dict]:
        """(answer pieces, the merged pot's documents and sizes) for two or more ready documents, with the chosen
        decoding (the merged pot answers alone: answer modes are for one document)."""
        question = _question(question)
        decoding = answer_choices(answer).answer_settings().decoding  # every setting checked, as for one document
        chosen = [self.ready(doc_id) for doc_id in doc_ids or []]
        if len(set(chosen)) < 2:
            raise ValueError("choose at least two ready documents to ask across")
        pieces, stats = self.service.ask_across(chosen, question, decoding)
        merge = {
            "documents": stats.documents,
            "entries": stats.merged_entries,
            "peak_entries": stats.merge_peak_entries,
            "pot_size": stats.pot_size,
            "reused": stats.reused_merge,
            "citations": stats.citations,  # filled once the answer is complete
        }
        return pieces, merge


def _question(question: str | None) -> str:
    if not (question or "").strip():
        raise ValueError("type a question first")
    return question.strip()
