"""Event handlers: each calls the workspace once or twice and turns its plain data into component values.

User errors become gr.Error here, at the UI edge, with their one-line message and no traceback.
"""

from __future__ import annotations

import functools
import inspect
from pathlib import Path

import gradio as gr
import pandas as pd

from infinipot.app.ask.events import Done, Piece, Sources
from infinipot.app.ask.progress import AskStage
from infinipot.app.errors import USER_ERRORS, one_line
from infinipot.app.web.field_numbers import whole_number
from infinipot.app.web.page import chat_view, render, sources
from infinipot.app.web.shared_phrases import ALL_DOCUMENTS, SUMMARY_REQUEST, document_options
from infinipot.app.web.turns import QUESTION, SUMMARY

ALL_HEADS = "all groups"  # the kept view's choice of every KV head (a "group") of the layer at once
NO_CHANGE = object()  # an update that leaves a value as it is
MEMORY_SERIES = "the model's memory"  # the memory plot's name for the pot's bytes
KEEP_ALL_SERIES = "keeping every token"  # and for a full KV cache of the same tokens
KEPT_TAB = "kept"  # id of the "What the model kept" tab, which a clicked source opens
SETTING_NAMES = (
    "model",
    "pot_size",
    "keep_size",
    "nuc_ratio",
    "cap_mode",
    "question",
    "method",
    "nuc_unit",
    "checkpoint_seconds",
    "dtype",
)
# The Settings tab's Answers group, in the order of its components (the fields of web.settings.AnswerChoices).
ANSWER_NAMES = (
    "max_new_tokens",
    "answer_from",
    "evidence_tokens",
    "evidence_ranking",
    "evidence_pot",
    "evidence_spans",
    "focus_entries",
    "temperature",
    "top_p",
    "seed",
    "contrast",
    "stop_on_repeat",
)


def user_errors(handler):
    """Show a user's mistake as one line in the page instead of a generic error."""
    if inspect.isgeneratorfunction(handler):

        @functools.wraps(handler)
        def stream(*args, **kwargs):
            try:
                yield from handler(*args, **kwargs)
            except USER_ERRORS as exc:
                raise gr.Error(one_line(exc), print_exception=False) from None

        return stream

    @functools.wraps(handler)
    def call(*args, **kwargs):
        try:
            return handler(*args, **kwargs)
        except USER_ERRORS as exc:
            raise gr.Error(one_line(exc), print_exception=False) from None

    return call


def settings_from_values(values: tuple) -> dict:
    return dict(zip(SETTING_NAMES, values, strict=True))


def answers_from_values(values: tuple) -> dict:
    return dict(zip(ANSWER_NAMES, values, strict=True))


def chat_state(workspace, doc_id, conversation_id: int | None) -> dict:
    """A session's chat: the document and the conversation it adds to, with the conversation's stamp (so an id
    given to someone else's conversation is never taken for this one)."""
    return {
        "doc_id": doc_id,
        "conversation_id": conversation_id,
        "stamp": workspace.conversation_stamp(conversation_id),
    }


def _document_choices(choices: list[tuple[str, str]], value=NO_CHANGE) -> dict:
    """The Document selector's update: its choices, the chosen one when given, and a label that says what to do
    when there is none yet."""
    label = "Document" if choices else NO_DOCUMENT_LABEL
    if value is NO_CHANGE:
        return gr.update(choices=choices, label=label)
    return gr.update(choices=choices, value=value, label=label)


READ_STATES = ("queued", "counting", "reading")  # a library row's states while its read is under way


def shown_document(rows: list[dict]) -> str | None:
    """The document the chooser shows when none is chosen (a reload, the chosen one deleted): the one being read,
    else the latest listed that is not waiting to be read; never one waiting in the queue, whose bar is empty (issue
    66: the chooser jumped to the last of a folder's files, queued). None for an empty library."""
    reading = [row for row in rows if row["state"] in READ_STATES[1:]]
    settled = [row for row in rows if row["state"] not in READ_STATES]
    found = reading or settled or rows
    return found[-1]["doc_id"] if found else None


def conversation_choices(conversations: list[dict]) -> list[tuple[str, int]]:
    return [(f"{c['created_at'][:16].replace('T', ' ')} · {c['title']}", c["id"]) for c in reversed(conversations)]


