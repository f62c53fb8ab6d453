"""Part of a growing text file: which bytes to read, where they sit in the document, and prefix hashes.

A log that grows is read in spans. A span starts where the previous read stopped (always right after a
newline, so the decoder has no half-read character or CR pending) and ends at the last complete line:
the unfinished line after it waits for its newline, so a line is never split between two reads.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import IngestError
from .rawbytes import READ_CHUNK, describe_os_error

LINE_END = b"\n"


@dataclass(frozen=True)
class TextSpan:
    """Bytes [start_byte, end_byte) of a text file; end_byte None: up to the size the file had when opened.

    first_line and char_offset say where the span's first character sits in the whole document, so the
    location map goes on counting lines and characters where the previous read stopped.
    """

    start_byte: int = 0
    end_byte: int | None = None
    first_line: int = 1
    char_offset: int = 0

    def __post_init__(self) -> None:
        if self.start_byte < 0 or self.char_offset < 0 or self.first_line < 1:
            raise ValueError(f"a text span starts at a byte, character and line of the file, got {self}")
        if self.end_byte is not None and self.end_byte < self.start_byte:
            raise ValueError(f"a text span cannot end (byte {self.end_byte}) before it starts ({self.start_byte})")
        if self.start_byte == 0 and (self.first_line, self.char_offset) != (1, 0):
            raise ValueError("a span from the start of the file starts at line 1, character 0")


def last_line_end(path: str | os.PathLike, size: int) -> int:
    """Bytes of the first `size` bytes of the file up to and including their last newline (0: none yet)."""
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            end = size
            while end > 0:
                start = max(0, end - READ_CHUNK)
                handle.seek(start)
                found = handle.read(end - start).rfind(LINE_END)
                if found >= 0:
                    return start + found + 1
                end = start
    except OSError as exc:
        raise IngestError(describe_os_error(path.name, exc)) from None
    return 0


def prefix_hashes(path: str | os.PathLike, lengths: list[int]) -> list[str | None]:
    """sha256 hex of the file's first n bytes for each n in `lengths`, in one pass; None where the file is shorter."""
    path = Path(path)
    digests: dict[int, str] = {}
    wanted = sorted(set(lengths))
    hasher = hashlib.sha256()
    done = 0
    try:
        with open(path, "rb") as handle:
            for length in wanted:
                while done < length:
                    data = handle.read(min(READ_CHUNK, length - done))
                    if not data:
                        break
                    hasher.update(data)
                    done += len(data)
                if done < length:
                    break
                digests[length] = hasher.hexdigest()
    except OSError as exc:
        raise IngestError(describe_os_error(path.name, exc)) from None
    return [digests.get(length) for length in lengths]


def ends_a_line(path: str | os.PathLike, length: int) -> bool:
    """Whether the file's first `length` bytes end with a newline (a read that stopped there split no line)."""
    if length <= 0:
        return False
    path = Path(path)
    try:
        with open(path, "rb") as handle:
            handle.seek(length - 1)
            return handle.read(1) == LINE_END
    except OSError as exc:
        raise IngestError(describe_os_error(path.name, exc)) from None
