"""SirLLM (Yao et al., 2024): token entropy only, with memory decay of older entries.

The score is the NuC cross-entropy of each entry's token (the same in every head, SirLLM's key-token
criterion), multiplied by `decay` once for every compression the entry has already survived, so old key
tokens slowly give way to new ones (SirLLM's decay ratio; 1.0 turns decay off and equals nuc-only).
Applied inside CCD, as the InfiniPot paper ran it.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class SirLLMScorer(Scorer):
    name = "sirllm"
    needs_age = True
    # SirLLM's published settings use 1.0, 0.9 and 0.7; 0.9 forgets slowly (x0.35 after ten compressions).
    decay: float = 0.9

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 < self.decay <= 1.0:
            raise ValueError(f"decay must be within (0, 1], got {self.decay}")

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        entropy = evidence.novelty.float()  # (H_kv, n)
        if evidence.age is None:
            return entropy
        return entropy * self.decay ** evidence.age.float()
