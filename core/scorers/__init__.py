"""Scoring strategies for distillation, one per file, looked up by method name."""

from __future__ import annotations

from .base import ATTENTION_LAST, ATTENTION_RECEIVED, LayerEvidence, Scorer
from .cap_only import CapOnlyScorer
from .full import FullScorer
from .h2o import H2OScorer
from .infinipot import InfiniPotScorer
from .nuc_only import NucOnlyScorer
from .recent import RecentScorer
from .sirllm import SirLLMScorer
from .streaming import StreamingScorer
from .tova import TovaScorer
from .truncate import TruncateScorer

# The order of DESIGN.md: the default first, the baselines, the ablations, the uncompressed reference.
_SCORERS: dict[str, type[Scorer]] = {
    cls.name: cls
    for cls in (
        InfiniPotScorer,
        TruncateScorer,
        StreamingScorer,
        H2OScorer,
        TovaScorer,
        SirLLMScorer,
        CapOnlyScorer,
        NucOnlyScorer,
        RecentScorer,
        FullScorer,
    )
}
METHODS: tuple[str, ...] = tuple(_SCORERS)


def make_scorer(method: str, nuc_ratio: float) -> Scorer:
    """The strategy for `method`; InfiniPot takes its NuC share from the pot settings."""
    if method not in _SCORERS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method == InfiniPotScorer.name:
        return InfiniPotScorer(novelty_share=nuc_ratio)
    return _SCORERS[method]()


__all__ = ["ATTENTION_LAST", "ATTENTION_RECEIVED", "LayerEvidence", "METHODS", "Scorer", "make_scorer"]
