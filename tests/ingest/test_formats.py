"""Each reader extracts the fixture's known text, in order, with the right locations."""

from __future__ import annotations

import shutil

import pytest

from infinipot.ingest import Location, open_document


def texts(doc):
    return [segment.text for segment in doc.segments()]


def located(doc):
    return [(segment.text.rstrip("\n"), segment.location.page, segment.location.line) for segment in doc.segments()]


def test_pdf_pages_keep_page_numbers_and_report_the_scanned_page(fixtures_dir):
    doc = open_document(fixtures_dir / "sample.pdf")
    assert (doc.kind, doc.pages, doc.page_label) == ("pdf", 5, "page")
    assert located(doc) == [
        ("Chapter One: The Beginning", 1, 1),
        ("Alpha line two (with parens)", 1, 2),
        ("Second page: caf\u00e9 and na\u00efve text", 2, 1),
        ("Fourth page, first line", 4, 1),
        ("Fourth page, second line", 4, 2),
        ("Fourth page, third line", 4, 3),
        ("Fifth and last page", 5, 1),
    ]
    assert doc.warnings == ["page 3 has no extractable text (scanned images? run OCR to include them)"]


def test_pdf_with_only_an_owner_password_is_read(fixtures_dir):
    doc = open_document(fixtures_dir / "restricted.pdf")
    assert texts(doc) == ["Readable but restricted\n"]


def test_docx_paragraphs_headings_and_tables_in_document_order(fixtures_dir):
    doc = open_document(fixtures_dir / "report.docx")
    assert (doc.kind, doc.pages) == ("docx", 2)
    assert located(doc) == [
        ("# Quarterly Report", 1, 1),
        ("# Introduction", 1, 2),
        ("This report covers the first quarter.", 1, 3),
        ("- Revenue grew in every region.", 1, 4),
        ("Region | Q1 | Q2", 1, 5),
        ("North | 10 | 12", 1, 6),
        ("South | 7 | 9", 1, 7),
        ("Total | 38", 1, 8),  # the merged cell appears once
        ("Text after the table.", 1, 9),
        ("## Outlook", 2, 1),  # Word's rendered page break starts page 2 here
        ("Next quarter looks bright.", 2, 2),
    ]


def test_docx_without_rendered_page_breaks_has_no_pages(tmp_path):
    import docx

    document = docx.Document()
    document.add_paragraph("One")
    document.add_paragraph("")
    document.add_paragraph("Two")
    document.save(tmp_path / "plain.docx")
    doc = open_document(tmp_path / "plain.docx")
    assert doc.pages is None
    assert located(doc) == [("One", None, 1), ("Two", None, 2)]


def test_epub_chapters_follow_the_spine_not_the_zip_or_manifest_order(fixtures_dir):
    doc = open_document(fixtures_dir / "novel.epub")
    assert (doc.kind, doc.pages, doc.page_label) == ("epub", 3, "chapter")
    assert located(doc) == [
        ("# Chapter 1", 1, 1),
        ("It was a bright cold day in April.", 1, 2),
        ("The clocks were striking thirteen.", 1, 3),
        ("# Chapter 2", 2, 1),
        ("Call me Ishmael.", 2, 2),
        ("Some years ago, never mind how long.", 2, 3),
        ("# Chapter 3", 3, 1),
        ("All happy families are alike.", 3, 2),
        ("Each unhappy family is unhappy in its own way.", 3, 3),
    ]


def test_html_keeps_structure_and_drops_head_scripts_and_styles(fixtures_dir):
    doc = open_document(fixtures_dir / "page.html")
    assert doc.kind == "html"
    assert texts(doc) == [
        "Fixture & Page\n",
        "# Main heading\n",
        "First paragraph with bold and an entity: caf\u00e9.\n",
        "- Item one\n",
        "- Item two\n",
        "Name | Value\n",
        "alpha | 1\n",
        "    def f():\n",
        "        return 1\n",
    ]


def test_latin1_log_is_decoded_correctly(fixtures_dir, builders):
    doc = open_document(fixtures_dir / "latin1.log")
    assert (doc.kind, doc.subtype, doc.encoding) == ("text", "log", "cp1252")
    assert texts(doc) == [line + "\n" for line in builders.LATIN1_LINES]
    assert [segment.location.line for segment in doc.segments()] == [1, 2, 3, 4]
    assert doc.warnings == []


def test_utf16_text_with_crlf_line_ends(fixtures_dir, builders):
    doc = open_document(fixtures_dir / "utf16.txt")
    assert doc.encoding == "utf-16"
    assert texts(doc) == [line + "\n" for line in builders.UTF16_LINES]


def test_gzip_log_is_streamed_line_by_line(fixtures_dir, builders):
    doc = open_document(fixtures_dir / "app.log.gz")
    assert (doc.kind, doc.subtype, doc.compression) == ("text", "log", "gzip")
    segments = list(doc.segments())
    assert [segment.text for segment in segments] == [line + "\n" for line in builders.log_lines(200)]
    assert segments[150].location == Location(None, 151, sum(len(s.text) for s in segments[:150]))


@pytest.mark.parametrize(
    ("name", "subtype", "first"),
    [
        ("notes.md", "markdown", "# Notes\n"),
        ("data.csv", "csv", "name,amount\n"),
        ("data.json", "json", '{"name": "fixture", "values": [1, 2, 3]}\n'),
    ],
)
def test_markdown_csv_and_json_are_text(fixtures_dir, name, subtype, first):
    doc = open_document(fixtures_dir / name)
    assert (doc.kind, doc.subtype) == ("text", subtype)
    assert texts(doc)[0] == first


@pytest.mark.parametrize(
    ("source", "disguise", "kind"),
    [
        ("sample.pdf", "notes.txt", "pdf"),
        ("report.docx", "report.bin", "docx"),
        ("novel.epub", "book.zip", "epub"),
        ("page.html", "page.txt", "html"),
        ("latin1.log", "noextension", "text"),
    ],
)
def test_type_comes_from_content_not_extension(fixtures_dir, tmp_path, source, disguise, kind):
    shutil.copy(fixtures_dir / source, tmp_path / disguise)
    assert open_document(tmp_path / disguise).kind == kind


def test_char_offsets_index_the_concatenated_text(fixtures_dir):
    for name in ("sample.pdf", "report.docx", "novel.epub", "page.html", "utf16.txt"):
        segments = list(open_document(fixtures_dir / name).segments())
        full = "".join(segment.text for segment in segments)
        for segment in segments:
            offset = segment.location.char_offset
            assert full[offset : offset + len(segment.text)] == segment.text


def test_location_describe_reads_like_a_citation():
    assert Location(3, 12, 0).describe() == "page 3, line 12"
    assert Location(2, 1, 0).describe("chapter") == "chapter 2, line 1"
    assert Location(None, 1234, 0).describe() == "line 1,234"


def test_a_definition_lists_descriptions_are_indented_under_their_terms(tmp_path):
    page = tmp_path / "reference.html"
    page.write_text(
        "<html><body><dl><dt>sqlite3.paramstyle</dt><dd><p>String constant.</p><p>Hard-coded to qmark.</p>"
        "<dl><dt>inner</dt><dd>Nested description.</dd></dl></dd></dl><p>After the list.</p></body></html>",
        encoding="utf-8",
    )
    assert texts(open_document(page)) == [
        "sqlite3.paramstyle\n",
        "    String constant.\n",
        "    Hard-coded to qmark.\n",
        "    inner\n",
        "        Nested description.\n",
        "After the list.\n",
    ]
