"""A document's outline (ingest.outline, app.library.outline) per format, from tiny files made here; the log summary's
counts on a generated log (core.log_summary); the outline summary's parts (core.summary)."""

from __future__ import annotations

import re
import zipfile

import pytest

from infinipot.core.log_summary import is_log, log_summary_text, summarize_log
from infinipot.core.summary import OutlineEntry, Part, central_sentences, outline_parts, recurring_names
from infinipot.ingest import Location, open_document
from infinipot.ingest.outline import line_heading, pdf_bookmarks, text_headings


def headings_of(path, **kwargs):
    doc = open_document(path)
    return [(h.level, h.title) for h in text_headings((s.text.rstrip("\n"), s.location) for s in doc.segments())]


# A file written here, and the outline its text gives: (level, title) per heading.
TEXT_OUTLINES = {
    # HTML: levels from <h1>-<h3>; the navigation and a code block's comment are not headings.
    "guide.html": (
        "<html><body><nav><h3>Navigation</h3></nav><h1>sqlite3 — DB-API interface</h1><p>Intro.</p>"
        "<h2>Tutorial</h2><pre># Create a table\ncur.execute('CREATE TABLE t(x)')</pre><h2>Reference</h2>"
        "<h3>Module functions</h3><p>Text.</p></body></html>",
        [(1, "sqlite3 — DB-API interface"), (2, "Tutorial"), (2, "Reference"), (3, "Module functions")],
    ),
    # Markdown: a "#" line that reads as a sentence (a shell comment in the text) is not a heading.
    "notes.md": (
        "# Notes\n\nSome text.\n\n## Setup\n\n# assuming the server is bound to the port given\n",
        [(1, "Notes"), (2, "Setup")],
    ),
    # A manual page: its sections and subsections, the running head left out.
    "tar.1.txt": (
        "TAR(1)          GNU TAR Manual          TAR(1)\n\nNAME\n       tar - an archiving utility\n\n"
        "OPTIONS\n   Operation modifiers\n       --check-device\n              Check device numbers.\n\n"
        "EXIT STATUS\n       0 on success.\n",
        [(1, "Name"), (1, "Options"), (2, "Operation modifiers"), (1, "Exit Status")],
    ),
    # Numbered headings in plain text; a numbered step, a table row and a sentence starting with a number are not.
    "spec.txt": (
        "2 ASN.1 structure handling\n2.1 ASN.1 syntax\nThe parser is case sensitive.\n1. Install the package.\n"
        "3. Conveying Verbatim Copies.\nYou may convey copies.\n2 CARD16 MAJOR_VERSION 1\n"
        "12 files were copied to the archive\n",
        [(1, "2 ASN.1 structure handling"), (2, "2.1 ASN.1 syntax"), (1, "3. Conveying Verbatim Copies")],
    ),
    # A story's chapters; its title is not a chapter.
    "story.txt": (
        "The Survey\n\nChapter 1. The Grey Heron\n\nShe left.\n\nChapter 2. Kessring\n\nShe came.\n",
        [(1, "Chapter 1. The Grey Heron"), (1, "Chapter 2. Kessring")],
    ),
}


@pytest.mark.parametrize("name", TEXT_OUTLINES)
def test_the_headings_of_a_text_file_with_their_levels(tmp_path, name):
    text, outline = TEXT_OUTLINES[name]
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    assert headings_of(path) == outline


def test_word_heading_styles_and_epub_chapters(tmp_path):
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_heading("Logging HOWTO", level=1)
    document.add_paragraph("Logging is a means of tracking events.")
    document.add_heading("Basic Logging Tutorial", level=2)
    document.add_paragraph("# create logger")
    path = tmp_path / "howto.docx"
    document.save(path)
    assert headings_of(path) == [(1, "Logging HOWTO"), (2, "Basic Logging Tutorial")]

    book = tmp_path / "book.epub"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip")
        archive.writestr(
            "META-INF/container.xml",
            '<container xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
            '<rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>',
        )
        archive.writestr(
            "content.opf",
            '<package xmlns="http://www.idpf.org/2007/opf"><manifest>'
            '<item id="a" href="a.xhtml" media-type="application/xhtml+xml"/>'
            '<item id="b" href="b.xhtml" media-type="application/xhtml+xml"/></manifest>'
            '<spine><itemref idref="a"/><itemref idref="b"/></spine></package>',
        )
        archive.writestr("a.xhtml", "<html><body><h1>1. Whetting Your Appetite</h1><p>Text.</p></body></html>")
        archive.writestr("b.xhtml", "<html><body><h1>2. Using the Interpreter</h1><h2>2.1. Invoking</h2></body></html>")
    doc = open_document(book)
    found = text_headings((s.text.rstrip("\n"), s.location) for s in doc.segments())
    assert [(h.level, h.title, h.page) for h in found] == [
        (1, "1. Whetting Your Appetite", 1),
        (1, "2. Using the Interpreter", 2),
        (2, "2.1. Invoking", 2),
    ]


