"""Questions made from a document's units, each with the unit that answers it and hard negatives.

A document's text is cut into passages of about the size the evidence stage reads (PASSAGE_CHARS), each passage
into the units the judge ranks (core.answer.answer_sentences.split_sentences). Questions come from two sources:

- patterns, from units as documents write them: a term and its description ("What does --follow do?", and in a
  user's words "Which option keeps reading the file as it grows?"), a default ("What is the default for
  --jobs?"), a definition ("What is a keyring?"), a numbered code ("What does exit status 2 mean?"), a table row
  ("What is the MIME type of .odt?"), a package log's line ("Which version of gzip was installed?");
- the bundled model, asked for the question a unit answers (benchmarks.judge.make_data; filtered below).

A question is kept only when the unit holds its answer (a pattern's answer is a span of the unit) and the
question does not copy it: it holds none of the answer's content words that the rest of the unit does not
lead to, and shares no run of six words with the unit.

Hard negatives: the other units of the same passage (what the judge must tell apart in a passage read) and the
units of other passages sharing most of the question's words (the near misses a search for its words returns).
A negative that holds a pattern's answer is dropped, not labelled: it may answer too.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from infinipot.core.answer.answer_sentences import split_sentences
from infinipot.core.answer.grounding import FUNCTION_WORDS, content_words, holds_word, word_keys
from infinipot.core.answer.text_units import joined_broken_words

# About the characters of one passage the evidence stage reads (a 64-token bucket widened to whole units, with
# neighbour sentences): ~1,200 characters of a manual.
PASSAGE_CHARS = 1200
SAME_PASSAGE_NEGATIVES = 4
NEAR_MISS_NEGATIVES = 3
_UNIT_WORDS = (4, 70)  # a unit outside this many words makes no question (a heading, a listing)


@dataclass
class Made:
    """One question made from a unit: `answer` is the span of it that answers ("" for the model's questions,
    whose answer is the unit), `how` the pattern's name or "model"."""

    question: str
    unit: str
    answer: str
    how: str
    passage: int = 0
    negatives: list[str] = field(default_factory=list)


def passages_of(text: str) -> list[str]:
    """The text in passages of about PASSAGE_CHARS characters, cut at blank lines or line breaks."""
    text = joined_broken_words(text)
    out, current = [], ""
    for block in re.split(r"(\n\s*\n)", text):
        if len(current) + len(block) > PASSAGE_CHARS and current.strip():
            out.append(current)
            current = ""
        while len(block) > 2 * PASSAGE_CHARS:  # a block without blank lines: cut at the line break before the size
            cut = block.rfind("\n", 0, PASSAGE_CHARS)
            cut = cut if cut > 0 else PASSAGE_CHARS
            out.append(current + block[:cut])
            current, block = "", block[cut:]
        current += block
    if current.strip():
        out.append(current)
    return out


_DEFAULT = re.compile(
    r"\b(?:[Tt]he )?[Dd]efault(?: value)?(?: is| value is| setting is| are|s to|:)\s+(?P<value>[^.;,()]{1,40}?)"
    r"(?=[.;,()]|\s+(?:if|when|unless|which|and|but)\b|$)"
)
_DEFINITION = re.compile(
    r"^(?:(?:The|A|An) )?(?P<subject>[A-Za-z][\w\-]*(?: [\w\-]+){0,3}) (?P<verb>is|are|means|refers to|specifies|"
    r"controls|determines|contains|returns) (?P<rest>.{12,})$"
)
_NUMBERED = re.compile(r"^(?P<code>\d{1,3})[.):]?\s+(?P<text>[A-Z].{8,})$")
_VERB_START = re.compile(
    r"^(?P<verb>Print|Display|Show|List|Set|Use|Specify|Enable|Disable|Read|Write|Create|Remove|Delete|Ignore|"
    r"Suppress|Output|Send|Keep|Force|Allow|Do not|Don't|Change|Select|Add|Report|Check|Run|Give|Make|Turn|"
    r"Prints|Displays|Shows|Lists|Sets|Uses|Specifies|Enables|Disables|Reads|Writes|Creates|Removes|Deletes|"
    r"Ignores|Suppresses|Outputs|Sends|Keeps|Forces|Allows|Changes|Selects|Adds|Reports|Checks|Runs|Gives|"
    r"Makes|Turns)\b\s+(?P<rest>[^.;:]{6,80})"
)
_THIRD_PERSON = {"Do not": "does not", "Don't": "does not"}
_DPKG = re.compile(
    r"^(?P<when>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<action>install|upgrade|remove|purge) (?P<package>[\w.+-]+)"
    r":\w+ \S+ (?P<version>\S+)$"
)
_OPTION = re.compile(r"^-{1,2}\w")
# A list of codes: its items are asked by their number ("What does exit status 2 mean?").
_CODES = re.compile(r"\b(?:exit (?:status|code)|return (?:value|code)|error code|status code)\b", re.IGNORECASE)


