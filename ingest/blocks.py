"""Blocks: batches of consecutive segments that readers hand to the tokenizer, and their builder."""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate

from .location import Location, Segment

# A segment never exceeds this many characters, so a 50 MB line is never held
# (or tokenized) whole, and the location map can store lengths compactly.
MAX_SEGMENT_CHARS = 8192

# Readers cut blocks around this size: large enough to amortise per-block work,
# small enough that a block and its encodings take a few tens of MB at most.
BLOCK_CHARS = 256 << 10


@dataclass(frozen=True, slots=True)
class Block:
    """Consecutive segments on one page, stored as one string plus segment starts.

    starts[i] is where segment i begins in ``text``; lines[i] is its line number.
    bytes_done is how far into the raw file the reader had got when it cut the block.
    """

    text: str
    starts: array
    lines: array
    page: int | None
    char_offset: int
    bytes_done: int

    def __len__(self) -> int:
        return len(self.starts)

    def segments(self) -> Iterator[Segment]:
        text, starts, lines, page, base = self.text, self.starts, self.lines, self.page, self.char_offset
        ends = list(starts[1:]) + [len(text)]
        for start, end, line in zip(starts, ends, lines, strict=True):
            yield Segment(text[start:end], Location(page, line, base + start))


def split_long(text: str, limit: int = MAX_SEGMENT_CHARS) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters.

    Cuts go just before a space near the end of each window when there is one: BPE
    tokenizers attach a space to the word after it, so a piece starting with " word"
    tokenizes exactly as it would have inside the whole line.
    """
    pieces = []
    start = 0
    window = max(1, limit // 8)
    while len(text) - start > limit:
        end = start + limit
        cut = text.rfind(" ", end - window, end + 1)
        cut = end if cut <= start else cut
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


class BlockBuilder:
    """Collects lines and line pieces into Blocks, tracking offsets and splitting long lines."""

    def __init__(self) -> None:
        self.char_offset = 0  # absolute offset of the pending block's first character
        self.split_lines = 0  # lines that were too long and were cut into pieces
        self._last_split_line: int | None = None
        self._reset(None)

    def _reset(self, page: int | None) -> None:
        self._parts: list[str] = []
        self._starts = array("q")
        self._lines = array("q")
        self._size = 0
        self._page = page

    @property
    def size(self) -> int:
        """Characters waiting in the pending block."""
        return self._size

    def _check_page(self, page: int | None) -> None:
        if page != self._page:
            if self._size:
                raise RuntimeError("take() the pending block before changing page")
            self._page = page

    def add_lines(self, text: str, first_line: int, page: int | None = None) -> int:
        """Add whole lines, each ending in a newline except perhaps the last one.

        Returns the number of the line that follows ``text``.
        """
        self._check_page(page)
        parts = text.split("\n")
        last = parts.pop()
        lengths = [len(part) + 1 for part in parts]
        if last:
            lengths.append(len(last))
        if not lengths:
            return first_line
        if max(lengths) <= MAX_SEGMENT_CHARS:
            # Fast path for ordinary text: no per-line Python work beyond lengths.
            self._starts.extend(accumulate(lengths[:-1], initial=self._size))
            self._lines.extend(range(first_line, first_line + len(lengths)))
            self._parts.append(text)
            self._size += len(text)
        else:
            pos = 0
            for line, length in enumerate(lengths, first_line):
                self.add_piece(text[pos : pos + length], line, page)
                pos += length
        return first_line + len(parts)

    def add_piece(self, text: str, line: int, page: int | None = None) -> None:
        """Add text that belongs to ``line`` without ending it (or a whole line, if it ends in a newline)."""
        self._check_page(page)
        if len(text) > MAX_SEGMENT_CHARS:
            self.mark_split(line)
        for piece in split_long(text):
            if piece:
                self._starts.append(self._size)
                self._lines.append(line)
                self._parts.append(piece)
                self._size += len(piece)

    def mark_split(self, line: int) -> None:
        """Count ``line`` as one that had to be cut into pieces."""
        if self._last_split_line != line:
            self.split_lines += 1
            self._last_split_line = line

    def take(self, bytes_done: int) -> Block | None:
        """Return the pending block (None if empty) and start a new one on the same page."""
        if not self._size:
            return None
        block = Block(
            text="".join(self._parts),
            starts=self._starts,
            lines=self._lines,
            page=self._page,
            char_offset=self.char_offset,
            bytes_done=bytes_done,
        )
        self.char_offset += self._size
        self._reset(self._page)
        return block
