"""A stored document's outline: its headings (ingest.outline) with the token each starts at, kept beside it.

The lines of the stored text are rebuilt from the document's token ids and its location map (each token's page
and line), so the outline needs neither the original file nor a second read; a PDF whose file is still there
gives its bookmarks instead, each placed at the line on its page that names it. The outline is kept as a small
JSON file (DocumentFiles.outline) keyed by the document's content and the model's tokenizer, and built once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from infinipot.app.library.documents import DocumentFiles, unchanged_source
from infinipot.app.library.token_ids import read_window, token_count
from infinipot.ingest import Location, TokenLocationMap
from infinipot.ingest.outline import Heading, pdf_bookmarks, text_headings
from infinipot.storage.records import DocumentRecord

# What made a kept outline: one made another way is made anew.
OUTLINE_METHOD = "outline-1"


@dataclass(frozen=True)
class Section:
    """A heading of the document and the first token of its line."""

    level: int
    title: str
    token: int
    page: int | None
    line: int | None


@dataclass(frozen=True)
class TextLine:
    text: str
    token: int  # its first token
    location: Location


def text_lines(token_path: Path, location_map: TokenLocationMap, tokenizer) -> list[TextLine]:
    """The stored text's lines, each with its first token and place, decoded line by line."""
    total = min(token_count(token_path), len(location_map))
    if total == 0:
        return []
    ids = read_window(token_path, 0, total)
    index = np.arange(total, dtype=np.int64)  # (T,)
    pages = location_map.pages_of(index)  # (T,)
    lines = location_map.lines_of(index)  # (T,)
    starts = np.flatnonzero(np.r_[True, (pages[1:] != pages[:-1]) | (lines[1:] != lines[:-1])])  # (n,)
    ends = np.r_[starts[1:], total]
    texts = tokenizer.batch_decode([ids[a:b] for a, b in zip(starts, ends, strict=True)], skip_special_tokens=True)
    return [
        TextLine(text.rstrip("\n"), int(a), Location(int(pages[a]) or None, int(lines[a]), 0))
        for text, a in zip(texts, starts, strict=True)
    ]


def _key(text: str) -> str:
    return " ".join("".join(ch.lower() if ch.isalnum() else " " for ch in text).split())


def placed(headings: list[Heading], lines: list[TextLine]) -> list[Section]:
    """Each heading at the first token of its line: the same line, or for a bookmark (no line) the line on its page
    that names it, else that page's first line. Headings that cannot be placed are left out."""
    by_place = {(line.location.page, line.location.line): line for line in lines}
    first_on_page: dict[int | None, TextLine] = {}
    for line in lines:
        first_on_page.setdefault(line.location.page, line)
    sections = []
    for heading in headings:
        line = by_place.get((heading.page, heading.line)) if heading.line is not None else None
        if line is None and heading.line is None:
            wanted = _key(heading.title)
            on_page = [candidate for candidate in lines if candidate.location.page == heading.page]
            line = next((c for c in on_page if wanted and wanted in _key(c.text)), first_on_page.get(heading.page))
        if line is not None:
            sections.append(Section(heading.level, heading.title, line.token, line.location.page, line.location.line))
    return sorted(sections, key=lambda section: section.token)


def document_outline(
    files: DocumentFiles,
    document: DocumentRecord,
    token_path: Path,
    location_map: TokenLocationMap,
    tokenizer,
    lines: list[TextLine] | None = None,
) -> list[Section]:
    """The document's outline, kept after it is first built (a kept one for other content or tokens is rebuilt).
    `lines`: its text_lines, when the caller has them."""
    kept = files.load_outline(document.id)
    identity = {"method": OUTLINE_METHOD, "content": document.content_hash, "tokens": token_path.name}
    if kept and all(kept.get(key) == value for key, value in identity.items()):
        return [Section(**section) for section in kept["sections"]]
    lines = lines if lines is not None else text_lines(token_path, location_map, tokenizer)
    headings: list[Heading] = []
    source = unchanged_source(document) if document.kind == "pdf" else None
    if source is not None:
        headings = pdf_bookmarks(source)
    if not headings:
        headings = text_headings((line.text, line.location) for line in lines)
    sections = placed(headings, lines)
    try:
        files.save_outline(document.id, {**identity, "sections": [asdict(section) for section in sections]})
    except OSError:  # a read-only data folder: built again next time
        pass
    return sections
