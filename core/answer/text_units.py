"""The units a document is written in: a term and its description, a heading and what follows it.

Manual pages, configuration and API references are lists of definitions: a term (an option, a setting, a
parameter) and an indented description, or the term and its description on one line:

           --hole-detection=METHOD
                  Use METHOD to detect holes in sparse files. ... Default is
                  seek with fallback to raw when not applicable.
           -o     When creating, same as --old-archive.
    - timeout (float) – How many seconds the connection should wait ... Default five seconds.

Cut into sentences as prose, "Default is seek with fallback to raw when not applicable." no longer says what it
is the default of. So a passage is first cut into entries, each a lead (the term, or a heading) and the body it
governs; the sentences of a body then carry their term ("--hole-detection=METHOD: Default is seek ..."), and a
short entry stays whole (answer_sentences.split_sentences). Text without such structure (prose, a log, a PDF's
lines) is one entry without a lead.

The rules read only the layout: indentation (tabs at 8 columns), a short line above deeper lines that start a
sentence, a column that continues on the next line, a dash or colon after a short term. Line breaks that
hyphenate a word (a manual page's "de‐\\n fault", U+2010) are joined first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# A word hyphenated across a line break by a typesetter (groff writes U+2010): "de‐\n\t      fault".
_BROKEN_WORD = re.compile(r"(?<=[^\W\d_])\u2010[ \t]*\n[ \t]*(?=[^\W\d_])")
# A term's most words: longer lines are the first lines of wrapped sentences, not terms.
TERM_WORDS = 12
# A term and its description on one line: the term, two or more spaces, then the description at the column the
# next line continues at ("-o     When creating, same as --old-archive.").
_SAME_LINE_TERM = re.compile(r"^(\s*)(\S(?:.{0,38}?\S)?)(\s{2,})(\S.*)$")
# A list item that names a term, then a dash or colon and its description: "- timeout (float) – How many seconds
# ...", "- database: the path". Prose uses dashes too, so only list items are read this way, and a hyphen between
# spaces is no such dash.
_INLINE_TERM = re.compile(r"^(\s*[-*•·]\s+)([^\s–—:][^–—:]{0,60}?)(?:\s[–—]|\s--|:)\s(\S.*)$")
# A list mark alone: a bullet, or a number or letter with a stop or bracket ("•", "-", "2.", "b)").
_LIST_MARK = re.compile(r"^(?:[-*•·]|\(?(?:\d{1,2}|[a-zA-Z])[.)])$")
# A heading, not a term: capitals only ("EXIT STATUS"), or two or more plain words ("Operation modifiers").
_HEADING = re.compile(r"^(?:[A-Z][A-Z0-9 ]*[A-Z0-9]|[A-Z][a-z]+(?: [A-Za-z][a-z]*)+)$")


@dataclass(frozen=True)
class Entry:
    """A lead (a term or a heading; "" for none) and the lines of text it governs, joined by newlines."""

    lead: str
    body: str
    heading: bool = False  # the lead is a heading: it opens its first sentence only


def joined_broken_words(text: str) -> str:
    """The text with words hyphenated across line breaks joined ("de‐\\n   fault" -> "default")."""
    return _BROKEN_WORD.sub("", text)


def _indent(line: str) -> int:
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def _starts_sentence(line: str) -> bool:
    """Whether a line begins a sentence rather than continuing one: not with a lower-case letter."""
    stripped = line.lstrip()
    return bool(stripped) and not stripped[0].islower()


def _is_term_line(line: str, following: str | None) -> bool:
    """A short line, not ending a sentence, directly above a deeper line that begins one."""
    text = line.strip()
    if not text or following is None or not following.strip():
        return False
    if len(text.split()) > TERM_WORDS or text[-1] in ".,;" or ". " in text:
        return False
    if _indent(following) <= _indent(line):
        return False
    return _starts_sentence(following)


def _same_line_term(line: str, following: str | None) -> tuple[str, str] | None:
    """(term, description) of a line whose description starts at the column the next line continues at."""
    match = _SAME_LINE_TERM.match(line.expandtabs(8))
    if match is None or len(match.group(2).split()) > 3 or _LIST_MARK.match(match.group(2)):
        return None  # a bullet or a number before its item's text is no term
    column = len(match.group(1)) + len(match.group(2)) + len(match.group(3))
    if following is not None and following.strip():
        if _indent(following) != column:
            return None
    elif not match.group(2).startswith("-"):
        return None  # a one-line entry must look like an option to be trusted
    return match.group(2), match.group(4)


def _inline_term(line: str) -> tuple[str, str] | None:
    """(term, description) of a "term – description" line (a list item or a parameter)."""
    match = _INLINE_TERM.match(line)
    if match is None or len(match.group(2).split()) > 6:
        return None
    return match.group(2).strip(), match.group(3)


def entries(text: str) -> list[Entry]:
    """The passage cut into entries in order (the module's docstring). Consecutive lines under the same lead
    form one entry's body; lines under no lead form entries without one."""
    lines = joined_broken_words(text).split("\n")
    following = [next((later for later in lines[i + 1 : i + 2]), None) for i in range(len(lines))]
    out: list[Entry] = []
    stack: list[tuple[int, str]] = []  # (indent, lead) of the terms and headings governing the lines below
    body: list[str] = []
    current = ""

    def close() -> None:
        nonlocal body
        if any(line.strip() for line in body):
            out.append(Entry(current, "\n".join(body), bool(_HEADING.match(current))))
        body = []

    for line, after in zip(lines, following, strict=True):
        if not line.strip():
            body.append(line)
            continue
        indent = _indent(line)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        split = _same_line_term(line, after) or _inline_term(line)
        if split is None and _is_term_line(line, after):
            close()
            stack.append((indent, line.strip().rstrip(":")))
            current = stack[-1][1]
            continue
        if split is not None:
            close()
            term, description = split
            stack.append((indent, term))
            current = term
            body.append(description)
            continue
        lead = stack[-1][1] if stack else ""
        if lead != current:
            close()
            current = lead
        body.append(line)
    close()
    return out


# A passage that begins with the rest of a word hyphenated on the line before ("imum verbosity level is 3." after
# "The max‐\n").
_BROKEN_BEFORE = re.compile(r"\u2010[ \t]*\n[ \t]*$")


def passage_start(before: str, head: str) -> int | None:
    """Where, in `before` (the text just before a passage), the passage should start so that its first unit is
    whole: the line holding the first half of a word the passage begins in the middle of, and then the term line
    governing it (term_line_start); None when the passage begins well already."""
    at = None
    if _BROKEN_BEFORE.search(before):
        at = before.rstrip(" \t").rstrip("\n").rfind("\n") + 1
        before, head = before[:at], before[at:] + head
    term = term_line_start(before, head)
    return term if term is not None else at


def term_line_start(before: str, head: str) -> int | None:
    """Where, in `before` (the text just before a passage), the term line governing the passage's first line
    starts, when the passage begins inside a term's description (`head`: the passage's first lines); None when it
    does not (it begins a line of its own level, mid-line, or under a heading)."""
    indent = len(before) - len(before.rstrip(" \t"))
    if indent:
        before, head = before[:-indent], before[-indent:] + head
    if not before.endswith("\n"):
        return None
    first = next((line for line in head.split("\n") if line.strip()), None)
    if first is None:
        return None
    level = _indent(first)
    lines = before[:-1].split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    below = first  # the line just below the one looked at
    for line, offset in zip(reversed(lines), reversed(offsets), strict=True):
        if not line.strip():
            continue
        if _indent(line) >= level:
            below = line
            continue
        if _is_term_line(line, below) and not _HEADING.match(line.strip().rstrip(":")):
            return offset
        return None
    return None
