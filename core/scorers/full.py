"""No compression: every token stays in the cache (the reference the memory-bounded methods approximate).

Only possible while the whole cache fits in memory and in the model's context; the reader refuses with
FullContextError otherwise. The pot bound does not apply: its peak is the number of tokens read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .base import LayerEvidence, Scorer


@dataclass(frozen=True)
class FullScorer(Scorer):
    name = "full"
    compresses = False

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        raise RuntimeError("the full method never compresses")
