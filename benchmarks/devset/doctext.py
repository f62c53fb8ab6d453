"""A development document's text as the project extracts it (infinipot.ingest), with quote lookup by location.

doc = DocText.load(path)
start = doc.find("The default weight value is 50")   # whitespace-insensitive; char offset or None
doc.locate(start)                                     # Location(page=4, line=..., char_offset=...)
doc.where(start)                                      # page for PDFs, line for text
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from pathlib import Path

from infinipot.ingest import Location, open_document


def _squash(text: str) -> tuple[str, list[int]]:
    """Text with every whitespace run made one space, and for each kept character its index in `text`."""
    out: list[str] = []
    index: list[int] = []
    pending_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            pending_space = bool(out)  # leading whitespace is dropped
            continue
        if pending_space:
            out.append(" ")
            index.append(i - 1)
            pending_space = False
        out.append(ch)
        index.append(i)
    return "".join(out), index


def squash(text: str) -> str:
    return " ".join(text.split())


@dataclass
class DocText:
    path: Path
    kind: str  # "pdf" | "text" | ...
    text: str  # the concatenation of the document's segments
    starts: list[int]  # where each segment starts in `text`
    locations: list[Location]
    _squashed: str = ""
    _index: list[int] | None = None

    @classmethod
    def load(cls, path: str | Path) -> DocText:
        doc = open_document(path)
        parts, starts, locations = [], [], []
        offset = 0
        for segment in doc.segments():
            parts.append(segment.text)
            starts.append(offset)
            locations.append(segment.location)
            offset += len(segment.text)
        return cls(Path(path), doc.kind, "".join(parts), starts, locations)

    def _ensure_index(self) -> None:
        if self._index is None:
            self._squashed, self._index = _squash(self.text)

    def find_all(self, quote: str) -> list[int]:
        """Character offsets in `text` where the quote starts, whitespace runs compared as one space."""
        self._ensure_index()
        needle = squash(quote)
        found, at = [], self._squashed.find(needle)
        while needle and at >= 0:
            found.append(self._index[at])
            at = self._squashed.find(needle, at + 1)
        return found

    def find(self, quote: str) -> int | None:
        found = self.find_all(quote)
        return found[0] if found else None

    def locate(self, offset: int) -> Location:
        """Location of the segment holding character `offset` of `text`."""
        i = max(0, bisect.bisect_right(self.starts, offset) - 1)
        return self.locations[i]

    def where(self, offset: int) -> int | None:
        """Page (PDF) or line (text) of the character at `offset`: what questions.jsonl's "where" holds."""
        location = self.locate(offset)
        return location.page if location.page is not None else location.line

    def page_or_line_label(self) -> str:
        return "page" if self.locations and self.locations[0].page is not None else "line"
