"""Answers drawn from the passages: the vocabulary an answer may write, the words it did not take from them, and
the quote shown under it (the whole sentence it came from, one citation per place)."""

from __future__ import annotations

import torch
from tiny_models import tiny_loaded

from infinipot.app.ask.quoting import answer_sentence, answer_words, arranged_citations, marked_words
from infinipot.app.web.page.sources import chat_message, source_label
from infinipot.core.answer.grounding import allowed_tokens, answer_vocabulary, content_words, unsupported_words
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.prompts import encode
from infinipot.core.words import NO_KEY


def test_the_answer_may_write_the_passages_words_function_words_and_punctuation_only():
    keys = torch.tensor([NO_KEY, 0, 1, 2, 2, 3])  # entry 0 is punctuation; 3 and 4 are one word in two cases
    function_words = torch.tensor([False, False, False, False, False, True])
    allowed = allowed_tokens(keys, function_words, [[3], [1, 99]])  # 99: past the vocabulary, ignored
    assert allowed.tolist() == [True, True, False, True, True, True]


def test_a_vocabulary_limited_answer_writes_nothing_outside_it():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=64))
    passage = encode(engine.tokenizer, "the fox jumps over the dog")
    allowed = answer_vocabulary(engine, [passage])
    pot = engine.read([passage])
    free, limited = AnswerStats(), AnswerStats()
    "".join(engine.answer(pot, "what does the fox do", 12, free, allowed_tokens=None))
    "".join(engine.answer(pot, "what does the fox do", 12, limited, allowed_tokens=allowed))
    # The random model writes words the passage never uses; limited, it writes only allowed entries.
    assert any(not bool(allowed[t]) for t in free.token_ids)
    assert limited.token_ids and all(bool(allowed[t]) for t in limited.token_ids)


def test_unsupported_words_are_the_content_words_no_source_holds():
    sources = ["Distributed under the GNU Free Documentation License, Version 1.3.", "Numbers are big-endian."]
    assert unsupported_words("It is licensed under the GNU General Public License (GPL).", sources) == [
        "General",
        "Public",
        "GPL",
    ]
    assert unsupported_words("The licenses: GNU Free Documentation License 1.3, big-endian numbers.", sources) == []
    assert content_words("What is the name of libtasn1.h?") == ["name", "libtasn1.h"]


def test_the_quote_is_the_whole_sentence_the_answer_came_from():
    snippet = "Above the village stood the lighthouse. There were one hundred and twelve steps to the lamp. It was old."
    quote, shared = answer_sentence(snippet, "The lighthouse had one hundred and twelve steps.", "How many steps?")
    assert quote == "There were one hundred and twelve steps to the lamp." and shared == 4
    # No word in common with the answer: the question's words choose.
    assert answer_sentence(snippet, "I do not know.", "How old was it?")[0] == "It was old."
    assert marked_words(quote, "one hundred and twelve steps") == ["one", "hundred", "twelve", "steps"]


def test_an_answer_found_word_for_word_is_quoted_as_it_is():
    first = "2024-11-14T13:30:40.411Z ERROR [payment-service] timeout after 8000ms (attempt=1/3)"
    second = "2024-11-14T13:37:47.557Z ERROR [payment-service] timeout after 8000ms (attempt=2/3)"
    snippet = f"{first}\n{second}\n2024-11-14T13:38:02.100Z INFO [api-gateway] GET /v2/cart 200 9ms"
    quote, shared = answer_sentence(snippet, second, "Which card processor timed out?")
    assert quote == second and shared == len(answer_words(second))  # not both lines, which have no stop between
    # A short answer is no sentence: the whole sentence holding it is quoted.
    assert answer_sentence(snippet, "after 8000ms", "After how many milliseconds?")[0].startswith(first)


def test_citations_are_one_per_place_the_answers_source_first_with_its_quote():
    citations = [
        {"label": "page 27", "score": 0.001, "token": 900, "snippet": "Copying conditions apply."},
        {
            "label": "page 2",
            "score": 0.3,
            "token": 40,
            "snippet": "Permission is granted. Under the GNU Free Documentation License.",
        },
        {"label": "page 27", "score": 0.002, "token": 950, "snippet": "Version 1.3 of the license."},
    ]
    arranged = arranged_citations(citations, "The manual is under the GNU Free Documentation License.")
    assert [c["label"] for c in arranged] == ["page 2", "page 27"]
    assert arranged[0]["quote"] == "Under the GNU Free Documentation License."
    assert (
        arranged[1]["snippet"] == "Copying conditions apply. … Version 1.3 of the license."
        and arranged[1]["score"] == 0.003
    )
    assert source_label(arranged[1]) == "page 27" and source_label(arranged[0]) == "page 2 (30%)"
    shown = chat_message("assistant", "It is the GNU Free Documentation License.", arranged)["content"]
    assert "> **page 2** “Under the **GNU** **Free** **Documentation** **License**.”" in shown


def test_a_quote_is_placed_at_its_line_only_where_the_lines_of_its_text_are_known():
    first = {
        "label": "line 4",
        "line": 4,
        "token": 40,
        "score": 0.5,
        "snippet": "Line four here. Line five here.",
        "line_starts": ((0, 4, 40), (16, 5, 50)),
    }
    # The same place cited again with text whose lines are not known (an attention citation's sentence).
    second = {"label": "line 4", "line": 4, "token": 40, "score": 0.1, "snippet": "The pump failed at noon."}
    arranged = arranged_citations([first, second], "The pump failed at noon.")
    assert len(arranged) == 1 and arranged[0]["quote"] == "The pump failed at noon."
    assert arranged[0]["label"] == "line 4" and "line_starts" not in arranged[0]  # not placed at line 5
    arranged = arranged_citations([first], "Line five here.")
    assert arranged[0]["label"] == "line 5" and arranged[0]["token"] == 50


def test_sources_leave_out_index_lines_and_list_the_others_by_share_after_the_answers_own():
    answer = "The pump failed at noon."
    citations = [
        {"label": "line 9", "score": 0.2, "snippet": "Other text about valves."},
        {"label": "line 3", "score": 0.1, "snippet": "The pump failed at noon."},
        {"label": "line 90", "score": 0.5, "snippet": "pump . . . . . . . . . . . . . . . . . . . 12"},
        {"label": "line 50", "score": 0.3, "snippet": "More about the harbour."},
    ]
    arranged = arranged_citations(citations, answer)
    assert [c["label"] for c in arranged] == ["line 3", "line 50", "line 9"]  # the answer's place first
    only_index = arranged_citations(citations[2:3], answer)
    assert [c["label"] for c in only_index] == ["line 90"]  # nothing else to show: shown
