"""Reader for HTML pages (optionally compressed), streamed through the HTML-to-lines extractor."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from ..blocks import BLOCK_CHARS, Block, BlockBuilder
from ..errors import IngestError
from ..htmltext import HtmlTextExtractor, MalformedMarkup
from ..textdecode import TextDecoder
from .base import ReadContext
from .text import TextReader


def markup_blocks(
    chunks: Iterable[str],
    builder: BlockBuilder,
    *,
    name: str,
    page: int | None,
    bytes_done: Callable[[], int],
    include_title: bool,
) -> Iterator[Block]:
    """Feed decoded HTML/XHTML chunks through the extractor; lines are numbered from 1.

    Yields full blocks as they fill; the caller takes the last, partial block.
    """
    extractor = HtmlTextExtractor(include_title=include_title)
    line = 1
    finished = False
    chunks = iter(chunks)
    while not finished:
        chunk = next(chunks, None)
        try:
            if chunk is None:
                extractor.close()
                finished = True
            else:
                extractor.feed(chunk)
        except MalformedMarkup:
            message = f"'{name}' has broken markup (an unterminated tag or comment); it cannot be read"
            raise IngestError(message) from None
        for text, ends_line in extractor.pop():
            if ends_line:
                line = builder.add_lines(text + "\n", line, page)
            else:
                builder.add_piece(text, line, page)
        if builder.size >= BLOCK_CHARS:
            yield builder.take(bytes_done())


class HtmlReader(TextReader):
    """HTML page: same byte streaming and decoding as text, then markup to lines."""

    kind = "html"

    def blocks(self, ctx: ReadContext) -> Iterator[Block]:
        decoder = self._decoder()
        chunks = (decoder.decode(data) for data in self._chunks(ctx))
        builder = BlockBuilder()

        def decoded() -> Iterator[str]:
            yield from chunks
            yield decoder.decode(b"", final=True)

        yield from markup_blocks(
            decoded(), builder, name=self.name, page=None, bytes_done=lambda: ctx.raw.bytes_done, include_title=True
        )
        block = builder.take(ctx.raw.bytes_done)
        if block is not None:
            yield block
        for note in decoder.warnings(self.encoding):
            ctx.warn(note)

    def _decoder(self) -> TextDecoder:
        # Unlike logs, markup has no terminal escape codes worth stripping.
        return TextDecoder(self.encoding, newline=self.newline)
