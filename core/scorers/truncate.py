"""Truncation as in LongBench's official evaluation: the first and the last half of the budget, no middle.

The reader does the work (Scorer.reads_ends_only): it reads the first half of the budget, holds only the
latest tokens of the rest in a bounded queue, and reads those at the end, so the model never sees the middle
and the tail's positions follow the head's, exactly like a truncated prompt. The score is only used when a
held pot must shrink (to fit a question): it keeps both ends and drops the middle again.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class TruncateScorer(Scorer):
    name = "truncate"
    reads_ends_only = True

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        n = evidence.origin.shape[-1]
        order = torch.arange(n, device=evidence.origin.device, dtype=torch.float32)  # stream order per head
        return (order - (n - 1) / 2).abs().expand_as(evidence.origin)  # (H_kv, n): far from the middle first
