"""The Gradio app end to end through gradio_client on a tiny model: upload, read with progress, ask (answer
settings as the API's later arguments), summarize (stored, then made anew), visualization data, chat history after a
restart, delete; a corrupt PDF gives an error and the app goes on."""

from __future__ import annotations

import re

import pytest
from helpers import answer_text, make_workspace, message_text, running_app, tiny_settings, wait_until
from tiny_models import save_model_folder
from tiny_models import write_notes as write_notes_file

gradio_client = pytest.importorskip("gradio_client")
from gradio_client import Client, handle_file  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

from infinipot.app.web.kept_view import STATES  # noqa: E402
from infinipot.app.web.page.handlers import SETTING_NAMES  # noqa: E402
from infinipot.app.web.page.sources import folded_summary  # noqa: E402

pytestmark = pytest.mark.slow  # a Gradio server


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_model_folder(tmp_path_factory.mktemp("tiny-llama"))


def settings_args(model_dir):
    settings = tiny_settings(model_dir)
    return [settings[name] for name in SETTING_NAMES]


def library_rows(client, doc_id=None):
    table, _, progress = client.predict(doc_id, api_name="/library")
    return table["data"], progress


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html)


def expected_answer(workspace, doc_id, question, max_new_tokens):
    stored = workspace.service.open_pot(doc_id)
    return "".join(stored.engine.answer(stored.pot, question, max_new_tokens)).strip()


