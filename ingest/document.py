"""open_document and Document: a detected, vetted file ready to be read or tokenized."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .blocks import Block
from .detect import Detection, detect
from .errors import IngestError
from .location import Segment
from .locmap import TokenLocationMap
from .rawbytes import describe_os_error, not_a_regular_file, special_file_kind
from .readers.base import ReadContext, Reader, Source
from .span import TextSpan
from .tokenstream import Progress, TokenStream


class _Pass(ReadContext):
    """A ReadContext plus the reader's block iterator for one pass."""

    blocks: Iterator[Block]

    def finish(self) -> str | None:
        fingerprint = self.raw.finish()
        if self.raw.grew and self.span.end_byte is None:  # a span stops short of the file's end on purpose
            self.warn(f"the file grew while it was being read; only its first {self.raw.bytes_done:,} bytes were used")
        return fingerprint


def _make_reader(source: Source, detection: Detection) -> Reader:
    # Readers import their parsing libraries lazily, so only what a file needs is loaded.
    if detection.kind == "pdf":
        from .readers.pdf import PdfReader

        return PdfReader(source)
    if detection.kind == "docx":
        from .readers.docx import DocxReader

        return DocxReader(source)
    if detection.kind == "epub":
        from .readers.epub import EpubReader

        return EpubReader(source)
    options = dict(
        encoding=detection.encoding,
        newline=detection.newline,
        compression=detection.compression,
        subtype=detection.subtype,
    )
    if detection.kind == "html":
        from .readers.html import HtmlReader

        return HtmlReader(source, **options)
    from .readers.text import TextReader

    return TextReader(source, **options)


def open_document(path: str | os.PathLike) -> Document:
    """Open a document, detecting its type from its content.

    Raises IngestError, with a one-line message for the user, for files that are
    missing, unreadable, empty, of an unsupported type, damaged or encrypted, as far
    as that can be checked without reading the whole file.
    """
    path = Path(path)
    name = path.name or str(path)
    try:
        if path.is_dir():
            raise IngestError(f"'{name}' is a folder, not a file")
        status = path.stat()
        special = special_file_kind(status.st_mode)
        if special is not None:
            raise IngestError(not_a_regular_file(name, special))
        size = status.st_size
        if size == 0:
            raise IngestError(f"'{name}' is empty (0 bytes)")
        detection = detect(path, name, size)
    except OSError as exc:
        raise IngestError(describe_os_error(name, exc)) from None
    source = Source(path=path, name=name, size_bytes=size)
    try:
        reader = _make_reader(source, detection)
    except OSError as exc:
        raise IngestError(describe_os_error(name, exc)) from None
    return Document(source, detection, reader)


class Document:
    """A readable document. Obtain it with ``open_document``.

    kind: "pdf" | "docx" | "epub" | "html" | "text"; subtype refines text
    ("plain", "markdown", "csv", "tsv", "json", "log"). pages: page count for PDFs and
    Word files that Word paginated, chapter count for EPUBs (see page_label), else None.
    """

    def __init__(self, source: Source, detection: Detection, reader: Reader) -> None:
        self._source = source
        self._detection = detection
        self._reader = reader
        self.warnings: list[str] = []  # from the last completed pass

    kind = property(lambda self: self._reader.kind)
    subtype = property(lambda self: self._detection.subtype)
    name = property(lambda self: self._source.name)
    path = property(lambda self: self._source.path)
    size_bytes = property(lambda self: self._source.size_bytes)
    pages = property(lambda self: self._reader.pages)
    page_label = property(lambda self: self._reader.page_label, doc="What Location.page counts: 'page' or 'chapter'.")
    encoding = property(lambda self: self._detection.encoding, doc="Text encoding used (text and HTML only).")
    compression = property(lambda self: self._detection.compression, doc="'gzip', 'bzip2', 'xz' or None.")

    def __repr__(self) -> str:
        return f"<Document {self.name!r} kind={self.kind} size={self.size_bytes:,} pages={self.pages}>"

    @property
    def can_grow(self) -> bool:
        """Whether the file can be read in spans as it grows: uncompressed text whose newline is the byte 0x0A.

        UTF-8 and the 8-bit encodings qualify; UTF-16 text, CR-only line ends, compressed files and the
        paged formats do not (a new byte there can change what the earlier bytes mean).
        """
        detection = self._detection
        if self.kind != "text" or detection.compression is not None or detection.newline != "\n":
            return False
        try:
            return "\n".encode(detection.encoding) == b"\n"
        except (LookupError, TypeError):
            return False

    @contextmanager
    def _pass(self, *, hashing: bool, span: TextSpan | None = None) -> Iterator[_Pass]:
        if span is not None and not self.can_grow:
            raise ValueError(f"'{self.name}' is not uncompressed 8-bit or UTF-8 text, so it cannot be read in spans")
        context = _Pass(self._source, hashing=hashing, span=span)
        context.blocks = self._reader.blocks(context)
        try:
            yield context
            self.warnings = list(context.warnings)
        finally:
            context.blocks.close()
            context.close()

    def segments(self) -> Iterator[Segment]:
        """The document's text as located segments (lines or pieces of long lines), lazily."""
        with self._pass(hashing=False) as context:
            for block in context.blocks:
                yield from block.segments()
            context.finish()

    def token_stream(
        self,
        tokenizer,
        chunk_tokens: int = 2048,
        progress: Callable[[Progress], object] | None = None,
        span: TextSpan | None = None,
        location_map: TokenLocationMap | None = None,
    ) -> TokenStream:
        """Tokenize the document (or the `span` of a growing text file) in a single streaming pass.

        With `location_map` (the stored map of the bytes before the span) the stream extends that map.
        """
        return TokenStream(
            self._pass,
            self.size_bytes,
            self._no_text_message(),
            tokenizer,
            chunk_tokens=chunk_tokens,
            progress=progress,
            span=span,
            location_map=location_map,
        )

    def _no_text_message(self) -> str:
        if self.kind == "pdf":
            return (
                f"'{self.name}' has no extractable text: its pages look like scanned images; "
                "run OCR on it (e.g. ocrmypdf) and add the result"
            )
        return f"'{self.name}' contains no text"
