"""H2O (Zhang et al., 2023): heavy hitters by accumulated attention, plus a window of recent entries.

Each entry's score is the attention it received from every query read since it arrived (column sums of
the reading pass, per KV head). Half of the kept budget goes to the most recent entries and half to the
heavy hitters (the sinks count among those), H2O's default split. A rolling window like StreamingLLM:
each compression evicts only room for the next step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import ATTENTION_RECEIVED, LayerEvidence, Scorer


@dataclass(frozen=True)
class H2OScorer(Scorer):
    name = "h2o"
    reading_attention = ATTENTION_RECEIVED
    rolling = True
    recent_share: float = 0.5  # of the kept budget reserved for the most recent entries

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.recent_share <= 1.0:
            raise ValueError(f"recent share must be within [0, 1], got {self.recent_share}")

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        attention = evidence.attention.float()  # (..., H_kv, n)
        n = attention.shape[-1]
        low = attention.amin(dim=-1, keepdim=True)
        span = (attention.amax(dim=-1, keepdim=True) - low).clamp_min(1e-30)
        heavy = (attention - low) / span  # (..., H_kv, n) in [0, 1]
        recent = round(self.recent_share * evidence.keep)
        # entries are in stream order within each head, so the last `recent` are the newest
        is_recent = torch.arange(n, device=attention.device) >= n - recent  # (n,)
        return heavy + is_recent.to(heavy.dtype) * 2.0  # the recent window outranks every heavy hitter
