"""Reader for plain text, Markdown, CSV, JSON and logs, optionally gzip/bzip2/xz-compressed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import nullcontext

from ..blocks import BLOCK_CHARS, MAX_SEGMENT_CHARS, Block, BlockBuilder, split_long
from ..detect import DECOMPRESSION_ERRORS, damaged_compressed, open_decompressed
from ..errors import IngestError
from ..textdecode import TextDecoder
from .base import ReadContext, Reader, Source

READ_BYTES = 256 << 10


class TextReader(Reader):
    """Streams the file through an incremental decoder; one segment per line."""

    kind = "text"

    def __init__(
        self,
        source: Source,
        *,
        encoding: str,
        newline: str = "\n",
        compression: str | None = None,
        subtype: str = "plain",
    ) -> None:
        super().__init__(source)
        self.encoding = encoding
        self.newline = newline
        self.compression = compression
        self.subtype = subtype

    def _decoder(self, mid_file: bool) -> TextDecoder:
        # A span that starts inside the file must not look for the byte order mark the file starts with.
        encoding = "utf-8" if mid_file and self.encoding == "utf-8-sig" else self.encoding
        return TextDecoder(encoding, newline=self.newline, strip_ansi=True)

    def _chunks(self, ctx: ReadContext) -> Iterator[bytes]:
        """Raw (decompressed) bytes of the file in chunks."""
        opener = open_decompressed(ctx.raw, self.compression) if self.compression else nullcontext(ctx.raw)
        try:
            with opener as stream:
                while data := stream.read(READ_BYTES):
                    yield data
        except IngestError:
            raise
        except DECOMPRESSION_ERRORS:
            if self.compression is None:
                raise
            raise damaged_compressed(self.name, self.compression) from None

    def blocks(self, ctx: ReadContext) -> Iterator[Block]:
        decoder = self._decoder(mid_file=ctx.span.start_byte > 0)
        builder = BlockBuilder()
        builder.char_offset = ctx.span.char_offset
        line = ctx.span.first_line
        tail = ""  # the current, unfinished line
        for data in self._chunks(ctx):
            text = tail + decoder.decode(data)
            cut = text.rfind("\n") + 1
            tail = text[cut:]
            if cut:
                line = builder.add_lines(text[:cut], line)
            if len(tail) > MAX_SEGMENT_CHARS:
                # Never hold a whole over-long line: emit all but a short remainder.
                pieces = split_long(tail)
                tail = pieces.pop()
                builder.mark_split(line)
                for piece in pieces:
                    builder.add_piece(piece, line)
            if builder.size >= BLOCK_CHARS:
                yield builder.take(ctx.raw.bytes_done)
        builder.add_lines(tail + decoder.decode(b"", final=True), line)
        block = builder.take(ctx.raw.bytes_done)
        if block is not None:
            yield block
        for note in decoder.warnings(self.encoding):
            ctx.warn(note)
        if builder.split_lines:
            ctx.warn(
                f"{builder.split_lines:,} very long lines were split into pieces "
                f"of at most {MAX_SEGMENT_CHARS:,} characters"
            )