def test_running_heads_are_page_furniture_and_the_outline_starts_at_its_top_level():
    lines = [
        ("Table of Contents", Location(1, 1, 0)),
        ("1 Introduction", Location(2, 1, 0)),
        ("Chapter 1: Introduction 3", Location(3, 1, 0)),
        ("1.1 Scope", Location(3, 4, 0)),
        ("Chapter 1: Introduction 4", Location(4, 1, 0)),
    ]
    found = text_headings(lines)
    assert [(h.level, h.title, h.page, h.line) for h in found] == [(1, "1 Introduction", 2, 1), (2, "1.1 Scope", 3, 4)]
    assert line_heading("DESCRIPTION") is None  # capitals alone are a heading only in a manual page


def test_a_pdfs_bookmarks_are_its_outline(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    writer = pypdf.PdfWriter()
    for _ in range(3):
        writer.add_blank_page(width=200, height=200)
    first = writer.add_outline_item(title="1 Introduction", page_number=0)
    writer.add_outline_item(title="1.1 Scope", page_number=1, parent=first)
    writer.add_outline_item(title="2 Reference", page_number=2)
    path = tmp_path / "manual.pdf"
    with open(path, "wb") as handle:
        writer.write(handle)
    assert [(h.level, h.title, h.page) for h in pdf_bookmarks(path)] == [
        (1, "1 Introduction", 1),
        (2, "1.1 Scope", 2),
        (1, "2 Reference", 3),
    ]
    assert pdf_bookmarks(tmp_path / "missing.pdf") == []


LOG = [
    "2024-11-14T06:00:00.000Z INFO  [supervisor] host req-00000001 starting shop v1.2 (pid 10)",
    "2024-11-14T09:00:00.000Z INFO  [api] host req-00000002 served GET /",
    "2024-11-14T13:30:40.000Z ERROR [payment] host req-00000003 PAY-4097 timeout after 8000ms (attempt=1/3)",
    "2024-11-14T13:31:40.000Z ERROR [payment] host req-00000004 PAY-4097 timeout after 8000ms (attempt=2/3)",
    "2024-11-14T13:33:00.000Z WARN  [payment] host req-00000005 circuit breaker OPEN",
    "2024-11-14T18:54:15.000Z WARN  [disk] host req-00000006 disk usage 91% on /var/lib/orders",
    "2024-11-14T23:59:00.000Z INFO  [supervisor] host req-00000007 received SIGTERM, shutting down",
]


def test_a_logs_summary_counts_its_levels_its_distinct_errors_and_its_bursts():
    assert is_log(LOG) and not is_log(["A story.", "It has no stamps."])
    summary = summarize_log(LOG)
    assert summary.lines == 7 and summary.levels == {"ERROR": 2, "WARN": 2, "INFO": 3}
    timeout = summary.messages[0]
    assert (timeout.level, timeout.count, timeout.first.number, timeout.last.number) == ("ERROR", 2, 3, 4)
    assert [len(burst.lines) for burst in summary.bursts] == [3, 1]  # 13:30-13:33, then 18:54 alone
    text, parts = log_summary_text(summary)
    assert text.startswith("A log of 7 timestamped lines from 2024-11-14 06:00:00 to 23:59:00 (17 h 59 min)")
    assert "(2 times, 13:30:40 to 13:31:40; line 3)" in text
    # An incident says when, where and what happened: its distinct messages, errors first, without request ids.
    assert (
        "- 13:30:40 to 13:33:00, payment: host PAY-4097 timeout after 8000ms (attempt=1/3); host circuit breaker OPEN"
        " (3 warning or error lines; lines 3-5)"
    ) in text
    assert "18:54" not in parts[1]["points"][0]  # a lone warning is no incident
    assert [part["title"] for part in parts] == ["Errors and warnings", "Incidents in time order"]


def test_an_incident_of_lines_without_a_source_says_what_happened_and_no_empty_place():
    lines = [
        "2024-11-14 22:50:00 INFO nightly export started",
        "2024-11-14 22:58:40 ERROR export-7 write to /srv/export failed: No space left on device",
        "2024-11-14 22:58:44 WARN export-7 retrying in 30 s",
        "2024-11-14 23:10:00 INFO nightly export finished",
    ]
    text, parts = log_summary_text(summarize_log(lines))
    incident = parts[-1]["points"][0]
    assert incident == (
        "22:58:40 to 22:58:44: write to /srv/export failed: No space left on device; retrying in 30 s "
        "(2 warning or error lines; lines 2-3)"
    )
    assert "(;" not in text


def test_syslog_lines_without_levels_count_a_reported_failure_as_a_warning():
    syslog = [
        "Mar  9 08:13:15 relay sshd[4418]: Failed password for invalid user admin from 203.0.113.77 port 51144 ssh2",
        "Mar  9 08:13:25 relay sshd[4420]: Failed password for invalid user oracle from 203.0.113.77 port 51172 ssh2",
        "Mar  9 09:00:00 relay CRON[6011]: (root) CMD (/usr/local/sbin/mailstats --daily)",
        "Mar  9 20:19:49 relay restic[9121]: repository checked, no errors",
    ]
    summary = summarize_log(syslog)
    assert summary.levels == {"WARN": 2, "INFO": 2}
    assert len(summary.messages) == 1 and summary.messages[0].count == 2  # one attack, two users tried
    assert summary.sources["sshd"] == 2


def test_an_outline_keeps_its_top_level_folds_the_shortest_parts_and_lists_sections():
    outline = [
        OutlineEntry(1, "1 Introduction", 0),
        OutlineEntry(2, "1.1 Scope", 50),
        OutlineEntry(1, "2 Utilities", 100),
        OutlineEntry(2, "2.1 asn1Coding", 120),
        OutlineEntry(2, "2.2 asn1Decoding", 160),
        OutlineEntry(1, "3 Reference", 200),
    ]
    parts = outline_parts(outline, 1000, most=16)
    assert [(head.title, end, [s.title for s in sections]) for head, end, sections in parts] == [
        ("1 Introduction", 100, ["1.1 Scope"]),
        ("2 Utilities", 200, ["2.1 asn1Coding", "2.2 asn1Decoding"]),
        ("3 Reference", 1000, []),
    ]
    assert [head.title for head, _, _ in outline_parts(outline, 1000, most=2)] == ["1 Introduction", "3 Reference"]
    few = [OutlineEntry(1, "Manual", 0), OutlineEntry(2, "Setup", 10), OutlineEntry(2, "Use", 20)]
    assert [head.title for head, _, _ in outline_parts(few, 100, most=16)] == ["Manual", "Setup", "Use"]
    assert Part("2 Utilities", 100, "page 8", ("Usage: asn1Coding ...",)).as_json() == {
        "title": "2 Utilities",
        "token": 100,
        "page": 8,
        "points": ["Usage: asn1Coding ..."],
        "sections": [],
    }


def test_a_parts_central_sentence_uses_its_own_words_and_names_recur():
    parts = [
        "The storm broke at night. The lifeboat went out three times before dawn to the wreck. It rained all day.",
        "She measured the baseline on the moor with chains. It rained all day. The chains were long and heavy.",
    ]
    assert central_sentences(parts, set()) == [
        "The lifeboat went out three times before dawn to the wreck.",
        "She measured the baseline on the moor with chains.",
    ]
    text = " ".join(["Elena met Ida Marlowe at Gull Head. Then Elena wrote to Ida Marlowe."] * 3)
    assert recurring_names(text, least=3) == ["Ida Marlowe", "Elena", "Gull Head"]


MANUAL = """# Fox Manual

The fox manual says what the quick brown fox does every day of the week.

## 1 Running

The quick brown fox runs across the wide green field every single morning. It runs faster than the lazy dog.
The lazy dog watches the fox and does not move from the warm porch at all.

## 2 Jumping

The quick brown fox jumps over the lazy dog when the sun goes down in the west. Jumping is the fox's favourite sport.
The fox practises jumping over the garden fence behind the old red barn.

## 3 Sleeping

The quick brown fox sleeps in a deep den under the roots of the tall oak tree. It sleeps until noon on Sundays.
"""


def test_a_summary_is_the_documents_outline_with_its_own_sentences_and_places(tmp_path, infinipot_home, tiny_model_dir):
    from infinipot.app.service import DocumentService
    from infinipot.core.answer.grounding import unsupported_words
    from infinipot.core.config import PotConfig

    path = tmp_path / "fox.md"
    path.write_text(MANUAL, encoding="utf-8")  # several times the pot of 160 entries: read through compressions
    service = DocumentService(infinipot_home, device="cpu")
    doc_id = service.read(path, PotConfig(pot_size=160, keep_size=64), tiny_model_dir).doc_id
    pieces, stats = service.summarize(doc_id, max_new_tokens=8)
    text = "".join(pieces)
    titles = [part["title"] for part in stats.summary_parts]
    assert titles[:4] == ["Fox Manual", "1 Running", "2 Jumping", "3 Sleeping"]
    assert all(part["line"] >= 1 and part["token"] >= 0 for part in stats.summary_parts)
    running = stats.summary_parts[1]
    assert running["points"][0] == "The quick brown fox runs across the wide green field every single morning."
    assert "- 1 Running (line 5): The quick brown fox runs" in text
    # Nothing the document does not say: every point is its sentence, and the overview is checked against it.
    body = re.sub(r"\(line \d+\)", "", text.split("Outline:")[1])
    assert not unsupported_words(body, [MANUAL]) and not unsupported_words(text.split("Outline:")[0], [MANUAL])
    # Kept: given again at once, with its outline; the outline is one of the document's files.
    again, kept = service.summarize(doc_id)
    assert "".join(again) == text and kept.reused_summary and kept.summary_parts == stats.summary_parts
    assert service.library.files.outline(doc_id).is_file()
    service.delete(doc_id)
    assert not service.library.files.outline(doc_id).is_file()
