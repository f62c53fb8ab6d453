"""HTML/XHTML to plain lines with light Markdown hints, fed incrementally so memory stays bounded."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from .blocks import MAX_SEGMENT_CHARS

_BLOCK_TAGS = frozenset(
    "address article aside blockquote body caption center dd details dialog div dl dt "
    "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr html legend li "
    "main nav ol p pre section summary table tbody tfoot thead title tr ul".split()
)
_SKIP_TAGS = frozenset("script style noscript template svg math object iframe select".split())
_HEADINGS = {f"h{level}": "#" * level + " " for level in range(1, 7)}
_WHITESPACE = re.compile(r"\s+")
# A definition's description is indented under its term by this much per level (reference pages nest them).
_DEFINITION_INDENT = "    "
# Preformatted text (<pre>) is indented by this much, as Markdown indents code.
_CODE_INDENT = "    "

# html.parser keeps an unfinished tag or comment in memory until it ends; a file
# that never closes one would otherwise be buffered whole.
MAX_PENDING_MARKUP = 32 << 20


class MalformedMarkup(Exception):
    """The markup keeps an ever-growing construct open (e.g. an unterminated comment)."""


class HtmlTextExtractor(HTMLParser):
    """Turns HTML into lines: block elements break lines, headings get '#', list items '- ',
    table cells are joined with ' | ', scripts/styles/head are skipped, <pre> keeps its layout, and
    a definition's description (<dd>) is indented under its term (<dt>), as a manual page writes it, and
    preformatted code four spaces, as Markdown writes it (a "# comment" in it is no heading).

    Call ``feed`` with decoded text, then ``pop`` to collect ``(text, ends_line)`` pairs;
    a line longer than MAX_SEGMENT_CHARS comes out as several pieces with ends_line False.
    """

    def __init__(self, *, include_title: bool = True) -> None:
        super().__init__(convert_charrefs=True)
        self._include_title = include_title
        self._out: list[tuple[str, bool]] = []
        self._buffer: list[str] = []
        self._buffered = 0
        self._skip_depth = 0
        self._pre_depth = 0
        self._in_title = False
        self._in_head = False
        self._prefix = ""
        self._cells = 0
        self._continuing = False
        self._definitions = 0  # <dd> elements open: each indents its lines by _DEFINITION_INDENT

    # -- feeding -----------------------------------------------------------------
    def feed(self, data: str) -> None:
        super().feed(data)
        if len(self.rawdata) > MAX_PENDING_MARKUP:
            raise MalformedMarkup
        if self._buffered > MAX_SEGMENT_CHARS:
            self._emit_piece()

    def close(self) -> None:
        super().close()
        self._break()

    def pop(self) -> list[tuple[str, bool]]:
        out, self._out = self._out, []
        return out

    # -- parser callbacks -----------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag == "title":
            self._break()
            self._in_title = True
            return
        if tag in ("head", "body"):
            self._in_head = tag == "head"
        if tag in _SKIP_TAGS:
            self._skip_depth += 1
            return
        if tag == "br":
            self._break(keep_empty=self._pre_depth > 0)
            return
        if tag in _BLOCK_TAGS:
            self._break()
        if tag in _HEADINGS:
            self._prefix = _HEADINGS[tag]
        elif tag == "li":
            self._prefix = "- "
        elif tag == "tr":
            self._cells = 0
        elif tag in ("td", "th"):
            if self._cells:
                self._add(" | ")
            self._cells += 1
        elif tag == "pre":
            self._pre_depth += 1
        elif tag == "dd":
            self._definitions += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._break()
            self._in_title = False
            return
        if tag == "head":
            self._in_head = False
        if tag in _SKIP_TAGS:
            self._skip_depth = max(0, self._skip_depth - 1)
            return
        if tag in _BLOCK_TAGS:
            self._break()
        if tag == "pre":
            self._pre_depth = max(0, self._pre_depth - 1)
        elif tag == "dd":
            self._definitions = max(0, self._definitions - 1)

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title and not self._include_title:
            return
        if self._in_head and not self._in_title:
            return
        if self._pre_depth:
            lines = data.split("\n")
            for line in lines[:-1]:
                self._add(line)
                self._break(keep_empty=True)
            self._add(lines[-1])
        else:
            self._add(data)

    # -- output ------------------------------------------------------------------
    def _add(self, text: str) -> None:
        if text:
            self._buffer.append(text)
            self._buffered += len(text)

    def _take_buffer(self) -> str:
        raw = "".join(self._buffer)
        self._buffer, self._buffered = [], 0
        if self._pre_depth:
            return raw.expandtabs(4)
        return _WHITESPACE.sub(" ", raw)

    def _emit_piece(self) -> None:
        text = self._take_buffer()
        if not self._continuing:
            text = _DEFINITION_INDENT * self._definitions + self._prefix + text.lstrip()
        if text.strip():
            self._out.append((text, False))
            self._continuing = True

    def _break(self, keep_empty: bool = False) -> None:
        text = self._take_buffer().rstrip()
        if not self._continuing and not self._pre_depth:
            text = text.lstrip()
        if text or self._continuing or keep_empty:
            if text and not self._continuing:
                code = _CODE_INDENT if self._pre_depth else ""
                text = _DEFINITION_INDENT * self._definitions + code + self._prefix + text
                self._prefix = ""
            self._out.append((text, True))
        self._continuing = False