def _third_person(verb: str) -> str:
    if verb in _THIRD_PERSON:
        return _THIRD_PERSON[verb]
    if verb.endswith("s"):
        return verb.lower()
    return verb.lower() + ("es" if verb.endswith(("sh", "ch", "x")) else "s")


def _term_of(unit: str) -> tuple[str, str] | None:
    """(term, description) of a "term: description" unit whose term is short and looks like one."""
    term, sep, desc = unit.partition(": ")
    if not sep or not 1 <= len(term.split()) <= 4 or len(term) > 50 or len(desc.split()) < 3:
        return None
    if not (_OPTION.match(term) or re.search(r"[_.()=<>\[\]-]|^[a-z]", term)) or term.isupper():
        return None  # a capitalised phrase before a colon is prose ("Note: ..."), a heading ("FLAGS") no term
    if len(term.split()) > 1 and not _OPTION.match(term) and "(" not in term:
        return None  # "email: An email and MIME handling package" is a breadcrumb
    return term, desc


def _term_questions(unit: str) -> Iterator[tuple[str, str, str]]:
    found = _term_of(unit)
    if found is None:
        return
    term, desc = found
    term = term.replace("¶", "").strip()
    if "(" in term and not _OPTION.match(term):  # a function's signature: its name
        name = term.split("(")[0].strip().removeprefix("class ").strip()
    else:  # "-f, --follow[=HOW]" -> "--follow"
        name = term.split(",")[-1].strip().split(" ")[0].split("=")[0]
        name = re.sub(r"[\[<].*$", "", name) or term
    if not name or len(name) < 2:
        return
    option = bool(_OPTION.match(name))
    first = re.split(r"(?<=[.!?])\s", desc, maxsplit=1)[0]
    yield (f"What does {name} do?" if option else f"What is {name}?"), first, "term"
    default = _DEFAULT.search(desc)
    if default:
        yield f"What is the default for {name}?", default.group("value"), "default"
    verb = _VERB_START.match(first)
    if verb and option:
        rest = verb.group("rest").strip()
        yield f"Which option {_third_person(verb.group('verb'))} {rest}?", name, "option-in-users-words"


_NO_SUBJECT = FUNCTION_WORDS | {"note", "default", "see", "example", "examples", "following", "above", "below"}
_PROSE_DEFAULT = re.compile(
    r"^(?:The )?(?P<subject>[\w.\-]+(?: [\w.\-]+){0,2}) defaults to (?P<value>[^.;,()]{1,40}?)(?=[.;,()]|$)"
)


def _subject_ok(subject: str) -> bool:
    """A definition's subject that names a thing: no function word, no "Note" or "Default"."""
    return all(word.lower() not in _NO_SUBJECT for word in subject.split())


def _prose_questions(unit: str, passage: str) -> Iterator[tuple[str, str, str]]:
    defined = _DEFINITION.match(unit)
    if defined and not _subject_ok(defined.group("subject")):
        defined = None
    if defined and len(unit.split()) <= 45 and defined.group("verb") in ("is", "are", "means", "refers to"):
        subject = defined.group("subject")
        if subject.split()[0].lower() not in {"it", "this", "that", "there", "he", "she", "they", "which", "what"}:
            yield (
                f"What {'are' if defined.group('verb') == 'are' else 'is'} {subject}?",
                defined.group("rest"),
                ("definition"),
            )
    elif defined and len(unit.split()) <= 45:
        subject = defined.group("subject")
        if subject.split()[0].lower() not in {"it", "this", "that", "there", "he", "she", "they", "which", "what"}:
            verb = defined.group("verb").removesuffix("s")
            yield f"What does {subject} {verb}?", defined.group("rest"), "definition"
    default = _PROSE_DEFAULT.match(unit)
    if default and not _term_of(unit) and _subject_ok(default.group("subject")):
        yield f"What is the default {default.group('subject')}?", default.group("value"), "default"
    numbered = _NUMBERED.match(unit)
    if numbered and len(numbered.group("text").split()) <= 14 and _CODES.search(passage):
        yield (
            f"What does {_CODES.search(passage).group(0).lower()} {numbered.group('code')} mean?",
            numbered.group("text"),
            "numbered-item",
        )


def _table_questions(rows: list[str]) -> Iterator[tuple[str, str, str]]:
    """From a table (its rows' cells joined by " | "), the header row first: the second column of each row."""
    if len(rows) < 3:
        return
    header = [cell.strip() for cell in rows[0].split(" | ")]
    if len(header) < 2 or not all(1 <= len(h.split()) <= 4 for h in header[:2]):
        return
    for row in rows[1:]:
        cells = [cell.strip() for cell in row.split(" | ")]
        if len(cells) == len(header) and cells[0] and 1 <= len(cells[1].split()) <= 12:
            yield row, f"What is the {header[1].lower()} of {cells[0]}?", cells[1]


