"""What kind of thing a question asks for, and whether a sentence holds one that the question does not already name.

A sentence the judge ranks first can be about the question's subject without answering it: "How many steps does
the Gull Head lighthouse have?" is likeliest after "Above the village, on the headland called Gull Head, stood the
lighthouse...", which holds no number. Question-answering systems check an answer's type against the question's
(a number for "how many", a name for "who"); here the check is on the words a sentence adds to the question
(grounding.unsupported_words), so a number or name the question itself gives does not count.

Kinds, from the question's wording (English):
- number: how many / much / long / high / often / old / far / big / large / tall, what percentage, number or
  value, numeric;
- version: which / what version, since which (release);
- date: when, what date / year / day / month / time (a year, a day and month in digits, a clock time, or a month
  or day's name: "55:text/x-diff" holds a number but no date);
- person: who, whom, whose;
- anything else: the sentence must add some content word.

A section number opening a sentence ("4.4 Error handling functions ...") is neither a version nor a quantity, and
a timestamp or clock time ("2024-11-14T06:08:50.738Z", "06:03") is neither: every line of a log opens with one.
A version is written with a dot or a "v" ("4.19.0", "1.3", "v2"), or as a number after "version", "release" or
"since" ("version 3"); "max_connections=250" holds a number, not a version.
"""

from __future__ import annotations

import re

from .grounding import unsupported_words, word_parts

_NUMBER = re.compile(
    r"\bhow\s+(many|much|long|high|often|old|far|big|large|tall|wide|deep|heavy)\b"
    r"|\bwhat\s+(percentage|number|size|amount)\b|\bnumeric\b|\bwhat\s+(\w+\s+)?value\b",
    re.IGNORECASE,
)
_VERSION = re.compile(r"\b(which|what)\s+version\b|\bsince\s+which\b", re.IGNORECASE)
_DATE = re.compile(r"^\s*when\b|\bwhat\s+(date|year|day|month|time)\b", re.IGNORECASE)
_PERSON = re.compile(r"\b(who|whom|whose)\b", re.IGNORECASE)
# "Which option ...", "what environment variable ...": a thing that reference documents name by an identifier.
_IDENTIFIER = re.compile(
    r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:options?|flags?|switch(?:es)?|settings?|parameters?|arguments?|"
    r"variables?|functions?|methods?|class(?:es)?|exceptions?|commands?|directives?|keys?|fields?|"
    r"attributes?|signals?|handlers?|files?|directory|directories|macros?|constants?)\b",
    re.IGNORECASE,
)