def _chat(messages: list[dict]) -> list[dict]:
    """Workspace messages as Chatbot messages, answers with their sources and summaries with their outline
    (app/web/page/sources.py)."""
    return [
        sources.outline_message(m["content"], m["parts"], m.get("stopped", False))
        if m.get("parts")
        else sources.chat_message(
            m["role"], _stopped_content(m), m.get("citations"), m.get("stopped", False), m.get("answerable", True)
        )
        for m in messages
    ]


def _stopped_content(message: dict) -> str:
    """A message's words; for an answer stopped before its words, the passage it was looking at then."""
    if message.get("stopped") and not (message.get("content") or "").strip() and message.get("looked_at"):
        return chat_view.looking_at_text(message["looked_at"])
    return message.get("content") or ""


# In the answer's bubble until its first words come.
PENDING_ANSWER = "*Finding the answer in the document…*"
PENDING_FIRST_ANSWER = "*Loading the model (the first question of a session waits for it), then finding the answer…*"
EMPTY_ANSWER = "(the model gave an empty answer)"


# How long Stop waits for the answer being written to end and be stored, before it shows the answer marked
# stopped as it stands (the answer's stream then shows the stored one once the model gives its next piece).
STOP_WAIT_SECONDS = 2.0


def _is_waiting(content) -> bool:
    """Whether a Chatbot message's content (a string, or the page's list of parts) is a line saying what the
    answer waits for (PENDING_ANSWER, a stage of a summary), not words of an answer."""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return chat_view.is_waiting_text(content or "")


def _kept_when_stopped(content):
    """A Chatbot message's content as Stop keeps it: its words, or the passage it was looking at (chat_view)."""
    if isinstance(content, list):
        return [
            {**part, "text": chat_view.shown_when_stopped(part.get("text", ""))}
            if isinstance(part, dict) and part.get("type") == "text"
            else part
            for part in content
        ]
    return chat_view.shown_when_stopped(str(content or ""))


def _is_queued(message: dict) -> bool:
    """Whether a Chatbot message is a waiting question's bubble (chat_view.waiting_text)."""
    return str(message.get("content") or "").startswith("*Waiting")


def _session(request: gr.Request | None) -> str | None:
    """The browser session an event came from (None: a direct call): its events run in the order it sent them."""
    return getattr(request, "session_hash", None)


def _stage(text: str) -> str:
    """A step of the work, shown in the answer's bubble until the answer's first words replace it."""
    return f"*{text.strip()}*"


def _not_done(what: str, exc: BaseException) -> dict:
    """The answer's bubble when the question could not be answered: the reason in one line, not a red badge."""
    return {"role": "assistant", "content": f"**{what}:** {sources.markdown_text(one_line(exc))}"}


def _with_stopped_mark(content):
    """A Chatbot message's content (a string, or the page's list of parts) ending with the stopped mark."""
    if isinstance(content, list):
        texts = [i for i, part in enumerate(content) if isinstance(part, dict) and part.get("type") == "text"]
        if not texts:
            return [*content, {"type": "text", "text": sources.STOPPED_MARK.strip()}]
        last = texts[-1]
        return [*content[:last], _with_stopped_mark_part(content[last]), *content[last + 1 :]]
    return str(content or "").rstrip() + sources.STOPPED_MARK


def _with_stopped_mark_part(part: dict) -> dict:
    return {**part, "text": _with_stopped_mark(part.get("text", ""))}


def button_states(progress: dict | None) -> tuple[bool, bool, bool, bool]:
    """Whether Cancel, Resume, Delete, and Ask and the summary buttons can do anything for the chosen document's
    state."""
    status = progress["status"] if progress else None
    reading = status in ("queued", "counting", "reading")
    stopped = status in ("cancelled", "interrupted", "failed")
    return reading, stopped, progress is not None and not reading, status == "done"


def _button_updates(states: tuple) -> list[dict]:
    """Cancel, Resume, Delete, then the chat buttons: one state for all of them, or (with All documents) one each."""
    *library, ready = states
    chat = list(ready) if isinstance(ready, tuple) else [ready] * len(CHAT_BUTTONS)
    return [gr.update(interactive=state) for state in library] + [gr.update(interactive=state) for state in chat]


# With All documents chosen: nothing to cancel, resume or delete; Ask, but no summary (one per document) and no
# re-read (of one document).
ALL_DOCUMENTS_BUTTONS = (False, False, False, (True, False, False, False))


# The Chat tab's buttons that need a document read (after the Library tab's Cancel, Resume and Delete): none
# answers from a document still being read. Ask across documents is not one of them: it answers once two ready
# documents are picked beside it, whichever document is chosen (QuestionFeatures.across_button).
CHAT_BUTTONS = ("ask", "summarize", "new_summary", "reread")
NO_DOCUMENT_LABEL = "Document: none yet (drop files into the Library tab)"


