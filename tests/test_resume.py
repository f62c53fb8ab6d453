"""Checkpoints while reading: an interrupted read resumes to exactly the pot an uninterrupted read gives."""

import pytest
import torch

from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig
from infinipot.ingest import IngestError

CONFIG = PotConfig(pot_size=128, keep_size=48)


@pytest.fixture(scope="module")
def long_document(tmp_path_factory):
    path = tmp_path_factory.mktemp("document") / "log.txt"
    lines = [f"{i:05d} worker-{i % 7} handled request {i * 31 % 997} for the quick brown fox." for i in range(60)]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


class Interrupt(Exception):
    """Stands for a crash that is not the document's fault (a full disk, a bug, a lost GPU)."""


def read(home, path, model_dir, config=CONFIG, interval=0.0, stop_at=None, stop_with=KeyboardInterrupt):
    """Read with a checkpoint interval; raise `stop_with` from the progress callback at piece `stop_at`.

    Returns the service, the report (None when stopped) and tokens_read after every forward piece.
    """
    service = DocumentService(home=home, device="cpu", checkpoint_seconds=interval)
    steps: list[int] = []

    def progress(pot):
        steps.append(pot.tokens_read)
        if stop_at is not None and len(steps) == stop_at:
            raise stop_with()

    try:
        report = service.read(path, config, model_dir, on_progress=progress)
    except stop_with:
        return service, None, steps
    return service, report, steps


def stored_tensors(service, report):
    record = service.store.pots.get(report.pot_id)
    return record, service.store.load_pot(record)


def assert_same_pot(service_a, report_a, service_b, report_b):
    record_a, a = stored_tensors(service_a, report_a)
    record_b, b = stored_tensors(service_b, report_b)
    assert torch.equal(a["origin"], b["origin"])  # the same kept indices, per layer and head
    assert torch.equal(a["kept_by"], b["kept_by"]) and torch.equal(a["positions"], b["positions"])
    for name in a:
        # exact checkpoints make the resumed pot bit-equal; the stored fp16 copies are then equal too
        assert torch.equal(a[name], b[name]), name
    assert record_a.counters == record_b.counters
    assert (report_a.tokens, report_a.cycles, report_a.peak_entries) == (
        report_b.tokens,
        report_b.cycles,
        report_b.peak_entries,
    )


@pytest.fixture(scope="module")
def references():
    return {}


@pytest.fixture
def uninterrupted(tmp_path_factory, long_document, tiny_model_dir, references):
    """The uninterrupted read of the document with a config, done once per module."""

    def run(config=CONFIG):
        if config not in references:
            home = tmp_path_factory.mktemp("reference")
            references[config] = read(home, long_document, tiny_model_dir, config)
        return references[config]

    return run


@pytest.mark.parametrize(
    ("forward_tokens", "stop_at"),
    [(1024, 2), (1024, 19), (40, 41)],
    ids=["first-piece", "mid-read", "short-pieces"],
)
def test_interrupted_read_resumes_to_the_same_pot(
    tmp_path, long_document, tiny_model_dir, uninterrupted, forward_tokens, stop_at
):
    config = PotConfig(pot_size=128, keep_size=48, forward_tokens=forward_tokens)
    ref_service, reference, ref_steps = uninterrupted(config)
    assert reference.cycles > 20 and len(ref_steps) > stop_at

    home = tmp_path / "interrupted"
    service, report, steps = read(home, long_document, tiny_model_dir, config, stop_at=stop_at)
    assert report is None and steps == ref_steps[:stop_at]
    pot = service.store.pots.for_document(service.store.documents.all()[0].id)[0]
    assert pot.status == "reading" and pot.reader_pid is None and pot.error == "interrupted"

    resumed_service, resumed, resumed_steps = read(home, long_document, tiny_model_dir, config)
    # the checkpoint is the one after piece stop_at - 1: reading continues with piece stop_at, and every
    # later piece ends at the same stream offset as in the uninterrupted read
    assert resumed.resumed_from == ref_steps[stop_at - 2] - _prefix(ref_service, reference)
    assert resumed_steps == ref_steps[stop_at - 1 :]
    assert resumed.reused is False
    assert_same_pot(ref_service, reference, resumed_service, resumed)
    assert resumed_service.store.checkpoints.for_pot(resumed.pot_id) == []  # removed once complete