def test_upload_read_ask_summarize_visualize_delete(tmp_path, infinipot_home, model_dir):
    notes = write_notes_file(tmp_path / "notes.txt", lines=14)
    corrupt = tmp_path / "broken.pdf"
    corrupt.write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\ngarbage, no cross-reference table\n")
    workspace = make_workspace(infinipot_home, pace=0.15)
    with running_app(workspace) as url:
        client = Client(url, verbose=False)

        # A corrupt PDF: a lasting line with the reason in the notice, nothing queued, the uploader emptied (so
        # the file is not sent again with the next upload), and the app goes on working.
        notice, _, _, files = client.predict([handle_file(str(corrupt))], *settings_args(model_dir), api_name="/upload")
        assert re.fullmatch(r"- ⚠️ \*\*broken\.pdf\*\* was not added: .*incomplete.*", notice), notice
        assert files is None
        assert library_rows(client)[0] == []

        notice, table, doc_update, files = client.predict(
            [handle_file(str(notes))], *settings_args(model_dir), api_name="/upload"
        )
        doc_id = doc_update["value"]
        assert notice == "- **notes.txt** added to the library" and files is None
        assert re.fullmatch(r"[0-9a-f]{16}", doc_id)

        # Progress while reading: tokens read of total, compressions, tokens/s and an ETA, then ready.
        seen = []

        def ready():
            rows, progress = library_rows(client, doc_id)
            seen.append(text_of(progress))
            return rows if rows and rows[0][1] == "ready" else None

        rows = wait_until(ready, timeout=180, every=0.1)
        reading = [t for t in seen if "reading" in t and "ETA" in t]
        assert reading, seen
        counts = [re.search(r"([\d,]+) / ([\d,]+) tokens", t).groups() for t in reading]
        counts = [(int(done.replace(",", "")), int(total.replace(",", ""))) for done, total in counts]
        total = counts[0][1]
        assert any(0 < done < total for done, _ in counts), reading
        assert re.search(r"compressed (once|twice|\d+ times)", reading[-1]) and "tokens/s" in reading[-1]
        name, status, tokens, pages, pot, disk, row_id = rows[0]
        assert (name, status, row_id) == ("notes.txt", "ready", doc_id)
        assert int(tokens.replace(",", "")) == total
        assert pot.endswith("/ 128") and disk.endswith("KB")
        assert "ready" in seen[-1] and f"{total:,} / {total:,} tokens (100%)" in seen[-1]

        # Ask: the answer streams, and equals greedy decoding from the stored pot (answer from: the pot alone).
        question = "What does the fox do?"
        job = client.submit(doc_id, question, 12, "pot", api_name="/ask")
        updates = list(job)
        history = job.result()[0]
        assert len(updates) >= 3
        assert [m["role"] for m in history] == ["user", "assistant"]
        assert message_text(history[0]) == question
        expected = expected_answer(workspace, doc_id, question, 12)
        assert answer_text(history[1]) == (expected or "(the model gave an empty answer)")
        sources = re.search(r"\*Sources: (.*)\*", message_text(history[1]))
        assert not expected or re.match(r'<span title="[^"]+">line \d', sources.group(1))  # cited by line, with text

        # A follow-up lands in the same conversation; the API's later arguments are the Settings tab's answers
        # (answer length, answer from, passages budget, passages found by, focused size, temperature, top-p,
        # seed, repeat stop).
        history = client.predict(
            doc_id, "Who is lazy?", 8, "focus", 768, "both", "0", 3, 32, 0.5, 0.9, 4, False, api_name="/ask"
        )[0]
        assert [message_text(m) for m in history[::2]] == [question, "Who is lazy?"]
        conversation = workspace.conversations(doc_id)[-1]["id"]
        assert [m["answer_from"] for m in workspace.messages(conversation)[1::2]] == ["pot", "focus"]
        with pytest.raises(AppError, match="evidence budget must be at least 1 token, got 0"):
            client.predict(doc_id, "Who is lazy?", 8, "evidence", 0, api_name="/ask")

        # Summarize: a message of the conversation, made and stored, then the stored one at once; New summary makes
        # another. Each is kept in the conversation like an answer, after the request that asked for it.
        status, chat, _ = client.predict(doc_id, 12, api_name="/summarize")
        kept = workspace.service.library.files.load_summary(doc_id)
        summary = kept["summary"] or "(the model gave an empty summary)"
        assert status.startswith("Summary made")
        # Shown with its opening first and the rest folded (sources.folded_summary); kept whole.
        shown = folded_summary(summary)
        assert [message_text(m) for m in chat[-2:]] == ["Summarize this file", shown]
        status, chat, _ = client.predict(doc_id, 12, api_name="/summarize")
        assert status == "The stored summary of this document, shown at once. New summary makes a fresh one."
        assert message_text(chat[-1]) == shown
        status, _, _ = client.predict(
            doc_id, 12, "pot", 768, "words", "0", 3, 1024, 1.0, 1.0, 5, api_name="/summarize_new"
        )
        assert status.startswith("Summary made")  # made anew, not the stored one
        conversation = workspace.conversations(doc_id)[-1]["id"]
        recorded = workspace.messages(conversation)
        assert [m["content"] for m in recorded[-6::2]] == ["Summarize this file"] * 3
        assert recorded[-3]["content"] == summary
        stored = workspace.service.open_pot(doc_id)

        # What the model kept: one head, then all heads; the data agrees with the pot's provenance.
        outputs = client.predict(doc_id, 0, "0", 0, 200, "position", api_name="/kept")
        caption, data = outputs[0], outputs[7]
        window = data["window"]
        assert window["mode"] == "one head" and window["start"] == 0 and window["end"] == min(200, total)
        states = [token["state"] for token in window["tokens"]]
        assert set(states) <= set(STATES) and "dropped" in states
        pot = stored.pot
        positions = pot.origin[0, 0] - pot.prefix_len
        in_window = ((positions >= 0) & (positions < 200)).sum().item()
        assert sum(state != "dropped" for state in states) == in_window
        assert "layer 0 of 2, group 0 of 2" in caption
        retention = data["retention"]
        assert len(retention["matrix"]) == 2 and retention["edges"][-1] == total
        samples = data["memory"]["samples"]
        assert len(samples) > 3 and samples[-1]["tokens"] == total
        assert all(s["entries"] <= 128 for s in samples)
        assert samples[-1]["full_kv_bytes"] > samples[-1]["pot_bytes"] > 0 and samples[-1]["rss_bytes"] > 0
        assert "the model's memory of the document took" in outputs[6]
        assert "What the model remembers" in outputs[12] and "In the paper" not in outputs[12]  # plain words first
        assert "KV head" in outputs[13] and "CaP" in outputs[13]  # the paper's terms, for the fold

        data = client.predict(doc_id, 1, "all heads", 0, 100, "position", api_name="/kept")[7]
        counts = [token["count"] for token in data["window"]["tokens"]]
        assert data["window"]["heads_counted"] == 2 and max(counts) <= 2
        # A layer out of range: one line in the caption, no error on the inputs; the labels give the ranges.
        outputs = client.predict(doc_id, 5, "0", 0, 100, "position", api_name="/kept")
        assert outputs[0] == "**Cannot show this window:** layer must be between 0 and 1, got 5"
        outputs = client.predict(doc_id, 1, "0", 0, 100, "position", api_name="/kept")
        assert outputs[10]["label"] == "Layer (0-1)" and outputs[8]["label"] == "Group (0-1, or all)"
        assert outputs[11]["value"] == 1 and outputs[11]["label"] == "Go to page"  # text: no pages to go to

    # After a restart the conversation is shown again for the document.
    workspace = make_workspace(infinipot_home)
    with running_app(workspace) as url:
        client = Client(url, verbose=False)
        chat = client.predict(doc_id, api_name="/select")[0]
        assert [message_text(m) for m in chat[::2]] == [question, "Who is lazy?", *["Summarize this file"] * 3]

        # Delete asks first; nothing goes until it is confirmed.
        asked = client.predict(doc_id, api_name="/ask_delete")  # the notice; the buttons are not data
        assert asked.startswith("Delete **notes.txt**?") and "cannot be brought back" in asked
        assert library_rows(client)[0] != []
        notice = client.predict(doc_id, api_name="/delete")[0]
        assert notice.startswith("deleted notes.txt")
        assert library_rows(client)[0] == []
        assert not (infinipot_home / "uploads" / doc_id).exists()
        assert not list((infinipot_home / "pots").glob("*.safetensors"))
        with pytest.raises(AppError, match="choose a document first"):
            client.predict(None, "Anything?", 8, api_name="/ask")


