"""Two development documents made from the Python 3.11 documentation that Debian's python3.11-doc installs as HTML:

- an EPUB book of the Python Tutorial (its 16 chapters in the tutorial's own order, one spine item each), and
- a Word file of the Logging HOWTO (headings as Word's heading styles, lists, code, tables).

The text is the documentation's own; only the pages' navigation (sidebars, header links, footers) is left out,
as an e-book or a Word copy would. Both files are deterministic: fixed zip dates and document properties.

    write_tutorial_epub(target)   write_logging_docx(target)
"""

from __future__ import annotations

import datetime
import html
import io
import zipfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

PYTHON_DOC = Path("/usr/share/doc/python3.11/html")
TUTORIAL = PYTHON_DOC / "tutorial"
LOGGING_HOWTO = PYTHON_DOC / "howto" / "logging.html"
# The tutorial's chapters in its table of contents' order (tutorial/index.html).
TUTORIAL_CHAPTERS = (
    "appetite", "interpreter", "introduction", "controlflow", "datastructures", "modules", "inputoutput", "errors",
    "classes", "stdlib", "stdlib2", "venv", "whatnow", "interactive", "floatingpoint", "appendix",
)  # fmt: skip
_ZIP_DATE = (2023, 1, 1, 0, 0, 0)
_VOID = {"br", "img", "hr", "meta", "link", "input", "col", "wbr", "source"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node | str] = field(default_factory=list)

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text() for child in self.children)


class _TreeBuilder(HTMLParser):
    """A lenient HTML tree: unclosed elements close with their parent, void elements never open."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("root")
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(node)
        if tag not in _VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def _find(node: Node, predicate) -> Node | None:
    if predicate(node):
        return node
    for child in node.children:
        if isinstance(child, Node) and (found := _find(child, predicate)) is not None:
            return found
    return None


def main_content(path: Path) -> Node:
    """The page's `<div class="body" role="main">`, without the permalink marks after its headings."""
    builder = _TreeBuilder()
    builder.feed(path.read_text(encoding="utf-8"))
    body = _find(builder.root, lambda n: n.tag == "div" and n.attrs.get("role") == "main")
    if body is None:
        raise ValueError(f"{path} has no main content")
    _drop(body, lambda n: "headerlink" in n.attrs.get("class", "").split())
    return body


def _drop(node: Node, predicate) -> None:
    node.children = [c for c in node.children if isinstance(c, str) or not predicate(c)]
    for child in node.children:
        if isinstance(child, Node):
            _drop(child, predicate)


def _xhtml(node: Node | str) -> str:
    if isinstance(node, str):
        return html.escape(node, quote=False)
    inner = "".join(_xhtml(child) for child in node.children)
    if node.tag in ("root",):
        return inner
    keep = {k: v for k, v in node.attrs.items() if k in ("href", "id", "class", "colspan", "rowspan")}
    attrs = "".join(f' {k}="{html.escape(v)}"' for k, v in keep.items())
    if node.tag in _VOID:
        return f"<{node.tag}{attrs}/>"
    return f"<{node.tag}{attrs}>{inner}</{node.tag}>"


def _chapter_title(body: Node) -> str:
    heading = _find(body, lambda n: n.tag == "h1")
    return " ".join(heading.text().split()) if heading is not None else ""


def _fixed_zip(target: Path, members: list[tuple[str, bytes]]) -> None:
    """A zip with fixed dates; the first member stored (an EPUB's mimetype must be)."""
    with zipfile.ZipFile(target, "w") as archive:
        for number, (name, data) in enumerate(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED if number == 0 else zipfile.ZIP_DEFLATED
            archive.writestr(info, data)


def write_tutorial_epub(target: Path, source: Path = TUTORIAL) -> None:
    """The Python Tutorial as an EPUB 3 book, one chapter per tutorial page."""
    chapters = []
    for number, name in enumerate(TUTORIAL_CHAPTERS, start=1):
        body = main_content(source / f"{name}.html")
        chapters.append((f"chapter{number:02}.xhtml", _chapter_title(body), _xhtml(body)))
    members: list[tuple[str, bytes]] = [("mimetype", b"application/epub+zip")]
    members.append(
        (
            "META-INF/container.xml",
            b'<?xml version="1.0" encoding="UTF-8"?>\n<container version="1.0" '
            b'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/'
            b'content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>\n',
        )
    )
    items = "".join(
        f'<item id="c{n:02}" href="{file}" media-type="application/xhtml+xml"/>'
        for n, (file, _, _) in enumerate(chapters, 1)
    )
    spine = "".join(f'<itemref idref="c{n:02}"/>' for n in range(1, len(chapters) + 1))
    opf = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<package xmlns="http://www.idpf.org/2007/opf" version="3.0" '
        'unique-identifier="id"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">'
        '<dc:identifier id="id">python-3.11-tutorial</dc:identifier><dc:title>The Python Tutorial</dc:title>'
        "<dc:creator>The Python Software Foundation</dc:creator><dc:language>en</dc:language>"
        '<meta property="dcterms:modified">2023-01-01T00:00:00Z</meta></metadata>'
        f'<manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>{items}'
        f"</manifest><spine>{spine}</spine></package>\n"
    )
    members.append(("OEBPS/content.opf", opf.encode()))
    links = "".join(f'<li><a href="{file}">{html.escape(title)}</a></li>' for file, title, _ in chapters)
    nav = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml" '
        'xmlns:epub="http://www.idpf.org/2007/ops"><head><title>Contents</title></head><body>'
        f'<nav epub:type="toc"><ol>{links}</ol></nav></body></html>\n'
    )
    members.append(("OEBPS/nav.xhtml", nav.encode()))
    for file, title, content in chapters:
        page = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<html xmlns="http://www.w3.org/1999/xhtml"><head>'
            f"<title>{html.escape(title)}</title></head><body>{content}</body></html>\n"
        )
        members.append((f"OEBPS/{file}", page.encode()))
    _fixed_zip(Path(target), members)


