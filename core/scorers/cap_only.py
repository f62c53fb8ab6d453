"""Ablation: CaP attention alone (alpha = 0)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class CapOnlyScorer(Scorer):
    name = "cap-only"
    needs_catalyst = True

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        return evidence.catalyst
