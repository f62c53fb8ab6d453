"""The cheap eviction path (core.eviction, select_latest) keeps what the plain per-layer path kept, as it kept it."""

import pytest
import torch
from test_cr_rope import ROPE_VARIANTS
from tiny_models import build_model, random_ids, tiny_loaded

from infinipot.core import distill, eviction, hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.eviction import move_keys
from infinipot.core.pot import Pot
from infinipot.core.rope import apply_rotary, reposition_keys
from infinipot.core.scorers import LayerEvidence
from infinipot.core.selection import select_entries, select_latest


def plain_compress_pot(model, pot, scorer, catalyst, keep, sink_tokens, cr_rope, carried=None) -> Pot:
    """The general path as it was before core.eviction: rank every layer, gather each layer's K and V with an index
    expanded over D, and undo and redo RoPE on every kept key from per-entry cos/sin."""
    carried = {} if carried is None else carried
    kept_idx, reasons = [], []
    for layer in range(len(pot.keys)):
        evidence = LayerEvidence(
            catalyst=None if catalyst is None else catalyst[layer],
            novelty=pot.novelty[layer],
            origin=pot.origin[layer],
            keep=keep,
            **{name: t[layer] for name, t in carried.items()},
        )
        protected = pot.sink_masks(sink_tokens)[layer]
        idx, reason = select_entries(scorer.score(evidence), pot.novelty[layer], protected, keep, scorer.novelty_share)
        kept_idx.append(idx)
        reasons.append(reason)
    idx = torch.stack(kept_idx)  # (L, H_kv, keep)
    for name in list(carried):
        carried[name] = carried[name].gather(2, idx)
    old_positions = pot.positions.gather(2, idx)
    new_positions = torch.arange(keep).expand_as(idx).contiguous() if cr_rope else old_positions
    keys, values = [], []
    for layer, (k, v) in enumerate(zip(pot.keys, pot.values, strict=True)):
        gather_idx = idx[layer][None, :, :, None].expand(-1, -1, -1, k.shape[-1])  # (1, H_kv, keep, D)
        k_kept = k.gather(2, gather_idx)
        if cr_rope:
            old = hf_adapter.rotary_cos_sin(model, old_positions[layer])  # (H_kv, keep, rot)
            new = hf_adapter.rotary_cos_sin(model, new_positions[0, :1])  # (1, keep, rot)
            k_kept = reposition_keys(k_kept, (old[0][None], old[1][None]), (new[0], new[1]))
        keys.append(k_kept)
        values.append(v.gather(2, gather_idx))
    return Pot(
        keys=keys,
        values=values,
        origin=pot.origin.gather(2, idx),
        kept_by=torch.stack(reasons),
        novelty=pot.novelty.gather(2, idx),
        positions=new_positions,
        next_position=keep if cr_rope else pot.next_position,
        prefix_len=pot.prefix_len,
        tokens_read=pot.tokens_read,
        cycles=pot.cycles + 1,
        peak_entries=pot.peak_entries,
        last_logprobs=pot.last_logprobs,
    )


def plain_compress_pot_into_slab(*args) -> Pot:
    """plain_compress_pot for the reader: its result written over the reader's slab, as compress_pot writes it."""
    *arguments, slab = args
    pot = plain_compress_pot(*arguments)
    slab.fill(pot.keys, pot.values)
    pot.keys, pot.values = slab.layer_views(pot.entries)
    return pot


def assert_same_entries(ours: Pot, plain: Pot, key_tolerance: float) -> None:
    """The same entries kept for the same reasons at the same positions; values copied, keys moved alike."""
    assert ours.counters() == plain.counters()
    for name in ("origin", "kept_by", "positions", "novelty"):
        assert torch.equal(getattr(ours, name), getattr(plain, name)), name
    for layer, (k, v) in enumerate(zip(plain.keys, plain.values, strict=True)):
        assert torch.equal(ours.values[layer], v)
        torch.testing.assert_close(ours.keys[layer], k, rtol=key_tolerance, atol=key_tolerance)


CASES = [  # (method, architecture, rope variant, dtype)
    ("streaming", "llama", "default", torch.float32),
    ("h2o", "llama", "default", torch.float32),
    ("streaming", "phi3", None, torch.float32),  # partial rotary: half of each head rotates
    ("h2o", "llama", "yarn", torch.float32),  # yarn scales cos/sin by its attention factor
    ("streaming", "llama", "default", torch.bfloat16),
    ("h2o", "llama", "default", torch.bfloat16),
    ("infinipot", "llama", "default", torch.float32),  # CCD keeps its result too
    ("recent", "qwen3", None, torch.float32),  # the other scorer that keeps the latest entries
]


def case_engine(method, arch, variant, dtype) -> Engine:
    loaded = tiny_loaded(arch, **({"rope_parameters": ROPE_VARIANTS[variant]} if variant else {}))
    loaded.model.to(dtype)
    config = PotConfig(pot_size=128, keep_size=48, forward_tokens=40, window_step=16, method=method)
    return Engine(loaded, config)


