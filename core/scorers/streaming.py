"""StreamingLLM (Xiao et al., 2024): 4 attention-sink tokens plus the most recent entries, nothing else.

A rolling window that stays full: each compression drops the oldest non-sink entries, only as many as the
next step needs. Exactly 4 sinks as in the official code (the first 4 tokens of the stream, so most of a
chat template's opening is evicted like any other old token). Positions are re-assigned within the cache
by CR-RoPE, as StreamingLLM does with its in-cache positions.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class StreamingScorer(Scorer):
    name = "streaming"
    rolling = True
    keeps_latest = True
    sink_count = 4

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        return evidence.origin.float()
