"""Across documents in a real browser (headless Chromium): with All documents chosen, a question two documents
answer names each with its sentence, a source opened from it says which document the view shows, and Ask across
documents is disabled until two documents are picked beside it."""

from __future__ import annotations

import re

import pytest
from browser_page import By, normalized, open_page, open_tab, visible_text, wait_for
from helpers import make_workspace, running_app
from test_library_named import AVIARY, QUESTION, read_aviary_library

pytestmark = pytest.mark.slow  # a browser and a server


def pick(browser, field: str, text: str) -> None:
    """Choose the option holding `text` in a dropdown."""
    browser.find_element(By.CSS_SELECTOR, f"{field} input").click()
    option = wait_for(
        lambda: next((o for o in browser.find_elements(By.CSS_SELECTOR, "[role=option]") if text in o.text), None),
        f"{text} in {field}",
        30,
    )
    option.click()


def test_an_answer_from_all_documents_names_each_document_and_its_sources_say_theirs(
    browser, tmp_path, tiny_model_dir, infinipot_home, monkeypatch
):
    workspace = make_workspace(infinipot_home)
    read_aviary_library(tmp_path / "library", tiny_model_dir, infinipot_home, monkeypatch, workspace.service)
    with running_app(workspace) as url:
        open_page(browser, url)
        open_tab(browser, "Chat")
        pick(browser, "#ip-document", "All documents (3 ready)")
        across = browser.find_element(By.CSS_SELECTOR, "#ip-ask-across")
        wait_for(lambda: not across.is_enabled(), "Ask across documents disabled with nothing picked", 30)

        browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys(QUESTION)
        browser.find_element(By.CSS_SELECTOR, "#ip-ask").click()
        # Each document that answers is named, with its place, over its own sentence.
        chat = wait_for(
            lambda: (
                (t := normalized(visible_text(browser, "#ip-chat")))
                and "walrus.txt, line" in t
                and "zebra.txt, line" in t
                and t
            ),
            "the answer naming both documents",
            180,
        )
        for name in ("walrus.txt", "zebra.txt"):
            assert re.search(rf"{re.escape(name)}, line \d+ “{re.escape(AVIARY)}”", chat), chat
        assert "otter.txt" not in chat

        # A source opened from it: the view says which document it shows.
        source = wait_for(
            lambda: next(
                (b for b in browser.find_elements(By.CSS_SELECTOR, "#ip-chat button") if "walrus.txt, line" in b.text),
                None,
            ),
            "walrus.txt's source button",
            30,
        )
        source.click()
        caption = wait_for(
            lambda: (t := visible_text(browser, "body")) and re.search(r"walrus\.txt · Tokens \d", t) and t,
            "the kept view naming walrus.txt",
            120,
        )
        assert "zebra.txt · Tokens" not in caption

        # Ask across documents answers only with two documents picked beside it.
        open_tab(browser, "Chat")
        pick(browser, "#ip-across-docs", "zebra.txt")
        assert not browser.find_element(By.CSS_SELECTOR, "#ip-ask-across").is_enabled()
        pick(browser, "#ip-across-docs", "walrus.txt")
        wait_for(
            lambda: browser.find_element(By.CSS_SELECTOR, "#ip-ask-across").is_enabled(),
            "Ask across documents enabled with two picked",
            30,
        )
