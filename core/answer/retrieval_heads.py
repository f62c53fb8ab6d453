"""Retrieval heads: the few attention heads whose question-time attention lands on the fact that answers it.

The evidence ranking (core.answer.evidence) listens to the question's attention over the pot. Summed over every head
of the later layers, that attention points poorly when the question does not repeat the document's words: most
heads attend to recent, frequent or similar-sounding tokens. A few heads do point (the retrieval-head and
DuoAttention papers find a few percent of heads that copy from far back). They are found once per model here,
on synthetic documents with facts hidden at spread depths (core.answer.retrieval_tasks): each (layer, KV head) ranks
the document's buckets by its own attention from the question's tokens, and the heads that most often rank
the fact's bucket among their best few are kept.

Measured on the bundled model (docs/experiments.md, "Retrieval heads"): the four heads chosen this way put the
answering sentence's bucket among the 3/6/12 best for 5/14/17 of 44 paraphrased development questions, where
all heads of the later layers did for 4/6/9; on the 54 word-sharing questions 18/22/24 against 15/20/23.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import torch

from ..config import PotConfig
from ..engine import Engine
from ..prompts import encode
from .citations import answer_attention
from .retrieval_tasks import retrieval_tasks

CALIBRATION_VERSION = 1  # bump when the tasks or the scoring change: stored calibrations are then redone


class CalibrationFailed(Exception):
    """The model's tokenizer left no synthetic fact findable: its retrieval heads cannot be measured."""


