"""One distillation step: catalyst-prompt attention, per-head selection, and CR-RoPE on what is kept."""

from __future__ import annotations

import torch

from . import hf_adapter
from .eviction import kept_rows, move_keys
from .pot import Pot
from .scorers import LayerEvidence, Scorer
from .selection import keep_newest_in_layers, select_entries, select_latest
from .slab import KVSlab


def reduce_trailing_catalyst(entries: int):
    """The `reduce` for hf_adapter.trailing_attention that gives what catalyst_attention gives: (H_kv, entries)."""

    def reduce(_layer_idx: int, weights: torch.Tensor) -> torch.Tensor:
        return weights[..., :entries].sum(dim=2).mean(dim=1)  # (H_kv, g, P, T_kv) -> (H_kv, entries)

    return reduce


def catalyst_attention(model, cache, catalyst_ids: list[int], start_position: int) -> list[torch.Tensor]:
    """Append the catalyst prompt, return each layer's CaP attention over the older entries, take CaP out.

    Returns per layer (H_kv, n): attention of the |P| CaP queries summed (Eq. 2), averaged over each GQA
    group's query heads. The cache ends as it began (n entries).
    """
    n = hf_adapter.cache_length(cache)
    first_keys, _ = hf_adapter.cache_layers(cache)[0]  # (1, H_kv, n, D)
    kv_heads = first_keys.shape[1]

    def reduce(_layer_idx: int, weights: torch.Tensor) -> torch.Tensor:
        per_query_head = weights[0, :, :, :n].float().sum(dim=1)  # (H_q, n)
        return hf_adapter.mean_per_kv_head(per_query_head, kv_heads)  # (H_kv, n)

    device = first_keys.device
    ids = torch.tensor([catalyst_ids], device=device)  # (1, P)
    positions = torch.arange(start_position, start_position + len(catalyst_ids), device=device)[None]  # (1, P)
    with hf_adapter.eager_attention(model), hf_adapter.captured_attention(model, reduce) as per_layer:
        hf_adapter.run_decoder(model, cache, ids, positions)
    hf_adapter.drop_last(cache, len(catalyst_ids))
    return per_layer


def compress_pot(
    model,
    pot: Pot,
    scorer: Scorer,
    catalyst: list[torch.Tensor] | None,
    keep: int,
    sink_tokens: int,
    cr_rope: bool,
    carried: dict[str, torch.Tensor] | None = None,
    slab: KVSlab | None = None,
) -> Pot:
    """The pot reduced to `keep` entries per layer and head, keys re-positioned to 0..keep-1 with CR-RoPE.

    `carried`: optional per-entry evidence (L, H_kv, n) kept beside the pot (core.reading_evidence), passed
    to the scorer by name and replaced in place by its kept entries. `slab`: the reader's slab the pot's keys and
    values are views of (core.slab); the kept entries are written back to its first rows and the result is views
    of them. Without one (a pot distilled at answer time) the pot's layers are copied into one first. For one
    document's pot nothing is read back from the device (the sink count is known on the host).
    """
    carried = {} if carried is None else carried
    idx, reasons = select_kept(pot, scorer, catalyst, keep, sink_tokens, carried)  # (L, H_kv, keep) each
    windowed = hf_adapter.windowed_layers(model, pot.entries)
    idx, reasons = keep_newest_in_layers(idx, reasons, windowed, pot.entries, pot.sink_count(sink_tokens))
    for name in list(carried):
        carried[name] = carried[name].gather(2, idx)  # (L, H_kv, keep)
    old_positions = pot.positions.gather(2, idx)  # (L, H_kv, keep)
    source = slab if slab is not None else KVSlab.stacked(pot.keys, pot.values)
    keys = kept_rows(source.keys, idx)  # (L, H_kv, keep, D)
    values = kept_rows(source.values, idx)
    if cr_rope:
        fixed = pot.sink_count(sink_tokens)
        move_keys(model, keys, old_positions, 0 if fixed is None else fixed, pot.next_position)
        new_positions = torch.arange(keep, device=idx.device).expand_as(idx).contiguous()
        next_position = keep
    else:
        new_positions, next_position = old_positions, pot.next_position
    if slab is not None:
        slab.keys[:, :, :keep].copy_(keys)
        slab.values[:, :, :keep].copy_(values)
        keys, values = slab.layer_views(keep)
    else:
        keys, values = [k[None] for k in keys.unbind(0)], [v[None] for v in values.unbind(0)]
    return Pot(
        keys=keys,
        values=values,
        origin=pot.origin.gather(2, idx),
        kept_by=reasons,
        novelty=pot.novelty.gather(2, idx),
        positions=new_positions,
        next_position=next_position,
        prefix_len=pot.prefix_len,
        tokens_read=pot.tokens_read,
        cycles=pot.cycles + 1,
        peak_entries=pot.peak_entries,
        last_logprobs=pot.last_logprobs,
        source=None if pot.source is None else pot.source.gather(2, idx),
    )


