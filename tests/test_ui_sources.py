"""Sources in the chat: every answer shows the places it cites with the text it cites (quoted, and as hover text),
and clicking one under the latest answer opens "What the model kept" at that place (the handlers called directly,
on a tiny model that attends to a needle)."""

from __future__ import annotations

import json
import re

import gradio as gr
import pytest
from helpers import (
    FILLER,
    NEEDLE_TOKEN,
    answer_args,
    filler_pages,
    make_workspace,
    plant_needle,
    tiny_settings,
    wait_until,
    write_pdf,
)
from tiny_models import save_attending_model_folder

from infinipot.app.ask.quoting import arranged_citations, quoted_part, shared_words
from infinipot.app.web.page import sources
from infinipot.app.web.page.handlers import KEPT_TAB, Handlers
from infinipot.core.answer.answer_sentences import split_sentences

NEEDLE_PAGE = 3


def test_chat_message_shows_sources_and_offers_them_as_options():
    citations = [
        {"label": "page 12", "score": 0.414, "token": 930, "page": 12, "line": None},
        {"label": "page 3", "score": 0.12, "token": 201, "page": 3, "line": None},
    ]
    message = sources.chat_message("assistant", "The key is 12345.", citations)
    assert message["content"] == (
        "The key is 12345.\n\n*Sources: page 12 (41%) · page 3 (12%) (%: the share of the answer's attention each "
        "place drew)*"
    )
    assert [option["label"] for option in message["options"]] == ["page 12 (41%)", "page 3 (12%)"]
    # A source's button names its place's first token and the sentence to mark there (none without text).
    assert [sources.source_reference(option["value"]) for option in message["options"]] == [(930, ""), (201, "")]
    assert sources.chat_message("assistant", "No sources.", []) == {"role": "assistant", "content": "No sources."}
    assert sources.chat_message("user", "A question", citations) == {"role": "user", "content": "A question"}
    assert sources.source_token(" 930 ") == 930  # as an answer stored before the sentence was named sends it
    for bad in ("page 3", "-4", None, '{"quote": "no token"}', '{"token": -2}'):
        with pytest.raises(ValueError, match="not a source reference"):
            sources.source_token(bad)


def test_a_place_cited_twice_is_listed_once_with_its_share_in_all():
    citations = [
        {"label": "page 27", "score": 0.3, "token": 900, "snippet": "The license."},
        {"label": "page 2", "score": 0.2, "token": 40, "snippet": "Version 1.3."},
        {"label": "page 27", "score": 0.1, "token": 950, "snippet": "Another passage of page 27."},
    ]
    message = sources.chat_message("assistant", "The GNU Free Documentation License.", citations)
    assert [option["label"] for option in message["options"]] == ["page 27 (40%)", "page 2 (20%)"]
    assert message["content"].count("page 27 (40%)") == 1


def test_sources_are_listed_by_share_and_the_shares_note_comes_only_with_a_share():
    # As arranged_citations gives them: the answer's own place first, then the others (issue 66 read it unsorted).
    citations = [
        {"label": "page 2", "score": 0.02, "token": 40, "snippet": "The license is the GPL."},
        {"label": "page 27", "score": 0.004, "token": 950, "snippet": "Copying conditions."},
        {"label": "page 34", "score": 0.04, "token": 1200, "snippet": "Version 2 of the license."},
        {"label": "page 30", "score": 0.012, "token": 1000, "snippet": "Warranty."},
    ]
    message = sources.chat_message("assistant", "It is under the GPL.", citations)
    line = re.sub(r"<[^>]+>", "", message["content"].split("\n\n")[1])
    assert line == (
        "*Sources: page 34 (4%) · page 2 (2%) · page 30 (1%) · page 27 (%: the share of the answer's attention each "
        "place drew)*"
    )
    assert [option["label"] for option in message["options"]] == [
        "page 34 (4%)",
        "page 2 (2%)",
        "page 30 (1%)",
        "page 27",
    ]
    assert json.loads(message["options"][0]["value"])["token"] == 1200  # each button opens its own place
    assert "> **page 2** “The license is the GPL.”" in message["content"]  # the quote is still the answer's own place
    # No share shown (each under 1%): no note about shares.
    faint = [{**citation, "score": 0.001} for citation in citations]
    assert sources.sources_line(faint) == "Sources: " + " · ".join(
        f'<span title="{c["snippet"]}">{c["label"]}</span>' for c in citations
    )
    assert "%" not in sources.chat_message("assistant", "It is under the GPL.", faint)["content"]


