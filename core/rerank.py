"""Which evidence spans are read: the question's likelihood after each span on its own (query likelihood).

The pot's attention and the question's words find candidate spans well (the answer is among ~12 of them for
nine questions in ten) but rank them poorly, and a 135M model handed all twelve reads the answer out of the
wrong one. Asked how likely the question is as the question a span answers, the same model ranks them far
better: it is a task of recognising, not of writing (query-likelihood reranking, as in Sachan et al. 2022,
"Improving passage retrieval with zero-shot question generation"). Only the best few spans are then read.
On the development questions this took the answers from 14 to 21 of 54 (benchmarks/results/devset).

Each span is scored in a context of its own: the chat template's opening, the span, a request to write the
question the text answers, and the question; the score is the mean log-probability of the question's tokens.
All spans go in one batched forward after the opening's cached keys and values; rows are padded on the right,
which a causal model never attends to from an earlier position, so no mask is needed.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from . import hf_adapter
from .pot import Pot

# Spans scored in one forward: bounds the activations (rows x ~250 tokens) and the logits kept per batch.
_BATCH_ROWS = 8


@torch.inference_mode()
def question_likelihoods(
    model,
    opening: Pot,
    spans: Sequence[Sequence[int]],
    request_ids: list[int],
    question_ids: list[int],
    context_ids: Sequence[int] = (),
) -> list[float]:
    """The mean log-probability of `question_ids` after opening + span + `request_ids` (+ `context_ids`, which
    are read but not scored: an earlier question a follow-up leans on), for each span.

    `opening`: a pot of the chat template's opening alone (Engine.opening_pot); it is not changed.
    """
    if not spans or not question_ids:
        return [0.0] * len(spans)
    device = opening.keys[0].device
    rows = [list(span) + request_ids + list(context_ids) + question_ids for span in spans]
    # Rows of like length share a batch: padding costs as much as reading (measured on 2 CPU cores: 36% of the
    # sentences' batch was padding when rows went in their given order).
    order = sorted(range(len(rows)), key=lambda index: -len(rows[index]))
    scores = [0.0] * len(rows)
    for first in range(0, len(order), _BATCH_ROWS):
        chosen = order[first : first + _BATCH_ROWS]
        batch_scores = _batch_scores(model, opening, [rows[index] for index in chosen], len(question_ids), device)
        for index, score in zip(chosen, batch_scores, strict=True):
            scores[index] = score
    return scores


def _batch_scores(model, opening: Pot, rows: list[list[int]], question_len: int, device) -> list[float]:
    batch, longest = len(rows), max(len(row) for row in rows)
    padded = torch.zeros(batch, longest, dtype=torch.int64, device=device)  # (B, T)
    for index, row in enumerate(rows):
        padded[index, : len(row)] = torch.tensor(row, device=device)
    layers = [
        (keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1))
        for keys, values in zip(opening.keys, opening.values, strict=True)
    ]
    cache = hf_adapter.cache_from_layers(layers)  # (B, H_kv, P, D) per layer, shared with the opening pot
    positions = torch.arange(opening.next_position, opening.next_position + longest, device=device)  # (T,)
    hidden = hf_adapter.run_decoder(model, cache, padded, positions.expand(batch, -1))  # (B, T, hidden)
    # Row b's question occupies [len_b - q, len_b); the positions just before each of its tokens predict it.
    lengths = torch.tensor([len(row) for row in rows], device=device)  # (B,)
    offsets = torch.arange(question_len, device=device)  # (q,)
    predicting = (lengths[:, None] - question_len - 1 + offsets[None]).clamp(min=0)  # (B, q)
    rows_index = torch.arange(batch, device=device)[:, None]  # (B, 1)
    logits = hf_adapter.vocab_logits(model, hidden[rows_index, predicting])  # (B, q, V) fp32
    targets = padded[rows_index, predicting + 1]  # (B, q): the question's tokens
    logprobs = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]  # (B, q)
    return logprobs.mean(dim=-1).tolist()


def best_spans(scores: Sequence[float], keep: int) -> list[int]:
    """Indices of the `keep` best scores, best first (ties: the earlier index)."""
    order = sorted(range(len(scores)), key=lambda index: (-scores[index], index))
    return order[:keep]
