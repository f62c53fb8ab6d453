"""Encodings, repairs and line handling of plain text files."""

from __future__ import annotations

import pytest

from infinipot.ingest import open_document


def read(path) -> tuple[str, list[str]]:
    """Extracted text and the warnings of the pass."""
    doc = open_document(path)
    text = "".join(segment.text for segment in doc.segments())
    return text, doc.warnings


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("h\u00e9llo w\u00f6rld\n".encode("utf-8-sig"), "utf-8-sig"),
        ("h\u00e9llo w\u00f6rld\n".encode("utf-16"), "utf-16"),
        (("h\u00e9llo w\u00f6rld\n" * 5).encode("utf-16-be"), "utf-16-be"),
        (("h\u00e9llo w\u00f6rld\n" * 5).encode("utf-16-le"), "utf-16-le"),
    ],
)
def test_bom_and_bomless_unicode(tmp_path, data, encoding):
    (tmp_path / "t.txt").write_bytes(data)
    doc = open_document(tmp_path / "t.txt")
    assert doc.encoding == encoding
    assert next(doc.segments()).text == "h\u00e9llo w\u00f6rld\n"


def test_cyrillic_legacy_encoding_is_not_forced_to_western(tmp_path):
    phrase = "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440, \u044d\u0442\u043e \u0442\u0435\u0441\u0442. "
    (tmp_path / "ru.txt").write_bytes((phrase * 20 + "\n").encode("cp1251"))
    doc = open_document(tmp_path / "ru.txt")
    assert doc.encoding == "cp1251"
    assert next(doc.segments()).text.startswith(phrase)


def test_invalid_bytes_in_utf8_are_replaced_and_counted(tmp_path):
    good = "caf\u00e9 na\u00efve r\u00e9sum\u00e9 line\n" * 20
    data = good.encode() + b"broken \xff\xfe\xff here\n" + good.encode()
    (tmp_path / "bad.txt").write_bytes(data)
    text, warnings = read(tmp_path / "bad.txt")
    assert "broken \ufffd\ufffd\ufffd here\n" in text and text.count("caf\u00e9") == 40
    assert warnings == ["3 invalid bytes replaced (the file is not valid utf-8 everywhere)"]


def test_latin1_bytes_deep_inside_an_ascii_log_are_found(tmp_path):
    ascii_part = b"2024-01-01 00:00:00 INFO plain ascii line\n" * 6000  # > 192 KB before the first accent
    accented = "2024-01-01 00:00:01 INFO user=Ren\u00e9e city=Z\u00fcrich\n".encode("latin-1")
    (tmp_path / "late.log").write_bytes(ascii_part + accented * 3000 + ascii_part)
    doc = open_document(tmp_path / "late.log")
    assert doc.encoding == "cp1252"
    assert any("Z\u00fcrich" in segment.text for segment in doc.segments())


def test_nul_padding_and_terminal_colours_are_removed(tmp_path):
    before = b"".join(b"line %d before the crash\n" % i for i in range(50))
    data = before + b"\x1b[31mERROR\x1b[0m disk full\n" + b"\x00" * 100 + b"after crash\n"
    (tmp_path / "crash.log").write_bytes(data)
    text, warnings = read(tmp_path / "crash.log")
    assert text == before.decode() + "ERROR disk full\nafter crash\n"
    assert warnings == ["100 NUL characters removed"]


def test_crlf_split_across_read_chunks(tmp_path):
    from infinipot.ingest.readers.text import READ_BYTES

    line = "x" * (READ_BYTES - 1)  # the CR of the first line ends the first chunk exactly
    (tmp_path / "crlf.txt").write_bytes((line + "\r\nsecond\r\n").encode())
    segments = list(open_document(tmp_path / "crlf.txt").segments())
    assert "".join(s.text for s in segments) == line + "\nsecond\n"
    assert segments[-1].location.line == 2


def test_old_mac_cr_line_ends(tmp_path):
    (tmp_path / "mac.txt").write_bytes(b"one\rtwo\rthree\r")
    segments = list(open_document(tmp_path / "mac.txt").segments())
    assert [(s.text, s.location.line) for s in segments] == [("one\n", 1), ("two\n", 2), ("three\n", 3)]


def test_last_line_without_newline_and_blank_lines_keep_numbering(tmp_path):
    (tmp_path / "t.txt").write_bytes(b"a\n\n\nb")
    segments = list(open_document(tmp_path / "t.txt").segments())
    assert [(s.text, s.location.line) for s in segments] == [("a\n", 1), ("\n", 2), ("\n", 3), ("b", 4)]
