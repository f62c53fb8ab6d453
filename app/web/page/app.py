"""The page: components laid out in build(), every event wired in wire_events(), handlers in handlers.py."""

from __future__ import annotations

from types import SimpleNamespace

import gradio as gr

from infinipot.app.web.page import render, settings_tab
from infinipot.app.web.page.follow_panel import FollowPanel
from infinipot.app.web.page.handlers import (
    ALL_HEADS,
    CHAT_BUTTONS,
    KEEP_ALL_SERIES,
    KEPT_TAB,
    MEMORY_SERIES,
    Handlers,
)
from infinipot.app.web.page.questions import QuestionFeatures

INTRO = (
    "# InfiniPot document chat\n"
    "Drop in documents of any length. The model reads every word once and keeps a fixed-size memory of it, "
    "which is stored: questions, summaries and the view of what the model kept all reuse it. Offline."
)
# After a source opens the view: the marked sentence scrolled into the middle of the text box.
SCROLL_TO_QUOTE = "() => document.querySelector('#ip-tokens .ip-quoted')?.scrollIntoView({block: 'center'})"
# After an answer or a summary: the chat scrolled back so that its question's top shows. Gradio's Chatbot scrolls to
# the bottom 300 ms after each update, which left a long answer's question clipped under the chat's top edge; when
# the question shows already, nothing moves.
SHOW_LATEST_QUESTION = """() => setTimeout(() => {
  const asked = document.querySelectorAll('#ip-chat .message-row.user-row');
  const question = asked[asked.length - 1];
  const box = question && question.closest('.bubble-wrap, .panel-wrap');
  if (!box) return;
  const above = question.getBoundingClientRect().top - box.getBoundingClientRect().top;
  if (above < 0) box.scrollTop += above - 8;
}, 600)"""


