"""Load check (not timed): five clients ask at once on one stored pot; every answer is the one a single client
gets for that question (greedy decoding is deterministic), and every session keeps only its own messages."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from helpers import (
    QUESTIONS,
    answer_text,
    make_workspace,
    running_app,
    tiny_settings,
)
from tiny_models import save_model_folder, write_notes

gradio_client = pytest.importorskip("gradio_client")
from gradio_client import Client  # noqa: E402

pytestmark = pytest.mark.slow  # a Gradio server

MAX_NEW_TOKENS = 10


def test_five_concurrent_clients_each_get_their_own_answers(tmp_path, infinipot_home):
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    workspace = make_workspace(infinipot_home)
    workspace.add_files([str(write_notes(tmp_path / "notes.txt", lines=10))], tiny_settings(model_dir))
    assert workspace.reads.wait_idle(180)
    doc_id = workspace.library()[0]["doc_id"]

    with running_app(workspace) as url:
        single = Client(url, verbose=False)
        reference = {}
        for question in QUESTIONS:
            single.predict(doc_id, api_name="/new_chat")
            history = single.predict(doc_id, question, MAX_NEW_TOKENS, api_name="/ask")[0]
            reference[question] = answer_text(history[-1])
        assert len(set(reference.values())) > 1  # the questions are told apart

        def session(index: int) -> tuple[list[str], list[str]]:
            client = Client(url, verbose=False)
            client.predict(doc_id, api_name="/select")
            client.predict(doc_id, api_name="/new_chat")
            asked = [QUESTIONS[index], QUESTIONS[(index + 2) % len(QUESTIONS)]]
            jobs = []
            for question in asked:
                job = client.submit(doc_id, question, MAX_NEW_TOKENS, api_name="/ask")
                jobs.append(job.result()[0])
            return asked, [answer_text(m) for m in jobs[-1]]

        with ThreadPoolExecutor(max_workers=5) as pool:
            results = list(pool.map(session, range(5)))

    for asked, shown in results:
        first, second = asked
        assert shown == [first, reference[first], second, reference[second]]

    stored = [workspace.messages(c["id"]) for c in workspace.conversations(doc_id)]
    sessions = [[m["content"] for m in messages] for messages in stored if len(messages) == 4]
    assert sorted(sessions) == sorted(shown for _, shown in results)  # nothing lost, nothing mixed
    assert len(stored) == len(QUESTIONS) + 5