def _memory_frames(rows: dict[str, list[dict]]) -> tuple[dict, dict]:
    """The two memory plots' data, each with a y axis from 0 (a 10 MB change in 1.8 GB is not dramatic)."""
    kv = pd.DataFrame(rows["kv"], columns=["tokens", "series", "MB"]).replace(
        {"series": {"pot": MEMORY_SERIES, "full KV cache": KEEP_ALL_SERIES}}
    )
    process = pd.DataFrame(rows["process"], columns=["tokens", "MB"])
    return (  # hidden without samples (a document read by the CLI): the caption says so
        gr.update(value=kv, y_lim=[0, _top(kv)], visible=len(kv) > 0),
        gr.update(value=process, y_lim=[0, _top(process)], visible=len(process) > 0),
    )


def _top(frame: pd.DataFrame) -> float:
    return float(frame["MB"].max()) * 1.1 if len(frame) else 1.0


class Handlers:
    def __init__(self, workspace) -> None:
        self.ws = workspace

    # -- library -----------------------------------------------------------------------------------
    @user_errors
    def upload(self, files, *settings):
        """Queue the dropped files. Each file gets a line that stays in the notice area (a rejected one with its
        reason), and the uploader is emptied, so a rejected file is never sent again with the next upload."""
        if not files:
            raise ValueError("drop one or more files first")
        before = self.ws.library()
        known = {row["doc_id"]: row["name"] for row in before if row["ready"]}
        busy = any(row["state"] in READ_STATES for row in before)
        results = self.ws.add_files([str(f) for f in files], settings_from_values(settings))
        for refused in (r for r in results if not r["ok"]):  # in warning colours too; the notice keeps the line
            gr.Warning(f"{refused['name']} was not added: {refused['message']}")
        table = render.library_rows(self.ws.library())
        added = [r["doc_id"] for r in results if r["ok"]]
        if not added:
            choose = gr.skip()
        elif busy:  # behind another read it waits with an empty bar: the chooser stays on the document chosen
            choose = _document_choices(self.ws.choices())
        else:  # read now: its progress is shown
            choose = _document_choices(self.ws.choices(), added[0])
        return render.upload_notice(results, known), table, choose, None

    @user_errors
    def upload_folder(self, files, *settings):
        """A whole folder, read as dropped files are (its hidden files left out); the library's line counts it."""
        shown = [f for f in files or [] if not any(part.startswith(".") for part in Path(str(f)).parts[-1:])]
        if not shown:
            raise ValueError("the folder holds no files to read")
        notice, table, choose, _ = self.upload(shown, *settings)
        return notice, table, choose

    def library(self, doc_id):
        """The library table, the document choices and the chosen document's progress (on an empty library,
        what to do first)."""
        rows = self.ws.library()
        choices = document_options(rows)
        # The page was (re)loaded with no document chosen: the latest one, so Chat is not empty.
        keep = doc_id if any(value == doc_id for _, value in choices) else shown_document(rows)
        return render.library_rows(rows), _document_choices(choices, keep), self._progress_html(rows, keep)

    def _progress_html(self, rows: list[dict], doc_id) -> str:
        """The chosen document's progress (what All documents does, with it chosen), under the library's line
        while several files are read."""
        if not rows:
            return render.empty_library_html()
        if doc_id == ALL_DOCUMENTS:
            chosen = render.all_documents_html(sum(1 for row in rows if row["ready"]))
        else:
            chosen = render.progress_html(self.ws.progress(doc_id))
        return render.with_library_line(chosen, rows, self.ws.read_batch())

    def refresh(self, doc_id, seen):
        """Timer tick: the same as library(), each part sent only when it changed (the page does not flicker)."""
        rows = self.ws.library()
        table = render.library_rows(rows)
        choices = document_options(rows)
        snapshot = self.ws.progress(doc_id)
        progress = self._progress_html(rows, doc_id)
        seen = seen or {}
        if choices == seen.get("choices"):
            choices_out = gr.skip()
        elif doc_id and not any(value == doc_id for _, value in choices):
            # The chosen document was deleted (here or by another process): the latest one left is chosen.
            choices_out = _document_choices(choices, shown_document(rows))
        else:
            choices_out = _document_choices(choices)  # an upload may be choosing a document right now
        table_out = table if table != seen.get("table") else gr.skip()
        progress_out = progress if progress != seen.get("progress") else gr.skip()
        buttons = ALL_DOCUMENTS_BUTTONS if doc_id == ALL_DOCUMENTS else button_states(snapshot)
        buttons_out = (
            _button_updates(buttons) if buttons != seen.get("buttons") else [gr.skip()] * (3 + len(CHAT_BUTTONS))
        )
        state = {"table": table, "choices": choices, "progress": progress, "buttons": buttons}
        return table_out, choices_out, progress_out, state, *buttons_out

    def select(self, doc_id):
        """A document was chosen: its latest conversation, its conversations, its progress (summary cleared).
        All documents: an empty chat whose questions go to every ready document (kept in no conversation)."""
        if doc_id == ALL_DOCUMENTS:
            hint = self._progress_html(self.ws.library(), ALL_DOCUMENTS)
            return [], {"doc_id": ALL_DOCUMENTS, "conversation_id": None}, gr.update(choices=[], value=None), hint, ""
        if not doc_id:
            hint = render.empty_library_html() if not self.ws.library() else render.progress_html(None)
            return [], {"doc_id": None, "conversation_id": None}, gr.update(choices=[], value=None), hint, ""
        conversations = self.ws.conversations(doc_id)
        latest = conversations[-1]["id"] if conversations else None
        chat = self._chat_state(doc_id, latest)
        history = gr.update(choices=conversation_choices(conversations), value=latest)
        progress = render.progress_html(self.ws.progress(doc_id))
        return _chat(self.ws.messages(latest)), chat, history, progress, ""

    def pick_row(self, event: gr.SelectData):
        return event.row_value[-1] if event.row_value else gr.skip()

    @user_errors
    def cancel(self, doc_id):
        """A passing note (the progress line then says cancelled), so no line is left behind beside a newer state."""
        gr.Info(self.ws.cancel(doc_id))
        return ""

    @user_errors
    def resume(self, doc_id):
        gr.Info(self.ws.resume(doc_id))
        return ""

    @user_errors
    def ask_delete(self, doc_id):
        """The first click on Delete: say what will go and show the confirming button."""
        name = self.ws.document_name(doc_id)
        notice = (
            f"Delete **{name}**? What the model kept of it, its conversations, summary and uploaded copy go, and "
            "cannot be brought back. Press **Yes, delete it** to go on."
        )
        return notice, gr.update(visible=True), gr.update(visible=True)

    def keep_document(self):
        return "Nothing was deleted.", gr.update(visible=False), gr.update(visible=False)

    @user_errors
    def delete(self, doc_id):
        message = self.ws.delete(doc_id)
        hidden = gr.update(visible=False)
        rows = self.ws.library()
        choices = document_options(rows)
        latest = shown_document(rows)  # the chooser is never left blank while documents remain
        return message, render.library_rows(rows), _document_choices(choices, latest), hidden, hidden

    # -- chat --------------------------------------------------------------------------------------
    @user_errors
    def show_question(self, doc_id, question, history, chat, request: gr.Request | None, *answer):
        """The question in the chat the moment it is sent, with a line saying what happens until the first
        words (or its place in line), and the box emptied; the queued answer (ask) takes it from there. A
        question that cannot be asked (no document chosen, an empty box) is one line, and nothing is shown."""
        question = (question or "").strip()
        if not question:
            raise ValueError("type a question first")
        if doc_id == ALL_DOCUMENTS:
            state = self._open_library_turn(question, history, answer, request)
        else:
            state = self._open_turn(doc_id, QUESTION, question, chat, answer, request)
        shown = [*(history or []), {"role": "user", "content": question}, self._first_bubble(state["turn"])]
        return shown, "", state

    def _first_bubble(self, turn_id: str) -> dict:
        """A new turn's answer bubble: what it waits for (the model loading, the search), or its place in line."""
        place = self.ws.turns.place(turn_id)
        if place:
            return {"role": "assistant", "content": chat_view.waiting_text(place)}
        waiting = PENDING_ANSWER if self.ws.model_loaded() else PENDING_FIRST_ANSWER
        return {"role": "assistant", "content": waiting}

    def _open_turn(self, doc_id, kind: str, text: str, chat: dict | None, answer: tuple, request) -> dict:
        """Check the answer settings and the document (one line each when they cannot answer: nothing is shown
        then), open the turn, and return the chat's state that carries it."""
        self.ws.check_answers(answers_from_values(answer))  # impossible settings: one line, nothing asked
        self.ws.ready(doc_id)
        chat = chat or {}
        previous = None
        if chat.get("doc_id") == doc_id and chat.get("conversation_id") is None:
            # A new chat whose first turn may not be stored yet: this one goes where that one is stored.
            previous = chat.get("turn")
            known = self.ws.turns.conversation_of(previous)
            conversation_id = None if known is None else self.ws.continued_conversation(doc_id, known, None)
        else:
            conversation_id = self._continued(chat, doc_id)
        turn = self.ws.turns.open(doc_id, kind, text, conversation_id, previous, _session(request))
        return {**self._chat_state(doc_id, conversation_id), "turn": turn}

    def _open_library_turn(self, question: str, history, answer: tuple, request) -> dict:
        """A question to All documents: its turn, with the chat as shown before it (no conversation holds it)."""
        self.ws.check_answers(answers_from_values(answer))
        if self.ws.ready_count() < 1:
            raise ValueError("no document is ready yet; ask when one is read")
        earlier = [m for m in history or [] if not _is_waiting(m.get("content"))]
        turn = self.ws.turns.open(ALL_DOCUMENTS, QUESTION, question, None, session=_session(request), earlier=earlier)
        return {"doc_id": ALL_DOCUMENTS, "conversation_id": None, "turn": turn}

    def ask(self, chat, request: gr.Request | None, *answer):
        """Stream the answer to the question show_question put in the chat: the session's first question that
        waits (a later question may have changed the chat's state since), with the Settings tab's answer choices
        (`answer`: values in ANSWER_NAMES order). The passage looked at and the stage show until the answer
        comes; once it is stored, the chat shows it as stored, with the questions still waiting after it."""
        turn_id, turn = self.ws.turns.start_next(_session(request), QUESTION)
        if turn is None:  # stopped before it started: Stop stored it and shows it
            yield gr.skip(), gr.skip(), gr.skip()
            return
        if turn.doc_id == ALL_DOCUMENTS:
            yield from self._ask_library(turn_id, turn, answer)
            return
        earlier = _chat(self.ws.messages(turn.conversation_id))
        asked = {"role": "user", "content": turn.text}
        text, waiting, looked_at, stats = "", PENDING_ANSWER, None, None

        def shown(content) -> list[dict]:  # a new list per update: the page gets each state of the stream
            bubble = {"role": "assistant", "content": content}
            return [*earlier, asked, bubble, *chat_view.queued_messages(self.ws.turns.queued_after(turn_id))]

        try:
            updates = self.ws.ask_updates(
                turn.doc_id, turn.text, answers_from_values(answer), turn.conversation_id, lambda: turn.stopped
            )
            queued = None
            yield shown(waiting), gr.skip(), gr.skip()  # a question that waited in line: its turn has come
            for kind, event in updates:
                if isinstance(event, Done):
                    stats = event.stats
                    continue
                if turn.stopped or isinstance(event, Sources):  # both shown as stored once the work has ended
                    continue
                if isinstance(event, AskStage):
                    looked_at = event.citation or looked_at
                    waiting = chat_view.stage_text(event, looked_at)
                elif isinstance(event, Piece):
                    text += event.text
                elif kind == "wait":  # the places in line may have changed
                    now = [id(t) for t, _ in self.ws.turns.queued_after(turn_id)]
                    if now == queued:
                        continue
                    queued = now
                yield shown(text or waiting), gr.skip(), gr.skip()
        except USER_ERRORS as exc:
            yield shown(_not_done("Not answered", exc)["content"]), gr.skip(), gr.skip()
            return
        finally:
            self.ws.turns.finish(turn_id, stats.conversation_id if stats else None)
        if stats.conversation_id is None:  # not stored (a read-only data folder): shown as written
            message = sources.chat_message(
                "assistant", text.strip() or EMPTY_ANSWER, stats.citations, turn.stopped, stats.answerable
            )
            yield shown(message["content"]), gr.skip(), gr.skip()
            return
        yield self._stored_chat(turn.doc_id, stats.conversation_id, turn_id)

    def _ask_library(self, turn_id: str, turn, answer: tuple):
        """The answer of All documents, streamed under the chat as it was; its sources name their documents."""
        earlier = turn.earlier
        asked = {"role": "user", "content": turn.text}
        text, stats = "", None
        try:
            updates = self.ws.library_updates(turn.text, answers_from_values(answer), lambda: turn.stopped)
            for kind, value in updates:
                if kind == "done":
                    stats = value
                elif kind == "piece" and not turn.stopped:
                    text += value
                    yield [*earlier, asked, {"role": "assistant", "content": text}], gr.skip(), gr.skip()
        except USER_ERRORS as exc:
            yield [*earlier, asked, _not_done("Not answered", exc)], gr.skip(), gr.skip()
            return
        finally:
            self.ws.turns.finish(turn_id, None)
        message = sources.chat_message(
            "assistant",
            text.strip() or ("" if turn.stopped else EMPTY_ANSWER),
            # Sources come under a complete answer only: a stopped one keeps what was on screen.
            sources.library_citations(stats.citations) if stats and not turn.stopped else [],
            stopped=turn.stopped,
            answerable=stats.answerable if stats else True,
        )
        yield [*earlier, asked, message], gr.skip(), gr.skip()

    def ask_api(self, doc_id, question, chat, request: gr.Request | None, *answer):
        """The /ask API: (chat, question box, chat state, conversations) as the question is shown and answered."""
        history, box, chat = self.show_question(doc_id, question, [], chat, request, *answer)
        updates = ((shown, box, chat, conversations) for shown, _, conversations in self.ask(chat, request, *answer))
        yield from self._naming_conversation(updates, 2)

    def _naming_conversation(self, updates, state_at: int):
        """An API call's updates as they come, the chat state in each (at `state_at`) naming the conversation its
        turn was stored in once it is known (the last update, after the answer is stored, always names it)."""
        named = None
        for update in updates:
            chat = update[state_at]
            if named is None and chat.get("doc_id") != ALL_DOCUMENTS:
                conversation_id = self.ws.turns.conversation_of(chat.get("turn"))
                if conversation_id is not None:
                    named = {**chat, **self._chat_state(chat["doc_id"], conversation_id)}
            yield update if named is None else (*update[:state_at], named, *update[state_at + 1 :])

    def _stored_chat(self, doc_id, conversation_id: int, turn_id: str | None = None) -> tuple[list[dict], dict, dict]:
        """(chat, chat state, conversations): the conversation as stored, which is what a reload shows, with the
        questions of the session still waiting after `turn_id`; the chat state is left as it is (a question
        asked meanwhile holds it)."""
        choices = conversation_choices(self.ws.conversations(doc_id))
        waiting = chat_view.queued_messages(self.ws.turns.queued_after(turn_id))
        return (
            [*_chat(self.ws.messages(conversation_id)), *waiting],
            gr.skip(),
            gr.update(choices=choices, value=conversation_id),
        )

    def _continued(self, chat: dict | None, doc_id) -> int | None:
        """The conversation this session adds to: the one it started or opened for this document, while it is
        still that conversation (its document may have been deleted and uploaded again); None starts one."""
        chat = chat or {}
        if chat.get("doc_id") != doc_id or chat.get("conversation_id") is None:
            return None
        conversation_id = self.ws.continued_conversation(doc_id, chat["conversation_id"], chat.get("stamp"))
        if conversation_id is None:
            gr.Warning("The earlier conversation was deleted with its document; this starts a new one.")
        return conversation_id

    def _chat_state(self, doc_id, conversation_id: int | None) -> dict:
        return chat_state(self.ws, doc_id, conversation_id)

    def mark_stopped(self, history, chat, request: gr.Request | None = None):
        """Stop was pressed: the session's answer or summary being made (else the next waiting) ends within a
        second and is stored as far as it was shown; the chat then shows the conversation as stored, which is what
        a reload shows, with the questions still waiting after it. Nothing changes when none was being made."""
        chat = dict(chat or {})
        side = chat.pop("side", False)  # a re-read's or an across answer: cancelled by the page, not stored
        turn_id = self.ws.turns.to_stop(_session(request))
        turn = self.ws.stop_turn(turn_id, wait=STOP_WAIT_SECONDS)
        if turn is None and side and history and history[-1].get("role") == "assistant":
            last = history[-1].get("content")
            return [*history[:-1], {**history[-1], "content": _with_stopped_mark(last)}], chat, gr.skip()
        if turn is None:
            return gr.skip(), gr.skip(), gr.skip()
        if turn.finished.is_set() and turn.conversation_id is not None:
            shown, _, conversations = self._stored_chat(turn.doc_id, turn.conversation_id, turn_id)
            state = (
                {**chat, **self._chat_state(turn.doc_id, turn.conversation_id)}
                if turn.doc_id == chat.get("doc_id")
                else chat
            )
            return shown, state, conversations
        # Not stored yet (its work still ends), or not stored at all (a read-only data folder): its bubble marked.
        history = list(history or [])
        answered = [i for i, m in enumerate(history) if m.get("role") == "assistant" and not _is_queued(m)]
        if answered:
            index = answered[-1]
            content = history[index].get("content")
            stopped = _with_stopped_mark(_kept_when_stopped(content))
            history[index] = {**history[index], "content": stopped}
        return history, gr.skip(), gr.skip()

    def new_chat(self, doc_id):
        """An empty chat; the last summary's note goes with the old one."""
        return [], {"doc_id": doc_id, "conversation_id": None}, gr.update(value=None), ""

    def open_conversation(self, conversation_id, doc_id):
        conversation_id = None if conversation_id in (None, "") else int(conversation_id)
        return _chat(self.ws.messages(conversation_id)), self._chat_state(doc_id, conversation_id)

    @user_errors
    def open_source(self, event: gr.SelectData, doc_id):
        """A source under an answer was clicked: open "What the model kept" just before the sentence quoted from
        that place, which the view marks (at the place's first token when the sentence is not found). A source of
        an answer from All documents opens its own document there (the Document selector stays as it is)."""
        token, quote = sources.source_reference(event.value)
        shown = sources.source_document(event.value) if doc_id == ALL_DOCUMENTS else None
        place = self.ws.source_place(shown or doc_id, token, quote)
        return place["start"], gr.update(selected=KEPT_TAB), place["quoted"], shown

    @user_errors
    def show_summary_request(self, doc_id, history, chat, request: gr.Request | None, *answer):
        """ "Summarize this file" in the chat the moment it is pressed, with the first step in the answer's
        bubble (or its place in line); the queued summary (summarize or new_summary) takes it from there."""
        state = self._open_turn(doc_id, SUMMARY, SUMMARY_REQUEST, chat, answer, request)
        request_message = {"role": "user", "content": SUMMARY_REQUEST}
        place = self.ws.turns.place(state["turn"])
        first = chat_view.waiting_text(place) if place else _stage("Starting the summary…")
        return "", [*(history or []), request_message, {"role": "assistant", "content": first}], state

    def summary_api(self, doc_id, chat, request: gr.Request | None, *answer, new: bool = False):
        """The /summarize and /summarize_new APIs: (status, chat, chat state, conversations) as it is made."""
        status, history, chat = self.show_summary_request(doc_id, [], chat, request, *answer)
        updates = (
            (status, shown, chat, conversations)
            for status, shown, _, conversations in self._summary(answer, new, request)
        )
        yield from self._naming_conversation(updates, 2)

    def new_summary_api(self, doc_id, chat, request: gr.Request | None, *answer):
        """The /summarize_new API: summary_api with a fresh summary (a method, not a partial: Gradio finds the
        request argument by the annotations of the function itself)."""
        yield from self.summary_api(doc_id, chat, request, *answer, new=True)

    def summarize(self, chat, request: gr.Request | None, *answer):
        """(status line, chat, chat state, conversations): the summary as a message of the conversation, the stored
        one at once, else its stage ("part 2 of 5") in its bubble and then the summary streamed; kept in the
        conversation once complete, or as far as it got when stopped."""
        yield from self._summary(answer, False, request)

    def new_summary(self, chat, request: gr.Request | None, *answer):
        """A fresh summary in place of the stored one."""
        yield from self._summary(answer, True, request)

    def _summary(self, answer: tuple, new: bool, request):
        turn_id, turn = self.ws.turns.start_next(_session(request), SUMMARY)
        if turn is None:  # stopped before it started: Stop stored it and shows it
            yield gr.skip(), gr.skip(), gr.skip(), gr.skip()
            return
        earlier = _chat(self.ws.messages(turn.conversation_id)) + [{"role": "user", "content": SUMMARY_REQUEST}]

        def shown(content) -> list[dict]:  # a new list per update: the page gets each state of the stream
            queued = chat_view.queued_messages(self.ws.turns.queued_after(turn_id))
            return [*earlier, {"role": "assistant", "content": content}, *queued]

        text, note, conversation_id, parts, summary = "", None, None, [], ""
        try:
            updates = self.ws.summarize(turn.doc_id, answers_from_values(answer), new)
            for kind, value in updates:
                if turn.stopped:  # Stop: the summary ends here (closing its updates ends its work)
                    updates.close()
                    break
                if kind == "piece":
                    text += value
                    yield "", shown(text), gr.skip(), gr.skip()
                elif kind == "status":
                    yield "", shown(text or _stage(value)), gr.skip(), gr.skip()
                elif kind == "parts":
                    parts = value
                elif kind == "done":
                    note = value
            if note is None:  # stopped: the finally below keeps it
                return
            summary = text.strip() or "(the model gave an empty summary)"
            conversation_id = self.ws.record_summary(turn.doc_id, summary, turn.conversation_id, note, parts=parts)
        except USER_ERRORS as exc:
            note = ""
            yield "", shown(_not_done("Not summarized", exc)["content"]), gr.skip(), gr.skip()
            return
        finally:
            if note is None:  # stopped: kept in the conversation as far as it got, not as the document's summary
                conversation_id = self.ws.record_summary(
                    turn.doc_id, text.strip(), turn.conversation_id, "stopped", stopped=True
                )
            self.ws.turns.finish(turn_id, conversation_id)
        if conversation_id is None:  # not stored (a read-only data folder): shown as written
            message = sources.outline_message(summary, parts) if parts else {"role": "assistant", "content": summary}
            yield note, [*earlier, message], gr.skip(), gr.skip()
            return
        yield note, *self._stored_chat(turn.doc_id, conversation_id, turn_id)

    # -- what the model kept -----------------------------------------------------------------------
    @user_errors
    def show_kept(self, doc_id, layer, head, start, size, x_axis, quoted=None, viewed=None):
        """The kept-token view of the chosen window. A value out of range, or a document not ready, is one line in
        the caption (the inputs keep their values and show no error); the inputs' labels give their real ranges.
        With All documents chosen, the view shows `viewed`, the document of the source last opened."""
        shown_from_all = doc_id == ALL_DOCUMENTS
        if shown_from_all:
            doc_id = viewed
            if not doc_id:
                return ("Open a source under an answer to see its document here.", "", "", *[gr.skip()] * 9, "", "")
        if not doc_id:
            return ("Choose a document to see what the model kept of it.", "", "", *[gr.skip()] * 9, "", "")
        try:
            head_index = None if head in (None, "", ALL_HEADS, "all heads") else whole_number("group", head)
            window = self.ws.kept_window(doc_id, layer, head_index, start, size)
            retention = self.ws.retention(doc_id, by_page=x_axis == "page")
        except USER_ERRORS as exc:
            return (f"**Cannot show this window:** {one_line(exc)}", "", "", *[gr.skip()] * 11)
        memory = self.ws.memory(doc_id)
        summary = self.ws.kept_summary(doc_id)
        data = {"window": window, "retention": retention, "memory": {k: memory[k] for k in ("live", "samples")}}
        heads = [ALL_HEADS] + [str(i) for i in range(window["kv_heads"])]
        pages = window["pages"]
        caption = render.window_caption(window, quoted)
        if shown_from_all:  # the Document selector says All documents: the caption says which one this is
            caption = f"**{sources.markdown_text(self.ws.document_name(doc_id))}** · {caption}"
        return (
            caption,
            render.legend_html(
                window["mode"],
                window.get("heads_counted", 0),
                local=bool(window.get("local_window")),
                whole=window["whole"],
                quoted=render.marks_quote(window, quoted),
            ),
            render.tokens_html(window, quoted),
            render.retention_html(retention),
            *_memory_frames(memory["rows"]),
            render.memory_caption(memory),
            data,
            gr.update(choices=heads, label=f"Group (0-{window['kv_heads'] - 1}, or all)"),
            window["start"],
            gr.update(label=f"Layer (0-{window['layers'] - 1})"),
            gr.update(value=window["page"] or 1, label=f"Go to page (PDF page 1-{pages})" if pages else "Go to page"),
            render.kept_summary_html(summary, memory),
            render.paper_terms_md(summary, window),
        )

    def reset_kept(self, doc_id):
        """Another document was chosen: its view starts at its first token, page 1, the old window and the marked
        quote cleared."""
        return 0, 1, "", "", "", None, None

    def shift_window(self, start, size, direction: int):
        return max(0, int(start or 0) + direction * int(size or 0))

    @user_errors
    def go_to_page(self, doc_id, page):
        return self.ws.page_start(doc_id, page)

    # -- settings ----------------------------------------------------------------------------------
    def check_settings(self, *settings):
        try:
            return self.ws.check_settings(settings_from_values(settings))
        except USER_ERRORS as exc:
            return f"Not valid: {one_line(exc)}"

    def check_answers(self, *answer):
        try:
            return self.ws.check_answers(answers_from_values(answer))
        except USER_ERRORS as exc:
            return f"Not valid: {one_line(exc)}"
