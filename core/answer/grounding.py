"""Answers whose words come from the passages read: the vocabulary an answer may use, and the words it did not
take from them.

A 135M model handed a passage that holds the fact often writes another one from its prior ("the GNU General
Public License" where page 2 says "GNU Free Documentation License"). The answer's vocabulary is therefore
limited to the words of the passages and of the question, plus English function words and every entry that
carries no letter or digit (punctuation, spaces, the end of turn): a word the passages never use cannot be
written, so a name, number or identifier in the answer is one the passages hold. Words are compared by their
keys (core.words.token_keys: case, a leading space and a plain inflection aside), entry by entry of the vocabulary.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import torch

from ..words import NO_KEY, fold_inflection, vocabulary

if TYPE_CHECKING:
    from ..engine import Engine

# Words an answer needs whatever the passage says: articles, pronouns, auxiliaries, prepositions, conjunctions,
# and the few words the model uses to frame an answer ("text", "document", "answer").
FUNCTION_WORDS = frozenset(
    """
    a an the this that these those it its it's they them their there here he she his her him we our you your i
    is are was were be been being am has have had do does did done not no nor yes
    of in on at to for from by with without within into onto over under about above below between through
    after before during until since per via than then as and or but if so such because while also only just
    which what who whom whose where when why how all any some each every both either neither other another
    same more most less least many much few one can could may might must shall should will would
    text document answer question called used use uses
    """.split()
)

_WORD = re.compile(r"[^\W_]+(?:[-_./'][^\W_]+)*", re.UNICODE)
_PART_BREAK = re.compile(r"[-_./']")


@functools.lru_cache(maxsize=1 << 16)
def word_key(word: str) -> str:
    """A word as core.words.token_keys compares it: lower case, a plain inflection folded (remembered: an answer's
    checks look up the same few hundred words many times)."""
    return fold_inflection(word.lower())


def function_word_flags(vocabulary: Sequence[str | None], keys: torch.Tensor) -> torch.Tensor:
    """(V,) bool: the vocabulary entries that are one of FUNCTION_WORDS (any case, with or without a leading
    space). `vocabulary`: the entries' strings (core.words.vocabulary); keys: their word keys (V,)."""
    folded = {word_key(word) for word in FUNCTION_WORDS}
    flags = torch.zeros(keys.shape[0], dtype=torch.bool)
    for index, token in enumerate(vocabulary[: keys.shape[0]]):
        if token and int(keys[index]) != NO_KEY:
            word = token.lstrip("\u0120\u2581 ").lower()
            flags[index] = word_key(word) in folded
    return flags


def allowed_tokens(keys: torch.Tensor, function_words: torch.Tensor, sources: Iterable[Sequence[int]]) -> torch.Tensor:
    """(V,) bool: the entries an answer may write: those whose key occurs among the `sources` token ids (the
    passages read and the question), the function words, and every entry with no key (punctuation, spaces,
    special tokens such as the end of turn).

    keys: (V,) int64 word keys (core.words.token_keys); function_words: (V,) bool (function_word_flags)."""
    vocab = keys.shape[0]
    ids = torch.tensor([t for source in sources for t in source if 0 <= t < vocab], dtype=torch.int64)  # (n,)
    used = keys[ids].unique() if ids.numel() else torch.empty(0, dtype=torch.int64)  # (k,)
    used = used[used != NO_KEY]
    return (keys == NO_KEY) | function_words | torch.isin(keys, used)  # (V,)


def function_word_entries(engine: Engine) -> torch.Tensor:
    """(V,) bool: the entries of the engine's vocabulary that are function words (function_word_flags), made once
    per model."""
    return engine.table(
        "function words",
        lambda: function_word_flags(vocabulary(engine.tokenizer, engine.vocab_size), engine.word_keys()),
    )


def answer_vocabulary(engine: Engine, sources: Sequence[Sequence[int]]) -> torch.Tensor:
    """(V,) bool on the model's device: what an answer drawn from `sources` (token ids of the passages and the
    question) may write: their words, function words, punctuation (Engine.answer's `allowed_tokens`)."""
    return allowed_tokens(engine.word_keys(), function_word_entries(engine), sources).to(engine.loaded.device)


def content_words(text: str) -> list[str]:
    """The words of `text` that carry content: not function words, with a letter or digit (identifiers such as
    "libtasn1.h" or "x-scheme-handler/foo" are one word)."""
    folded = {word_key(word) for word in FUNCTION_WORDS}
    return [word for word in _WORD.findall(text) if word_key(word) not in folded]


def word_parts(word: str) -> list[str]:
    """The parts of a compound word or identifier ("big-endian", "retry_backoff_ms", "libtasn1.h"), as written."""
    return [part for part in _PART_BREAK.split(word) if part]


def word_keys(sources: Iterable[str]) -> set[str]:
    """The keys of every word of `sources` and of their parts: what holds_word looks words up in."""
    found: set[str] = set()
    for source in sources:
        for word in _WORD.findall(source):
            found.add(word_key(word))
            found.update(word_key(part) for part in word_parts(word))
    return found


def holds_word(found: set[str], word: str) -> bool:
    """Whether `word` is among the keys `found` (word_keys), or each of its parts is."""
    return word_key(word) in found or all(word_key(part) in found for part in word_parts(word))


def unsupported_words(text: str, sources: Iterable[str]) -> list[str]:
    """The content words of `text` that occur in none of `sources` (compared by word_key; a compound such as
    "big-endian" also counts as found when each of its parts is), in order, each once."""
    found = word_keys(sources)
    missing: dict[str, str] = {}
    for word in content_words(text):
        if not holds_word(found, word):
            missing.setdefault(word_key(word), word)
    return list(missing.values())


# Irregular verbs' forms, each set one verb: a question's "wrote" is a form of a document's "written by".
_IRREGULAR = [
    set(forms.split())
    for forms in """write wrote written writes writing|give gave given|take took taken|make made|find found|run ran
    |begin began begun|choose chose chosen|know knew known|send sent|build built|keep kept|get got gotten
    |go went gone goes|do did done does|say said says|see saw seen|come came|leave left|hold held|mean meant
    |break broke broken|buy bought|bring brought|think thought|tell told|become became|show showed shown
    |grow grew grown|draw drew drawn|throw threw thrown|fall fell fallen|drive drove driven|rise rose risen
    |speak spoke spoken|steal stole stolen|forget forgot forgotten|lose lost|pay paid|lay laid|lead led|sell sold
    |stand stood|understand understood|win won|teach taught|catch caught|fight fought|feel felt|sleep slept
    |spend spent|lend lent|bear bore born borne|wear wore worn|tear tore torn|hide hid hidden|bite bit bitten
    |freeze froze frozen|shake shook shaken|sing sang sung|sink sank sunk|swim swam swum|fly flew flown
    |eat ate eaten|forbid forbade forbidden|strike struck|seek sought|shoot shot|light lit|meet met
    |feed fed""".split("|")
]


def word_forms(word: str) -> list[str]:
    """The word and, for an irregular verb, its other forms ("wrote" -> write, written, ...)."""
    lowered = word.lower()
    return [word, *sorted(next((forms - {lowered} for forms in _IRREGULAR if lowered in forms), set()))]


def holds_any_form(found: set[str], word: str) -> bool:
    """holds_word for the word or any of its irregular forms."""
    return any(holds_word(found, form) for form in word_forms(word))