def _log_questions(unit: str) -> Iterator[tuple[str, str, str]]:
    line = _DPKG.match(unit)
    if not line:
        return
    verb = {"install": "installed", "upgrade": "upgraded", "remove": "removed", "purge": "purged"}[line["action"]]
    yield f"Which version of {line['package']} was {verb}?", line["version"], "log-version"
    yield f"When was {line['package']} {verb}?", line["when"], "log-time"


def copies_answer(question: str, answer: str, unit: str) -> bool:
    """Whether the question gives its answer away: it holds most of the answer's content words, or a run of six
    words of the unit."""
    asked = word_keys([question])
    words = [w for w in content_words(answer) if len(w) > 2]
    if words and sum(holds_word(asked, w) for w in words) / len(words) > 0.5:
        return True
    unit_words = re.findall(r"\w+", unit.lower())
    runs = {" ".join(unit_words[i : i + 6]) for i in range(len(unit_words) - 5)}
    flat = " ".join(re.findall(r"\w+", question.lower()))
    return any(run in flat for run in runs)


def holds_answer(unit: str, answer: str) -> bool:
    """Whether a unit holds the answer's words in order (case and spacing aside)."""
    return " ".join(answer.lower().split()) in " ".join(unit.lower().split())


def units_of(passage: str) -> list[str]:
    return [u for u in split_sentences(passage) if _UNIT_WORDS[0] <= len(u.split()) <= _UNIT_WORDS[1]]


def pattern_questions(passages: list[list[str]], is_log: bool) -> Iterator[Made]:
    """Every pattern question the passages' units make, kept when the unit holds the answer and the question does
    not copy it."""
    for index, units in enumerate(passages):
        text = "\n".join(units)
        table = [u for u in units if " | " in u]
        made = [(u, q, a, "table-row") for u, q, a in _table_questions(table)]
        for unit in units:
            makers = _log_questions(unit) if is_log else [*_term_questions(unit), *_prose_questions(unit, text)]
            made += [(unit, q, a, how) for q, a, how in makers]
        for unit, question, answer, how in made:
            answer = answer.strip()
            if answer and holds_answer(unit, answer) and not copies_answer(question, answer, unit):
                yield Made(question, unit, answer, how, index)


_ABOUT_THE_TEXT = re.compile(r"\b(?:sentence|passage|this question|the text|the document|the answer)\b", re.I)


def model_question_ok(question: str, unit: str) -> bool:
    """A question the model wrote, kept when it is one short question about the unit that does not copy it."""
    question = question.strip()
    words = question.split()
    if not question.endswith("?") or question.count("?") != 1 or not 4 <= len(words) <= 22:
        return False
    if _ABOUT_THE_TEXT.search(question):
        return False  # "What is the answer to this question?", "... in the sentence?": about the task, not the unit
    held = word_keys([unit])
    asked = [w for w in content_words(question) if len(w) > 2]
    if not asked or not any(holds_word(held, w) for w in asked):
        return False  # about something else
    unit_content = [w for w in dict.fromkeys(content_words(unit)) if len(w) > 2]
    asked_keys = word_keys([question])
    copied = sum(holds_word(asked_keys, w) for w in unit_content) / max(1, len(unit_content))
    return copied <= 0.6 and not copies_answer(question, "", unit)


def with_negatives(made: Made, passages: list[list[str]], rng: random.Random) -> Made:
    """The question with SAME_PASSAGE_NEGATIVES units of its passage (the nearest first) and NEAR_MISS_NEGATIVES
    of other passages holding most of its content words."""
    own = passages[made.passage]
    at = own.index(made.unit) if made.unit in own else 0
    near = sorted((u for u in own if u != made.unit), key=lambda u: abs(own.index(u) - at))
    chosen = near[:SAME_PASSAGE_NEGATIVES]
    words = [w for w in content_words(made.question) if len(w) > 2]
    others = [(u, i) for i, units in enumerate(passages) if i != made.passage for u in units]
    rng.shuffle(others)

    def shared(unit: str) -> int:
        found = word_keys([unit])
        return sum(holds_word(found, w) for w in words)

    misses = sorted(others, key=lambda item: -shared(item[0]))[:NEAR_MISS_NEGATIVES]
    chosen += [u for u, _ in misses if shared(u) > 0]
    keep = [u for u in dict.fromkeys(chosen) if u != made.unit and not (made.answer and holds_answer(u, made.answer))]
    made.negatives = keep
    return made
