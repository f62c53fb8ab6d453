"""Several people on one app (gradio_client sessions): a conversation is only added to by the session that started
or opened it, also after its document was deleted and the same file uploaded again (which gets the same doc_id);
questions about a deleted document are told so in one line."""

from __future__ import annotations

import contextlib

import pytest
from helpers import make_workspace, message_text, running_app, tiny_settings, wait_until
from tiny_models import save_model_folder
from tiny_models import write_notes as write_notes_file

gradio_client = pytest.importorskip("gradio_client")
from gradio_client import Client, handle_file  # noqa: E402
from gradio_client.exceptions import AppError  # noqa: E402

from infinipot.app.web.page.handlers import SETTING_NAMES  # noqa: E402

pytestmark = pytest.mark.slow  # a Gradio server


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_model_folder(tmp_path_factory.mktemp("tiny-llama"))


def upload_and_wait(client, path, model_dir) -> str:
    settings = tiny_settings(model_dir)
    doc_id = client.predict([handle_file(str(path))], *[settings[name] for name in SETTING_NAMES], api_name="/upload")[
        2
    ]["value"]

    def ready():
        table = client.predict(doc_id, api_name="/library")[0]
        return any(row[1] == "ready" and row[-1] == doc_id for row in table["data"])

    wait_until(ready, timeout=180, every=0.2)
    return doc_id


@contextlib.contextmanager
def notes_app(tmp_path, infinipot_home, model_dir, sessions: int):
    """An app on a fresh workspace with a 10-line notes file uploaded and read by the first of `sessions` clients:
    (workspace, doc_id, clients)."""
    notes = write_notes_file(tmp_path / "notes.txt", lines=10)
    workspace = make_workspace(infinipot_home)
    with running_app(workspace) as url:
        clients = [Client(url, verbose=False) for _ in range(sessions)]
        yield workspace, upload_and_wait(clients[0], notes, model_dir), clients


def asked(client, doc_id, question) -> list[str]:
    """The questions of the conversation the session's chat shows after asking."""
    history = client.predict(doc_id, question, 8, "pot", api_name="/ask")[0]
    return [message_text(m) for m in history if m["role"] == "user"]


def stored_questions(workspace, conversation_id) -> list[str]:
    return [m["content"] for m in workspace.messages(conversation_id) if m["role"] == "user"]


def test_two_sessions_never_share_a_conversation_after_a_delete_and_a_reupload(tmp_path, infinipot_home, model_dir):
    with notes_app(tmp_path, infinipot_home, model_dir, sessions=2) as (workspace, doc_id, (x, z)):
        notes = tmp_path / "notes.txt"
        assert asked(x, doc_id, "X: what does the fox do?") == ["X: what does the fox do?"]
        (first,) = workspace.conversations(doc_id)

        assert x.predict(doc_id, api_name="/delete")[0].startswith("deleted notes.txt")
        assert upload_and_wait(z, notes, model_dir) == doc_id  # same content, same doc_id
        assert asked(z, doc_id, "Z: who is lazy?") == ["Z: who is lazy?"]
        (z_conversation,) = workspace.conversations(doc_id)
        assert z_conversation["id"] > first["id"]  # the deleted conversation's id is not given again

        # X's session still names its deleted conversation: its next question starts a new one, never Z's.
        assert asked(x, doc_id, "X: and the dog?") == ["X: and the dog?"]
        conversations = workspace.conversations(doc_id)
        assert len(conversations) == 2 and conversations[1]["id"] > z_conversation["id"]
        assert stored_questions(workspace, z_conversation["id"]) == ["Z: who is lazy?"]
        assert stored_questions(workspace, conversations[1]["id"]) == ["X: and the dog?"]
        assert asked(z, doc_id, "Z: and then?") == ["Z: who is lazy?", "Z: and then?"]
        assert stored_questions(workspace, conversations[1]["id"]) == ["X: and the dog?"]


def test_a_session_holding_a_reused_id_does_not_write_into_it(tmp_path, infinipot_home, model_dir):
    """Whatever ids exist (a database from before ids were never reused): a conversation is the one the session
    started only while it was started at the same moment."""
    with notes_app(tmp_path, infinipot_home, model_dir, sessions=1) as (workspace, doc_id, (x,)):
        asked(x, doc_id, "X: what does the fox do?")
        (conversation,) = workspace.conversations(doc_id)
        store = workspace.service.store
        with store.db.conn:  # someone else's conversation now carries X's id
            store.db.execute("DELETE FROM conversations WHERE id = ?", [conversation["id"]])
            store.db.execute(
                "INSERT INTO conversations (id, document_id, title, created_at) VALUES (?, ?, 'Z', '2030-01-01')",
                [conversation["id"], doc_id],
            )
        assert asked(x, doc_id, "X: and the dog?") == ["X: and the dog?"]
        assert stored_questions(workspace, conversation["id"]) == []
        assert stored_questions(workspace, workspace.conversations(doc_id)[-1]["id"]) == ["X: and the dog?"]


def test_questions_about_a_deleted_document_say_it_was_deleted(tmp_path, infinipot_home, model_dir):
    with notes_app(tmp_path, infinipot_home, model_dir, sessions=2) as (workspace, doc_id, (x, z)):
        asked(z, doc_id, "What does the fox do?")
        x.predict(doc_id, api_name="/delete")
        with pytest.raises(AppError, match=r"^notes\.txt was deleted$"):
            z.predict(doc_id, "And the dog?", 8, "pot", api_name="/ask")
        with pytest.raises(AppError, match=r"^notes\.txt was deleted$"):
            z.predict(doc_id, 12, api_name="/summarize")