_NUMBER_WORDS = frozenset(
    """
    one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen
    eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion dozen
    once twice thrice half quarter none single double
    """.split()
)
_MONTHS = frozenset(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday
    today yesterday tomorrow
    """.split()
)


# A question that opens with a clause setting the scene ("When extracting, which option ...", "If a program does not
# say which version applies, which version may I choose?"): the kind is asked by what follows the comma.
_LEADING_CLAUSE = re.compile(
    r"^\s*(?:when|if|while|after|before|once|since|unless|during|in|on|for|by default)\b[^?]*?,\s*"
    r"(?=(?:which|what|who|whom|whose|how|where|when|why)\b)",
    re.IGNORECASE,
)


def main_clause(question: str) -> str:
    """The question without a leading clause that sets the scene (_LEADING_CLAUSE)."""
    return _LEADING_CLAUSE.sub("", question, count=1)


def question_kind(question: str) -> str:
    """ "number", "version", "date", "person" or "other" (the module's docstring), asked by the question's main
    clause."""
    question = main_clause(question)
    if _VERSION.search(question):
        return "version"
    if _NUMBER.search(question):
        return "number"
    if _DATE.search(question):
        return "date"
    if _PERSON.search(question):
        return "person"
    if _IDENTIFIER.search(question):
        return "identifier"
    return "other"


# A number, version or date as written: "25", "91%", "8000ms", "4.19.0", "v3.14.2", "2024-11-14"; not a name that
# holds a digit ("Libtasn1", "globs2").
_NUMERIC = re.compile(r"^[v#$€£]?\d", re.IGNORECASE)


# A date or time as written: a year ("2018", "2024-11-14T06:03"), a day and month in digits ("14/11"), a clock time.
_DATE_VALUE = re.compile(r"^(?:1[5-9]\d\d|20\d\d)(?:\D|$)|^\d{1,2}/\d{1,2}(?:/\d{2,4})?$|^\d{1,2}:\d{2}")
# A section number opening a sentence before its heading ("4.4 Error handling functions", "2.9. The mime.cache
# files"): no version or quantity.
_SECTION_NUMBER = re.compile(r"^\d+(?:\.\d+)+\.?$|^\d+\.$")


# A timestamp, date or clock time as a log or a header writes it (removed before looking for a number or version).
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?Z?)?|\b\d{1,2}:\d\d(?::\d\d(?:\.\d+)?)?\b"
)
# A version as written: dotted numbers ("4.19.0", "1.3"), or "v" and a digit ("v3.14.2", "v2").
_VERSION_VALUE = re.compile(r"^v?\d+(?:\.\d+)+|^v\d", re.IGNORECASE)
# Words after which a bare number is a version ("version 3", "since 4").
_VERSION_WORDS = frozenset({"version", "release", "since"})


_CODE_NAME = re.compile(r"[-_./=()\[\]]\w|\w[-_./=()]|^[A-Z][A-Z0-9]{2,}$|^[a-z]+[A-Z]\w*|^[A-Z][a-z]+[A-Z]\w*")


def _has_numeral(words: list[str]) -> bool:
    return any(_NUMERIC.match(word) for word in words)


def _has_version(added: list[str], sentence: str) -> bool:
    """Whether a word of `added` (from `sentence`) is a version: dotted or v-numbered, or a number after one of
    _VERSION_WORDS."""
    if any(_VERSION_VALUE.match(word) for word in added):
        return True
    added_set = set(added)
    words = sentence.split()
    return any(
        before.lower().strip("(,:") in _VERSION_WORDS and _NUMERIC.match(word) and word.strip(".,;:)") in added_set
        for before, word in zip(words, words[1:], strict=False)
    )


def _without_section_number(added: list[str], sentence: str) -> list[str]:
    words = sentence.split()
    if len(words) > 1 and _SECTION_NUMBER.match(words[0]) and words[1][:1].isupper():
        return [word for word in added if word != words[0].rstrip(".")]
    return added


def _parts(words: list[str]) -> set[str]:
    return {part.lower() for word in words for part in word_parts(word)}


def holds_kind(sentence: str, question: str, earlier: str = "") -> bool:
    """Whether `sentence` adds to `question` (and to the `earlier` questions it follows up) a word of the kind the
    question asks for (any content word for questions of no particular kind)."""
    added = unsupported_words(sentence, [question, earlier])
    if not added:
        return False
    kind = question_kind(question)
    if kind in ("number", "version"):
        untimed = _TIMESTAMP.sub(" ", sentence)
        values = _without_section_number(unsupported_words(untimed, [question, earlier]), untimed)
        if kind == "version":
            return _has_version(values, untimed)
        return _has_numeral(values) or bool(_parts(added) & _NUMBER_WORDS)
    if kind == "date":
        return any(_DATE_VALUE.match(word) for word in added) or bool(_parts(added) & _MONTHS)
    if kind == "identifier":
        # A name as code writes it: with a dash, underscore, dot, slash, equals sign or brackets, in capitals, in
        # camel case, or quoted ("--skip-old-files", "command_not_found_handle", "TAPE", "NullHandler",
        # "`globskipdots'").
        return any(_CODE_NAME.search(word) or re.search(f"[`'\"“‘]{re.escape(word)}", sentence) for word in added)
    if kind == "person":
        # A name (a capitalised word the question does not use, not the sentence's first word, not a month or a
        # day) or an address to write to.
        first = sentence.split()[0] if sentence.split() else ""
        names = [w for w in added if w[:1].isupper() and w != first and w.lower() not in _MONTHS]
        return bool(names) or "@" in sentence or " at " in sentence
    return True
