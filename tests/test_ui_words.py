"""Plain words on the page (issue 33, item 2): the Library, Chat and Settings tabs speak of documents, pages,
reading and memory; the paper's terms stay in the Settings tab's closed Advanced part, where each is explained."""

from __future__ import annotations

import re

import pytest
from browser_page import By, open_page, open_tab, replace_value, visible_text, wait_for
from helpers import make_workspace, running_app, tiny_settings, wait_until
from tiny_models import save_model_folder, write_notes

pytestmark = pytest.mark.slow  # a browser and a server

# The paper's and the implementation's terms, as a reader would spot them.
TERMS = {
    "pot": re.compile(r"\bpots?\b", re.IGNORECASE),
    "CaP": re.compile(r"\bCaP\b"),
    "NuC": re.compile(r"\bNuC\b"),
    "KV head": re.compile(r"\bKV heads?\b", re.IGNORECASE),
    "|M|": re.compile(r"\|M\|"),
    "|C|": re.compile(r"\|C\|"),
}


# What "What the model kept" said before issue 66, besides the terms above: it keeps them in its fold.
KEPT_VIEW_TERMS = {
    **TERMS,
    **{
        term: re.compile(rf"\b{term}\b", re.IGNORECASE)
        for term in ("attention views?", "chat template", "catalyst", "novelty", "uncompressed", "KV cache", "sinks?")
    },
    "RSS": re.compile(r"\bRSS\b"),
}


def research_words(text: str, terms: dict[str, re.Pattern] = TERMS) -> dict[str, list[str]]:
    """Each term found, with the text around it (so a failure says where)."""
    found = {}
    for term, pattern in terms.items():
        places = [text[max(0, m.start() - 40) : m.end() + 40] for m in pattern.finditer(text)]
        if places:
            found[term] = places
    return found


def tab_text(browser, name: str) -> str:
    """What a person sees of the page with the tab open (the hidden tabs and closed parts are not shown)."""
    open_tab(browser, name)
    return wait_for(lambda: (t := browser.find_element(By.TAG_NAME, "body").text) and t, f"the {name} tab", 30)


def test_library_chat_and_settings_speak_plain_words(browser, tmp_path, infinipot_home):
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    workspace = make_workspace(infinipot_home)
    (added,) = workspace.add_files([str(write_notes(tmp_path / "notes.txt", lines=12))], tiny_settings(model_dir))
    wait_until(lambda: workspace.ready(added["doc_id"]), timeout=120, what="the read", ignore=(ValueError,))
    with running_app(workspace) as url:
        open_page(browser, url)
        wait_for(lambda: "ready" in visible_text(browser, "#ip-progress"), "the document chosen", 60)
        library = tab_text(browser, "Library")
        assert "notes.txt" in library and "memory" in library.lower()
        assert not research_words(library), research_words(library)

        settings = tab_text(browser, "Settings")
        replace_value(browser, "#ip-answer-length input[type='number']", "8")
        wait_for(lambda: "at most 8 tokens" in visible_text(browser, "#ip-answers-notice"), "the answer length", 60)
        settings = tab_text(browser, "Settings")
        assert "Advanced" in settings and "Memory size" in settings
        assert not research_words(settings), research_words(settings)

        open_tab(browser, "Chat")
        browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys("What does the fox do?")
        browser.find_element(By.CSS_SELECTOR, "#ip-ask").click()
        wait_for(lambda: "Sources:" in visible_text(browser, "#ip-chat"), "the answer and its sources", 120)
        chat = tab_text(browser, "Chat")
        assert not research_words(chat), research_words(chat)

        # The terms are kept, each explained, in the closed Advanced part of Settings.
        open_tab(browser, "Settings")
        browser.find_element(By.CSS_SELECTOR, "#ip-advanced button, #ip-advanced .label-wrap").click()
        advanced = wait_for(lambda: (t := visible_text(browser, "#ip-advanced")) and "NuC" in t and t, "Advanced", 30)
        assert {"pot", "CaP", "NuC", "KV head", "|M|", "|C|"} <= set(research_words(advanced))


def test_the_kept_view_says_first_in_plain_words_what_the_model_remembers(browser, tmp_path, infinipot_home):
    """Issue 66: what the model remembers of the document, what that memory takes against keeping everything and how
    the app's memory went while it read, in plain words above the text; the paper's terms only in the closed fold
    "In the paper's terms"."""
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    workspace = make_workspace(infinipot_home)
    short = write_notes(tmp_path / "short.txt", lines=2, tag="-short")
    (whole,) = workspace.add_files([str(short)], tiny_settings(model_dir))
    (added,) = workspace.add_files([str(write_notes(tmp_path / "notes.txt", lines=12))], tiny_settings(model_dir))
    wait_until(lambda: workspace.ready(added["doc_id"]), timeout=120, what="the read", ignore=(ValueError,))
    numbers = workspace.kept_summary(added["doc_id"])
    assert not numbers["whole"]  # a memory of 128 tokens: the notes do not fit, so some text was forgotten
    # A document that fits: the memory holds the whole of it, never more tokens than it has (the chat template's
    # opening is not the document's).
    fits = workspace.kept_summary(whole["doc_id"])
    assert fits["whole"] and fits["held"] == fits["total"] and fits["sinks"] > 0
    with running_app(workspace) as url:
        open_page(browser, url)
        wait_for(lambda: "ready" in visible_text(browser, "#ip-progress"), "the document chosen", 60)
        open_tab(browser, "What the model kept")
        summary = wait_for(
            lambda: (t := visible_text(browser, "#ip-kept-summary")) and "remembers" in t and t, "the summary", 60
        )
        wait_for(lambda: visible_text(browser, "#ip-tokens").strip(), "the text", 60)
        # What the model remembers, of how much, and what that memory takes against keeping everything.
        assert f"read all {numbers['total']:,} tokens" in summary and f"remembers {numbers['held']:,}" in summary
        assert "instead of" in summary and "keeping everything" in summary
        assert "whole memory" in summary  # how the app's memory went while it read
        # ... first: above the window's caption, its legend and its text.
        top = lambda css: browser.find_element(By.CSS_SELECTOR, css).location["y"]  # noqa: E731
        assert top("#ip-kept-summary") < top(".ip-legend") < top("#ip-tokens")
        kept = tab_text(browser, "What the model kept")
        assert "The model remembers only the coloured text" in kept
        assert not research_words(kept, KEPT_VIEW_TERMS), research_words(kept, KEPT_VIEW_TERMS)

        # The paper's terms, each with this document's numbers, in the fold.
        fold = browser.find_element(By.CSS_SELECTOR, "#ip-paper-terms")
        shown = [line.strip() for line in fold.text.splitlines() if line.strip() not in ("", "▼")]  # ▼: its icon
        assert shown == ["In the paper's terms"]  # closed: its title alone
        fold.find_element(By.CSS_SELECTOR, "button, .label-wrap").click()
        terms = wait_for(lambda: (t := visible_text(browser, "#ip-paper-terms")) and "NuC" in t and t, "the fold", 30)
        assert {"pot", "CaP", "NuC", "KV head", "|M|", "|C|"} <= set(research_words(terms))
        assert {"chat template", "catalyst", "uncompressed", "KV cache", "RSS"} <= set(
            research_words(terms, KEPT_VIEW_TERMS)
        )
        assert f"|M| = {numbers['pot_size']:,}" in terms and f"|C| = {numbers['keep_size']:,}" in terms
