"""Reader for Word .docx files with python-docx: paragraphs, headings and tables in document order."""

from __future__ import annotations

import re
from collections.abc import Iterator

from ..blocks import BLOCK_CHARS, Block, BlockBuilder
from ..errors import IngestError
from ..zipsafe import damaged, open_zip, read_member, verify_member
from .base import ReadContext, Reader, Source

_LABEL = "Word (.docx)"
_MAIN_PART = "word/document.xml"
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_TEXT, _RENDERED_BREAK = _W + "t", _W + "lastRenderedPageBreak"
_MAIN_CONTENT_TYPE = re.compile(rb'PartName="/word/document\.xml"\s+ContentType="([^"]+)"')


class _Scan:
    """lxml parser target: checks the XML is well formed and counts Word's rendered page breaks."""

    def __init__(self) -> None:
        self.rendered_breaks = 0

    def start(self, tag: str, attrib: dict) -> None:
        if tag == _RENDERED_BREAK:
            self.rendered_breaks += 1

    def end(self, tag: str) -> None:
        pass

    def data(self, data: str) -> None:
        pass

    def close(self) -> _Scan:
        return self


def _page_breaks(element) -> tuple[int, int]:
    """Rendered page breaks in an element before and after its first text."""
    before = after = 0
    seen_text = False
    for node in element.iter(_TEXT, _RENDERED_BREAK):
        if node.tag == _TEXT:
            seen_text = seen_text or bool(node.text and node.text.strip())
        elif seen_text:
            after += 1
        else:
            before += 1
    return before, after


class DocxReader(Reader):
    """Paragraphs and table rows become lines; headings get '#' marks, list items '- '.

    Word stores where it last broke pages when it saved the file; when those marks
    are present they give page numbers, otherwise ``page`` is None.
    """

    kind = "docx"

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        with open_zip(source.path, self.name, _LABEL) as archive:
            content_types = read_member(archive, "[Content_Types].xml", self.name, _LABEL, 4 << 20)
            match = _MAIN_CONTENT_TYPE.search(content_types)
            content_type = match.group(1) if match else b""
            if b"macroEnabled" in content_type or b"template" in content_type:
                raise IngestError(
                    f"'{self.name}' is a Word template or macro-enabled file; save it as a regular .docx first"
                )
            verify_member(archive, _MAIN_PART, self.name, _LABEL)
            breaks = self._scan(archive)
        self.pages = breaks + 1 if breaks else None

    def _scan(self, archive) -> int:
        from lxml import etree

        parser = etree.XMLParser(target=_Scan(), resolve_entities=False, no_network=True)
        try:
            with archive.open(_MAIN_PART) as handle:
                while chunk := handle.read(1 << 20):
                    parser.feed(chunk)
            return parser.close().rendered_breaks
        except etree.XMLSyntaxError:
            raise damaged(self.name, _LABEL) from None

    def blocks(self, ctx: ReadContext) -> Iterator[Block]:
        try:
            yield from self._blocks(ctx)
        except IngestError:
            raise
        except Exception as exc:
            # python-docx fails in many ways on malformed parts; all mean a damaged file.
            raise damaged(self.name, _LABEL) from exc

    def _blocks(self, ctx: ReadContext) -> Iterator[Block]:
        import docx
        from docx.text.paragraph import Paragraph

        document = docx.Document(str(self.source.path))
        total = max(1, len(document.element.body))
        builder = BlockBuilder()
        page = 1 if self.pages else None
        line = 1
        for index, item in enumerate(document.iter_inner_content(), 1):
            if isinstance(item, Paragraph):
                units = [(self._paragraph_text(item), item._p)]
            else:
                units = [(_row_text(row), row._tr) for row in item.rows]
            for text, element in units:
                before, after = _page_breaks(element) if page else (0, 0)
                if before:
                    block = builder.take(ctx.raw.bytes_done)
                    if block is not None:
                        yield block
                    page, line = page + before, 1
                if text:
                    line = builder.add_lines(text + "\n", line, page)
                if after:
                    block = builder.take(ctx.raw.bytes_done)
                    if block is not None:
                        yield block
                    page, line = page + after, 1
            done = self.source.size_bytes * index // total
            ctx.raw.advance_to(done)
            if builder.size >= BLOCK_CHARS:
                yield builder.take(done)
        block = builder.take(self.source.size_bytes)
        if block is not None:
            yield block

    @staticmethod
    def _paragraph_text(paragraph) -> str:
        text = paragraph.text.strip()
        if not text:
            return ""
        style = (paragraph.style.name or "") if paragraph.style is not None else ""
        if style == "Title":
            return "# " + text
        if style.startswith("Heading ") and style[8:].isdigit():
            return "#" * min(6, int(style[8:])) + " " + text
        properties = paragraph._p.pPr
        if style.startswith("List") or (properties is not None and properties.numPr is not None):
            return "- " + text
        return text


def _row_text(row) -> str:
    cells = []
    previous = None
    for cell in row.cells:
        if cell._tc is previous:
            continue  # a horizontally merged cell is reported once per grid column
        previous = cell._tc
        cells.append(_cell_text(cell))
    return " | ".join(cells) if any(cells) else ""


def _cell_text(cell) -> str:
    from docx.text.paragraph import Paragraph

    parts = []
    for item in cell.iter_inner_content():
        if isinstance(item, Paragraph):
            parts.append(item.text.strip())
        else:
            parts.extend(_row_text(row) for row in item.rows)
    return " ".join(" ".join(part.split()) for part in parts if part)
