"""Tensor files: exact and half-precision round trips, atomic writes, and damage detection."""

import pytest
import torch

from infinipot.storage.atomic import write_atomically
from infinipot.storage.errors import DamagedFile
from infinipot.storage.tensors import VerifiedFiles, read_tensor_file, write_tensor_file


def sample_tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    keys = torch.randn(1, 2, 50, 16, generator=g) * 3
    return {
        "keys.0": keys,
        "values.0": torch.randn(1, 2, 50, 16, generator=g),
        "origin": torch.randint(0, 10**9, (2, 2, 50), generator=g),
        "kept_by": torch.randint(0, 4, (2, 2, 50), generator=g).to(torch.uint8),
        "novelty": torch.rand(2, 2, 50, generator=g),
        "bf16": torch.randn(7, generator=g).to(torch.bfloat16),
        "view": keys[0, 0, :5],  # shares memory with keys.0
    }


def test_exact_round_trip_is_bit_exact(tmp_path):
    tensors = sample_tensors()
    written = write_tensor_file(tmp_path / "pot.safetensors", tensors, meta={"counters": {"cycles": 3}})
    loaded, meta = read_tensor_file(written.path, written.checksum, written.nbytes)
    assert meta == {"counters": {"cycles": 3}}
    assert loaded.keys() == tensors.keys()
    for name, tensor in tensors.items():
        assert loaded[name].dtype == tensor.dtype, name
        assert torch.equal(loaded[name], tensor), name


def test_halved_round_trip_is_within_fp16_tolerance_and_provenance_stays_exact(tmp_path):
    tensors = sample_tensors()
    exact = write_tensor_file(tmp_path / "exact.safetensors", tensors)
    halved = write_tensor_file(tmp_path / "half.safetensors", tensors, halve=frozenset({"keys.0", "values.0"}))
    bulk = tensors["keys.0"].numel() + tensors["values.0"].numel()
    assert exact.nbytes - halved.nbytes >= 2 * bulk  # two bytes saved per key and value element
    loaded, _ = read_tensor_file(halved.path, halved.checksum, halved.nbytes)
    for name in ("keys.0", "values.0"):
        assert loaded[name].dtype == torch.float32  # restored to the dtype it was given in
        assert not torch.equal(loaded[name], tensors[name])  # it really was rounded
        torch.testing.assert_close(loaded[name], tensors[name], rtol=1e-3, atol=1e-3)
    for name in ("origin", "kept_by", "novelty", "bf16"):
        assert torch.equal(loaded[name], tensors[name]), name


def test_values_beyond_fp16_range_are_kept_as_bf16_not_infinity(tmp_path):
    big = {"keys.0": torch.tensor([1.0e6, -3.0e5, 0.5, 70000.0])}
    written = write_tensor_file(tmp_path / "big.safetensors", big, halve=frozenset({"keys.0"}))
    loaded, _ = read_tensor_file(written.path, written.checksum, written.nbytes)
    assert bool(torch.isfinite(loaded["keys.0"]).all())
    torch.testing.assert_close(loaded["keys.0"], big["keys.0"], rtol=1e-2, atol=0.0)


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda p: p.unlink(), "file missing"),
        (lambda p: p.write_bytes(p.read_bytes()[:-100]), "truncated"),
        (lambda p: p.write_bytes(p.read_bytes() + b"x"), "checksum mismatch"),
        (lambda p: p.write_bytes(_flip(p.read_bytes(), -20)), "checksum mismatch"),
    ],
    ids=["missing", "truncated", "extended", "flipped-byte"],
)
@pytest.mark.parametrize("verified_before", [False, True], ids=["first-read", "after-a-verified-read"])
def test_damaged_files_are_detected(tmp_path, damage, reason, verified_before):
    written = write_tensor_file(tmp_path / "pot.safetensors", sample_tensors())
    verified = VerifiedFiles()
    if verified_before:  # the app's store remembers a file that matched: its damage since must still show
        read_tensor_file(written.path, written.checksum, written.nbytes, verified)
    damage(written.path)
    with pytest.raises(DamagedFile) as info:
        read_tensor_file(written.path, written.checksum, written.nbytes, verified)
    assert info.value.reason.startswith(reason)


def test_a_verified_file_is_hashed_once_while_unchanged_and_again_when_changed_even_with_its_times_set_back(
    tmp_path, monkeypatch
):
    import hashlib
    import os

    from infinipot.storage import tensors as tensor_files

    hashed: list[int] = []
    sha256 = hashlib.sha256

    def counting_sha256(data):
        hashed.append(len(data))
        return sha256(data)

    monkeypatch.setattr(tensor_files.hashlib, "sha256", counting_sha256)
    written = write_tensor_file(tmp_path / "pot.safetensors", sample_tensors())
    hashed.clear()
    verified = VerifiedFiles()
    first, _ = read_tensor_file(written.path, written.checksum, written.nbytes, verified)
    again, _ = read_tensor_file(written.path, written.checksum, written.nbytes, verified)
    assert len(hashed) == 1
    assert all(torch.equal(first[name], again[name]) for name in first)
    read_tensor_file(written.path, written.checksum, written.nbytes)  # no memory of files: always hashed
    assert len(hashed) == 2

    times = os.stat(written.path)
    written.path.write_bytes(_flip(written.path.read_bytes(), -20))  # the same size, ...
    os.utime(written.path, ns=(times.st_atime_ns, times.st_mtime_ns))  # ... the same modification time
    with pytest.raises(DamagedFile, match="checksum mismatch"):
        read_tensor_file(written.path, written.checksum, written.nbytes, verified)
    assert len(hashed) == 3


def _flip(data: bytes, at: int) -> bytes:
    data = bytearray(data)
    data[at] ^= 0xFF
    return bytes(data)


def test_a_failed_write_leaves_the_previous_file_and_no_temporary_file(tmp_path):
    target = tmp_path / "pot.safetensors"
    first = write_tensor_file(target, sample_tensors())

    def half_write(path):
        path.write_bytes(b"partial")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, half_write)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pot.safetensors"]
    read_tensor_file(target, first.checksum, first.nbytes)  # still the complete first version