@dataclass(frozen=True)
class HeadsConfig:
    # Synthetic documents read, facts hidden in each, and each document's length in the model's tokens. Each
    # document is read whole into one pot (no compression): 4 x 4 facts in 3,000-token documents take about a
    # minute on two CPU cores with the bundled model.
    documents: int = 4
    facts_per_document: int = 4
    document_tokens: int = 3000
    # Share of all (layer, KV head) pairs kept, at least one: a few percent, as the retrieval-head papers find.
    head_share: float = 0.04
    # A head scores a fact when the fact's bucket is among its `top` best (ties: mean reciprocal rank).
    top: int = 3
    bucket_tokens: int = 64
    sink_tokens: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("documents", "facts_per_document", "top", "bucket_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"retrieval heads: {name.replace('_', ' ')} must be at least 1")
        if self.document_tokens < 8 * self.bucket_tokens:
            raise ValueError(f"retrieval heads: documents need at least {8 * self.bucket_tokens} tokens")
        if not 0.0 < self.head_share <= 1.0:
            raise ValueError(f"retrieval heads: head share must be in (0, 1], got {self.head_share}")
        if self.sink_tokens < 0:
            raise ValueError("retrieval heads: sink tokens must not be negative")


@dataclass(frozen=True)
class RetrievalHeads:
    """The chosen (layer, KV head) pairs of one model, best first, and what choosing them took."""

    heads: tuple[tuple[int, int], ...]
    layers: int
    kv_heads: int
    facts: int  # facts asked about during calibration
    found: int  # of them, those whose bucket one of the chosen heads ranked among its `top` best
    seconds: float
    version: int = CALIBRATION_VERSION

    def mask(self) -> torch.Tensor:
        """(L, H_kv) float: 1 for a chosen head, 0 elsewhere."""
        mask = torch.zeros(self.layers, self.kv_heads)
        for layer, head in self.heads:
            mask[layer, head] = 1.0
        return mask

    def fits(self, attention: torch.Tensor) -> bool:
        """Whether an (L, H_kv, n) attention comes from a model of this shape."""
        return tuple(attention.shape[:2]) == (self.layers, self.kv_heads)

    def to_dict(self) -> dict:
        return {
            "version": self.version,
            "heads": [list(pair) for pair in self.heads],
            "layers": self.layers,
            "kv_heads": self.kv_heads,
            "facts": self.facts,
            "found": self.found,
            "seconds": self.seconds,
        }

    @classmethod
    def from_dict(cls, data: dict) -> RetrievalHeads:
        """Raises ValueError (or KeyError/TypeError) on a record that is not one."""
        heads = tuple((int(layer), int(head)) for layer, head in data["heads"])
        layers, kv_heads = int(data["layers"]), int(data["kv_heads"])
        if not heads or any(not (0 <= lay < layers and 0 <= h < kv_heads) for lay, h in heads):
            raise ValueError("retrieval heads record names heads the model does not have")
        return cls(heads, layers, kv_heads, int(data["facts"]), int(data["found"]), float(data["seconds"]),
                   int(data["version"]))  # fmt: skip


def bucket_ranks(
    origin: torch.Tensor, prefix_len: int, attention: torch.Tensor, gold: set[int], config: HeadsConfig, until: int
) -> torch.Tensor:
    """(L, H_kv) rank (0 best) of the best gold bucket when each head's attention alone ranks the document's
    buckets by their most attended token; len(buckets) where the head paid the gold buckets nothing.

    origin: (L, H_kv, n) the pot's entries' positions; attention: (L, H_kv, n) from answer_attention.
    """
    layers, heads, n = attention.shape
    position = origin.cpu() - prefix_len  # (L, H_kv, n)
    counted = (position >= config.sink_tokens) & (position < until)  # (L, H_kv, n)
    bucket = (position.clamp(min=0) // config.bucket_tokens).flatten(0, 1)  # (L*H_kv, n)
    weights = torch.where(counted, attention.float().cpu(), 0.0).flatten(0, 1)  # (L*H_kv, n)
    count = (until + config.bucket_tokens - 1) // config.bucket_tokens
    best = torch.zeros(layers * heads, count).scatter_reduce_(1, bucket.clamp(max=count - 1), weights, "amax")
    golden = best[:, sorted(gold)].amax(dim=1)  # (L*H_kv,)
    ranks = (best > golden[:, None]).sum(dim=1)  # (L*H_kv,) buckets strictly preferred
    ranks = torch.where(golden > 0, ranks, count)
    return ranks.view(layers, heads)


def gold_buckets(document_ids: list[int], fact_ids: list[int], bucket_tokens: int) -> set[int]:
    """The buckets of the first place `fact_ids` occur in `document_ids` (empty when they do not)."""
    width = len(fact_ids)
    for start in range(len(document_ids) - width + 1):
        if document_ids[start : start + width] == fact_ids:
            return set(range(start // bucket_tokens, (start + width - 1) // bucket_tokens + 1))
    return set()


@torch.inference_mode()
def calibrate(engine: Engine, config: HeadsConfig = HeadsConfig()) -> RetrievalHeads:
    """Find `engine`'s model's retrieval heads on seeded synthetic tasks (the same heads on every run)."""
    began = time.perf_counter()
    tokenizer = engine.tokenizer
    tasks = retrieval_tasks(
        config.documents,
        config.facts_per_document,
        config.document_tokens,
        lambda text: len(encode(tokenizer, text)),
        config.seed,
    )
    ranks = []  # one (L, H_kv) per fact found in its document
    for task in tasks:
        ids = encode(tokenizer, task.text)
        # The whole document in one pot: a pot larger than the document compresses nothing.
        reader = Engine(engine.loaded, PotConfig(pot_size=len(ids) + len(engine.prefix_ids) + 64))
        pot = reader.read([ids])
        for fact in task.facts:
            gold = gold_buckets(ids, encode(tokenizer, " " + fact.sentence), config.bucket_tokens)
            if not gold:  # the tokenizer joined the fact to its neighbours differently: try it without the space
                gold = gold_buckets(ids, encode(tokenizer, fact.sentence), config.bucket_tokens)
            if not gold:
                continue
            before, question_ids = reader.question_parts(fact.question)
            attention = answer_attention(reader.model, pot, before, question_ids)  # (L, H_kv, n)
            ranks.append(bucket_ranks(pot.origin, pot.prefix_len, attention, gold, config, len(ids)))
    if not ranks:
        raise CalibrationFailed("no synthetic fact could be found in its own document's tokens")
    stacked = torch.stack(ranks)  # (F, L, H_kv)
    layers, kv_heads = stacked.shape[1:]
    chosen = RetrievalHeads(choose_heads(stacked, config), layers, kv_heads, len(ranks), 0, 0.0)
    found = int((stacked[:, chosen.mask().bool()] < config.top).any(dim=1).sum())
    return replace(chosen, found=found, seconds=round(time.perf_counter() - began, 1))


def choose_heads(ranks: torch.Tensor, config: HeadsConfig) -> tuple[tuple[int, int], ...]:
    """The heads to keep, best first, from ranks: (F, L, H_kv), each fact's bucket rank under each head.

    A head's score is the share of facts it ranks among its `config.top` best; the mean reciprocal rank breaks
    ties (it stays below 1, while one more fact found adds 1 to the count). Ties beyond that: the earlier head.
    """
    ranks = ranks.float()
    found = (ranks < config.top).float().sum(dim=0)  # (L, H_kv)
    reciprocal = (1.0 / (ranks + 1.0)).mean(dim=0)  # (L, H_kv)
    layers, kv_heads = found.shape
    keep = max(1, round(config.head_share * layers * kv_heads))
    order = torch.argsort((found + reciprocal).flatten(), descending=True, stable=True)[:keep]
    return tuple((int(i) // kv_heads, int(i) % kv_heads) for i in order)
