"""Scoring strategies for distillation, one per file, looked up by method name."""

from __future__ import annotations

from .base import LayerEvidence, Scorer
from .cap_only import CapOnlyScorer
from .infinipot import InfiniPotScorer
from .nuc_only import NucOnlyScorer
from .recent import RecentScorer

_SCORERS: dict[str, type[Scorer]] = {
    cls.name: cls for cls in (InfiniPotScorer, CapOnlyScorer, NucOnlyScorer, RecentScorer)
}
METHODS: tuple[str, ...] = tuple(_SCORERS)


def make_scorer(method: str, nuc_ratio: float) -> Scorer:
    """The strategy for `method`; InfiniPot takes its NuC share from the pot settings."""
    if method not in _SCORERS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method == InfiniPotScorer.name:
        return InfiniPotScorer(novelty_share=nuc_ratio)
    return _SCORERS[method]()


__all__ = ["LayerEvidence", "METHODS", "Scorer", "make_scorer"]
