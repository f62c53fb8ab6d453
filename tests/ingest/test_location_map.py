"""TokenLocationMap: lookups across checkpoints and empty runs, compact size, safe persistence."""

from __future__ import annotations

import random
from array import array

import numpy as np
import pytest

from infinipot.ingest import IngestError, Location, TokenLocationMap
from infinipot.ingest.blocks import Block


def make_block(lengths, lines, page, char_offset):
    starts = array("q", np.concatenate(([0], np.cumsum(lengths)[:-1])).tolist())
    return Block("x" * sum(lengths), starts, array("q", lines), page, char_offset, 0)


def build_map(seed=7, blocks=12, per_block=500):
    """A map over pages with random run lengths (some with no tokens) and a brute-force answer key."""
    rng = random.Random(seed)
    locmap, expected = TokenLocationMap(), []
    offset = 0
    for page in range(1, blocks + 1):
        lengths = [rng.randint(1, 90) for _ in range(per_block)]
        lines = list(range(1, per_block + 1))
        lines[10:13] = [10, 10, 10]  # pieces of one long line share its number
        counts = [0 if rng.random() < 0.1 else rng.randint(1, 30) for _ in range(per_block)]
        block = make_block(lengths, lines, page, offset)
        locmap.add_block(block, np.array(counts))
        for start, line, count in zip(block.starts, lines, counts, strict=True):
            expected += [Location(page, line, offset + start)] * count
        offset += sum(lengths)
    locmap.finish("ab" * 32)
    return locmap, expected


def test_every_token_maps_to_its_run_across_checkpoints():
    locmap, expected = build_map()
    assert locmap.runs == 6000 and len(locmap) == len(expected)
    for index in range(0, len(expected), 41):
        assert locmap.location(index) == expected[index]
    assert locmap.location(len(expected) - 1) == expected[-1]
    sample = np.arange(0, len(expected), 97)
    assert locmap.pages_of(sample).tolist() == [expected[i].page for i in sample]


def test_lines_of_matches_location_lines_across_pages_and_long_line_pieces():
    locmap, expected = build_map()
    sample = np.arange(0, len(expected), 13)
    assert locmap.lines_of(sample).tolist() == [expected[i].line for i in sample]
    with pytest.raises(IndexError):
        locmap.lines_of([len(expected)])


def test_out_of_range_index():
    locmap, expected = build_map(blocks=1)
    for bad in (-1, len(expected)):
        with pytest.raises(IndexError):
            locmap.location(bad)


def test_save_and_load_round_trip_without_pickle(tmp_path):
    locmap, expected = build_map()
    (tmp_path / "maps").mkdir()
    path = tmp_path / "maps" / "doc.map"  # any name: nothing is appended to it
    locmap.save(path)
    with np.load(path, allow_pickle=False) as data:
        assert all(data[key].dtype != object for key in data.files)
    loaded = TokenLocationMap.load(path)
    assert loaded.fingerprint == "ab" * 32 and loaded.complete
    assert len(loaded) == len(expected)
    for index in random.Random(1).sample(range(len(expected)), 500):
        assert loaded.location(index) == expected[index]
    assert [p.name for p in path.parent.iterdir()] == ["doc.map"]


def test_map_is_compact_for_long_logs(tmp_path):
    locmap = TokenLocationMap()
    lines_per_block, offset, line = 20_000, 0, 1
    for _ in range(10):  # 200,000 log lines of ~120 characters
        lengths = np.full(lines_per_block, 120)
        locmap.add_block(
            make_block(lengths, range(line, line + lines_per_block), None, offset), np.full(lines_per_block, 30)
        )
        offset += int(lengths.sum())
        line += lines_per_block
    locmap.finish(None)
    assert locmap.nbytes == 8 * 200_000  # 8 bytes per line in memory
    locmap.save(tmp_path / "m.npz")
    assert (tmp_path / "m.npz").stat().st_size < 50_000  # and far less on disk
    assert locmap.location(30 * 150_000 + 5) == Location(None, 150_001, 120 * 150_000)


def test_failed_save_leaves_no_file(tmp_path, monkeypatch):
    locmap, _ = build_map(blocks=1)

    def disk_full(handle, **arrays):
        handle.write(b"PK partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", disk_full)
    out = tmp_path / "maps"
    out.mkdir()
    with pytest.raises(OSError):
        locmap.save(out / "m.npz")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("damage", ["garbage", "truncated", "inconsistent"])
def test_damaged_map_files_are_rejected(tmp_path, damage):
    locmap, _ = build_map(blocks=1)
    path = tmp_path / "m.npz"
    locmap.save(path)
    if damage == "garbage":
        path.write_bytes(b"not a map at all")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:200])
    else:
        with np.load(path) as data:
            arrays = {key: data[key] for key in data.files}
        arrays["tokens"] = arrays["tokens"][:-1]
        np.savez(path, **arrays)
    with pytest.raises(IngestError, match="damaged"):
        TokenLocationMap.load(path)
