"""A growing log read in spans: the same tokens and location map as reading the whole file at once."""

from __future__ import annotations

import hashlib

import pytest

from infinipot.ingest import TokenLocationMap, open_document
from infinipot.ingest.span import TextSpan, ends_a_line, last_line_end, prefix_hashes

LINES = [
    "2024-05-01T12:00:00Z INFO worker-0 handled request 0",
    "",
    "    indented continuation of a stack trace",
    "2024-05-01T12:00:01Z WARN caf\u00e9 na\u00efve Z\u00fcrich \u00a3100",
    "trailing spaces   ",
    "It was a bright cold day in April, and the clocks were striking thirteen.",
]


def log_text(count: int) -> str:
    return "".join(f"{LINES[i % len(LINES)]} #{i}\n" if LINES[i % len(LINES)] else "\n" for i in range(count))


def tokens(stream) -> list[int]:
    return [token for chunk in stream for token in chunk]


def test_three_appended_spans_give_the_tokens_and_map_of_one_read(tmp_path, tokenizer):
    path = tmp_path / "app.log"
    whole = log_text(90)
    cuts = [len(log_text(n).encode()) for n in (20, 55, 90)]
    whole_bytes = whole.encode()

    span, stored, read = TextSpan(), None, []
    for end in cuts:
        path.write_bytes(whole_bytes[:end])
        stream = open_document(path).token_stream(tokenizer, chunk_tokens=7, span=span, location_map=stored)
        read += tokens(stream)
        assert stream.end_byte == end
        stream.location_map.save(tmp_path / "doc.map")  # each step continues the map stored by the last
        stored = TokenLocationMap.load(tmp_path / "doc.map")
        span = TextSpan(end, None, stored.next_line, stored.chars_end)

    one_go = open_document(path).token_stream(tokenizer, chunk_tokens=7)
    assert read == tokens(one_go)
    assert len(stored) == len(one_go.location_map) == len(read) and stored.runs == one_go.location_map.runs
    assert [stored.location(i) for i in range(len(read))] == [one_go.location_map.location(i) for i in range(len(read))]


def test_a_span_ends_where_asked_and_the_unfinished_line_waits(tmp_path, tokenizer):
    path = tmp_path / "app.log"
    path.write_bytes(b"first line\nsecond line\nhalf a li")
    end = last_line_end(path, path.stat().st_size)
    assert end == len(b"first line\nsecond line\n") and ends_a_line(path, end) and not ends_a_line(path, end + 3)
    stream = open_document(path).token_stream(tokenizer, span=TextSpan(0, end))
    assert tokenizer.decode(tokens(stream)) == "first line\nsecond line\n"
    assert stream.warnings == []  # stopping short of the end on purpose is not "the file grew"
    assert stream.fingerprint == hashlib.sha256(b"first line\nsecond line\n").hexdigest()
    (tmp_path / "none.log").write_bytes(b"no newline yet")
    assert last_line_end(tmp_path / "none.log", 14) == 0


def test_prefix_hashes_in_one_pass(tmp_path):
    path = tmp_path / "a.log"
    path.write_bytes(b"0123456789")
    assert prefix_hashes(path, [4, 10, 11]) == [
        hashlib.sha256(b"0123").hexdigest(),
        hashlib.sha256(b"0123456789").hexdigest(),
        None,
    ]


def test_only_uncompressed_byte_newline_text_can_grow(fixtures_dir, tokenizer):
    assert open_document(fixtures_dir / "latin1.log").can_grow
    for name in ("app.log.gz", "utf16.txt", "sample.pdf", "page.html"):
        document = open_document(fixtures_dir / name)
        assert not document.can_grow
        with pytest.raises(ValueError, match="cannot be read in spans"):
            tokens(document.token_stream(tokenizer, span=TextSpan(0, 10)))


def test_span_settings_are_checked():
    with pytest.raises(ValueError):
        TextSpan(10, 5)
    with pytest.raises(ValueError):
        TextSpan(0, None, first_line=3)
    with pytest.raises(ValueError):
        TextSpan(-1)