def test_buttons_are_enabled_only_when_they_can_act():
    from infinipot.app.web.page.handlers import button_states

    # (Cancel, Resume, Delete, and Ask with the summary buttons)
    assert button_states(None) == (False, False, False, False)  # nothing chosen: nothing to ask either
    for status in ("queued", "counting", "reading"):
        assert button_states({"status": status}) == (True, False, False, False)  # only Cancel
    for status in ("cancelled", "interrupted", "failed"):
        assert button_states({"status": status}) == (False, True, True, False)
    assert button_states({"status": "done"}) == (False, False, True, True)  # read: it can be asked


def test_invalid_settings_refuse_the_upload(tmp_path, infinipot_home, model_dir):
    notes = write_notes_file(tmp_path / "notes.txt", lines=4)
    workspace = make_workspace(infinipot_home)
    with running_app(workspace) as url:
        client = Client(url, verbose=False)
        args = settings_args(model_dir)
        args[SETTING_NAMES.index("keep_size")] = 500
        with pytest.raises(AppError, match="kept size must be between 1 and the pot size"):
            client.predict([handle_file(str(notes))], *args, api_name="/upload")
        args = settings_args(model_dir)
        args[SETTING_NAMES.index("nuc_unit")] = "paragraph"
        with pytest.raises(AppError, match="paragraph is not in the list of choices"):  # the dropdown refuses it
            client.predict([handle_file(str(notes))], *args, api_name="/upload")
        args = settings_args(str(tmp_path / "no-such-model"))
        with pytest.raises(AppError, match="model folder .* does not exist"):
            client.predict([handle_file(str(notes))], *args, api_name="/upload")
        assert library_rows(client)[0] == []


def test_the_first_screen_says_what_to_do(infinipot_home):
    from infinipot.app.web.page.handlers import NO_DOCUMENT_LABEL, Handlers

    workspace = make_workspace(infinipot_home)  # an empty library
    try:
        handlers = Handlers(workspace)
        table, chooser, progress = handlers.library(None)
        assert table == [] and chooser["label"] == NO_DOCUMENT_LABEL
        for shown in (progress, handlers.select(None)[3], handlers.refresh(None, {})[2]):
            assert "Your library is empty. Drop a document above" in shown  # also once the chooser is emptied
        ask_and_summaries = handlers.refresh(None, {})[-3:]
        assert all(update["interactive"] is False for update in ask_and_summaries)  # nothing to ask yet
    finally:
        workspace.close()