def test_the_sentence_a_source_quotes_is_found_among_the_tokens_whatever_the_spaces():
    from infinipot.app.web.kept_view import find_quote

    pieces = ["The", " ferry", " leaves", "\n", "every", " day", " at", " 7", ":", "40", ".", " Then", " rain", "."]
    assert find_quote(pieces, "ferry leaves every day at 7:40.") == (1, 11)
    assert find_quote(pieces, "…every day at 7:40. Then") == (4, 12)  # a cut quote: its ellipsis ignored
    assert find_quote(pieces, "A bus.") is None and find_quote(pieces, "  ") is None
    # A quote that goes on differently (a PDF's hyphenation): found by its first 60 characters.
    words = [f" word{i}" for i in range(30)]
    assert find_quote(words, "".join(words[2:20]) + " hyphen-ated") == (2, 14)  # into word13


def test_cited_text_is_quoted_under_the_answer_and_is_the_hover_text_of_its_source():
    long_text = "The storeroom safe opens with 4-7-1-9 <b>now</b>, said *Ada* [1]. " + "More words follow here. " * 20
    citations = [
        {"label": "line 12", "score": 0.5, "token": 930, "snippet": long_text},
        {"label": "line 3", "score": 0.3, "token": 201, "snippet": "A short   line."},
        {"label": "line 40", "score": 0.1, "token": 999, "snippet": "Not quoted: only the best two are."},
        {"label": "line 7", "score": 0.1, "token": 77},  # stored before citations carried their text
    ]
    content = sources.chat_message("assistant", "It is 4-7-1-9.", citations)["content"]
    answer, sources_line, quotes = content.split("\n\n")
    assert answer == "It is 4-7-1-9."
    assert sources_line.startswith('*Sources: <span title="The storeroom safe opens with 4-7-1-9 &lt;b&gt;now')
    assert '<span title="A short line.">line 3 (30%)</span>' in sources_line
    assert sources_line.endswith(" · line 7 (10%) (%: the share of the answer's attention each place drew)*")
    first, gap, second = quotes.split("\n")
    assert first.startswith(
        "> **line 12** “The storeroom safe opens with 4-7-1-9 &lt;b&gt;now&lt;/b&gt;, said \\*Ada\\* \\[1\\]."
    )
    assert first.endswith("…”") and len(first) < 420  # a long passage is cut at a word
    assert gap == ">" and second == "> **line 3** “A short line.”"
    assert "Not quoted" not in quotes and "Not quoted" in sources_line  # the third source: hover text only


@pytest.fixture
def needle_pdf(tmp_path):
    model_dir = save_attending_model_folder(tmp_path / "attending-llama", NEEDLE_TOKEN)
    pages = plant_needle(filler_pages(FILLER, pages=5, words_per_page=30), NEEDLE_PAGE, "The passkey is 12345.")
    return write_pdf(tmp_path / "needle.pdf", pages), model_dir


def read_needle(infinipot_home, needle_pdf, pot_size: int = 128):
    pdf, model_dir = needle_pdf
    workspace = make_workspace(infinipot_home)
    doc_id = workspace.add_files([str(pdf)], tiny_settings(model_dir, pot_size=pot_size))[0]["doc_id"]
    wait_until(lambda: workspace.library()[0]["ready"], timeout=180)
    return workspace, doc_id


@pytest.fixture
def needle_workspace(infinipot_home, needle_pdf):
    workspace, doc_id = read_needle(infinipot_home, needle_pdf)
    yield workspace, doc_id
    workspace.close()


