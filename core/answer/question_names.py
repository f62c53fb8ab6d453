"""The names a question asks about that the document hardly mentions: an answer must hold them.

"Who was the captain of the Margarethe?" asked of a story whose one mention of the Margarethe is in a list of
wrecks: the judge's best sentence is the Grey Heron's ("... commanded by Captain Josiah Pell"), the writer says
"The captain of the Margarethe was Captain Josiah Pell", and the two agree on every word the question does not
already give. A sentence that never names the ship the question is about does not answer it. Question-answering
systems check that an answer's passage mentions the question's key entities; here the check is kept to the names
a document mentions at most a few times, since a name it mentions everywhere (the story's heroine, the manual's
library) is often "she" or "it" in the sentence that answers. A name the document never mentions ("Who maintains
the Debian package of libtasn1?") is one such name too: no sentence of the document holds it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import torch

from .grounding import FUNCTION_WORDS, unsupported_words

# A word of the question as written, with its possessive and surrounding punctuation taken off.
_POSSESSIVE = re.compile(r"['’]s$")
_EDGES = "\"'“”‘’()[]{},;:?!."


def asked_names(question: str) -> list[str]:
    """The capitalised words of `question` after its first word, each once ("Margarethe" in "Who was the captain
    of the Margarethe?", "Ida", "Marlowe" in "... Ida Marlowe's husband?"); "I" and capitalised function words
    are none."""
    names: dict[str, None] = {}
    for word in (question or "").split()[1:]:
        word = _POSSESSIVE.sub("", word.strip(_EDGES)).strip(_EDGES)
        if len(word) > 1 and word[0].isupper() and word.lower() not in FUNCTION_WORDS:
            names.setdefault(word, None)
    return list(names)


def mentions(document_ids: torch.Tensor, tokenizer, name: str) -> int:
    """How many times the document's token ids (T,) spell `name`, after a space or not (a line's first word); a
    place both spellings match (a tokenizer that writes the space as a token of its own) counts once."""
    ends = torch.zeros(document_ids.numel(), dtype=torch.bool)  # (T,) where a mention's last token is
    for spelled in (" " + name, name):
        pattern = torch.tensor(tokenizer(spelled, add_special_tokens=False)["input_ids"], dtype=torch.int64)  # (L,)
        length = int(pattern.numel())
        if length == 0 or length > document_ids.numel():
            continue
        windows = document_ids.unfold(0, length, 1)  # (T - L + 1, L)
        ends[length - 1 :] |= (windows == pattern).all(dim=1)
    return int(ends.sum())


def rarely_mentioned(question: str, document_ids: torch.Tensor, tokenizer, most: int) -> list[str]:
    """The question's names (asked_names) that the document mentions at most `most` times."""
    return [name for name in asked_names(question) if mentions(document_ids, tokenizer, name) <= most]


def holds_names(sentence, names: Sequence[str], passages: Sequence[str]) -> bool:
    """Whether the sentence (a core.answer.answer_sentences.Sentence), or the passage it comes from (`passages`, indexed
    by its span), holds each of `names` (the rare names the question asks about). The passage counts: the
    sentence that answers often says "he" of the name the sentence before it gives ("Tomas had been taken on as an
    apprentice ... In his first month he had helped Master Ruel to repair the great clock")."""
    if not names:
        return True
    held = [sentence.text] + ([passages[sentence.span]] if 0 <= sentence.span < len(passages) else [])
    return not unsupported_words(" ".join(names), held)
