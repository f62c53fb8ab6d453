"""File type detection from content (magic bytes, archive layout, text sniffing), extension as a hint."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from .errors import IngestError
from .textdecode import NotText, sniff_text
from .zipsafe import damaged

SNIFF_BYTES = 64 << 10

_COMPRESSION_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
)
_COMPRESSION_LABEL = {"gzip": "gzip (.gz)", "bzip2": "bzip2 (.bz2)", "xz": "xz (.xz)"}
_COMPRESSION_EXTENSIONS = {".gz", ".gzip", ".bz2", ".xz"}

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_BINARY_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image", " (for scans, run OCR and add the resulting PDF)"),
    (b"\xff\xd8\xff", "a JPEG image", " (for scans, run OCR and add the resulting PDF)"),
    (b"GIF8", "a GIF image", ""),
    (b"II*\x00", "a TIFF image", " (for scans, run OCR and add the resulting PDF)"),
    (b"MM\x00*", "a TIFF image", " (for scans, run OCR and add the resulting PDF)"),
    (
        _OLE_MAGIC,
        "an old-format Microsoft Office file (.doc/.xls/.ppt)",
        "; save it as .docx or PDF first",
    ),
    (b"{\\rtf", "an RTF document", "; save it as .docx or PDF first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "; unpack it first"),
    (b"Rar!\x1a\x07", "a RAR archive", "; unpack it first"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard-compressed file", "; unpack it first"),
    (b"\x7fELF", "a program", ""),
    (b"SQLite format 3\x00", "an SQLite database", ""),
    (b"OggS", "an audio/video file", ""),
    (b"ID3", "an MP3 audio file", ""),
    (b"fLaC", "a FLAC audio file", ""),
)
_TEXT_SUBTYPES = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".rst": "plain",
    ".txt": "plain",
    ".csv": "csv",
    ".tsv": "tsv",
    ".json": "json",
    ".jsonl": "json",
    ".ndjson": "json",
    ".log": "log",
}
_DOCUMENT_EXTENSIONS = {".pdf": "PDF", ".docx": "Word (.docx)", ".epub": "EPUB"}
_HTML_EXTENSIONS = {".html", ".htm", ".xhtml", ".xht"}
_HTML_START = re.compile(r"^(?:\s|<\?xml[^>]*>|<!--.*?-->)*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)
_LOG_LINE = re.compile(r"^\S*\s*(?:\[?\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|\w{3} [ \d]\d \d\d:\d\d:\d\d)")


@dataclass(frozen=True, slots=True)
class Detection:
    """What a file is: its reader kind, finer subtype, and how to decode it if it is text."""

    kind: str  # "pdf" | "docx" | "epub" | "html" | "text"
    subtype: str  # kind, or for text: "plain" | "markdown" | "csv" | "tsv" | "json" | "log"
    compression: str | None = None  # "gzip" | "bzip2" | "xz" for compressed text and HTML
    encoding: str | None = None
    newline: str = "\n"


def open_decompressed(fileobj, compression: str):
    """A streaming decompressor over a binary file object."""
    if compression == "gzip":
        return gzip.GzipFile(fileobj=fileobj, mode="rb")
    if compression == "bzip2":
        return bz2.BZ2File(fileobj, mode="rb")
    return lzma.LZMAFile(fileobj, mode="rb")


DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError, ValueError)


def damaged_compressed(name: str, compression: str) -> IngestError:
    return IngestError(
        f"'{name}' is a damaged or incomplete {_COMPRESSION_LABEL[compression]} file (re-download or re-create it)"
    )


def _read_samples(path: Path, size: int) -> list[bytes]:
    # Head, middle and tail: logs are often plain ASCII for megabytes before the
    # first accented name, so the head alone would misjudge the encoding.
    with open(path, "rb") as handle:
        samples = [handle.read(SNIFF_BYTES)]
        if size > 3 * SNIFF_BYTES:
            for offset in (size // 2, size - SNIFF_BYTES):
                handle.seek(offset)
                samples.append(handle.read(SNIFF_BYTES))
    return samples


def _binary_magic(head: bytes) -> tuple[str, str] | None:
    for magic, what, hint in _BINARY_MAGIC:
        if head.startswith(magic):
            return what, hint
    if head[4:8] == b"ftyp":
        return "an audio/video file", ""
    if head.startswith(b"RIFF"):
        return "an audio, video or image file", ""
    return None


def _outer_suffix(name: str) -> str:
    return Path(name).suffix.lower()


def _inner_suffix(name: str) -> str:
    stem = Path(name)
    if stem.suffix.lower() in _COMPRESSION_EXTENSIONS:
        stem = Path(stem.stem)
    return stem.suffix.lower()


def detect(path: Path, name: str, size: int) -> Detection:
    """Classify a non-empty file; raises IngestError for anything that cannot be ingested."""
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    if b"%PDF-" in head[:1024]:
        return Detection("pdf", "pdf")
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_kind(path, name, head)
    for magic, compression in _COMPRESSION_MAGIC:
        if head.startswith(magic):
            return _compressed_kind(path, name, compression)
    if head.startswith(_OLE_MAGIC) and _outer_suffix(name) in (".docx", ".xlsx", ".pptx"):
        # Office saves password-protected files in the old container format.
        raise IngestError(f"'{name}' is password-protected; remove the password in Office, save it, and try again")
    _refuse_binary(head, name)
    suffix = _outer_suffix(name)
    try:
        return _text_kind(_read_samples(path, size), name, suffix, None)
    except NotText:
        if suffix in _DOCUMENT_EXTENSIONS:  # a .pdf of random bytes: damaged, not "a binary file, not text"
            raise damaged(name, _DOCUMENT_EXTENSIONS[suffix]) from None
        raise


def _refuse_binary(head: bytes, name: str) -> None:
    found = _binary_magic(head)
    if found:
        what, hint = found
        raise IngestError(f"'{name}' is {what}, not a document with text{hint}")


def _compressed_kind(path: Path, name: str, compression: str) -> Detection:
    try:
        with open(path, "rb") as raw, open_decompressed(raw, compression) as stream:
            inner = stream.read(SNIFF_BYTES)
    except DECOMPRESSION_ERRORS:
        raise damaged_compressed(name, compression) from None
    if not inner:
        raise IngestError(f"'{name}' is empty: the compressed file contains nothing")
    if b"%PDF-" in inner[:1024] or inner.startswith(b"PK\x03\x04"):
        raise IngestError(
            f"'{name}' contains a compressed PDF or ZIP document; unpack it first and add the file inside"
        )
    _refuse_binary(inner, name)
    return _text_kind([inner], name, _inner_suffix(name), compression)


def _text_kind(samples: list[bytes], name: str, suffix: str, compression: str | None) -> Detection:
    looks_like_markup = suffix in _HTML_EXTENSIONS or b"<" in samples[0][:1024]
    sniff = sniff_text(samples, name, markup=looks_like_markup)
    text = samples[0][:8192].decode(sniff.encoding, errors="replace").lstrip("\ufeff")
    is_html = bool(_HTML_START.match(text)) or (suffix in _HTML_EXTENSIONS and "<" in text)
    if suffix in _DOCUMENT_EXTENSIONS:
        # A ".pdf" that is really a web page is nearly always a failed download.
        found = "a web page (HTML), often the error page of a failed download" if is_html else "plain text"
        raise IngestError(f"'{name}' is not a real {_DOCUMENT_EXTENSIONS[suffix]} file: it contains {found}")
    if is_html:
        return Detection("html", "html", compression, sniff.encoding, sniff.newline)
    return Detection("text", _text_subtype(suffix, text), compression, sniff.encoding, sniff.newline)


def _text_subtype(suffix: str, text: str) -> str:
    if suffix in _TEXT_SUBTYPES and suffix != ".txt":
        return _TEXT_SUBTYPES[suffix]
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")) and suffix != ".txt":
        return "json"
    first_lines = [line for line in stripped.splitlines()[:5] if line.strip()]
    if first_lines and all(_LOG_LINE.match(line) for line in first_lines):
        return "log"
    if stripped.startswith("# ") and suffix != ".txt":
        return "markdown"
    return "plain"


def _zip_kind(path: Path, name: str, head: bytes) -> Detection:
    suffix = _outer_suffix(name)
    head_says_epub = head[30:58] == b"mimetypeapplication/epub+zip"
    label = "EPUB" if head_says_epub else _DOCUMENT_EXTENSIONS.get(suffix, "ZIP")
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, OSError, NotImplementedError):
        raise damaged(name, label) from None
    if "word/document.xml" in names:
        return Detection("docx", "docx")
    if head_says_epub or "META-INF/container.xml" in names:
        return Detection("epub", "epub")
    if any(member.startswith("xl/") for member in names):
        what = "an Excel workbook; spreadsheets are not supported yet (export the sheet as CSV)"
    elif any(member.startswith("ppt/") for member in names):
        what = "a PowerPoint presentation; export it as PDF first"
    elif "content.xml" in names and "mimetype" in names:
        what = "an OpenDocument file; save it as .docx or PDF first"
    elif suffix in _DOCUMENT_EXTENSIONS:
        raise damaged(name, label)
    else:
        what = "a ZIP archive, not a document; unpack it and add the files inside"
    raise IngestError(f"'{name}' is {what}")
