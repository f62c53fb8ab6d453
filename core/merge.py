"""Several documents' pots merged into one of at most |M| entries: CCD over the union of their entries.

Each pot's keys were computed over its own document alone and rotated at that pot's positions (0..n-1
after CR-RoPE). The merged pot lays the documents one after another on one position axis: the first
pot's entries keep their positions, and every later chunk of entries is re-rotated to follow the newest
entry merged so far. Entries go in like tokens during reading, in chunks that fill the pot to |M| - |P|,
with one distillation whenever the next chunk would not fit: the catalyst prompt's attention over the
union, the NuC scores stored with each entry, selection to |C| per layer and KV head, CR-RoPE to 0..|C|-1.
No forward pass over the documents is needed: their KV entries already exist.

The chat template's opening is computed from the same tokens at the same positions with nothing before it
in every pot, so only the first pot keeps it (the merged pot's sinks); the others' copies are dropped.
Every entry remembers its document (`Pot.source`) and its token in that document's stream (`Pot.origin`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from . import hf_adapter
from .config import PotConfig
from .distill import distill
from .errors import InfiniPotError, PotTooSmallError
from .pot import Pot
from .rope import reposition_keys
from .scorers import InfiniPotScorer

_PROVENANCE = ("origin", "kept_by", "novelty")


class IncompatiblePots(InfiniPotError):
    """Pots that cannot share one position axis: another model, another head layout, or already merged."""


def pot_layout(pot: Pot) -> tuple[int, int, int, int]:
    """(layers, KV heads, key dims, value dims): what two pots must share to merge."""
    return len(pot.keys), pot.keys[0].shape[1], pot.keys[0].shape[-1], pot.values[0].shape[-1]


def check_mergeable(model, pots: Sequence[Pot]) -> None:
    """Raise IncompatiblePots (one line) unless every pot has the model's head layout and the same opening."""
    if len(pots) < 2:
        raise ValueError(f"merging needs at least two pots, got {len(pots)}")
    model_layout = (model.config.num_hidden_layers, hf_adapter.kv_heads(model))
    first = pot_layout(pots[0])
    for number, pot in enumerate(pots, start=1):
        layout = pot_layout(pot)
        if layout != first or layout[:2] != model_layout:
            raise IncompatiblePots(
                f"pot {number} has {layout[0]} layers x {layout[1]} KV heads x {layout[2]} dims, but pot 1 has "
                f"{first[0]} x {first[1]} x {first[2]} and the model {model_layout[0]} x {model_layout[1]}: "
                "only pots of the same model can merge"
            )
        if pot.source is not None:
            raise IncompatiblePots(f"pot {number} is already a merged pot; merge the documents' own pots")
        if pot.prefix_len != pots[0].prefix_len:
            raise IncompatiblePots(
                f"pot {number} opens with {pot.prefix_len} template tokens and pot 1 with {pots[0].prefix_len}: "
                "they were read with different chat templates"
            )


@torch.inference_mode()
def merge_pots(model, pots: Sequence[Pot], config: PotConfig, catalyst_ids: list[int]) -> Pot:
    """One pot holding the documents of `pots` (in that order), never more than config.pot_size entries.

    `config` gives |M|, |C|, alpha, the fewest sinks and CR-RoPE; selection is InfiniPot's (CaP + NuC)
    whatever method read the pots. The result's `source` (L, H_kv, n) indexes `pots`; `cycles` counts the
    merge's compressions and `peak_entries` the most entries it held, the catalyst prompt included.
    """
    check_mergeable(model, pots)
    scorer = InfiniPotScorer(novelty_share=config.nuc_ratio)
    limit = config.pot_size - len(catalyst_ids)  # most entries after adding a chunk: room for the catalyst
    if limit - config.keep_size < 1:
        raise PotTooSmallError(
            f"a pot of {config.pot_size} entries keeping {config.keep_size} has no room to merge beside the "
            f"{len(catalyst_ids)}-token catalyst prompt; use a larger pot size or a smaller kept size"
        )
    prefix_len = pots[0].prefix_len
    sinks = scorer.sink_tokens(prefix_len, config.min_sink_tokens)
    if sinks >= config.keep_size:
        raise PotTooSmallError(f"the prompt opening ({sinks} tokens) does not fit in the kept size {config.keep_size}")

    merged: Pot | None = None
    for index, pot in enumerate(pots):
        start = 0 if index == 0 else _opening_entries(pot)
        while start < pot.entries:
            if merged is not None and merged.entries >= limit:
                cache = merged.as_cache()
                merged = distill(model, cache, merged, scorer, catalyst_ids, config.keep_size, sinks, config.cr_rope)
            take = min(limit - (merged.entries if merged else 0), pot.entries - start)
            merged = _append(model, merged, pot, index, start, start + take)
            start += take
    merged.tokens_read = prefix_len + sum(pot.document_tokens for pot in pots)
    return merged


