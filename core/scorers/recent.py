"""CCD without CaP and NuC: every cycle keeps the most recent entries (plus the sinks)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class RecentScorer(Scorer):
    name = "recent"
    keeps_latest = True

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        return evidence.origin.float()