def test_clicking_a_source_opens_the_kept_view_at_the_cited_page(needle_workspace):
    workspace, doc_id = needle_workspace
    handlers = Handlers(workspace)
    chat = {"doc_id": doc_id, "conversation_id": None}
    *_, last = handlers.ask_api(
        doc_id, "What is the passkey?", chat, None, *answer_args(max_new_tokens=4, answer_from="pot")
    )
    history = last[0]
    answer = history[-1]
    assert answer["role"] == "assistant" and answer["content"].count("*Sources: ") == 1
    assert f'<span title="The passkey is 12345.">page {NEEDLE_PAGE} (' in answer["content"]
    option = answer["options"][0]
    assert option["label"].startswith(f"page {NEEDLE_PAGE} (")
    # The answer's attention pointed at the needle: the sentence around it is quoted under the answer.
    assert f"> **page {NEEDLE_PAGE}** “" in answer["content"] and "The passkey is 12345." in answer["content"]

    value = {"index": 0, "value": option["value"]}
    start, tabs, quoted, viewed = handlers.open_source(gr.SelectData(None, value), doc_id)
    assert viewed is None  # one document chosen: its own view
    assert tabs["selected"] == KEPT_TAB
    location_map = workspace.service.location_map(doc_id)
    # The view opens on the cited page, a few tokens before the quoted sentence, which it marks.
    assert location_map.page_of(start) == NEEDLE_PAGE and start <= quoted[0] < quoted[1]
    caption, _, tokens = handlers.show_kept(doc_id, 0, "0", start, 200, "position", quoted)[:3]
    assert f"starts at page {NEEDLE_PAGE}, line " in caption and "The underlined sentence is the one" in caption
    assert re.search(r"the model (still holds (all )?[\d,]+ of (its|these [\d,]+) words|no longer holds)", caption)
    marked = re.findall(r'<span class="ip-tok [^"]*ip-quoted"[^>]*>([^<]*)</span>', tokens)
    assert "The passkey is 12345." in "".join(marked)
    # Opened at the page's first token when the sentence is not there (an answer stored before sentences were
    # named sends the bare token).
    start, _, quoted, _ = handlers.open_source(gr.SelectData(None, {"index": 0, "value": str(start)}), doc_id)
    assert quoted is None and "underlined" not in handlers.show_kept(doc_id, 0, "0", start, 200, "position")[0]

    # Shown again with the conversation (from the stored message), after choosing the document anew.
    shown = handlers.select(doc_id)[0]
    assert shown[-1] == answer

    with pytest.raises(gr.Error, match="outside the document"):
        handlers.open_source(gr.SelectData(None, {"index": 0, "value": "999999"}), doc_id)


def test_evidence_answers_cite_and_quote_the_passage_they_read(infinipot_home, needle_pdf):
    # A pot of 256 entries leaves room beside |C| = 48 for a passage: the attending model's question points at
    # the needle, whose sentence is read into the answer's context and cited with its text.
    workspace, doc_id = read_needle(infinipot_home, needle_pdf, pot_size=256)
    try:
        handlers = Handlers(workspace)
        chat = {"doc_id": doc_id, "conversation_id": None}
        values = answer_args(max_new_tokens=4, answer_from="evidence", evidence_tokens=64)
        *_, (history, _, chat, _) = handlers.ask_api(doc_id, "What is the passkey?", chat, None, *values)
        answer = history[-1]
        _, record = workspace.service.messages(chat["conversation_id"])
        assert record["meta"]["answer_from"] == "evidence"
        citations = record["meta"]["citations"]
        assert citations and citations[0]["label"] == f"page {NEEDLE_PAGE}"
        assert "The passkey is 12345." in citations[0]["snippet"]
        assert f'<span title="{citations[0]["snippet"]}">page {NEEDLE_PAGE} (' in answer["content"]
        # The first quote is a whole sentence of the passage, the one the answer was checked against (the random
        # model's judge picks any), shown whole under the answer.
        quote = citations[0]["quote"]
        assert quote in split_sentences(citations[0]["snippet"])
        # Stated, the sentence is the answer, shown as the quote with its page; not found, the answer says so and
        # quotes it. Either way it is shown once (and in the hover text of the Sources line).
        content = re.split(r"\*(?:Sources|Closest passages):", answer["content"])[0]
        assert content.count(quote) == 1
        if record["meta"]["answerable"]:
            assert content.startswith(f"> **page {NEEDLE_PAGE}** “{quote}”")
        elif record["meta"]["answer_state"] == "closest":
            assert content.startswith(f"**The passage that seems to answer:** “{quote}”")
            assert "Closest passages: " in answer["content"]
        else:
            assert content.startswith("**No direct answer found in the document.** The closest passage:")
            assert "Closest passages: " in content and f"> **page {NEEDLE_PAGE}**" not in content
    finally:
        workspace.close()


def test_a_source_is_quoted_from_the_sentence_that_shares_the_most_words_with_the_answer():
    snippet = (
        "The skipper, Angus Dunmore, repaid us by mending the leaking roof of the oil store. He told us the fish "
        "had moved. The combination of the storeroom safe, where the keepers keep the logbooks, is 7419. Then we slept."
    )
    answer = "The combination of the storeroom safe is 7419."
    assert quoted_part(snippet, answer).startswith("…The combination of the storeroom safe, where")
    assert quoted_part(snippet, "") == " ".join(snippet.split())  # nothing to match: from the start
    assert quoted_part(snippet, "The text above is the answer.") == " ".join(snippet.split())  # only common words
    citations = [{"label": "line 396", "page": None, "line": 396, "token": 10, "score": 0.06, "snippet": snippet}]
    content = sources.chat_message("assistant", answer, citations)["content"]
    assert "“…The combination of the storeroom safe, where the keepers keep the logbooks, is 7419." in content
    assert "Angus" not in content.split("\n\n")[-1]  # the quote, not the hover text of the Sources line


