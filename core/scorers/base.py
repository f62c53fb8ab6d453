"""What every scoring strategy shares: the evidence it may read and the small interface it implements.

A strategy only says which entries of one layer matter more, as scores (H_kv, n); the selection in
core.selection turns scores into kept indices the same way for all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch


@dataclass(frozen=True)
class LayerEvidence:
    """What is known about the n entries of one layer when it is compressed."""

    catalyst: torch.Tensor | None  # (H_kv, n) CaP queries' attention, summed over queries, GQA-averaged
    novelty: torch.Tensor  # (H_kv, n) NuC: -log p(token | pot, preceding tokens) when it was read
    origin: torch.Tensor  # (H_kv, n) index of each entry's token in the document stream


@dataclass(frozen=True)
class Scorer:
    """Base class: subclasses set the capability flags and implement `score`."""

    name: ClassVar[str] = ""
    # Whether a catalyst-prompt pass must run before compressing (its attention fills `catalyst`).
    needs_catalyst: ClassVar[bool] = False
    # Share of the free kept slots given to the highest-novelty entries before `score` ranks the rest.
    novelty_share: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.novelty_share <= 1.0:
            raise ValueError(f"novelty share must be within [0, 1], got {self.novelty_share}")

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        """(H_kv, n) scores; higher means keep."""
        raise NotImplementedError
