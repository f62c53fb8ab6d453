"""The token stream: a document's tokens in bounded chunks, with location map, fingerprint and progress."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

from .errors import IngestError
from .locmap import TokenLocationMap
from .span import TextSpan
from .tokenizer import make_encoder

# Before any text is tokenized the only clue is the file size; ~4 bytes per token
# is typical for English text with modern BPE vocabularies.
_BYTES_PER_TOKEN_GUESS = 4


@dataclass(frozen=True, slots=True)
class Progress:
    """Snapshot passed to the progress callback after every block (and once at the end, with done=True)."""

    bytes_done: int
    bytes_total: int
    tokens_done: int
    tokens_estimated: int
    done: bool = False

    @property
    def fraction(self) -> float:
        return 1.0 if self.done or not self.bytes_total else min(1.0, self.bytes_done / self.bytes_total)


class TokenStream:
    """Iterate once to get ``list[int]`` chunks of at most ``chunk_tokens`` ids.

    The chunks concatenate to the document's tokens (no special tokens added). Once
    iteration has finished, ``location_map`` is complete, ``fingerprint`` is the SHA-256
    of the file's bytes and ``warnings`` lists what the reader had to skip or repair.
    Memory stays bounded by the block size whatever the size of the document.
    An exception raised by the progress callback stops the stream (a way to cancel).

    With a `span` only those bytes of a growing text file are read; ``fingerprint`` is then the SHA-256
    of the bytes read, and the given `location_map` (of the bytes before the span) is extended.
    """

    def __init__(
        self,
        text_pass: Callable[..., AbstractContextManager],
        size_bytes: int,
        no_text_message: str,
        tokenizer,
        chunk_tokens: int = 2048,
        progress: Callable[[Progress], object] | None = None,
        span: TextSpan | None = None,
        location_map: TokenLocationMap | None = None,
    ) -> None:
        if not isinstance(chunk_tokens, int) or isinstance(chunk_tokens, bool) or chunk_tokens < 1:
            raise ValueError(f"chunk_tokens must be a positive integer, not {chunk_tokens!r}")
        if location_map is not None and (span is None or span.start_byte == 0):
            raise ValueError("only a span that continues an earlier read extends a location map")
        self._text_pass = text_pass  # Document's pass over its text blocks: pass(hashing=, span=) -> context
        self._size_bytes = size_bytes
        self._no_text_message = no_text_message
        self._encoder = make_encoder(tokenizer)
        self._chunk_tokens = chunk_tokens
        self._progress = progress
        self._started = False
        self._span = span
        if location_map is not None:
            location_map.reopen()
        self.location_map = location_map if location_map is not None else TokenLocationMap()
        self.fingerprint: str | None = None
        self.warnings: list[str] = []
        self.tokens_done = 0
        self.bytes_done = 0
        self.end_byte: int | None = None  # once complete: the byte offset where reading stopped
        self.complete = False

    def __iter__(self) -> Iterator[list[int]]:
        if self._started:
            raise RuntimeError("a token stream can be iterated only once; call doc.token_stream() again")
        self._started = True
        return self._run()

    def _report(self, done: bool = False) -> None:
        if self._progress is None:
            return
        total = self._size_bytes
        if done:
            estimate = self.tokens_done
        elif self.bytes_done and self.tokens_done:
            estimate = max(self.tokens_done, round(self.tokens_done * total / self.bytes_done))
        else:
            estimate = total // _BYTES_PER_TOKEN_GUESS
        self._progress(Progress(self.bytes_done, total, self.tokens_done, estimate, done))

    def _run(self) -> Iterator[list[int]]:
        size = self._chunk_tokens
        pending: list[int] = []
        has_text = False
        self._report()
        with self._text_pass(hashing=True, span=self._span) as ctx:
            for block in ctx.blocks:
                ids, counts = self._encoder.encode(block)
                self.location_map.add_block(block, counts)
                has_text = has_text or not block.text.isspace()
                self.tokens_done += len(ids)
                self.bytes_done = block.bytes_done
                pending.extend(ids)
                if len(pending) >= size:
                    cut = len(pending) - len(pending) % size
                    for start in range(0, cut, size):
                        yield pending[start : start + size]
                    del pending[:cut]
                self._report()
            self.fingerprint = ctx.finish()
            self.warnings = ctx.warnings
        continues = self._span is not None and self._span.start_byte > 0
        if not has_text and not continues:  # appended blank lines are fine; a document of blanks is not
            raise IngestError(self._no_text_message)
        if pending:
            yield pending
        self.end_byte = ctx.raw.bytes_done
        self.bytes_done = self._size_bytes
        # A continued map covers bytes this stream did not hash, so it has no fingerprint of its own.
        self.location_map.finish(None if continues else self.fingerprint)
        self.complete = True
        self._report(done=True)
