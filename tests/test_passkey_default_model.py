"""The 16K passkey goal on the bundled default model, through `bench niah`'s own trial code.

A 5-digit key hidden at depths 0.1, 0.5 and 0.9 of a 16K-token essay document is read into the default 4K
pot (seven compressions) and asked for in the default answer mode, `evidence`: the pot points to the spans
the question attends to and the spans are read right before the question (after what EvidenceConfig's default
puts before them). Answered from the whole pot, this
135M model misses keys that sit ~2K entries before the question (docs/experiments.md, "Passkey retrieval").
Three keys per depth, the bench's first three (seed 0); reads of a depth share the haystack before the
needle, as in the bench (~6 separate reads, a few minutes on CPU). The focused copy (`ask --focus 1024`)
answers the same pots too, printed for comparison.
"""

from __future__ import annotations

import pytest

from infinipot.app.bench.niah import NiahSettings, evidence_key, run
from infinipot.core.answer.evidence import EvidenceConfig
from infinipot.core.config import PotConfig
from infinipot.core.model import ModelSpec, load_model

pytestmark = pytest.mark.integration

DEPTHS = (0.1, 0.5, 0.9)


def test_the_default_model_finds_a_16k_passkey_at_every_depth_from_a_4k_pot(tmp_path):
    loaded = load_model(ModelSpec(device="cpu"), tmp_path / "home")
    settings = NiahSettings(
        lengths=(16384,),
        depths=DEPTHS,
        trials=3,
        methods=("infinipot",),
        out=tmp_path / "niah",
        focus=1024,
        evidence_pots=(EvidenceConfig().pot_entries,),  # the default: what `ask` reads the spans after
    )
    key = evidence_key(EvidenceConfig().pot_entries)
    records = run(settings, loaded, log=lambda line: None)
    assert len(records) == 9
    pot_size = PotConfig().pot_size
    for record in records:
        assert record["cycles"] >= 6 and record["peak_entries"] <= pot_size, record
        assert record["key_kept"] == 1.0, record  # every layer and KV head still held the whole key
        assert record["focus_entries"] == 1024
        assert record[f"{key}_holds_key"], record  # the spans the pot pointed to hold the key
    found = {depth: [r[f"{key}_found"] for r in records if r["depth"] == depth] for depth in DEPTHS}
    print("focused answers:", [(r["depth"], r["key"], r["focus_answer"]) for r in records])  # pytest -s
    print("evidence answers:", [(r["depth"], r["key"], r[f"{key}_answer"]) for r in records])
    assert all(sum(hits) >= 2 for hits in found.values()), found
