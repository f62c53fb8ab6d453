"""Ablation: novelty alone (alpha = 1); the same tokens survive in every head."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class NucOnlyScorer(Scorer):
    name = "nuc-only"
    novelty_share: float = 1.0

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        return evidence.novelty
