"""The reader base class and the per-pass context readers report progress and warnings to."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..blocks import Block
from ..rawbytes import RawReader
from ..span import TextSpan


@dataclass(frozen=True, slots=True)
class Source:
    """The file being read, as it was when it was opened."""

    path: Path
    name: str
    size_bytes: int


class ReadContext:
    """One pass over a document: the raw byte reader (position and fingerprint), the span read, and warnings."""

    def __init__(self, source: Source, *, hashing: bool = True, span: TextSpan | None = None) -> None:
        self.span = span or TextSpan()
        end = source.size_bytes if self.span.end_byte is None else min(self.span.end_byte, source.size_bytes)
        self.raw = RawReader(source.path, end, source.name, hashing=hashing, start=self.span.start_byte)
        self.warnings: list[str] = []

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def close(self) -> None:
        self.raw.close()


class Reader(ABC):
    """Base of all readers.

    The constructor does the cheap up-front checks (and raises IngestError); ``blocks``
    does the actual reading lazily and may be called once per pass.
    """

    kind: ClassVar[str]
    page_label: ClassVar[str] = "page"

    def __init__(self, source: Source) -> None:
        self.source = source
        self.pages: int | None = None

    @property
    def name(self) -> str:
        return self.source.name

    @abstractmethod
    def blocks(self, ctx: ReadContext) -> Iterator[Block]:
        """Yield the document's text as Blocks, in reading order."""


def format_numbers(numbers: list[int]) -> str:
    """'3, 7, 10-12' for [3, 7, 10, 11, 12]."""
    ranges: list[str] = []
    start = prev = None
    for number in numbers + [None]:
        if start is not None and (number is None or number != prev + 1):
            ranges.append(str(start) if start == prev else f"{start}-{prev}")
            start = None
        if number is not None and start is None:
            start = number
        prev = number
    return ", ".join(ranges)
