"""The Chat tab's question features: "Read again for this question" (the general pot's answer beside the
question-aware re-read's) and one question across several ready documents. Components, events and handlers
of this feature live here; InfiniPotApp calls layout() inside the Chat tab and wire() with its other events."""

from __future__ import annotations

import time

import gradio as gr

from infinipot.app.web.page.handlers import answers_from_values, chat_state, conversation_choices, user_errors
from infinipot.app.web.page.sources import sources_line


class QuestionFeatures:
    def __init__(self, workspace, poll_seconds: float = 0.5) -> None:
        self.workspace = workspace
        self.desk = workspace.questions
        self.poll_seconds = poll_seconds

    def layout(self, c) -> None:
        with gr.Row():
            c.reread = gr.Button("Read again for this question", elem_id="ip-reread", interactive=False)
            c.across_docs = gr.Dropdown(
                label="Ask across documents (two or more ready documents)",
                choices=[],
                value=[],
                multiselect=True,
                elem_id="ip-across-docs",
                scale=3,
            )
            c.ask_across = gr.Button("Ask across documents", elem_id="ip-ask-across", interactive=False)

    def wire(self, c, blocks: gr.Blocks, answers: list) -> list:
        """Wire this feature's events (`answers`: the Settings tab's answer components, in handlers.ANSWER_NAMES
        order); both answer in the chat. Returns the events the page's Stop button cancels."""
        outputs = [c.chatbot, c.chat, c.history]
        reread = c.reread.click(
            self.reread,
            [c.doc, c.question, c.chatbot, c.chat, *answers],
            outputs,
            api_name="reread",
            concurrency_id="model",
            concurrency_limit=1,
        )
        across = c.ask_across.click(
            self.ask_across,
            [c.across_docs, c.question, c.doc, c.chatbot, c.chat, *answers],
            outputs,
            api_name="ask_across",
            concurrency_id="model",
            concurrency_limit=1,
        )
        blocks.load(self.ready_choices, c.across_docs, c.across_docs, api_visibility="undocumented")
        c.library.change(self.ready_choices, c.across_docs, c.across_docs, api_visibility="undocumented")
        c.across_docs.change(across_button, c.across_docs, c.ask_across, api_visibility="undocumented")
        return [reread, across]

    def ready_choices(self, chosen):
        choices = self.desk.ready_documents()
        ready = {doc_id for _, doc_id in choices}
        return gr.update(choices=choices, value=[doc_id for doc_id in chosen or [] if doc_id in ready])

    @user_errors
    def reread(self, doc_id, question, history, chat, *answer):
        """Queue the re-read (unless its pot is stored) and show its progress in the chat, then stream both
        answers there (both from the pot alone, with the chosen decoding: the pots are compared, not the answer
        modes); kept in the conversation once complete. Yields (chat, chat state, conversations)."""
        answer = answers_from_values(answer)
        self.workspace.check_answers(answer)  # before anything is queued
        question = (question or "").strip()
        queued = self.desk.start_reread(doc_id, question)
        request = f"{question} (read again for this question)"
        shown = [*(history or []), {"role": "user", "content": request}, {"role": "assistant", "content": ""}]
        streaming = {**(chat or {}), "side": True}
        if queued:
            while not (status := self.desk.reread_status(doc_id))["finished"]:
                progress = f"*Reading the document again with this question in mind: {100 * status['fraction']:.0f}%…*"
                yield _with_last(shown, progress), streaming, gr.skip()
                time.sleep(self.poll_seconds)
            if not status["ok"]:
                raise ValueError(f"the re-read stopped: {status['message']}")
        note = "read now" if queued else "read before, reused"
        general_pieces, question_pieces = self.desk.side_by_side(doc_id, question, answer)
        general = question_aware = ""
        for piece in general_pieces:
            general += piece
            yield _with_last(shown, _both(general, "…")), streaming, gr.skip()
        for piece in question_pieces:
            question_aware += piece
            yield _with_last(shown, _both(general, question_aware)), streaming, gr.skip()
        both = _both(general.strip() or "(empty answer)", question_aware.strip() or "(empty answer)", note)
        yield self._kept(doc_id, request, both, chat, shown, {"kind": "reread"})

    @user_errors
    def ask_across(self, doc_ids, question, doc_id, history, chat, *answer):
        """One question to several ready documents through one merged pot, answered in the chat with the
        documents and places it cites; kept in the chosen document's conversation. Yields (chat, chat state,
        conversations)."""
        pieces, merge = self.desk.ask_across(doc_ids, question, answers_from_values(answer))
        names = ", ".join(doc["name"] for doc in merge["documents"])
        request = f"{question.strip()} (asked across {names})"
        shown = [*(history or []), {"role": "user", "content": request}, {"role": "assistant", "content": ""}]
        streaming = {**(chat or {}), "side": True}
        sources = ", ".join(f"{doc['name']} ({doc['entries']:,.0f} tokens)" for doc in merge["documents"])
        footer = (
            f"\n\n*From one memory of {merge['entries']:,} tokens (at most {merge['pot_size']:,}, at the peak "
            f"{merge['peak_entries']:,}{', made before and reused' if merge['reused'] else ''}) of: {sources}.*"
        )
        text = ""
        for piece in pieces:
            text += piece
            yield _with_last(shown, text), streaming, gr.skip()
        cited = sources_line(merge["citations"])
        answer_text = (
            (text.strip() or "(the model gave an empty answer)") + footer + (f"\n\n*{cited}*" if cited else "")
        )
        yield self._kept(doc_id, request, answer_text, chat, shown, {"kind": "across", "documents": list(doc_ids)})

    def _kept(self, doc_id, request: str, answer: str, chat: dict | None, shown: list[dict], side: dict):
        """The complete answer kept in the chosen document's conversation, as the chat then shows it; where it
        cannot be kept, shown with the reason."""
        conversation_id, why_not = self.workspace.record_side_answer(doc_id, request, answer, chat, side)
        if conversation_id is None:
            return (
                _with_last(shown, f"{answer}\n\n*({why_not})*"),
                {k: v for k, v in (chat or {}).items() if k != "side"},
                gr.skip(),
            )
        state = chat_state(self.workspace, doc_id, conversation_id)
        choices = conversation_choices(self.workspace.conversations(doc_id))
        return _with_last(shown, answer), state, gr.update(choices=choices, value=conversation_id)


def across_button(chosen) -> dict:
    """Ask across documents does something only with two or more documents picked beside it (the picker lists
    ready ones only)."""
    return gr.update(interactive=len(set(chosen or [])) >= 2)


# The two answers of "Read again for this question", one under the other.
GENERAL = "From the memory of the first read"
FOCUSED = "From a read for this question"


def _both(general: str, question_aware: str, note: str = "") -> str:
    focused = f"{FOCUSED} ({note})" if note else FOCUSED
    return f"**{GENERAL}**\n\n{general}\n\n**{focused}**\n\n{question_aware}"


def _with_last(shown: list[dict], content: str) -> list[dict]:
    """The chat with its last message's text replaced (a new list: the page gets each state of the stream)."""
    return [*shown[:-1], {**shown[-1], "content": content}]
