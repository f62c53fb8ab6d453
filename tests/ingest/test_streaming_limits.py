"""Size limits: huge lines and files stream in bounded pieces with bounded memory; snapshots and fingerprints."""

from __future__ import annotations

import hashlib
import tracemalloc

import pytest

from infinipot.ingest import IngestError, file_fingerprint, open_document
from infinipot.ingest.blocks import BLOCK_CHARS, MAX_SEGMENT_CHARS

MB = 1 << 20


class CountingTokenizer:
    """One token per 64 characters, recording the largest text it was ever given."""

    def __init__(self) -> None:
        self.largest = 0

    def encode(self, text, add_special_tokens=False):
        self.largest = max(self.largest, len(text))
        return [1] * (len(text) // 64 + 1)


@pytest.fixture(scope="module")
def single_line_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("big") / "one-line.json"
    unit = b'{"key": "value", "n": 12345},'
    with open(path, "wb") as handle:
        for _ in range(50 * MB // (len(unit) * 4096)):
            handle.write(unit * 4096)
    return path


def test_50mb_single_line_is_split_into_bounded_pieces_with_bounded_memory(single_line_file):
    doc = open_document(single_line_file)
    size = doc.size_bytes
    assert size > 49 * MB
    total = longest = pieces = 0
    digest = hashlib.sha256()
    tracemalloc.start()
    try:
        for segment in doc.segments():
            assert segment.location.line == 1 and segment.location.char_offset == total
            total += len(segment.text)
            longest = max(longest, len(segment.text))
            pieces += 1
            digest.update(segment.text.encode())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert total == size and longest <= MAX_SEGMENT_CHARS and pieces >= size // MAX_SEGMENT_CHARS
    assert digest.hexdigest() == file_fingerprint(single_line_file)  # nothing lost or reordered
    assert peak < 16 * MB, f"peak traced memory {peak / MB:.1f} MB"


def test_50mb_single_line_token_stream_stays_bounded(single_line_file):
    tokenizer = CountingTokenizer()
    stream = open_document(single_line_file).token_stream(tokenizer, chunk_tokens=2048)
    largest_chunk = 0
    tracemalloc.start()
    try:
        for chunk in stream:
            largest_chunk = max(largest_chunk, len(chunk))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert tokenizer.largest <= MAX_SEGMENT_CHARS and largest_chunk == 2048
    assert stream.warnings == ["1 very long lines were split into pieces of at most 8,192 characters"]
    assert stream.location_map.nbytes < 100_000
    assert peak < 16 * MB + 2 * BLOCK_CHARS * 4, f"peak traced memory {peak / MB:.1f} MB"


def test_big_gzip_log_streams_progressively(tmp_path):
    import gzip

    lines = b"".join(b"2024-05-01 12:00:00 INFO request %08d served in %d ms\n" % (i, i % 97) for i in range(40_000))
    path = tmp_path / "big.log.gz"
    path.write_bytes(gzip.compress(lines, compresslevel=1))
    reports = []
    stream = open_document(path).token_stream(CountingTokenizer(), progress=reports.append)
    for _ in stream:
        pass
    partial = [r.bytes_done for r in reports if 0 < r.bytes_done < r.bytes_total]
    assert len(partial) >= 2 and partial == sorted(partial)  # read in steps, not unpacked in one go
    assert stream.location_map.location(len(stream.location_map) - 1).line == 40_000
    assert stream.fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_growing_log_is_read_as_the_snapshot_taken_when_opened(tmp_path):
    path = tmp_path / "live.log"
    path.write_bytes(b"first line\nsecond line\n")
    original = file_fingerprint(path)
    doc = open_document(path)
    with open(path, "ab") as handle:
        handle.write(b"written later\n")
    stream = doc.token_stream(CountingTokenizer())
    list(stream)
    assert stream.fingerprint == original
    assert [s.text for s in doc.segments()] == ["first line\n", "second line\n"]
    assert stream.warnings == ["the file grew while it was being read; only its first 23 bytes were used"]


def test_a_file_that_shrinks_while_read_is_an_error(tmp_path):
    path = tmp_path / "shrinking.log"
    path.write_bytes(b"x" * 100 + b"\n")
    doc = open_document(path)
    path.write_bytes(b"short\n")
    with pytest.raises(IngestError, match="got shorter while it was being read"):
        list(doc.segments())


def test_file_fingerprint_of_missing_file(tmp_path):
    with pytest.raises(IngestError, match="was not found"):
        file_fingerprint(tmp_path / "gone.pdf")
