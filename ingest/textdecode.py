"""Character-encoding detection for text-like files and an incremental, counting decoder."""

from __future__ import annotations

import codecs
import re
import threading
from dataclasses import dataclass

from .errors import IngestError

_ERROR_HANDLER = "infinipot-ingest-count-replace"
_state = threading.local()
_handler_registered = False

# C0 controls that never appear in real text (tab, newlines, form feed, vertical tab
# and escape do, so they are not counted), plus DEL.
_CONTROL_BYTES = bytes(b for b in range(32) if b not in b"\t\n\r\x0b\x0c\x1b") + b"\x7f"
_ANSI_ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_XML_DECL = re.compile(rb"^<\?xml[^>]*encoding=[\"']([A-Za-z0-9._-]+)[\"']")
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([A-Za-z0-9._-]+)", re.IGNORECASE)

_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _count_and_replace(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    sink = getattr(_state, "sink", None)
    if sink is not None:
        sink.invalid_bytes += exc.end - exc.start
    return "\ufffd", exc.end


def _ensure_error_handler() -> None:
    # Registered on first use rather than at import time; the registry is global,
    # so the handler finds the decoder to charge through a thread-local.
    global _handler_registered
    if not _handler_registered:
        codecs.register_error(_ERROR_HANDLER, _count_and_replace)
        _handler_registered = True


class NotText(IngestError):
    """The bytes are no text in any encoding (a file detection may then name better, by its extension)."""


@dataclass(frozen=True, slots=True)
class TextSniff:
    """What detection learned about a text file."""

    encoding: str
    newline: str  # "\n" (LF or CRLF) or "\r" for old Mac files with CR-only line ends


def normalize_encoding(name: str | None) -> str | None:
    """Python codec name for ``name``, or None if Python has no such codec."""
    if not name:
        return None
    try:
        codec = codecs.lookup(name.decode("ascii", "replace") if isinstance(name, bytes) else name)
    except LookupError:
        return None
    # Files labelled Latin-1 or ASCII are in practice usually Windows-1252 (curly
    # quotes, euro sign) and ASCII is a subset of UTF-8.
    return {"ascii": "utf-8", "latin-1": "cp1252", "iso8859-1": "cp1252"}.get(codec.name, codec.name)


def _utf16_without_bom(sample: bytes) -> str | None:
    head = sample[:4096]
    if len(head) < 16:
        return None
    even = head[0::2].count(0) / (len(head) / 2)
    odd = head[1::2].count(0) / (len(head) / 2)
    if odd > 0.3 and even < 0.05:
        return "utf-16-le"
    if even > 0.3 and odd < 0.05:
        return "utf-16-be"
    return None


def _mostly_utf8(samples: list[bytes]) -> bool:
    """UTF-8, perhaps with a few corrupt bytes (which decoding will replace and count).

    Legacy 8-bit text almost never forms valid multi-byte UTF-8 sequences, so a file
    where valid sequences clearly outnumber invalid bytes is damaged UTF-8, not Latin-1.
    """
    valid = invalid = 0
    for index, sample in enumerate(samples):
        if index:
            # A sample cut from the middle of a file may start inside a character.
            skip = 0
            while skip < 3 and skip < len(sample) and 0x80 <= sample[skip] <= 0xBF:
                skip += 1
            sample = sample[skip:]
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(sample, final=False)
        bad = text.count("\ufffd")
        invalid += bad
        valid += len(text) - len(text.encode("ascii", "ignore")) - bad
    return invalid == 0 or valid >= 10 * invalid


def sniff_text(samples: list[bytes], name: str, *, markup: bool = False) -> TextSniff:
    """Decide the encoding of a text file from samples of it (head first).

    Raises IngestError when the bytes do not look like text at all.
    """
    head = samples[0]
    encoding = None
    for bom, codec in _BOMS:
        if head.startswith(bom):
            encoding = codec
            break
    encoding = encoding or _utf16_without_bom(head)
    if encoding is None:
        joined = b"".join(samples)
        nuls = joined.count(0)
        controls = len(joined) - len(joined.translate(None, _CONTROL_BYTES)) - nuls
        # NUL runs alone are tolerated (crashed or preallocated logs); other control
        # bytes are what sets binary data apart from text in any 8-bit encoding.
        if controls > 0.02 * len(joined) or nuls > 0.3 * len(joined):
            raise NotText(f"'{name}' looks like a binary file, not text, so it cannot be read as a document")
        if _mostly_utf8(samples):
            encoding = "utf-8"
        elif markup:
            declared = _XML_DECL.search(head[:1024]) or _META_CHARSET.search(head[:4096])
            encoding = normalize_encoding(declared.group(1).decode("ascii")) if declared else None
        if encoding is None:
            encoding = _guess_legacy_encoding(joined, name)
    text = head[:65536].decode(encoding, errors="replace")
    if text.count("\ufffd") > 0.05 * max(1, len(text)):
        raise NotText(f"'{name}' looks like a binary file, not text, so it cannot be read as a document")
    newline = "\r" if "\n" not in text and "\r" in text else "\n"
    return TextSniff(encoding=encoding, newline=newline)


# Languages whose legacy text is overwhelmingly Windows-1252 (which includes Latin-1).
_WESTERN_LANGUAGES = frozenset(
    "English French German Dutch Italian Spanish Portuguese Swedish Danish Norwegian Finnish Catalan Indonesian".split()
)


def _guess_legacy_encoding(sample: bytes, name: str) -> str:
    from charset_normalizer import from_bytes  # imported lazily: only non-UTF-8 files need it

    match = from_bytes(sample).best()
    encoding = normalize_encoding(match.encoding) if match is not None else None
    if encoding is None:
        raise NotText(f"'{name}' looks like a binary file, not text, so it cannot be read as a document")
    if encoding != "cp1252" and match.language in _WESTERN_LANGUAGES and _plausible_cp1252(sample):
        # On short samples charset-normalizer often picks a sibling code page
        # (ISO-8859-16, CP1250, Mac Roman) for Western text, turning "£" into "Ł".
        return "cp1252"
    return encoding


def _plausible_cp1252(sample: bytes) -> bool:
    """Sample decodes as CP1252 into letters and common Western symbols only."""
    try:
        text = sample.decode("cp1252")
    except UnicodeDecodeError:
        return False
    extra = {ch for ch in text if ord(ch) > 127}
    return all(ch.isalpha() or ch in "£€¥©®°±«»¿¡§¶·–—‘’“”„…•™×÷µ\xa0" for ch in extra)


def sniff_markup_encoding(head: bytes) -> str:
    """Encoding of an XHTML/HTML member of an EPUB: BOM, XML declaration, meta charset, else UTF-8."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec
    declared = _XML_DECL.search(head[:1024]) or _META_CHARSET.search(head[:4096])
    return (normalize_encoding(declared.group(1).decode("ascii")) if declared else None) or "utf-8"


class TextDecoder:
    """Incremental decoder that replaces and counts invalid bytes and tidies line ends.

    CRLF becomes LF (and CR becomes LF in CR-only files), NUL characters, which logs
    pick up from crashes and preallocation, are dropped and counted, and with
    ``strip_ansi`` terminal colour codes are removed: none of them carry meaning for a
    reader, and all of them cost tokens.
    """

    def __init__(self, encoding: str, *, newline: str = "\n", strip_ansi: bool = False) -> None:
        _ensure_error_handler()
        self._decoder = codecs.getincrementaldecoder(encoding)(errors=_ERROR_HANDLER)
        self._cr_only = newline == "\r"
        self._strip_ansi = strip_ansi
        self._pending_cr = False
        self.invalid_bytes = 0
        self.nul_chars = 0

    def decode(self, data: bytes, final: bool = False) -> str:
        _state.sink = self
        try:
            text = self._decoder.decode(data, final)
        finally:
            _state.sink = None
        if self._pending_cr:
            text = "\r" + text
            self._pending_cr = False
        if "\x00" in text:
            count = text.count("\x00")
            self.nul_chars += count
            text = text.replace("\x00", "")
        if not final and text.endswith("\r"):
            # Hold the CR back: its LF may be the first byte of the next chunk.
            self._pending_cr = True
            text = text[:-1]
        if "\r" in text:
            text = text.replace("\r\n", "\n")
            if self._cr_only:
                text = text.replace("\r", "\n")
        if self._strip_ansi and "\x1b" in text:
            text = _ANSI_ESCAPE.sub("", text)
        return text

    def warnings(self, encoding_label: str) -> list[str]:
        """User-facing notes about what decoding had to repair."""
        notes = []
        if self.invalid_bytes:
            notes.append(
                f"{self.invalid_bytes:,} invalid bytes replaced (the file is not valid {encoding_label} everywhere)"
            )
        if self.nul_chars:
            notes.append(f"{self.nul_chars:,} NUL characters removed")
        return notes
