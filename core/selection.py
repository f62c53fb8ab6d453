"""Per-layer, per-head choice of the entries a pot keeps: sinks, then top novelty, then top score."""

from __future__ import annotations

import torch

KEPT_SINK = 0
KEPT_NOVELTY = 1
KEPT_SCORE = 2  # CaP attention for InfiniPot, the strategy's own score for the others
KEPT_READ = 3  # entered the pot by being read and has not been through a compression yet
KEPT_BY_NAMES = {KEPT_SINK: "sink", KEPT_NOVELTY: "nuc", KEPT_SCORE: "cap", KEPT_READ: "read"}


def select_entries(
    scores: torch.Tensor,
    novelty: torch.Tensor,
    protected: torch.Tensor,
    keep: int,
    novelty_share: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Choose `keep` of n entries per head.

    scores, novelty: (H, n) float; protected: (H, n) bool (sinks, always kept).
    Returns kept indices (H, keep) sorted by original order and why each was kept (H, keep) uint8.
    """
    heads, n = scores.shape
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
    kept_tier = tier.gather(1, kept)
    reason = torch.full_like(kept, KEPT_SCORE, dtype=torch.uint8)
    reason[kept_tier == 1] = KEPT_NOVELTY
    reason[kept_tier == 2] = KEPT_SINK
    return kept, reason


def select_latest(protected: torch.Tensor, keep: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """What select_entries keeps when the score is stream order (Scorer.keeps_latest), without ranking anything:
    the sinks and the newest entries, the same in every layer and head.

    protected: (L, H, n) bool over entries in stream order (one document's pot). None when the sinks are not the
    same leading entries of every head. Returns kept indices and reasons (L, H, keep), as select_entries would.
    """
    layers, heads, n = protected.shape
    sinks = int(protected[0, 0].sum())
    _free_slots(n, keep, sinks)
    if not bool(protected[..., :sinks].all()) or bool(protected[..., sinks:].any()):
        return None
    device = protected.device
    kept = torch.cat([torch.arange(sinks, device=device), torch.arange(n - keep + sinks, n, device=device)])  # (keep,)
    reason = torch.full((keep,), KEPT_SCORE, dtype=torch.uint8, device=device)
    reason[:sinks] = KEPT_SINK
    return kept.expand(layers, heads, keep), reason.expand(layers, heads, keep).contiguous()


def _free_slots(n: int, keep: int, protected_count: int) -> int:
    """Kept slots left after the sinks, refusing a selection that keeps everything or fewer than the sinks."""
    if keep >= n:
        raise ValueError(f"cannot keep {keep} of {n} entries")
    if protected_count > keep:
        raise ValueError(f"{protected_count} sink entries exceed the kept size {keep}")
    return keep - protected_count