def _opening_entries(pot: Pot) -> int:
    """Leading entries that hold the chat template's opening in every layer and head (dropped as duplicates)."""
    in_opening = pot.origin < pot.prefix_len  # (L, H_kv, n); kept indices are sorted by origin
    return int(in_opening.sum(dim=-1).min())


def _append(model, merged: Pot | None, pot: Pot, index: int, start: int, stop: int) -> Pot:
    """`merged` plus entries [start, stop) of every layer and head of `pot`, placed after merged's newest entry."""
    positions = pot.positions[..., start:stop]  # (L, H_kv, t)
    shift = 0 if merged is None else merged.next_position - int(positions.min())
    new_positions = positions + shift
    keys = [k[:, :, start:stop] for k in pot.keys]  # per layer (1, H_kv, t, D)
    if shift:
        kinds = hf_adapter.rotary_kinds(model)  # one cos/sin pair per rotary kind, for every layer's positions
        old = {kind: hf_adapter.rotary_cos_sin(model, positions, kind) for kind in set(kinds)}  # (L, H_kv, t, rot)
        new = {kind: hf_adapter.rotary_cos_sin(model, new_positions, kind) for kind in set(kinds)}
        keys = [
            reposition_keys(
                k,
                (old[kind][0][i][None], old[kind][1][i][None]),
                (new[kind][0][i][None], new[kind][1][i][None]),
            )
            for i, (k, kind) in enumerate(zip(keys, kinds, strict=True))
        ]
    values = [v[:, :, start:stop] for v in pot.values]
    chunk = {name: getattr(pot, name)[..., start:stop] for name in _PROVENANCE}  # each (L, H_kv, t)
    chunk["positions"] = new_positions
    chunk["source"] = torch.full_like(chunk["origin"], index)
    next_position = int(new_positions.max()) + 1
    if merged is None:
        fields = {name: tensor.contiguous() for name, tensor in chunk.items()}
        cycles, peak = 0, 0
    else:
        fields = {name: torch.cat([getattr(merged, name), tensor], dim=-1) for name, tensor in chunk.items()}
        keys = [torch.cat([old, new], dim=2) for old, new in zip(merged.keys, keys, strict=True)]
        values = [torch.cat([old, new], dim=2) for old, new in zip(merged.values, values, strict=True)]
        next_position = max(next_position, merged.next_position)
        cycles, peak = merged.cycles, merged.peak_entries
    result = Pot(
        keys=keys,
        values=values,
        next_position=next_position,
        prefix_len=pot.prefix_len,
        tokens_read=0,  # set once every pot is in
        cycles=cycles,
        peak_entries=peak,
        last_logprobs=None,  # nothing is read after a merge
        **fields,
    )
    result.peak_entries = max(result.peak_entries, result.entries)
    return result


def document_positions(pot: Pot) -> tuple[torch.Tensor, torch.Tensor]:
    """Per entry, its document (index into the merged pots) and its token index in that document.

    Both (L, H_kv, n) int64; a single document's pot is document 0. The token index is negative for the
    chat template's opening, as in app.visualize.
    """
    source = torch.zeros_like(pot.origin) if pot.source is None else pot.source
    return source, pot.origin - pot.prefix_len


def entries_per_document(pot: Pot, documents: int) -> list[float]:
    """Average entries per layer and KV head that each of `documents` documents holds in the pot."""
    source, _ = document_positions(pot)
    heads = source.shape[0] * source.shape[1]
    counts = torch.bincount(source.reshape(-1).cpu(), minlength=documents)  # (documents,)
    return [round(count / heads, 2) for count in counts.tolist()]