class InfiniPotApp:
    def __init__(self, workspace, refresh_seconds: float = 1.0) -> None:
        self.workspace = workspace
        self.handlers = Handlers(workspace)
        self.questions = QuestionFeatures(workspace)
        self.follow_panel = FollowPanel(workspace)
        self.refresh_seconds = refresh_seconds
        self.c = SimpleNamespace()  # the components, by name

    def build(self) -> gr.Blocks:
        # Gradio's own copies of uploads are deleted after an hour; the kept copy is in the data directory.
        with gr.Blocks(title="InfiniPot document chat", analytics_enabled=False, delete_cache=(1800, 3600)) as blocks:
            self._layout()
            self.wire_events(blocks)
        return blocks

    def _layout(self) -> None:
        c = self.c
        choices = self.workspace.setting_choices()
        c.seen = gr.State({})
        c.chat = gr.State({"doc_id": None, "conversation_id": None})
        c.quoted = gr.State(None)  # [first, end) tokens of the sentence a clicked source quoted, marked in the view
        c.viewed = gr.State(None)  # with All documents chosen: the document of the source opened, which the view shows
        c.timer = gr.Timer(self.refresh_seconds)
        gr.Markdown(INTRO)
        c.doc = gr.Dropdown(label="Document", choices=[], value=None, allow_custom_value=True, elem_id="ip-document")
        with gr.Tabs() as c.tabs:
            with gr.Tab("Library"):
                c.files = gr.File(
                    label="Drop files here (books, PDF, DOCX, EPUB, HTML, text, logs)",
                    file_count="multiple",
                    type="filepath",
                    elem_id="ip-upload",
                )
                c.folder = gr.UploadButton(
                    "Add a whole folder", file_count="directory", size="sm", elem_id="ip-upload-folder"
                )
                c.notice = gr.Markdown(elem_id="ip-notice")
                c.progress = gr.HTML(elem_id="ip-progress")
                with gr.Row():
                    c.cancel = gr.Button("Cancel reading", size="sm")
                    c.resume = gr.Button("Resume", size="sm")
                    c.delete = gr.Button("Delete document", size="sm", variant="stop")
                with gr.Row():
                    c.confirm_delete = gr.Button(
                        "Yes, delete it", size="sm", variant="stop", visible=False, elem_id="ip-confirm-delete"
                    )
                    c.keep_document = gr.Button("No, keep it", size="sm", visible=False)
                c.library = gr.Dataframe(
                    headers=render.LIBRARY_HEADERS,
                    value=[],
                    interactive=False,
                    wrap=True,
                    elem_id="ip-library",
                    label="Documents",
                )
                self.follow_panel.layout(c)
            with gr.Tab("Chat"):
                c.history = gr.Dropdown(label="Conversation", choices=[], value=None, allow_custom_value=True)
                c.chatbot = gr.Chatbot(
                    label="Conversation about the document",
                    show_label=False,  # a label and a toolbar sat over the first message
                    buttons=["copy"],  # a copy button beside each message; none over the conversation
                    height=420,
                    elem_id="ip-chat",
                    placeholder="Ask about the chosen document, or press **Summarize this file**. Answers quote the "
                    "passages they come from; a source under an answer opens the document there.",
                )
                c.question = gr.Textbox(label="Question", placeholder="Ask about the document", elem_id="ip-question")
                with gr.Row():
                    c.ask = gr.Button("Ask", variant="primary", elem_id="ip-ask", interactive=False)
                    c.stop = gr.Button("Stop", elem_id="ip-stop")
                    c.new_chat = gr.Button("New chat")
                    c.summarize = gr.Button("Summarize this file", elem_id="ip-summarize", interactive=False)
                    c.new_summary = gr.Button("New summary", elem_id="ip-new-summary", interactive=False)
                c.summary_status = gr.Markdown(elem_id="ip-summary-status")
                # Never shown: they carry the /ask, /summarize and /summarize_new APIs (wire_events).
                c.ask_api, c.summary_api, c.new_summary_api = (gr.Button(visible=False) for _ in range(3))
                self.questions.layout(c)
            with gr.Tab("What the model kept", id=KEPT_TAB) as c.kept_tab:
                # Plain words first: what the model remembers, what that takes, how the app's memory went; the
                # paper's words for them in a closed fold.
                c.kept_summary = gr.HTML(elem_id="ip-kept-summary")
                with gr.Accordion(render.PAPER_TERMS, open=False, elem_id="ip-paper-terms"):
                    c.paper_terms = gr.Markdown()
                with gr.Row():
                    c.layer = gr.Number(label="Layer", value=0, precision=0, minimum=0)
                    c.head = gr.Dropdown(
                        label="Group",
                        info="Each layer keeps its memory in a few groups, each its own tokens; 'all groups' shades "
                        "each token by how many keep it",
                        choices=[ALL_HEADS, "0"],
                        value="0",
                        allow_custom_value=True,
                    )
                    c.start = gr.Number(label="From token", value=0, precision=0, minimum=0)
                    c.size = gr.Slider(label="Window (tokens)", minimum=100, maximum=4000, step=100, value=800)
                    c.page = gr.Number(label="Go to page", value=1, precision=0, minimum=1)
                with gr.Row():
                    c.show = gr.Button("Show", variant="primary", elem_id="ip-show")
                    c.previous = gr.Button("Previous window")
                    c.next = gr.Button("Next window")
                    c.go_page = gr.Button("Go to page")
                c.caption = gr.Markdown()
                c.legend = gr.HTML()
                c.tokens = gr.HTML(elem_id="ip-tokens")
                gr.Markdown("### Retention map: which parts of the document each layer still holds")
                c.x_axis = gr.Radio(["position", "page"], value="position", label="x axis")
                c.retention = gr.HTML()
                gr.Markdown("### Memory over the reading")
                # One under the other, full width, their titles outside the plots: a plot's own label took the
                # room of its legend and x-axis title, which were cut off.
                gr.Markdown("The model's memory of the document (MB, green) against keeping every token read (orange)")
                c.memory_plot = gr.LinePlot(
                    x="tokens",
                    y="MB",
                    color="series",
                    color_map={MEMORY_SERIES: "#2f7d4f", KEEP_ALL_SERIES: "#d9822b"},
                    x_title="tokens read",
                    y_title="MB",
                    color_title="memory",
                    height=360,
                    show_label=False,
                )
                gr.Markdown("The app's whole memory while it read, the model included (MB, from 0)")
                c.process_plot = gr.LinePlot(
                    x="tokens",
                    y="MB",
                    x_title="tokens read",
                    y_title="MB",
                    height=360,
                    show_label=False,
                )
                c.memory_caption = gr.Markdown()
                with gr.Accordion("Data (JSON)", open=False):
                    c.data = gr.JSON()
            with gr.Tab("Settings"):
                settings_tab.layout(c, choices)

    def wire_events(self, blocks: gr.Blocks) -> None:
        """Every event of the page, in one place."""
        c, h = self.c, self.handlers
        settings = [
            c.model,
            c.pot_size,
            c.keep_size,
            c.nuc_ratio,
            c.cap_mode,
            c.cap_question,
            c.method,
            c.nuc_unit,
            c.checkpoint_seconds,
            c.dtype,
        ]
        answers = [  # in handlers.ANSWER_NAMES order
            c.max_new_tokens,
            c.answer_from,
            c.evidence_tokens,
            c.evidence_ranking,
            c.evidence_pot,
            c.evidence_spans,
            c.focus_entries,
            c.temperature,
            c.top_p,
            c.seed,
            c.contrast,
            c.stop_on_repeat,
        ]
        buttons = [c.cancel, c.resume, c.delete, *(getattr(c, name) for name in CHAT_BUTTONS)]  # as button_states
        refresh = dict(fn=h.refresh, inputs=[c.doc, c.seen], outputs=[c.library, c.doc, c.progress, c.seen, *buttons])
        chosen = [c.chatbot, c.chat, c.history, c.progress, c.summary_status]
        selected = dict(fn=h.select, inputs=c.doc, outputs=chosen)

        blocks.load(h.library, c.doc, [c.library, c.doc, c.progress], api_name="library", show_progress="hidden")
        c.timer.tick(**refresh, api_visibility="undocumented", show_progress="hidden", concurrency_limit=None)
        c.doc.change(**selected, api_name="select")
        c.library.select(h.pick_row, None, c.doc, api_visibility="undocumented")

        c.files.upload(h.upload, [c.files, *settings], [c.notice, c.library, c.doc, c.files], api_name="upload")
        c.folder.upload(
            h.upload_folder, [c.folder, *settings], [c.notice, c.library, c.doc], api_visibility="undocumented"
        )
        c.cancel.click(h.cancel, c.doc, c.notice, api_name="cancel")
        c.resume.click(h.resume, c.doc, c.notice, api_name="resume")
        confirm = [c.confirm_delete, c.keep_document]
        c.delete.click(h.ask_delete, c.doc, [c.notice, *confirm], api_name="ask_delete")
        c.confirm_delete.click(h.delete, c.doc, [c.notice, c.library, c.doc, *confirm], api_name="delete")
        c.keep_document.click(h.keep_document, None, [c.notice, *confirm], api_visibility="undocumented")
        self.follow_panel.wire(c, settings)

        # The question is in the chat at once (not queued); its answer waits for the model, one at a time.
        question_shown = dict(fn=h.show_question, inputs=[c.doc, c.question, c.chatbot, c.chat, *answers])
        question_shown.update(outputs=[c.chatbot, c.question, c.chat], queue=False, show_progress="hidden")
        ask = dict(fn=h.ask, inputs=[c.chat, *answers], outputs=[c.chatbot, c.chat, c.history])
        # Every question asked gets its own answer event, also while the one before is answered: the default
        # trigger mode ("once") would drop a question asked while an answer runs.
        ask.update(concurrency_id="model", concurrency_limit=1, show_progress="hidden", trigger_mode="multiple")
        c.ask.click(**question_shown, api_name="show_question", api_visibility="private").success(
            **ask, api_name="answer_shown", api_visibility="private"
        ).then(fn=None, js=SHOW_LATEST_QUESTION)
        c.question.submit(**question_shown, api_name="show_submitted", api_visibility="private").success(
            **ask, api_name="answer_submitted", api_visibility="private"
        ).then(fn=None, js=SHOW_LATEST_QUESTION)
        request = dict(fn=h.show_summary_request, inputs=[c.doc, c.chatbot, c.chat, *answers])
        request.update(outputs=[c.summary_status, c.chatbot, c.chat], queue=False, show_progress="hidden")
        summary = dict(inputs=[c.chat, *answers], outputs=[c.summary_status, c.chatbot, c.chat, c.history])
        summary.update(concurrency_id="model", concurrency_limit=1, show_progress="hidden", trigger_mode="multiple")
        c.summarize.click(**request, api_name="show_summary", api_visibility="private").success(
            h.summarize, **summary, api_name="summary_shown", api_visibility="private"
        ).then(fn=None, js=SHOW_LATEST_QUESTION)
        c.new_summary.click(**request, api_name="show_new_summary", api_visibility="private").success(
            h.new_summary, **summary, api_name="new_summary_shown", api_visibility="private"
        ).then(fn=None, js=SHOW_LATEST_QUESTION)
        # The same for other programs (gradio_client): one call that asks and streams the answer or summary.
        c.ask_api.click(
            h.ask_api,
            [c.doc, c.question, c.chat, *answers],
            [c.chatbot, c.question, c.chat, c.history],
            api_name="ask",
            concurrency_id="model",
            concurrency_limit=1,
        )
        summary_api = dict(
            inputs=[c.doc, c.chat, *answers],
            outputs=[c.summary_status, c.chatbot, c.chat, c.history],
            concurrency_id="model",
            concurrency_limit=1,
        )
        for button, fn, name in (
            (c.summary_api, h.summary_api, "summarize"),
            (c.new_summary_api, h.new_summary_api, "summarize_new"),
        ):
            button.click(fn, **summary_api, api_name=name)
        question_events = self.questions.wire(c, blocks, answers)
        # Stop ends a chat answer or summary through its turn (handlers.mark_stopped), so the answer's own stream
        # stores it and shows it as stored; the side features below the chat are cancelled.
        c.stop.click(
            h.mark_stopped,
            [c.chatbot, c.chat],
            [c.chatbot, c.chat, c.history],
            cancels=question_events,
            api_visibility="undocumented",
        )
        c.new_chat.click(h.new_chat, c.doc, [c.chatbot, c.chat, c.history, c.summary_status], api_name="new_chat")
        c.history.input(h.open_conversation, [c.history, c.doc], [c.chatbot, c.chat], api_visibility="undocumented")

        show = dict(
            fn=h.show_kept,
            inputs=[c.doc, c.layer, c.head, c.start, c.size, c.x_axis, c.quoted, c.viewed],
            outputs=[
                c.caption,
                c.legend,
                c.tokens,
                c.retention,
                c.memory_plot,
                c.process_plot,
                c.memory_caption,
                c.data,
                c.head,
                c.start,
                c.layer,
                c.page,
                c.kept_summary,
                c.paper_terms,
            ],
        )
        c.show.click(**show, api_name="kept")
        c.kept_tab.select(**show, api_visibility="undocumented")  # opened: the chosen window at once
        reset = dict(
            fn=h.reset_kept, inputs=c.doc, outputs=[c.start, c.page, c.caption, c.legend, c.tokens, c.quoted, c.viewed]
        )
        c.doc.change(**reset, api_visibility="undocumented").then(**show, api_visibility="undocumented")
        c.x_axis.change(**show, api_visibility="undocumented")
        c.previous.click(lambda s, n: h.shift_window(s, n, -1), [c.start, c.size], c.start).then(**show)
        c.next.click(lambda s, n: h.shift_window(s, n, 1), [c.start, c.size], c.start).then(**show)
        c.go_page.click(h.go_to_page, [c.doc, c.page], c.start, api_name="page").success(**show)
        opened = c.chatbot.option_select(
            h.open_source, c.doc, [c.start, c.tabs, c.quoted, c.viewed], api_visibility="undocumented"
        ).success(**show)
        opened.then(fn=None, js=SCROLL_TO_QUOTE)

        for component in settings:
            component.change(h.check_settings, settings, c.settings_notice, api_visibility="undocumented")
        for component in answers:
            component.change(h.check_answers, answers, c.answers_notice, api_visibility="undocumented")
