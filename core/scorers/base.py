"""What every scoring strategy shares: the evidence it may read and the small interface it implements.

A strategy only says which entries of a layer matter more, as scores (H_kv, n) per layer; the selection in
core.selection turns scores into kept indices the same way for all of them. How the reader has to run for
a strategy (catalyst pass, attention during reading, rolling window, ...) is told by capability flags,
so the reader never asks which strategy it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

# What a strategy needs from the reading pass's own attention (Scorer.reading_attention).
ATTENTION_RECEIVED = "received"  # per entry, the attention it received from every query since it arrived (H2O)
ATTENTION_LAST = "last"  # per entry, the attention of the most recent query only (TOVA)


@dataclass(frozen=True)
class LayerEvidence:
    """What is known about the n entries of one layer when it is compressed, or of every layer at once: each
    tensor below is then (L, H_kv, n), and a strategy scores all layers in one call (so it works over the last
    two dims only)."""

    catalyst: torch.Tensor | None  # (H_kv, n) CaP queries' attention, summed over queries, GQA-averaged
    novelty: torch.Tensor  # (H_kv, n) NuC: -log p(token | pot, preceding tokens) when it was read
    origin: torch.Tensor  # (H_kv, n) index of each entry's token in the document stream
    # (H_kv, n) attention from the reading pass (see Scorer.reading_attention), GQA-averaged; at answer
    # time, when no reading pass is at hand, the request's queries stand in for it.
    attention: torch.Tensor | None = None
    age: torch.Tensor | None = None  # (H_kv, n) compressions each entry has survived (Scorer.needs_age)
    keep: int = 0  # entries per head this compression keeps, sinks included


@dataclass(frozen=True)
class Scorer:
    """Base class: subclasses set the capability flags and implement `score`."""

    name: ClassVar[str] = ""
    # Whether a catalyst-prompt pass must run before compressing (its attention fills `catalyst`).
    needs_catalyst: ClassVar[bool] = False
    # None, ATTENTION_RECEIVED or ATTENTION_LAST: the reader runs its pieces with eager attention and keeps
    # that per-entry evidence between compressions (it fills `attention`).
    reading_attention: ClassVar[str | None] = None
    # Whether the reader counts, per entry, the compressions it survived (it fills `age`).
    needs_age: ClassVar[bool] = False
    # False: CCD, each compression keeps |C| entries. True: a rolling window that stays full, each
    # compression evicting only room for the next `PotConfig.window_step` tokens (the originals evict one
    # entry per new token; evicting a step at a time keeps reading in efficient pieces).
    rolling: ClassVar[bool] = False
    # True: `score` is stream order alone, so a compression keeps the sinks and the newest entries, the same in
    # every head; core.selection.select_latest then finds them without scoring and ranking (streaming, recent).
    keeps_latest: ClassVar[bool] = False
    # Exactly this many leading tokens are attention sinks; None protects the chat template's opening
    # (at least PotConfig.min_sink_tokens), as InfiniPot does.
    sink_count: ClassVar[int | None] = None
    # True: the model reads only the first and the last half of its budget and never the middle (truncate).
    reads_ends_only: ClassVar[bool] = False
    # False: nothing is ever evicted and the pot bound does not apply (full); the reader refuses instead
    # when the whole cache would not fit.
    compresses: ClassVar[bool] = True
    # Share of the free kept slots given to the highest-novelty entries before `score` ranks the rest.
    novelty_share: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.novelty_share <= 1.0:
            raise ValueError(f"novelty share must be within [0, 1], got {self.novelty_share}")

    @property
    def fills_window(self) -> bool:
        """Whether the strategy keeps as many entries as fit (rather than |C|) when it must make room."""
        return self.rolling or self.reads_ends_only

    def sink_tokens(self, opening: int, min_sinks: int) -> int:
        """Leading tokens never evicted, for a stream whose chat-template opening is `opening` tokens."""
        return self.sink_count if self.sink_count is not None else max(min_sinks, opening)

    def score(self, evidence: LayerEvidence) -> torch.Tensor:
        """(..., H_kv, n) scores, shaped as the evidence; higher means keep."""
        raise NotImplementedError
