"""Where a piece of extracted text came from: page or chapter, line and character offset."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Location:
    """Position of a segment in its document.

    page: 1-based page (PDF, or a Word file that Word has paginated), 1-based chapter
        for EPUB, None for text, HTML and unpaginated Word files.
    line: 1-based line of the extracted text; it restarts at 1 on every page or
        chapter when ``page`` is set, and counts from the start of the document otherwise.
    char_offset: offset of the segment in the extracted text stream, i.e. in the
        concatenation of all segment texts of the document.
    """

    page: int | None
    line: int | None
    char_offset: int

    def describe(self, page_label: str = "page") -> str:
        """Short citation such as ``"page 3, line 12"`` or ``"line 1,234"``."""
        parts = []
        if self.page is not None:
            parts.append(f"{page_label} {self.page:,}")
        if self.line is not None:
            parts.append(f"line {self.line:,}")
        return ", ".join(parts) or f"character {self.char_offset:,}"


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of extracted text (a line, or a bounded piece of a very long line)."""

    text: str
    location: Location
