"""Per-layer, per-head choice of the entries a pot keeps: sinks, then top novelty, then top score."""

from __future__ import annotations

import torch

KEPT_SINK = 0
KEPT_NOVELTY = 1
KEPT_SCORE = 2  # CaP attention for InfiniPot, the strategy's own score for the others
KEPT_READ = 3  # entered the pot by being read and has not been through a compression yet
KEPT_RECENT = 4  # of a sliding-window layer, which sees only the newest entries: kept for being among them
KEPT_BY_NAMES = {KEPT_SINK: "sink", KEPT_NOVELTY: "nuc", KEPT_SCORE: "cap", KEPT_READ: "read", KEPT_RECENT: "recent"}


def select_entries(
    scores: torch.Tensor,
    novelty: torch.Tensor,
    protected: torch.Tensor,
    keep: int,
    novelty_share: float,
    protected_count: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose `keep` of n entries per head.

    scores, novelty: (H, n) float; protected: (H, n) bool (sinks, always kept), the same count in every row:
    `protected_count` when the caller knows it (then nothing is read back from the device), else counted.
    Returns kept indices (H, keep) sorted by original order and why each was kept (H, keep) uint8.
    """
    heads, n = scores.shape
    if protected_count is None:
        protected_count = int(protected[0].sum())
    free = _free_slots(n, keep, protected_count)
    # tier 2: sinks, tier 1: highest novelty, tier 0: ranked by score; rank = tier + score scaled to [0, 1)
    tier = protected.to(torch.float32) * 2
    novelty_slots = min(round(novelty_share * free), n - protected_count)
    if novelty_slots > 0:
        candidates = novelty.float().masked_fill(protected, float("-inf"))
        top_novel = candidates.topk(novelty_slots, dim=-1).indices  # (H, novelty_slots)
        tier.scatter_(1, top_novel, 1.0)
    s = scores.float()
    low = s.amin(dim=-1, keepdim=True)
    span = (s.amax(dim=-1, keepdim=True) - low).clamp_min(1e-30)
    rank = tier + 0.999 * (s - low) / span  # (H, n)
    kept = rank.topk(keep, dim=-1).indices.sort(dim=-1).values  # (H, keep)
    # tiers 2, 1, 0 are KEPT_SINK, KEPT_NOVELTY, KEPT_SCORE: the reason is 2 - tier (no boolean indexing, which
    # reads a count back from the device)
    reason = (KEPT_SCORE - tier.gather(1, kept)).to(torch.uint8)  # (H, keep)
    return kept, reason


def select_latest(shape: tuple[int, int, int], sinks: int, keep: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """What select_entries keeps when the score is stream order (Scorer.keeps_latest), without ranking anything:
    the `sinks` leading entries and the newest ones, the same in every layer and head.

    shape: (L, H, n) of a pot in stream order whose first `sinks` entries of every head are its sinks (one
    document's pot, core.pot.Pot.sink_count). Returns kept indices and reasons (L, H, keep), as select_entries would.
    """
    layers, heads, n = shape
    _free_slots(n, keep, sinks)
    kept = torch.cat([torch.arange(sinks, device=device), torch.arange(n - keep + sinks, n, device=device)])  # (keep,)
    reason = torch.full((keep,), KEPT_SCORE, dtype=torch.uint8, device=device)
    reason[:sinks] = KEPT_SINK
    return kept.expand(layers, heads, keep), reason.expand(layers, heads, keep).contiguous()


def keep_newest_in_layers(
    idx: torch.Tensor, reasons: torch.Tensor, layers: list[int], entries: int, sinks: int | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """idx, reasons (L, H, keep) with the rows of `layers` (sliding-window layers) replaced by the sinks and the
    newest entries, reason KEPT_RECENT: such a layer never sees an entry older than its window, and keeping the
    newest keeps what it does see exactly as the model would (in stream order and, after CR-RoPE, at the same
    distances). `entries`: how many the pot holds (the newest kept are entries - keep + sinks .. entries - 1);
    `sinks`: its leading sink entries for one document's pot, None for a merged pot (none kept then)."""
    if not layers:
        return idx, reasons
    _, heads, keep = idx.shape
    idx, reasons = idx.clone(), reasons.clone()
    fixed = sinks or 0
    newest = torch.arange(entries - keep + fixed, entries, device=idx.device)
    newest = torch.cat([torch.arange(fixed, device=idx.device), newest])  # (keep,)
    reason = torch.full((keep,), KEPT_RECENT, dtype=reasons.dtype, device=reasons.device)
    reason[:fixed] = KEPT_SINK
    idx[layers] = newest.expand(len(layers), heads, keep)
    reasons[layers] = reason.expand(len(layers), heads, keep)
    return idx, reasons


def _free_slots(n: int, keep: int, protected_count: int) -> int:
    """Kept slots left after the sinks, refusing a selection that keeps everything or fewer than the sinks."""
    if keep >= n:
        raise ValueError(f"cannot keep {keep} of {n} entries")
    if protected_count > keep:
        raise ValueError(f"{protected_count} sink entries exceed the kept size {keep}")
    return keep - protected_count