def test_the_sources_quoted_are_those_closest_to_the_answer_whatever_their_rank():
    answer = "The answer to the question is: Mount Aster is 1,206 meters high."
    citations = [
        {"label": "line 684", "score": 0.02, "token": 1, "snippet": "Mount Aster. The grass was short and springy."},
        {"label": "line 703", "score": 0.0, "token": 2, "snippet": "Light rain fell all afternoon. It was cold."},
        {
            "label": "line 741",
            "score": 0.0,
            "token": 3,
            "snippet": "Fenn's barometer agreed that the mountain was "
            "1,206 metres high, a little lower than the charts claimed. They ate.",
        },
    ]
    assert [sources_shared(c, answer) for c in citations] == [2, 0, 3]
    quotes = sources.chat_message("assistant", answer, citations)["content"].split("\n\n")[-1]
    first, gap, second = quotes.split("\n")
    assert first.startswith("> **line 741** “Fenn's barometer agreed that the mountain was 1,206 metres high")
    assert second.startswith("> **line 684** “Mount Aster.")  # ranked first by the pot, shares two words
    assert "Light rain" not in quotes
    # an answer sharing nothing with any source: the citations' own order
    quoted = sources.quotes(citations, "Yes.")
    assert quoted.index("line 684") < quoted.index("line 703") and "line 741" not in quoted


def sources_shared(citation: dict, answer: str) -> int:
    return shared_words(citation["snippet"], answer)


def test_an_answer_that_is_a_sentence_of_the_document_is_shown_as_its_places_quote():
    sentence = "Permission is granted under the GNU Free Documentation License, Version 1.3."
    citations = [
        {"label": "page 27", "score": 0.2, "token": 900, "snippet": "You accept the license if you copy it."},
        {"label": "page 2", "score": 0.1, "token": 40, "snippet": f"Some title. {sentence} A copy follows."},
    ]
    arranged = arranged_citations(citations, sentence)
    answer, line = sources.chat_message("assistant", sentence, arranged)["content"].split("\n\n")
    assert answer == f"> **page 2** “{sentence}”"  # not a quote of page 27 under it, as if that were its source
    assert line.startswith("*Sources:") and "page 27" in line
    # An answer in other words keeps its quotes; so does one that found nothing direct.
    assert "> **page 2**" in sources.chat_message("assistant", "It is version 1.3.", arranged)["content"]
    not_found = f"No direct answer found in the document. The closest passage: “{sentence}”"
    shown = sources.chat_message("assistant", not_found, arranged, answerable=False)["content"]
    assert shown.startswith("**No direct answer found in the document.**")


def test_a_passage_that_seems_to_answer_is_shown_as_such_with_its_closest_passages():
    from infinipot.core.answer.grounded_answer import SEEMS_TO_ANSWER

    sentence = "Usage: asn1Decoding [OPTION] DEFINITIONS ENCODED ASN1TYPE. Decodes DER data in ENCODED file."
    citations = [{"label": "page 10", "score": 0.3, "token": 700, "snippet": sentence}]
    closest = f"{SEEMS_TO_ANSWER} “{sentence}”"
    shown = sources.chat_message("assistant", closest, arranged_citations(citations, sentence), answerable=False)
    answer, line, *_ = shown["content"].split("\n\n")
    assert answer == f"**{SEEMS_TO_ANSWER}** “{sentence}”"  # only the words before the quote in bold
    assert line.startswith("*Closest passages:") and "page 10" in line


def test_a_summary_shows_its_opening_and_folds_its_outline_one_click_away():
    summary = "This manual is for GNU Libtasn1.\n\nOutline:\n- 1 Introduction (page 4): It parses.\n- 2 Utilities (p 8)"
    shown = sources.folded_summary(summary)
    opening, _, fold = shown.partition("\n\n")
    assert opening == "This manual is for GNU Libtasn1."
    assert fold.startswith("<details><summary>Outline: 2 parts</summary>") and fold.endswith("</details>")
    assert "- 1 Introduction (page 4): It parses." in fold and "Outline:\n" not in fold
    log = "A log of 9 lines.\n\nErrors and warnings:\n- ERROR x\n\nIncidents in time order:\n- 10:00: x"
    assert "<summary>Errors and warnings · Incidents in time order</summary>" in sources.folded_summary(log)
    assert sources.folded_summary("One paragraph only.") == "One paragraph only."
    parts = [{"title": "1 Introduction", "page": 4, "token": 7, "points": ["It parses."]}]
    message = sources.outline_message(summary, parts, stopped=True)
    assert message["content"].startswith(opening) and message["content"].endswith("</details> *(stopped)*")
    assert [option["label"] for option in message["options"]] == ["1 Introduction · page 4"]