def select_kept(
    pot: Pot,
    scorer: Scorer,
    catalyst: list[torch.Tensor] | None,
    keep: int,
    sink_tokens: int,
    carried: dict[str, torch.Tensor],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Kept indices and why each was kept (L, H_kv, keep): every layer scored and ranked at once, or for a scorer
    that keeps the latest entries taken directly (one document's pot is in stream order; a merged pot is not)."""
    sinks = pot.sink_count(sink_tokens)
    if scorer.keeps_latest and scorer.novelty_share == 0 and sinks is not None:
        return select_latest(tuple(pot.origin.shape), sinks, keep, pot.origin.device)
    evidence = LayerEvidence(
        catalyst=None if catalyst is None else torch.stack(catalyst),  # (L, H_kv, n)
        novelty=pot.novelty,
        origin=pot.origin,
        keep=keep,
        **carried,
    )
    scores = scorer.score(evidence)  # (L, H_kv, n)
    protected = pot.sink_masks(sink_tokens)  # (L, H_kv, n)
    layers, heads, n = scores.shape
    if sinks is not None:  # one ranking over every (layer, head) row at once
        idx, reasons = select_entries(
            scores.flatten(0, 1), pot.novelty.flatten(0, 1), protected.flatten(0, 1), keep, scorer.novelty_share, sinks
        )  # (L * H_kv, keep) each
        return idx.view(layers, heads, keep), reasons.view(layers, heads, keep)
    kept_idx, reasons = [], []
    for layer in range(layers):  # a merged pot: select_entries takes one sink count for all its rows
        idx, reason = select_entries(scores[layer], pot.novelty[layer], protected[layer], keep, scorer.novelty_share)
        kept_idx.append(idx)
        reasons.append(reason)
    return torch.stack(kept_idx), torch.stack(reasons)


def distill(
    model,
    cache,
    pot: Pot,
    scorer: Scorer,
    catalyst_ids: list[int],
    keep: int,
    sink_tokens: int,
    cr_rope: bool,
    carried: dict[str, torch.Tensor] | None = None,
    catalyst: list[torch.Tensor] | None = None,
    slab: KVSlab | None = None,
) -> Pot:
    """One full compression of the pot held in `cache`: the catalyst pass when the scorer needs it, then selection.

    A scorer that reads attention from the reading pass gets it from `carried`; without it (answer time)
    the queries of `catalyst_ids` (the request) stand in, through the same catalyst pass. `catalyst`: the
    catalyst attention per layer (H_kv, n) when it was already taken over exactly this cache (the reader's
    ride-along, core.reader), which saves the pass. `slab`: the reader's, which `cache` writes into (compress_pot).
    """
    if scorer.needs_catalyst and catalyst is None:
        catalyst = catalyst_attention(model, cache, catalyst_ids, pot.next_position)
    stand_in = scorer.reading_attention is not None and "attention" not in (carried or {})
    if stand_in:
        attention = torch.stack(catalyst_attention(model, cache, catalyst_ids, pot.next_position))  # (L, H_kv, n)
        carried = {**(carried or {}), "attention": attention}
    distilled = compress_pot(model, pot, scorer, catalyst, keep, sink_tokens, cr_rope, carried, slab)
    if catalyst is not None or stand_in:  # the pot held its entries plus the catalyst during that pass
        distilled.peak_entries = max(distilled.peak_entries, pot.entries + len(catalyst_ids))
    return distilled
