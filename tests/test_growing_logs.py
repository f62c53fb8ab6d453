"""Growing logs: a file that only grew continues its stored pot and never reads its prefix again."""

import pytest
import torch
from helpers import LOG_CHUNK, LOG_CONFIG, line_tokens, log_lines

from infinipot.app.service import DocumentService
from infinipot.core.reader import ContinualReader


@pytest.fixture
def fed(monkeypatch):
    """Tokens the reader is fed, per call of service.read (the prefix must never be fed again)."""
    counts: list[int] = []
    original = ContinualReader.feed

    def counting(self, ids):
        counts[-1] += len(ids)
        return original(self, ids)

    monkeypatch.setattr(ContinualReader, "feed", counting)
    return counts


def stored(service, report):
    record = service.store.pots.get(report.pot_id)
    return record, service.store.load_pot(record)


def test_a_log_appended_in_three_steps_gives_the_pot_of_one_read(tmp_path, tiny_model_dir, fed):
    steps = [log_lines(LOG_CHUNK, 0), log_lines(LOG_CHUNK, 100), log_lines(2 * LOG_CHUNK, 200)]
    path = tmp_path / "app.log"
    service = DocumentService(tmp_path / "home", device="cpu")
    reports, written = [], ""
    for lines in steps:
        written += "".join(lines)
        path.write_text(written, encoding="utf-8")
        fed.append(0)
        reports.append(service.read(path, LOG_CONFIG, tiny_model_dir, follow=True))

    assert [r.tokens for r in reports] == [LOG_CHUNK, 2 * LOG_CHUNK, 4 * LOG_CHUNK]
    assert [r.resumed_from for r in reports] == [0, LOG_CHUNK, 2 * LOG_CHUNK]
    assert fed == [LOG_CHUNK, LOG_CHUNK, 2 * LOG_CHUNK]  # only the appended lines were read
    assert len({r.doc_id for r in reports}) == 1 and len(service.store.documents.all()) == 1
    assert reports[-1].cycles > 10

    one_go = DocumentService(tmp_path / "one-go", device="cpu")
    fed.append(0)
    reference = one_go.read(path, LOG_CONFIG, tiny_model_dir)
    assert fed[-1] == 4 * LOG_CHUNK
    record, grown = stored(service, reports[-1])
    reference_record, expected = stored(one_go, reference)
    assert torch.equal(grown["origin"], expected["origin"]) and torch.equal(grown["kept_by"], expected["kept_by"])
    for name in expected:
        assert torch.equal(grown[name], expected[name]), name
    assert record.counters == reference_record.counters
    assert (record.read_bytes, record.prefix_sha256) == (reference_record.read_bytes, reference_record.prefix_sha256)
    document = service.store.documents.get(reports[-1].doc_id)
    assert document.content_hash == one_go.store.documents.get(reference.doc_id).content_hash
    assert document.tokens == 4 * LOG_CHUNK and document.size_bytes == path.stat().st_size
    # the extended location map covers every token, like the one-go read's
    from infinipot.ingest import TokenLocationMap

    grown_map = TokenLocationMap.load(service.store.absolute(document.location_map))
    one_go_map = TokenLocationMap.load(one_go.store.absolute(one_go.store.documents.get(reference.doc_id).location_map))
    assert [grown_map.location(i) for i in range(len(grown_map))] == [
        one_go_map.location(i) for i in range(len(one_go_map))
    ]


def test_an_unfinished_last_line_waits_for_its_newline(tmp_path, tiny_model_dir, fed):
    path = tmp_path / "app.log"
    lines = log_lines(LOG_CHUNK, 0)
    path.write_text("".join(lines) + "00999 half a li", encoding="utf-8")
    service = DocumentService(tmp_path / "home", device="cpu")
    fed.append(0)
    first = service.read(path, LOG_CONFIG, tiny_model_dir, follow=True)
    assert first.tokens == LOG_CHUNK and fed == [LOG_CHUNK]
    fed.append(0)
    assert service.read(path, LOG_CONFIG, tiny_model_dir, follow=True).reused  # still nothing complete to add
    assert fed[-1] == 0
    with path.open("a", encoding="utf-8") as handle:
        handle.write("ne\n")
    fed.append(0)
    second = service.read(path, LOG_CONFIG, tiny_model_dir, follow=True)
    assert second.resumed_from == LOG_CHUNK and second.doc_id == first.doc_id
    assert fed[-1] == second.tokens - LOG_CHUNK == line_tokens("00999 half a line\n")


def test_a_rewritten_or_shrunk_file_is_read_again_with_a_warning(tmp_path, tiny_model_dir, fed):
    path = tmp_path / "app.log"
    original = "".join(log_lines(LOG_CHUNK, 0))
    path.write_text(original, encoding="utf-8")
    service = DocumentService(tmp_path / "home", device="cpu")
    fed.append(0)
    first = service.read(path, LOG_CONFIG, tiny_model_dir)
    path.write_text("rotated\n" + original[8:] + "one more line\n", encoding="utf-8")
    fed.append(0)
    rewritten = service.read(path, LOG_CONFIG, tiny_model_dir)
    assert rewritten.warnings == [
        "app.log was rewritten since it was read (not only appended to); reading it from the start"
    ]
    assert rewritten.resumed_from == 0 and fed[-1] == rewritten.tokens and rewritten.doc_id != first.doc_id
    assert service.store.pots.get(first.pot_id).status == "complete"  # the old content's pot stays stored
    path.write_text("short\n", encoding="utf-8")
    shrunk = service.read(path, LOG_CONFIG, tiny_model_dir)
    assert shrunk.warnings == ["app.log shrank since it was read; reading it from the start"]
    assert shrunk.resumed_from == 0


def test_a_one_shot_read_of_a_grown_log_continues_and_reports_where(tmp_path, tiny_model_dir, fed):
    path = tmp_path / "app.log"
    path.write_text("".join(log_lines(LOG_CHUNK, 0)), encoding="utf-8")
    service = DocumentService(tmp_path / "home", device="cpu")
    fed.append(0)
    first = service.read(path, LOG_CONFIG, tiny_model_dir)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(log_lines(LOG_CHUNK, 300)))
    fed.append(0)
    grown = service.read(path, LOG_CONFIG, tiny_model_dir)
    assert (grown.doc_id, grown.resumed_from, grown.reused, grown.warnings) == (first.doc_id, LOG_CHUNK, False, [])
    assert fed == [LOG_CHUNK, LOG_CHUNK] and grown.tokens == 2 * LOG_CHUNK
    stored_pot, reused = service.open_pot_reused(str(path))  # asking by path finds the grown document
    assert reused and stored_pot.doc_id == first.doc_id and stored_pot.pot.document_tokens == 2 * LOG_CHUNK
