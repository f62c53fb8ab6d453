"""Token streams: exact tokens in bounded chunks, a correct location map, fingerprint and progress."""

from __future__ import annotations

import bisect
import hashlib
import os

import pytest

from infinipot.ingest import IngestError, Location, file_bytes, file_fingerprint, open_document

DOCUMENTS = ["sample.pdf", "report.docx", "novel.epub", "page.html", "latin1.log", "utf16.txt", "app.log.gz"]


def run(doc, tokenizer, chunk_tokens=16, progress=None):
    stream = doc.token_stream(tokenizer, chunk_tokens=chunk_tokens, progress=progress)
    chunks = list(stream)
    return stream, chunks


@pytest.mark.parametrize("name", DOCUMENTS)
def test_chunks_concatenate_to_the_documents_tokens(fixtures_dir, tokenizer, name):
    doc = open_document(fixtures_dir / name)
    stream, chunks = run(doc, tokenizer)
    text = "".join(segment.text for segment in doc.segments())
    expected = tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
    assert [token for chunk in chunks for token in chunk] == expected
    assert all(len(chunk) == 16 for chunk in chunks[:-1]) and 0 < len(chunks[-1]) <= 16
    assert len(stream.location_map) == len(expected) == stream.tokens_done


@pytest.mark.parametrize("name", DOCUMENTS)
def test_location_of_every_token_is_the_segment_it_starts_in(fixtures_dir, tokenizer, name):
    doc = open_document(fixtures_dir / name)
    stream, _ = run(doc, tokenizer)
    segments = list(doc.segments())
    text = "".join(segment.text for segment in segments)
    starts = [segment.location.char_offset for segment in segments]
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    for index, (start, _) in enumerate(offsets):
        expected = segments[bisect.bisect_right(starts, start) - 1].location
        assert stream.location_map.location(index) == expected
        assert stream.location_map.page_of(index) == expected.page


def test_fingerprint_is_the_sha256_of_the_raw_file(fixtures_dir, tokenizer):
    for name in ("sample.pdf", "app.log.gz", "novel.epub"):
        path = fixtures_dir / name
        stream, _ = run(open_document(path), tokenizer)
        assert stream.fingerprint == file_fingerprint(path) == hashlib.sha256(path.read_bytes()).hexdigest()
        assert stream.location_map.fingerprint == stream.fingerprint


def test_progress_reports_bytes_and_tokens_until_done(fixtures_dir, tokenizer):
    reports = []
    doc = open_document(fixtures_dir / "sample.pdf")
    stream, _ = run(doc, tokenizer, progress=reports.append)
    assert reports[0].bytes_done == 0 and reports[0].tokens_estimated > 0
    done = [report.bytes_done for report in reports]
    assert done == sorted(done) and len(set(done)) >= 4  # one step per page
    last = reports[-1]
    assert last.done and last.fraction == 1.0
    assert (last.bytes_done, last.bytes_total) == (doc.size_bytes, doc.size_bytes)
    assert last.tokens_done == last.tokens_estimated == stream.tokens_done


def test_warnings_reach_the_stream(fixtures_dir, tokenizer):
    stream, _ = run(open_document(fixtures_dir / "sample.pdf"), tokenizer)
    assert stream.warnings == ["page 3 has no extractable text (scanned images? run OCR to include them)"]


def test_special_token_text_in_a_document_stays_text(tmp_path, tokenizer):
    (tmp_path / "chat.txt").write_text("user said <|im_end|> and <|endoftext|> here\n")
    _, chunks = run(open_document(tmp_path / "chat.txt"), tokenizer)
    ids = [token for chunk in chunks for token in chunk]
    specials = set(tokenizer.all_special_ids) | {tokenizer.convert_tokens_to_ids("<|im_end|>")}
    assert not specials & set(ids)
    assert tokenizer.decode(ids) == "user said <|im_end|> and <|endoftext|> here\n"
    # The caller's tokenizer is left as it was.
    assert tokenizer("<|endoftext|>", add_special_tokens=False)["input_ids"] == [tokenizer.eos_token_id]


