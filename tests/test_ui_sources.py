"""Sources in the chat: every answer shows the places it cites, and clicking one under the latest answer opens
"What the model kept" at that place (the handlers called directly, on a tiny model that attends to a needle)."""

from __future__ import annotations

import gradio as gr
import pytest
from helpers import (
    FILLER,
    NEEDLE_TOKEN,
    filler_pages,
    make_workspace,
    plant_needle,
    tiny_settings,
    wait_until,
    write_pdf,
)
from tiny_models import save_attending_model_folder

from infinipot.app.web.page import sources
from infinipot.app.web.page.handlers import KEPT_TAB, Handlers

NEEDLE_PAGE = 3


def test_chat_message_shows_sources_and_offers_them_as_options():
    citations = [
        {"label": "page 12", "score": 0.414, "token": 930, "page": 12, "line": None},
        {"label": "page 3", "score": 0.12, "token": 201, "page": 3, "line": None},
    ]
    message = sources.chat_message("assistant", "The key is 12345.", citations)
    assert message["content"] == "The key is 12345.\n\n*Sources: page 12 (41%) · page 3 (12%)*"
    assert message["options"] == [{"value": "930", "label": "page 12 (41%)"}, {"value": "201", "label": "page 3 (12%)"}]
    assert sources.chat_message("assistant", "No sources.", []) == {"role": "assistant", "content": "No sources."}
    assert sources.chat_message("user", "A question", citations) == {"role": "user", "content": "A question"}
    assert sources.source_token(" 930 ") == 930
    for bad in ("page 3", "-4", None):
        with pytest.raises(ValueError, match="not a source reference"):
            sources.source_token(bad)


@pytest.fixture
def needle_workspace(tmp_path, infinipot_home):
    model_dir = save_attending_model_folder(tmp_path / "attending-llama", NEEDLE_TOKEN)
    pages = plant_needle(filler_pages(FILLER, pages=5, words_per_page=30), NEEDLE_PAGE, "The passkey is 12345.")
    pdf = write_pdf(tmp_path / "needle.pdf", pages)
    workspace = make_workspace(infinipot_home)
    doc_id = workspace.add_files([str(pdf)], tiny_settings(model_dir))[0]["doc_id"]
    wait_until(lambda: workspace.library()[0]["ready"], timeout=180)
    yield workspace, doc_id
    workspace.close()


def test_clicking_a_source_opens_the_kept_view_at_the_cited_page(needle_workspace):
    workspace, doc_id = needle_workspace
    handlers = Handlers(workspace)
    *_, last = handlers.ask(doc_id, "What is the passkey?", 4, {"doc_id": doc_id, "conversation_id": None})
    history = last[0]
    answer = history[-1]
    assert answer["role"] == "assistant" and f"Sources: page {NEEDLE_PAGE} (" in answer["content"]
    option = answer["options"][0]
    assert option["label"].startswith(f"page {NEEDLE_PAGE} (")

    start, tabs = handlers.open_source(gr.SelectData(None, {"index": 0, "value": option["value"]}), doc_id)
    assert tabs["selected"] == KEPT_TAB
    location_map = workspace.service.location_map(doc_id)
    assert location_map.page_of(start) == NEEDLE_PAGE and location_map.page_of(start - 1) == NEEDLE_PAGE - 1
    caption = handlers.show_kept(doc_id, 0, "0", start, 200, "position")[0]
    assert f"starts at page {NEEDLE_PAGE}, line 1" in caption

    # Shown again with the conversation (from the stored message), after choosing the document anew.
    shown = handlers.select(doc_id)[0]
    assert shown[-1] == answer

    with pytest.raises(gr.Error, match="outside the document"):
        handlers.open_source(gr.SelectData(None, {"index": 0, "value": "999999"}), doc_id)
