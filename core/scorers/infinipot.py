"""InfiniPot's own criterion: NuC fills alpha of the kept slots first, CaP attention ranks the rest."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class InfiniPotScorer(Scorer):
    name = "infinipot"
    needs_catalyst = True
    novelty_share: float = 0.5

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        return evidence.catalyst
