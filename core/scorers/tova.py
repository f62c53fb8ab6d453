"""TOVA (Oren et al., 2024): keep the entries the most recent query attends to most.

The score is the attention row of the last token read, averaged over all heads of the layer (TOVA's
layer-wise policy, so a layer keeps the same tokens in every head). Applied inside CCD, as the InfiniPot
paper ran it: each compression keeps |C| entries. At answer time the request's queries stand in for the
last token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import ATTENTION_LAST, LayerEvidence, Scorer


@dataclass(frozen=True)
class TovaScorer(Scorer):
    name = "tova"
    reading_attention = ATTENTION_LAST

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        layer_mean = evidence.attention.float().mean(dim=-2, keepdim=True)  # (..., 1, n): over the layer's heads
        return layer_mean.expand_as(evidence.attention)  # (..., H_kv, n)