@pytest.mark.parametrize("method, arch, variant, dtype", CASES)
def test_every_compression_of_a_read_equals_the_plain_path(method, arch, variant, dtype, monkeypatch):
    engine = case_engine(method, arch, variant, dtype)
    fast = distill.compress_pot
    compared = []

    def both(model, pot, scorer, catalyst, keep, sink_tokens, cr_rope, carried=None, slab=None):
        plain_carried = None if carried is None else dict(carried)  # compress_pot replaces entries, not tensors
        # first: ours writes the kept rows over the reader's slab, whose views the pot's keys are
        plain = plain_compress_pot(model, pot, scorer, catalyst, keep, sink_tokens, cr_rope, plain_carried)
        ours = fast(model, pot, scorer, catalyst, keep, sink_tokens, cr_rope, carried, slab)
        assert slab is not None  # the reader compresses in place
        assert_same_entries(ours, plain, key_tolerance=1e-5 if dtype == torch.float32 else 2e-2)
        for name in carried or {}:
            assert torch.equal(carried[name], plain_carried[name]), name
        compared.append(pot.entries - ours.entries)
        return ours

    monkeypatch.setattr(distill, "compress_pot", both)
    pot = engine.read([random_ids(400, seed=5)])
    assert len(compared) >= 5  # several compressions, each compared
    assert pot.cycles == len(compared)


@pytest.mark.parametrize("method", ["streaming", "h2o"])
def test_a_whole_rolling_read_keeps_the_same_entries_as_the_plain_path(method, monkeypatch):
    """Each compression's keys feed the next reads' attention (and h2o's scores): the read as a whole still agrees."""
    engine = case_engine(method, "llama", "default", torch.float32)
    document = random_ids(500, seed=8)
    ours = engine.read([document])
    monkeypatch.setattr(distill, "compress_pot", plain_compress_pot_into_slab)
    plain = engine.read([document])
    assert plain.cycles >= 20
    for name in ("origin", "kept_by", "positions"):
        assert torch.equal(getattr(ours, name), getattr(plain, name)), name
    for k, expected in zip(ours.keys, plain.keys, strict=True):
        torch.testing.assert_close(k, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("far", [0, 5000])  # positions near the new ones, or far past the model's rope table
def test_move_keys_leaves_unmoved_entries_untouched_and_moves_the_rest(far):
    model = build_model("llama")
    torch.manual_seed(3)
    heads, keep, dim = 2, 30, 16
    old = torch.cat([torch.arange(4), torch.arange(10 + far, 36 + far)]).expand(2, heads, keep).clone()  # (L, H, keep)
    old[1, 1, 4:] += 7  # another layer and head moved further: not the same positions everywhere
    pre = torch.randn(2, heads, keep, dim)
    keys = torch.stack([apply_rotary(pre[i], *hf_adapter.rotary_cos_sin(model, old[i])) for i in range(2)])
    before = keys.clone()
    move_keys(model, keys, old, 4, int(old.max()) + 1)
    new_cs = hf_adapter.rotary_cos_sin(model, torch.arange(keep))
    assert torch.equal(keys[..., :4, :], before[..., :4, :])  # the sinks kept their positions, bit for bit
    for layer in range(2):
        torch.testing.assert_close(keys[layer], apply_rotary(pre[layer], *new_cs), rtol=1e-5, atol=2e-5)


def test_move_keys_in_slices_equals_one_pass(monkeypatch):
    """A CPU moves a large pot's keys in slices of rows (bounded memory); the result is the one pass's, bit for bit."""
    model = build_model("llama")
    torch.manual_seed(4)
    old = torch.sort(torch.randint(4, 3000, (3, 2, 200)), dim=-1).values
    old[..., :4] = torch.arange(4)
    keys = torch.randn(3, 2, 200, 16)
    sliced = keys.clone()
    move_keys(model, keys, old, 4, 3000)
    monkeypatch.setattr(eviction, "CPU_ROTATION_BYTES", 196 * 16 * 4)  # one (layer, head) row per slice
    move_keys(model, sliced, old, 4, 3000)
    assert torch.equal(keys, sliced)


def test_select_latest_equals_ranking_by_stream_order():
    layers, heads, n, keep = 2, 3, 40, 25
    origin = torch.cat([torch.arange(4), torch.arange(100, 136)]).expand(layers, heads, n)
    protected = origin < 4
    kept, reason = select_latest((layers, heads, n), 4, keep, origin.device)
    for layer in range(layers):
        expected = select_entries(origin[layer].float(), torch.zeros(heads, n), protected[layer], keep, 0.0)
        assert torch.equal(kept[layer], expected[0]) and torch.equal(reason[layer], expected[1])
    with pytest.raises(ValueError, match="cannot keep"):
        select_latest((layers, heads, n), 4, n, origin.device)