# Word: block elements of the HOWTO and how each becomes paragraphs.
_HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4}


def _inline(node: Node | str) -> str:
    return node if isinstance(node, str) else node.text()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _add_blocks(document, node: Node, list_style: str | None = None) -> None:
    """Walk the HTML body and add Word paragraphs, lists and tables in order."""
    for child in node.children:
        if isinstance(child, str):
            if child.strip():
                document.add_paragraph(_one_line(child))
            continue
        tag = child.tag
        if tag in _HEADINGS:
            document.add_heading(_one_line(child.text()), level=_HEADINGS[tag])
        elif tag == "p":
            text = _one_line(child.text())
            if text:
                document.add_paragraph(text, style=list_style)
        elif tag == "pre":
            _add_code(document, child)
        elif tag in ("ul", "ol"):
            _add_list(document, child)
        elif tag == "table":
            _add_table(document, child)
        elif tag == "dl":
            _add_definitions(document, child)
        elif tag in ("div", "section", "blockquote", "span", "dd", "li"):
            _add_blocks(document, child, list_style)
        elif _one_line(child.text()):
            document.add_paragraph(_one_line(child.text()))


def _add_code(document, pre: Node) -> None:
    """A code block as one paragraph in Courier New, its lines kept apart by line breaks (not paragraphs)."""
    paragraph = document.add_paragraph(style="No Spacing")
    lines = pre.text().rstrip("\n").split("\n")
    run = paragraph.add_run(lines[0])
    for line in lines[1:]:
        run.add_break()
        run.add_text(line)
    run.font.name = "Courier New"


def _add_list(document, listing: Node) -> None:
    """A bulleted (ul) or numbered (ol) list, item by item."""
    style = "List Bullet" if listing.tag == "ul" else "List Number"
    for item in (c for c in listing.children if isinstance(c, Node) and c.tag == "li"):
        _add_list_item(document, item, style)


def _add_definitions(document, definitions: Node) -> None:
    """A definition list: each term in bold, its description's blocks after it (outside any list style)."""
    for item in (c for c in definitions.children if isinstance(c, Node)):
        if item.tag == "dt":
            document.add_paragraph().add_run(_one_line(item.text())).bold = True
        elif item.tag == "dd":
            _add_blocks(document, item)


def _add_list_item(document, item: Node, style: str) -> None:
    """A list item's first paragraph in the list style; code or nested blocks after it as they are."""
    inline = [c for c in item.children if isinstance(c, str) or c.tag not in ("p", "div", "pre", "ul", "ol", "dl")]
    text = _one_line("".join(_inline(c) for c in inline))
    blocks = Node("div", children=[c for c in item.children if c not in inline])
    first_p = next((c for c in blocks.children if isinstance(c, Node) and c.tag == "p"), None)
    if not text and first_p is not None:
        text = _one_line(first_p.text())
        blocks.children.remove(first_p)
    if text:
        document.add_paragraph(text, style=style)
    _add_blocks(document, blocks)


def _add_table(document, table: Node) -> None:
    rows = []

    def collect(node: Node) -> None:
        for child in node.children:
            if isinstance(child, Node):
                if child.tag == "tr":
                    cells = [c for c in child.children if isinstance(c, Node) and c.tag in ("td", "th")]
                    rows.append([_one_line(c.text()) for c in cells])
                else:
                    collect(child)

    collect(table)
    if not rows:
        return
    width = max(len(row) for row in rows)
    grid = document.add_table(rows=len(rows), cols=width)
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            grid.cell(r, c).text = value


def write_logging_docx(target: Path, source: Path = LOGGING_HOWTO) -> None:
    """The Logging HOWTO as a Word file (python-docx), with fixed properties and zip dates."""
    import docx

    body = main_content(source)
    document = docx.Document()
    fixed = datetime.datetime(2023, 1, 1, tzinfo=datetime.UTC)
    properties = document.core_properties
    properties.author, properties.title = "Vinay Sajip", "Logging HOWTO"
    properties.created = properties.modified = fixed
    properties.last_modified_by = ""
    properties.revision = 1
    _add_blocks(document, body)
    buffer = io.BytesIO()
    document.save(buffer)
    with zipfile.ZipFile(io.BytesIO(buffer.getvalue())) as saved:
        members = [(info.filename, saved.read(info.filename)) for info in saved.infolist()]
    _fixed_zip(Path(target), members)