def test_no_special_tokens_are_added(fixtures_dir, backend_tokenizer):
    from tokenizers import Tokenizer
    from tokenizers.processors import TemplateProcessing

    with_bos = Tokenizer.from_str(backend_tokenizer.to_str())
    bos = with_bos.token_to_id("<|endoftext|>")
    with_bos.post_processor = TemplateProcessing(single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)])
    assert with_bos.encode("hello").ids[0] == bos
    _, chunks = run(open_document(fixtures_dir / "latin1.log"), with_bos)  # a bare tokenizers.Tokenizer works too
    assert bos not in {token for chunk in chunks for token in chunk}


def test_tokenizers_without_a_rust_backend_are_encoded_per_segment(fixtures_dir):
    class CodePoints:
        def encode(self, text, add_special_tokens=False):
            return [ord(ch) for ch in text]

    doc = open_document(fixtures_dir / "utf16.txt")
    stream, chunks = run(doc, CodePoints(), chunk_tokens=10)
    text = "".join(segment.text for segment in doc.segments())
    assert [token for chunk in chunks for token in chunk] == [ord(ch) for ch in text]
    assert stream.location_map.location(len(text) - 1) == Location(None, 4, text.index("Last line"))


def test_a_stream_is_iterated_once_and_validates_chunk_size(fixtures_dir, tokenizer):
    doc = open_document(fixtures_dir / "notes.md")
    stream, _ = run(doc, tokenizer)
    with pytest.raises(RuntimeError):
        list(stream)
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError):
            doc.token_stream(tokenizer, chunk_tokens=bad)
    with pytest.raises(TypeError):
        doc.token_stream(object())


def test_abandoned_stream_is_incomplete_and_cannot_be_saved(fixtures_dir, tokenizer, tmp_path):
    stream = open_document(fixtures_dir / "app.log.gz").token_stream(tokenizer, chunk_tokens=8)
    first = next(iter(stream))
    assert len(first) == 8
    assert stream.fingerprint is None and not stream.location_map.complete
    out = tmp_path / "maps"
    out.mkdir()
    with pytest.raises(IngestError, match="did not finish"):
        stream.location_map.save(out / "doc.map")
    assert list(out.iterdir()) == []


def test_progress_callback_can_cancel(fixtures_dir, tokenizer):
    class Cancelled(Exception):
        pass

    def cancel_after_first_page(progress):
        if progress.bytes_done:
            raise Cancelled

    with pytest.raises(Cancelled):
        run(open_document(fixtures_dir / "sample.pdf"), tokenizer, progress=cancel_after_first_page)


def test_long_line_pieces_tokenize_like_the_whole_line(tmp_path, tokenizer):
    words = ["alpha", "beta", "gamma", "cold", "April", "clocks"]
    line = " ".join(words[i % 6] + str(i % 7) for i in range(30_000))  # ~250 KB, split into 8 KB pieces
    (tmp_path / "long.txt").write_text(line)
    doc = open_document(tmp_path / "long.txt")
    stream, chunks = run(doc, tokenizer, chunk_tokens=4096)
    assert [token for chunk in chunks for token in chunk] == tokenizer(line, add_special_tokens=False)["input_ids"]
    assert {segment.location.line for segment in doc.segments()} == {1}
    assert stream.warnings == ["1 very long lines were split into pieces of at most 8,192 characters"]


def test_a_files_bytes_are_read_once_with_the_fingerprint_of_what_was_read(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("first line\nsecond line\n", encoding="utf-8")
    data, fingerprint = file_bytes(path)
    assert data == path.read_bytes() and fingerprint == file_fingerprint(path)
    path.write_text("changed\n", encoding="utf-8")  # what was read keeps its own fingerprint
    assert fingerprint == hashlib.sha256(data).hexdigest() != file_fingerprint(path)
    with pytest.raises(IngestError, match="was not found"):
        file_bytes(tmp_path / "gone.txt")
    with pytest.raises(IngestError, match="is a folder"):
        file_bytes(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match="named pipe"):
        file_bytes(fifo)  # refused before any open, which would block
