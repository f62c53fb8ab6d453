"""What a summary says first and what it says of each part: the document's own sentences, never its furniture.

A PDF's text keeps its title page, running heads ("Chapter 4: Function reference 10") and page numbers as lines
of their own; joined to the prose around them they made sentences such as "Libtasn1 Abstract Syntax Notation
One ... Nikos Mavrogiannopoulos (help-libtasn1@gnu.org) This manual is for GNU Libtasn1 ...". `prose_paragraphs`
drops such lines and joins a paragraph's wrapped lines, so that no sentence runs across them.

The opening (`opening_sentences`) is the sentence that says what the document is ("This manual is for ...",
"This specification attempts to ...", "Logging is a means of tracking events ..."), with the sentences after it
in its paragraph: one to three sentences of the document's own words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .answer.answer_sentences import split_sentences

# A line of page furniture, not prose: a page number, a dot leader, or a running head (a title and a page number).
_PAGE_NUMBER = re.compile(r"^\s*(?:[0-9]{1,4}|[ivxlc]{1,6})\s*$", re.IGNORECASE)
_DOT_LEADER = re.compile(r"(?:\.\s?){4,}")
_RUNNING_HEAD = re.compile(r"^(?:chapter|appendix|section|part)\b[^.!?]{0,80}\s\d{1,4}$|^\d{1,4}\s[^.!?]{0,80}$", re.I)
# A numbered heading ("1.2. What is this spec?", "2.1 ASN.1 syntax", "A Copying Information").
_NUMBERED_HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?\s+\S|[A-Z]\.?\s+[A-Z])")
_HEADING_WORDS = 8
# A line ends a sentence, or is a wrapped line of one: the characters it may end with (closing quotes and brackets
# aside).
_SENTENCE_END = (".", "!", "?", ":", ";", ",")
# Fewer words than this, without a sentence's ending, is a title, a name or a heading: a paragraph break.
_SHORT_LINE_WORDS = 6

# Sentences that say what the document is: it names itself ...
_SELF_DESCRIBING = re.compile(
    r"\b(?:this|the present) (?:manual|document|documentation|guide|handbook|specification|spec|standard|licen[cs]e"
    r"|book|tutorial|howto|how-to|page|module|library|package|release|article|report|paper|reference|file|program"
    r"|chapter|text|note|notes)\b(?! (?:is|are) (?:free|licensed|distributed))|^This is (?:a|an|the|version)\b",
    re.IGNORECASE,
)
# ... or defines its subject ("Logging is a means of ...", "SQLite is a C library that ...").
_DEFINITION = re.compile(r"^(?:The |An? )?[\w .+#'-]{1,60}? (?:is|are) (?:a|an|the|one)\b")
# Notices every document carries, which say nothing of what it is.
_NOTICE = re.compile(
    r"(?i)^(?:copyright\b|©|\(c\)\s|permission is granted|everyone is permitted|all rights reserved|you (?:can|may)"
    r" redistribute|a copy of the licen[cs]e|published by|author:|copying and distribution of this"
    r"|this file is offered|this (?:manual|document|file|program|library|work)"
    r"\b[^.]{0,60}\b(?:free software|licensed under|distributed under|under the terms))"
)
# Sentences that lean on the one before them: a side remark or a continuation, not what a part is about.
_LEANING = re.compile(
    r"^(?:secondarily|however|moreover|furthermore|additionally|also|thus|therefore|hence|otherwise|instead"
    r"|similarly|likewise|finally|then|so|but|and|or|for example|for instance|e\.g\.|i\.e\.|in addition"
    r"|in this case|in that case|note that|see|as (?:above|below|before|mentioned)|this|these|that|those|it|they"
    r"|such|here|there)\b",
    re.IGNORECASE,
)
# A sentence cut where the splitter took an abbreviation's point for a sentence's end.
_CUT_AT_ABBREVIATION = re.compile(r"\b(?:i|e|etc|vs|cf|e\.g|i\.e|al|approx|incl)\.$", re.IGNORECASE)
# Code or a program's output inside a sentence: an assignment, a prompt, an escaped colon, a "LEVEL:name:" lead.
_CODE = re.compile(r"\w=\w|>>>|(?:^|\s)\$ \w|\\:|^\S*\w:\w")
# The opening's length at most: three sentences, about a screen's first lines.
OPENING_SENTENCES = 3
OPENING_CHARS = 480
# A lone opening sentence shorter than this ("This is version 0.21 of the ... specification, last updated ...") is
# followed by the next sentence that names the document.
SHORT_OPENING_CHARS = 140
# Bracketed reference marks glued to a word ("GNOME[GNOME]", "the MIME system[MIME]"), left out of a sentence.
_REFERENCE_MARK = re.compile(r"(?<=\w)\[[A-Za-z][\w.-]{0,20}\]")


def is_furniture(line: str) -> bool:
    """Whether a line of extracted text is a title, a name, a heading, a page number, a running head or a dot
    leader."""
    text = line.strip()
    if not text:
        return True
    if _PAGE_NUMBER.match(text) or _DOT_LEADER.search(text) or _RUNNING_HEAD.match(text):
        return True
    words = len(text.split())
    if _NUMBERED_HEADING.match(text) and words <= _HEADING_WORDS and not text.endswith("."):
        return True
    return words < _SHORT_LINE_WORDS and not text.rstrip("\"”’')]").endswith(_SENTENCE_END)


@dataclass(frozen=True)
class Paragraph:
    """A paragraph of prose (its wrapped lines joined) and whether a heading or other furniture came before it
    (else a blank line, or nothing: the text's start)."""

    text: str
    after_furniture: bool


def prose_paragraphs(text: str) -> list[Paragraph]:
    """The text's paragraphs of prose, in order; furniture lines, list items and blank lines end a paragraph and
    are left out."""
    paragraphs: list[Paragraph] = []
    current: list[str] = []
    furniture = False
    for line in text.splitlines():
        blank = not line.strip()
        if blank or is_furniture(line) or line.lstrip().startswith(("- ", "* ", "• ", "#")):
            if current:
                paragraphs.append(Paragraph(" ".join(current), furniture))
                current, furniture = [], False
            furniture = furniture or not blank
            continue
        current.append(line.strip())
    if current:
        paragraphs.append(Paragraph(" ".join(current), furniture))
    return paragraphs


def prose_sentences(text: str) -> list[str]:
    """The sentences of the text's prose paragraphs (reference marks left out), in order; none runs across a
    paragraph's end."""
    return [s for paragraph in prose_paragraphs(text) for s in split_sentences(_REFERENCE_MARK.sub("", paragraph.text))]


def is_whole(sentence: str) -> bool:
    """Whether a sentence is whole prose: its brackets closed, not cut at an abbreviation ("... variable data (i."),
    and no code or program output in it ("result=asn1 write value(...)", "ERROR:root:And ...", ">>> for row")."""
    if sentence.count("(") != sentence.count(")") or _CUT_AT_ABBREVIATION.search(sentence):
        return False
    return not _CODE.search(sentence)


def is_notice(sentence: str) -> bool:
    """Whether a sentence is a copyright or licence notice, or an author line."""
    return bool(_NOTICE.search(sentence))


def leans_on_context(sentence: str) -> bool:
    """Whether a sentence starts as a side remark or a continuation ("Secondarily, ...", "For example, ...")."""
    return bool(_LEANING.match(sentence.lstrip("\"“'‘(")))


def says_what_it_is(sentence: str, at_start: bool = False) -> bool:
    """Whether a sentence names the document ("This manual is for ...") or defines its subject ("X is a ...");
    `at_start`: only by its first words (a clause such as "... under this License" names nothing)."""
    named = _starts_naming_the_document(sentence) if at_start else _SELF_DESCRIBING.search(sentence)
    return bool(named or _DEFINITION.match(sentence))


def _starts_naming_the_document(sentence: str) -> bool:
    return bool(_SELF_DESCRIBING.match(sentence.lstrip("\"“'‘")))


def opening_sentences(text: str, is_statement) -> list[str]:
    """One to three sentences that say what the document is, from the text of its opening: the first sentence that
    names the document or defines its subject (else the first statement), with the statements after it up to the
    next heading; when there are none and it is short, the next sentence that starts by naming the document
    ("This specification attempts to ..."). Notices (copyright, licence, author) are never chosen.
    `is_statement(sentence)`: whether a sentence can be a summary's point."""
    paragraphs = prose_paragraphs(text)
    sentences = [
        [s for s in split_sentences(_REFERENCE_MARK.sub("", p.text)) if is_statement(s) and is_whole(s)]
        for p in paragraphs
    ]
    places = [(p, i) for p, found in enumerate(sentences) for i in range(len(found)) if not is_notice(found[i])]
    if not places:
        return []
    first = next(((p, i) for p, i in places if says_what_it_is(sentences[p][i])), places[0])
    chosen = [sentences[first[0]][first[1]]]
    for p, i in places:
        if (p, i) <= first:
            continue
        if any(paragraphs[q].after_furniture for q in range(first[0] + 1, p + 1)):
            break  # the opening's section ended
        if len(chosen) == OPENING_SENTENCES or len(" ".join([*chosen, sentences[p][i]])) > OPENING_CHARS:
            break
        chosen.append(sentences[p][i])
    if len(chosen) == 1 and len(chosen[0]) < SHORT_OPENING_CHARS:  # a version line: what the document is for next
        later = (sentences[p][i] for p, i in places if (p, i) > first and _starts_naming_the_document(sentences[p][i]))
        extra = next(later, None)
        if extra is not None and len(chosen[0]) + len(extra) < OPENING_CHARS:
            chosen.append(extra)
    return chosen