def _prefix(service, report) -> int:
    return service.store.pots.get(report.pot_id).counters["prefix_len"]


def test_twice_interrupted_read_still_ends_with_the_same_pot(tmp_path, long_document, tiny_model_dir, uninterrupted):
    ref_service, reference, ref_steps = uninterrupted()
    home = tmp_path / "twice"
    read(home, long_document, tiny_model_dir, stop_at=10)
    service, report, _ = read(home, long_document, tiny_model_dir, stop_at=9, stop_with=Interrupt)
    assert report is None
    (pot,) = service.store.pots.for_document(service.store.documents.all()[0].id)
    assert pot.status == "reading" and pot.error.startswith("interrupted")  # not the document's fault: resumable
    service, resumed, steps = read(home, long_document, tiny_model_dir)
    # Ctrl-C keeps the checkpoint before its piece; a stop raised by the caller's progress callback (the app's
    # Cancel) checkpoints the piece it stopped after, so nothing read before it is read again
    assert len(steps) == len(ref_steps) - (10 - 1) - 9
    assert_same_pot(ref_service, reference, service, resumed)


def test_no_checkpoint_before_the_interval_has_passed(tmp_path, long_document, tiny_model_dir, uninterrupted):
    ref_service, reference, _ = uninterrupted()
    home = tmp_path / "slow-checkpoints"
    service, _, _ = read(home, long_document, tiny_model_dir, interval=3600.0, stop_at=20)
    pot = service.store.pots.for_document(service.store.documents.all()[0].id)[0]
    assert service.store.checkpoints.latest(pot.id) is None
    service, resumed, _ = read(home, long_document, tiny_model_dir, interval=3600.0)
    assert resumed.resumed_from == 0  # nothing to resume from: read from the start, same result
    assert_same_pot(ref_service, reference, service, resumed)


def test_damaged_checkpoint_is_reported_and_the_read_starts_over(
    tmp_path, long_document, tiny_model_dir, uninterrupted
):
    ref_service, reference, _ = uninterrupted()
    home = tmp_path / "damaged"
    service, _, _ = read(home, long_document, tiny_model_dir, stop_at=15)
    pot = service.store.pots.for_document(service.store.documents.all()[0].id)[0]
    checkpoint = service.store.absolute(service.store.checkpoints.latest(pot.id).tensor_file)
    data = bytearray(checkpoint.read_bytes())
    data[-10] ^= 0x55
    checkpoint.write_bytes(bytes(data))
    service, resumed, _ = read(home, long_document, tiny_model_dir)
    assert resumed.resumed_from == 0
    assert resumed.warnings == ["checkpoint of log.txt is damaged (checksum mismatch); reading from the start"]
    assert_same_pot(ref_service, reference, service, resumed)


def test_bad_input_fails_its_own_pot_and_leaves_stored_pots_intact(tmp_path, long_document, tiny_model_dir):
    service, good, _ = read(tmp_path / "home", long_document, tiny_model_dir)
    before = service.store.pots.get(good.pot_id)
    blank = tmp_path / "blank.txt"
    blank.write_text("   \n\n\t  \n" * 20, encoding="utf-8")
    with pytest.raises(IngestError, match="no text"):
        service.read(blank, CONFIG, tiny_model_dir)
    failed_doc = [d for d in service.store.documents.all() if d.name == "blank.txt"][0]
    (failed,) = service.store.pots.for_document(failed_doc.id)
    assert failed.status == "failed" and "no text" in failed.error
    assert service.store.checkpoints.for_pot(failed.id) == []
    after = service.store.pots.get(good.pot_id)
    assert after == before
    service.store.verify_pot(after)
    again = service.read(long_document, CONFIG, tiny_model_dir)
    assert again.reused is True
