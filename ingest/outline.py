"""A document's own outline: its headings, each with its level and where it stands.

A summary, a source's label and an outline panel start from the structure the document gives itself:

- a PDF's bookmarks (pypdf's outline: title, depth, page);
- otherwise the headings its text shows, line by line (`text_headings`): Markdown-style `#` marks, which ingest
  writes for the headings of HTML, EPUB and Word files; a manual page's section lines (`DESCRIPTION`, `EXIT
  STATUS` at the margin) and subsection lines (indented three spaces); numbered headings ("2.1 ASN.1 syntax",
  "3. Conveying Verbatim Copies."); chapter lines ("Chapter 4. The Storm");
- an EPUB's chapters are pages: a chapter without a heading line is a part all the same (the caller's choice).

Only the shape of a line decides, never a model: a short line that starts like a heading and ends without a
sentence's stop, for the numbered kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .location import Location


@dataclass(frozen=True)
class Heading:
    level: int  # 1 for the top level
    title: str
    page: int | None  # the page (PDF, paginated Word) or chapter (EPUB) it is on
    line: int | None  # its line (restarting per page when there are pages)


_MARKDOWN = re.compile(r"^(#{1,6})\s+(\S.*)$")
# A manual page's section line: capitals at the margin ("NAME", "EXIT STATUS", "SEE ALSO").
_MAN_SECTION = re.compile(r"^[A-Z][A-Z0-9]*(?:[ -][A-Z0-9]+)*$")
# ... and a subsection, three spaces in ("   Operation modifiers").
_MAN_SUBSECTION = re.compile(r"^ {3}(?! )(\S.{0,58}\S)$")
# A numbered heading: "2.1 ASN.1 syntax", "2.10. Storing the MIME type ...", "3. Utilities", "A Copying Information".
_NUMBERED = re.compile(r"^\s{0,2}(\d{1,2}(?:\.\d{1,2})*)\.?\s+([A-Z](?:[^.:;!?]|\.(?=\w)){0,70}[^.:;!?,\s])(\.?)$")
_CHAPTER = re.compile(r"^\s{0,2}(?:Chapter|CHAPTER|Part|PART|Book|BOOK)\s+(?:\d+|[IVXLC]+|[A-Z][a-z]+)\b")
# Headings have few words; a longer line is a sentence that happens to start with a number.
_HEADING_WORDS = 12


def line_heading(text: str, man_page: bool = False) -> tuple[int, str] | None:
    """(level, title) when the line is a heading by its shape, else None. `man_page`: the document is a manual page
    (its section and subsection lines count)."""
    stripped = text.rstrip()
    if not stripped.strip():
        return None
    if match := _MARKDOWN.match(stripped):  # at the margin: "    # comment" is code
        title = match.group(2).strip().rstrip("¶").strip()
        # A heading is short and starts like a title, or with a name as code writes it ("sqlite3 — DB-API 2.0
        # interface", "os.path — Common pathname manipulations"); "# create logger" is a code comment.
        first = title.split()[0]
        named = first[:1].isupper() or first[:1].isdigit() or bool(re.search(r"[\d_.]", first))
        if len(title.split()) <= _HEADING_WORDS and named:
            return len(match.group(1)), title
        return None
    if man_page:
        if _MAN_SECTION.match(stripped) and len(stripped) <= 40:
            return 1, stripped.title() if len(stripped) > 3 else stripped
        if match := _MAN_SUBSECTION.match(stripped):
            if len(match.group(1).split()) <= 6 and not match.group(1).startswith(("-", "•")):
                return 2, match.group(1)
        return None
    if _CHAPTER.match(stripped):
        return 1, stripped.strip().rstrip(".")
    if (match := _NUMBERED.match(stripped)) and len(stripped.split()) <= _HEADING_WORDS:
        number, title = match.group(1), match.group(2).strip()
        if match.group(3) and not _title_case(title):
            return None  # "1. Install the package." is a numbered step, "3. Conveying Verbatim Copies." a heading
        if not any(ch.islower() for ch in title):
            return None  # "2 CARD16 MAJOR_VERSION 1" is a table's row
        return number.count(".") + 1, stripped.strip().rstrip(".")
    return None


def _title_case(title: str) -> bool:
    """Whether most of a title's longer words are capitalised."""
    words = [word for word in title.split() if len(word) > 3]
    return bool(words) and sum(word[0].isupper() for word in words) >= 0.6 * len(words)


def looks_like_man_page(lines: Iterable[str]) -> bool:
    """Whether the text is a manual page as `man | col -b` writes it: a NAME section line near its start."""
    for index, line in enumerate(lines):
        if line.strip() == "NAME" and not line.startswith(" "):
            return True
        if index > 8:
            return False
    return False


# A heading met more often than this is page furniture (a running head: "Chapter 2: ASN.1 structure handling" on
# every page of the chapter), not a part of the document: on pages, twice is already a running head.
_REPEATS = 2
_REPEATS_ON_PAGES = 1
_PAGE_NUMBER_AFTER = re.compile(r"\s+\d+$")


def text_headings(lines: Iterable[tuple[str, Location]], man_page: bool | None = None) -> list[Heading]:
    """The headings among a document's lines ((text, location) in order); `man_page` None: told from the text.
    Running heads are left out, the outline starts at the first heading of the top level found (what comes
    before it is a page's navigation: "Table of Contents", "Previous topic"), and levels start at 1."""
    lines = list(lines)
    if man_page is None:
        man_page = looks_like_man_page(text for text, _ in lines)
    headings = []
    for text, location in lines:
        found = line_heading(text, man_page)
        if found is not None:
            headings.append(Heading(found[0], found[1], location.page, location.line))
    return normalized(headings)


def normalized(headings: list[Heading]) -> list[Heading]:
    """Headings without running heads, from the first of the top level on, levels from 1."""
    counts: dict[str, int] = {}
    for heading in headings:
        key = _PAGE_NUMBER_AFTER.sub("", heading.title)  # a running head carries its page's number
        counts[key] = counts.get(key, 0) + 1
    paged = any(h.page is not None for h in headings)
    most = _REPEATS_ON_PAGES if paged else _REPEATS
    kept = [h for h in headings if counts[_PAGE_NUMBER_AFTER.sub("", h.title)] <= most]
    if not kept:
        return []
    top = min(h.level for h in kept)
    first = next(i for i, h in enumerate(kept) if h.level == top)
    return [Heading(h.level - top + 1, h.title, h.page, h.line) for h in kept[first:]]


def pdf_bookmarks(path: str | Path) -> list[Heading]:
    """A PDF's bookmarks as headings (their lines unknown); none when it has none or cannot be read."""
    try:
        from pypdf import PdfReader

        reader = PdfReader(str(path))
        outline = reader.outline
    except Exception:  # a damaged or encrypted PDF simply has no outline to offer
        return []
    headings: list[Heading] = []

    def walk(items, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            try:
                page = reader.get_destination_page_number(item) + 1
            except Exception:
                page = None
            title = " ".join(str(getattr(item, "title", "")).split())
            if title:
                headings.append(Heading(level, title, page, None))

    walk(outline, 1)
    return normalized(headings)
