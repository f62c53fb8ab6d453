"""Compact token-index -> location map, built while streaming and saved as a small .npz file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from .blocks import Block
from .errors import IngestError
from .location import Location

_FORMAT_VERSION = 1
# Absolute positions are stored for every CHECKPOINT-th run only; a lookup sums at
# most this many small per-run numbers from the nearest checkpoint.
_CHECKPOINT = 1024
_ARRAYS = ("tokens", "chars", "line_at", "line_value", "page_at", "page_value")


class TokenLocationMap:
    """Maps token indexes of a document's token stream to Locations.

    One *run* per segment (a line or a piece of a long line): its token count and the
    distance in characters from the previous run's start, 8 bytes in all. Lines are
    not stored per run: they go up by one from run to run except at the few runs
    listed as exceptions (page starts, pieces of long lines), and pages change only at
    the runs listed for them. A 1 GB log of 100-byte lines thus costs about 80 MB in
    memory and much less on disk, where the arrays are zlib-compressed.
    """

    def __init__(self) -> None:
        self._token_parts: list[np.ndarray] = []
        self._char_parts: list[np.ndarray] = []
        self._line_at: list[int] = []
        self._line_value: list[int] = []
        self._page_at: list[int] = []
        self._page_value: list[int] = []
        self._runs = 0
        self._tokens = 0
        self._last_line = 0
        self._last_page: int | None = None
        self._last_offset = 0
        self._chars_end: int | None = 0  # characters mapped; None for maps saved before it was recorded
        self._compiled: tuple | None = None
        self.fingerprint: str | None = None
        self.complete = False

    # -- building ----------------------------------------------------------------
    def add_block(self, block: Block, counts: np.ndarray) -> None:
        """Record one block's segments, ``counts[i]`` being segment i's number of tokens."""
        if self.complete:
            raise RuntimeError("the location map is complete")
        n = len(block)
        if not n:
            return
        counts = np.asarray(counts, dtype=np.uint32)
        offsets = np.frombuffer(block.starts, dtype=np.int64) + block.char_offset
        lines = np.frombuffer(block.lines, dtype=np.int64)
        self._token_parts.append(counts)
        self._char_parts.append(np.diff(offsets, prepend=self._last_offset).astype(np.uint32))
        expected = np.empty(n, dtype=np.int64)
        expected[0] = self._last_line + 1
        expected[1:] = lines[:-1] + 1
        changed = lines != expected
        changed[0] |= self._runs == 0  # lookups need an entry for the first run
        for index in np.flatnonzero(changed).tolist():
            self._line_at.append(self._runs + index)
            self._line_value.append(int(lines[index]))
        if self._runs == 0 or block.page != self._last_page:
            self._page_at.append(self._runs)
            self._page_value.append(block.page or 0)
        self._runs += n
        self._tokens += int(counts.sum(dtype=np.int64))
        self._last_line = int(lines[-1])
        self._last_page = block.page
        self._last_offset = int(offsets[-1])
        self._chars_end = block.char_offset + len(block.text)
        self._compiled = None

    def reopen(self) -> None:
        """Make a complete (saved or loaded) map extensible again: a grown log's new lines are added to it."""
        if not self.complete:
            return
        if self._chars_end is None:
            raise IngestError("the location map was saved by an older version and cannot be extended")
        if self._runs:
            last = self._runs - 1
            self._last_offset = self._run_offset(last)
            self._last_line = self.next_line - 1
            self._last_page = int(self._page_value[-1]) or None
        self.fingerprint = None
        self.complete = False

    def _run_offset(self, run: int) -> int:
        _, chars, _, checkpoint_chars, *_ = self._compile()
        checkpoint = run // _CHECKPOINT
        first = checkpoint * _CHECKPOINT
        return int(checkpoint_chars[checkpoint]) + int(chars[first + 1 : run + 1].sum(dtype=np.int64))

    @property
    def next_line(self) -> int:
        """The line number after the last one mapped (where a continued read of a grown log starts)."""
        if not self._runs:
            return 1
        # lines go up by one per run after the last listed exception (a loaded map keeps no _last_line)
        return int(self._line_value[-1]) + self._runs - 1 - int(self._line_at[-1]) + 1

    @property
    def chars_end(self) -> int | None:
        """Characters of text mapped (the offset where a continued read starts); None for old maps."""
        return self._chars_end

    def finish(self, fingerprint: str | None) -> None:
        """Mark the map complete; only complete maps can be saved."""
        self._consolidate()
        self.fingerprint = fingerprint
        self.complete = True

    def _consolidate(self) -> None:
        if len(self._token_parts) > 1:
            self._token_parts = [np.concatenate(self._token_parts)]
            self._char_parts = [np.concatenate(self._char_parts)]

    # -- queries -----------------------------------------------------------------
    def __len__(self) -> int:
        """Number of tokens mapped."""
        return self._tokens

    @property
    def runs(self) -> int:
        return self._runs

    @property
    def nbytes(self) -> int:
        """Memory taken by the per-run arrays."""
        return sum(part.nbytes for part in self._token_parts + self._char_parts)

    def _compile(self) -> tuple:
        if self._compiled is None:
            self._consolidate()
            tokens = self._token_parts[0] if self._token_parts else np.zeros(0, np.uint32)
            chars = self._char_parts[0] if self._char_parts else np.zeros(0, np.uint32)
            self._compiled = (
                tokens,
                chars,
                _sums_before_checkpoints(tokens),
                # A run's offset includes its own delta (the first run's delta is its offset).
                _sums_before_checkpoints(chars) + chars[::_CHECKPOINT],
                np.asarray(self._line_at, np.int64),
                np.asarray(self._line_value, np.int64),
                np.asarray(self._page_at, np.int64),
                np.asarray(self._page_value, np.int64),
            )
        return self._compiled

    def _run_of(self, token_index: int) -> int:
        if not 0 <= token_index < self._tokens:
            raise IndexError(f"token index {token_index} out of range (the map has {self._tokens:,} tokens)")
        tokens, _, checkpoint_tokens, *_ = self._compile()
        checkpoint = int(np.searchsorted(checkpoint_tokens, token_index, side="right")) - 1
        first = checkpoint * _CHECKPOINT
        local = tokens[first : first + _CHECKPOINT]
        starts = checkpoint_tokens[checkpoint] + np.cumsum(local, dtype=np.int64) - local
        # Runs without tokens share their start with the next run; side="right" picks
        # the last run starting at or before the token, which is the one holding it.
        return first + int(np.searchsorted(starts, token_index, side="right")) - 1

    def location(self, token_index: int) -> Location:
        """Where the token at ``token_index`` came from (the start of its segment)."""
        run = self._run_of(token_index)
        *_, line_at, line_value, page_at, page_value = self._compile()
        offset = self._run_offset(run)
        exception = int(np.searchsorted(line_at, run, side="right")) - 1
        line = int(line_value[exception]) + run - int(line_at[exception])
        return Location(self._page(run, page_at, page_value), line, offset)

    def page_of(self, token_index: int) -> int | None:
        """Page (or EPUB chapter) of a token; None for documents without pages."""
        run = self._run_of(token_index)
        *_, page_at, page_value = self._compile()
        return self._page(run, page_at, page_value)

    @staticmethod
    def _page(run: int, page_at: np.ndarray, page_value: np.ndarray) -> int | None:
        page = int(page_value[int(np.searchsorted(page_at, run, side="right")) - 1])
        return page or None

    def pages_of(self, token_indexes) -> np.ndarray:
        """Vectorised ``page_of`` for many tokens (0 where a document has no pages)."""
        indexes = np.asarray(token_indexes, dtype=np.int64)
        if indexes.size and (indexes.min() < 0 or indexes.max() >= self._tokens):
            raise IndexError("token index out of range")
        tokens, *_, page_at, page_value = self._compile()
        starts = np.cumsum(tokens, dtype=np.int64) - tokens
        runs = np.searchsorted(starts, indexes, side="right") - 1
        return page_value[np.searchsorted(page_at, runs, side="right") - 1]

    def lines_of(self, token_indexes) -> np.ndarray:
        """Vectorised ``location(i).line`` for many tokens (restarting on every page, as ``Location.line`` does)."""
        indexes = np.asarray(token_indexes, dtype=np.int64)
        if indexes.size and (indexes.min() < 0 or indexes.max() >= self._tokens):
            raise IndexError("token index out of range")
        tokens, _, _, _, line_at, line_value, *_ = self._compile()
        starts = np.cumsum(tokens, dtype=np.int64) - tokens
        runs = np.searchsorted(starts, indexes, side="right") - 1
        exception = np.searchsorted(line_at, runs, side="right") - 1
        return line_value[exception] + runs - line_at[exception]

    # -- persistence -------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the map atomically: the file is either complete or not there at all."""
        if not self.complete:
            raise IngestError("the token stream did not finish, so its location map is incomplete and was not saved")
        path = Path(path)
        tokens, chars, *_ = self._compile()
        arrays = {
            "version": np.array([_FORMAT_VERSION, self._runs, self._tokens], dtype=np.int64),
            "fingerprint": np.frombuffer((self.fingerprint or "").encode("ascii"), dtype=np.uint8),
            "tokens": tokens,
            "chars": chars,
            "line_at": np.asarray(self._line_at, np.int64),
            "line_value": np.asarray(self._line_value, np.int64),
            "page_at": np.asarray(self._page_at, np.int64),
            "page_value": np.asarray(self._page_value, np.int64),
            "chars_end": np.array([-1 if self._chars_end is None else self._chars_end], dtype=np.int64),
        }
        handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False)
        try:
            with handle:
                np.savez_compressed(handle, **arrays)
            os.replace(handle.name, path)
        except BaseException:
            os.unlink(handle.name)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike) -> TokenLocationMap:
        path = Path(path)
        broken = IngestError(
            f"the location map '{path.name}' is damaged or from an incompatible version; ingest the document again"
        )
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {key: data[key] for key in ("version", "fingerprint", *_ARRAYS)}
                chars_end = int(data["chars_end"][0]) if "chars_end" in data.files else -1
        except FileNotFoundError:
            raise IngestError(f"the location map '{path.name}' was not found") from None
        except Exception:
            raise broken from None
        self = cls()
        try:
            version, runs, tokens = (int(value) for value in arrays["version"])
            self._token_parts = [arrays["tokens"].astype(np.uint32, casting="safe")]
            self._char_parts = [arrays["chars"].astype(np.uint32, casting="safe")]
            for key in ("line_at", "line_value", "page_at", "page_value"):
                setattr(self, "_" + key, arrays[key].astype(np.int64, casting="safe").tolist())
            valid = (
                version == _FORMAT_VERSION
                and len(self._token_parts[0]) == len(self._char_parts[0]) == runs
                and int(self._token_parts[0].sum(dtype=np.int64)) == tokens
                and len(self._line_at) == len(self._line_value)
                and len(self._page_at) == len(self._page_value)
                and (runs == 0 or (self._line_at[:1] == [0] and self._page_at[:1] == [0]))
                and all(np.diff(self._line_at) > 0)
                and all(np.diff(self._page_at) > 0)
                and all(0 <= at < max(runs, 1) for at in self._line_at + self._page_at)
            )
            fingerprint = arrays["fingerprint"].astype(np.uint8, casting="safe").tobytes().decode("ascii")
        except (ValueError, TypeError, UnicodeDecodeError):
            raise broken from None
        if not valid:
            raise broken
        self._runs, self._tokens = runs, tokens
        self._chars_end = chars_end if chars_end >= 0 else None
        self.fingerprint = fingerprint or None
        self.complete = True
        return self


def _sums_before_checkpoints(values: np.ndarray) -> np.ndarray:
    """Sum of ``values`` before every CHECKPOINT-th index, without a full-length cumulative array."""
    if not len(values):
        return np.zeros(0, np.int64)
    group_sums = np.add.reduceat(values, np.arange(0, len(values), _CHECKPOINT), dtype=np.int64)
    return np.cumsum(group_sums) - group_sums
