"""The names a question asks about that the document hardly mentions (core.answer.question_names), and the answer rule
that needs them in the sentence answered with (core.answer.grounded_answer)."""

from __future__ import annotations

import torch
from tiny_models import tiny_tokenizer

from infinipot.core.answer.question_names import asked_names, mentions, rarely_mentioned


def ids_of(tokenizer, text: str) -> torch.Tensor:
    return torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"], dtype=torch.int64)


def test_the_names_are_the_capitalised_words_after_the_first_without_possessives():
    assert asked_names("Who was the captain of the Margarethe?") == ["Margarethe"]
    assert asked_names("What was the name of Ida Marlowe's husband?") == ["Ida", "Marlowe"]
    assert asked_names("Which version of Libtasn1 does the manual describe, and does I matter?") == ["Libtasn1"]
    assert asked_names("What is the passkey?") == []
    assert asked_names("What does This mean?") == []  # a capitalised function word names nothing
    assert asked_names("") == []


def test_mentions_count_the_name_after_a_space_and_at_a_line_start():
    tokenizer = tiny_tokenizer()
    text = "Margarethe sailed.\nThe Margarethe sank near the Margarethe's reef, said Marlowe."
    document = ids_of(tokenizer, text)
    assert mentions(document, tokenizer, "Margarethe") == 3
    assert mentions(document, tokenizer, "Marlowe") == 1
    assert mentions(document, tokenizer, "Debian") == 0
    assert mentions(ids_of(tokenizer, "a"), tokenizer, "Margarethe") == 0  # longer than the document


def test_only_the_names_the_document_hardly_mentions_are_kept():
    tokenizer = tiny_tokenizer()
    text = " ".join(["Elena walked on."] * 5) + " The Margarethe struck the shoal."
    document = ids_of(tokenizer, text)
    question = "Did Elena see the Margarethe or the Debian ship?"
    assert rarely_mentioned(question, document, tokenizer, most=2) == ["Margarethe", "Debian"]
    assert rarely_mentioned(question, document, tokenizer, most=0) == ["Debian"]
    assert rarely_mentioned(question, document, tokenizer, most=5) == ["Elena", "Margarethe", "Debian"]
