"""Bad input: every case ends in an IngestError with a one-line user message and leaves no files behind."""

from __future__ import annotations

import gzip
import io
import os
import zipfile

import pytest

from infinipot.ingest import IngestError, open_document


def ingest_into(path, out_dir, tokenizer) -> None:
    """What the app does with a dropped file: stream all tokens, then store the location map."""
    doc = open_document(path)
    stream = doc.token_stream(tokenizer, chunk_tokens=256)
    for _ in stream:
        pass
    stream.location_map.save(out_dir / "doc.locmap.npz")


def _zip_replace(data: bytes, member: str, content: bytes) -> bytes:
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, content if info.filename == member else source.read(info))
    return out.getvalue()


def _bad_files(fixtures: os.PathLike, builders) -> dict[str, tuple[str, bytes]]:
    """name -> (file name, bytes) for each bad input built from the committed fixtures."""
    pdf = (fixtures / "sample.pdf").read_bytes()
    docx = (fixtures / "report.docx").read_bytes()
    epub = (fixtures / "novel.epub").read_bytes()
    return {
        "zero-byte file": ("empty.txt", b""),
        "binary with .txt name": ("photo.txt", bytes(range(256)) * 64),
        "random bytes named .pdf": ("bad.pdf", bytes(range(256)) * 64),
        "random bytes named .docx": ("bad.docx", bytes(range(256)) * 64),
        "png image": ("scan.png", b"\x89PNG\r\n\x1a\n" + bytes(200)),
        "old word format": ("old.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)),
        "password-protected docx": ("protected.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600)),
        "truncated pdf": ("cut.pdf", pdf[: len(pdf) * 2 // 3]),
        "corrupt pdf": ("garbage.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8 + b"\n%%EOF\n"),
        "encrypted pdf": ("locked.pdf", (fixtures / "encrypted.pdf").read_bytes()),
        "scanned pdf": ("scan.pdf", (fixtures / "scanned.pdf").read_bytes()),
        "html saved as pdf": ("paper.pdf", (fixtures / "page.html").read_bytes()),
        "truncated docx": ("cut.docx", docx[: len(docx) // 2]),
        "corrupt docx xml": ("broken.docx", _zip_replace(docx, "word/document.xml", b"<w:document><w:body><w:p>")),
        "truncated epub": ("cut.epub", epub[: len(epub) // 2]),
        "epub without container": ("bare.epub", builders.zip_bytes([("mimetype", b"application/epub+zip")])),
        "epub with broken manifest": ("broken.epub", _zip_replace(epub, "OEBPS/content.opf", b"<package><manifest>")),
        "epub zip path traversal": ("traversal.epub", (fixtures / "traversal.epub").read_bytes()),
        "epub href escaping the book": (
            "escape.epub",
            builders.epub_bytes(hrefs=["Text/ch1.xhtml", "../../../etc/passwd", "Text/ch3.xhtml"]),
        ),
        "epub declaring an absurd size": ("bomb.epub", (fixtures / "bomb.epub").read_bytes()),
        "truncated gzip log": ("cut.log.gz", gzip.compress("\n".join(builders.log_lines(5000)).encode())[:3000]),
        "unsupported zip": ("archive.zip", builders.zip_bytes([("a.txt", b"hello")])),
    }


CASES = [
    ("zero-byte file", "is empty"),
    ("binary with .txt name", "looks like a binary file"),
    ("random bytes named .pdf", "'bad.pdf' is damaged or incomplete: it is not a readable PDF file"),
    ("random bytes named .docx", "'bad.docx' is damaged or incomplete: it is not a readable Word (.docx) file"),
    ("png image", "is a PNG image"),
    ("old word format", "save it as .docx or PDF"),
    ("password-protected docx", "is password-protected"),
    ("truncated pdf", "is incomplete"),
    ("corrupt pdf", "is damaged"),
    ("encrypted pdf", "is password-protected"),
    ("scanned pdf", "run OCR"),
    ("html saved as pdf", "failed download"),
    ("truncated docx", "damaged or incomplete"),
    ("corrupt docx xml", "damaged or incomplete"),
    ("truncated epub", "damaged or incomplete"),
    ("epub without container", "META-INF/container.xml' is missing"),
    ("epub with broken manifest", "is not valid XML"),
    ("epub zip path traversal", "unsafe path ('../../evil.xhtml')"),
    ("epub href escaping the book", "refers to a file outside the book"),
    ("epub declaring an absurd size", "zip bomb"),
    ("truncated gzip log", "damaged or incomplete gzip"),
    ("unsupported zip", "is a ZIP archive, not a document"),
]


@pytest.mark.parametrize(("case", "message"), CASES, ids=[case for case, _ in CASES])
def test_bad_input_gives_a_clear_error_and_leaves_nothing_behind(
    tmp_path, fixtures_dir, builders, tokenizer, case, message
):
    file_name, data = _bad_files(fixtures_dir, builders)[case]
    inbox, out = tmp_path / "inbox", tmp_path / "out"
    inbox.mkdir()
    out.mkdir()
    (inbox / file_name).write_bytes(data)
    with pytest.raises(IngestError) as caught:
        ingest_into(inbox / file_name, out, tokenizer)
    text = str(caught.value)
    assert message in text
    assert text.startswith(f"'{file_name}'") or file_name in text
    assert "\n" not in text and "Traceback" not in text
    assert list(out.iterdir()) == []


def test_zip_bomb_with_real_compression_ratio(tmp_path, builders):
    bomb = builders.epub_bytes(extra=[("OEBPS/filler.xhtml", b" " * (40 << 20))])
    assert len(bomb) < 200_000  # 40 MB of spaces deflates to a few dozen KB
    (tmp_path / "bomb.epub").write_bytes(bomb)
    with pytest.raises(IngestError, match="zip bomb"):
        open_document(tmp_path / "bomb.epub")


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(IngestError, match="'nope.pdf' was not found"):
        open_document(tmp_path / "nope.pdf")
    with pytest.raises(IngestError, match="is a folder, not a file"):
        open_document(tmp_path)


def test_aes_pdf_without_cryptography_names_the_missing_package(fixtures_dir, monkeypatch):
    import pypdf
    from pypdf.errors import DependencyError

    def needs_cryptography(self, password):
        raise DependencyError("cryptography>=3.1 is required for AES algorithm")

    monkeypatch.setattr(pypdf.PdfReader, "decrypt", needs_cryptography)
    with pytest.raises(IngestError, match="needs the 'cryptography' package"):
        open_document(fixtures_dir / "restricted.pdf")


def test_errors_are_value_errors_for_callers_that_catch_those(tmp_path):
    (tmp_path / "empty.md").write_bytes(b"")
    with pytest.raises(ValueError):
        open_document(tmp_path / "empty.md")


def test_whitespace_only_text_has_no_text(tmp_path, tokenizer):
    (tmp_path / "blank.txt").write_bytes(b"   \n\n\t\n")
    stream = open_document(tmp_path / "blank.txt").token_stream(tokenizer)
    with pytest.raises(IngestError, match="contains no text"):
        list(stream)
    assert not stream.location_map.complete
