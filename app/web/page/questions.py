"""The Chat tab's question features: "Read again for this question" (the general pot's answer beside the
question-aware re-read's) and one question across several ready documents. Components, events and handlers
of this feature live here; InfiniPotApp calls layout() inside the Chat tab and wire() with its other events."""

from __future__ import annotations

import time

import gradio as gr

from infinipot.app.web.page.handlers import answers_from_values, user_errors
from infinipot.app.web.page.sources import sources_line


class QuestionFeatures:
    def __init__(self, workspace, poll_seconds: float = 0.5) -> None:
        self.workspace = workspace
        self.desk = workspace.questions
        self.poll_seconds = poll_seconds

    def layout(self, c) -> None:
        with gr.Row():
            c.reread = gr.Button("Read again for this question", elem_id="ip-reread")
        c.reread_status = gr.Markdown(elem_id="ip-reread-status")
        with gr.Row():
            c.general_answer = gr.Markdown(label=GENERAL, elem_id="ip-general-answer")
            c.question_answer = gr.Markdown(label=FOCUSED, elem_id="ip-question-answer")
        c.across_docs = gr.Dropdown(
            label="Ask across documents (two or more ready documents)",
            choices=[],
            value=[],
            multiselect=True,
            elem_id="ip-across-docs",
        )
        c.ask_across = gr.Button("Ask across documents", elem_id="ip-ask-across")
        c.across_answer = gr.Markdown(elem_id="ip-across-answer")

    def wire(self, c, blocks: gr.Blocks, answers: list) -> list:
        """Wire this feature's events (`answers`: the Settings tab's answer components, in handlers.ANSWER_NAMES
        order); returns the events the page's Stop button cancels."""
        reread = c.reread.click(
            self.reread,
            [c.doc, c.question, *answers],
            [c.reread_status, c.general_answer, c.question_answer],
            api_name="reread",
            concurrency_id="model",
            concurrency_limit=1,
        )
        across = c.ask_across.click(
            self.ask_across,
            [c.across_docs, c.question, *answers],
            c.across_answer,
            api_name="ask_across",
            concurrency_id="model",
            concurrency_limit=1,
        )
        blocks.load(self.ready_choices, c.across_docs, c.across_docs, api_visibility="undocumented")
        c.library.change(self.ready_choices, c.across_docs, c.across_docs, api_visibility="undocumented")
        return [reread, across]

    def ready_choices(self, chosen):
        choices = self.desk.ready_documents()
        ready = {doc_id for _, doc_id in choices}
        return gr.update(choices=choices, value=[doc_id for doc_id in chosen or [] if doc_id in ready])

    @user_errors
    def reread(self, doc_id, question, *answer):
        """Queue the re-read (unless its pot is stored), show its progress, then stream both answers (both from
        the pot alone, with the chosen decoding: the pots are compared, not the answer modes)."""
        answer = answers_from_values(answer)
        self.workspace.check_answers(answer)  # before anything is queued
        queued = self.desk.start_reread(doc_id, question)
        if queued:
            while not (status := self.desk.reread_status(doc_id))["finished"]:
                yield f"Reading the document again with this question in mind: {100 * status['fraction']:.0f}%", "", ""
                time.sleep(self.poll_seconds)
            if not status["ok"]:
                raise ValueError(f"the re-read stopped: {status['message']}")
        note = "read now" if queued else "read before, reused"
        general_pieces, question_pieces = self.desk.side_by_side(doc_id, question, answer)
        general = question_aware = ""
        for piece in general_pieces:
            general += piece
            yield "Answering from the memory of the first read…", _titled(GENERAL, general), ""
        for piece in question_pieces:
            question_aware += piece
            yield "Answering from the memory read for this question…", gr.skip(), _titled(FOCUSED, question_aware)
        yield (
            f"Both answers are complete, each from its memory alone (the one for this question {note}).",
            _titled(GENERAL, general.strip() or "(empty answer)"),
            _titled(f"{FOCUSED} ({note})", question_aware.strip() or "(empty answer)"),
        )

    @user_errors
    def ask_across(self, doc_ids, question, *answer):
        pieces, merge = self.desk.ask_across(doc_ids, question, answers_from_values(answer))
        sources = ", ".join(f"{doc['name']} ({doc['entries']:,.0f} tokens)" for doc in merge["documents"])
        footer = (
            f"\n\n*From one memory of {merge['entries']:,} tokens (at most {merge['pot_size']:,}, at the peak "
            f"{merge['peak_entries']:,}{', made before and reused' if merge['reused'] else ''}) of: {sources}.*"
        )
        text = ""
        for piece in pieces:
            text += piece
            yield text
        cited = sources_line(merge["citations"])
        yield (text.strip() or "(the model gave an empty answer)") + footer + (f"\n\n*{cited}*" if cited else "")


# The two answers of "Read again for this question", side by side.
GENERAL = "From the memory of the first read"
FOCUSED = "From a read for this question"


def _titled(title: str, text: str) -> str:
    return f"**{title}**\n\n{text}"
