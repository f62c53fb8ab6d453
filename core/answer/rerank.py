"""Which evidence spans are read: the question's likelihood after each span on its own (query likelihood).

The pot's attention and the question's words find candidate spans well (the answer is among ~12 of them for
nine questions in ten) but rank them poorly, and a 135M model handed all twelve reads the answer out of the
wrong one. Asked how likely the question is as the question a span answers, the same model ranks them far
better: it is a task of recognising, not of writing (query-likelihood reranking, as in Sachan et al. 2022,
"Improving passage retrieval with zero-shot question generation"). Only the best few spans are then read.
On the development questions this took the answers from 14 to 21 of 54 (benchmarks/results/devset).

Each span is scored in a context of its own: the chat template's opening, the span, a request to write the
question the text answers, and the question; the score is the mean log-probability of the question's tokens.
All spans go in batched forwards after the opening's cached keys and values. Short rows share a batch row
(first-fit, up to the longest row's length), each read from the opening's next position on and masked to see the
opening and itself only; batch rows are padded on the right. A forward costs a pass over the weights whatever its
rows (~50 ms on 2 CPU cores) plus its tokens, padding included, so fewer forwards with less padding are faster:
the judge's 18 sentences of a 100K document's question went from three forwards of 8 rows (1,438 tokens, 18%
padding) to one of 12 batch rows (1,284 tokens), 0.64 -> 0.47 s. In bfloat16 a score moves by up to ~0.04 with
the rows it is batched with, as it did between batches of 8 and of 4 rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from .. import hf_adapter
from ..pot import Pot
from ..prompts import encode

if TYPE_CHECKING:
    from ..engine import Engine

# Tokens in one batched forward (its rows x their length): bounds the activations as 8 rows of ~250 tokens did.
_FORWARD_TOKENS = 2048
# Rows whose question's log-probabilities are taken at once: bounds the (rows, q, V) float32 logits.
_LOGIT_ROWS = 8


@dataclass(frozen=True)
class Judgement:
    """How likely the question is after one span: the mean log-probability of its tokens (`score`), each token's
    (`tokens`, (q,)), and the model's last hidden state after the question's last token (`state`, (hidden,)
    float32 on the CPU), what a learned judge reads (core.answer.learned_judge)."""

    score: float
    tokens: tuple[float, ...] = ()
    state: torch.Tensor | None = None


def question_likelihoods(
    engine: Engine, spans: Sequence[Sequence[int]], question: str, context: str = ""
) -> list[float]:
    """How likely the question is as the one each span alone answers: mean log-probability of its tokens (higher
    is likelier). `context`: earlier questions written before it on their own line and not scored, so a follow-up
    ("What version of it?") is judged as what it asks after them."""
    return [judged.score for judged in question_judgements(engine, spans, question, context, detail=False)]


def question_judgements(
    engine: Engine, spans: Sequence[Sequence[int]], question: str, context: str = "", detail: bool = True
) -> list[Judgement]:
    """question_likelihoods with, when `detail`, each question token's log-probability and the model's last
    hidden state after the question (Judgement), from the same forwards."""
    _, question_ids = engine.question_parts(question)
    context_ids = encode(engine.tokenizer, context.strip() + "\n") if context.strip() else []
    return batched_judgements(
        engine.model, engine.opening_pot(), spans, engine.rerank_request_ids, question_ids, context_ids, detail
    )


@torch.inference_mode()
def batched_judgements(
    model,
    opening: Pot,
    spans: Sequence[Sequence[int]],
    request_ids: list[int],
    question_ids: list[int],
    context_ids: Sequence[int] = (),
    detail: bool = True,
) -> list[Judgement]:
    """The mean log-probability of `question_ids` after opening + span + `request_ids` (+ `context_ids`, which
    are read but not scored: an earlier question a follow-up leans on), for each span; with `detail`, each
    question token's log-probability and the last hidden state too: the same forwards, nothing more run.

    `opening`: a pot of the chat template's opening alone (Engine.opening_pot); it is not changed.
    """
    if not spans or not question_ids:
        return [Judgement(0.0)] * len(spans)
    device = opening.keys[0].device
    rows = [list(span) + request_ids + list(context_ids) + question_ids for span in spans]
    judged = [Judgement(0.0)] * len(rows)
    for bins in _forwards(_packed([len(row) for row in rows], hf_adapter.takes_custom_masks(model))):
        for index, judgement in _batch_scores(model, opening, rows, bins, len(question_ids), device, detail).items():
            judged[index] = judgement
    return judged


def _packed(lengths: list[int], share_rows: bool) -> tuple[list[list[int]], list[int]]:
    """The rows' indices laid into bins (each one batch row), and the bins' lengths, longest first: each row goes
    into the first bin it fits without making it longer than the longest row (first-fit decreasing); without
    `share_rows` (an attention that takes no mask of ours) a bin per row.

    A forward costs its longest row times its rows, padding included, and one pass over the weights: the
    sentences the judge scores (30-130 tokens) went three forwards of 8 rows with 18% padding, and now go in
    one forward of bins with little padding (rows of like length in one batch had been the measure before).
    """
    order = sorted(range(len(lengths)), key=lambda index: -lengths[index])
    width = lengths[order[0]]
    bins: list[list[int]] = []
    filled: list[int] = []
    for index in order:
        fits = next((b for b, used in enumerate(filled) if share_rows and used + lengths[index] <= width), None)
        if fits is None:
            bins.append([index])
            filled.append(lengths[index])
        else:
            bins[fits].append(index)
            filled[fits] += lengths[index]
    return [bins[b] for b in sorted(range(len(bins)), key=lambda b: -filled[b])], sorted(filled, reverse=True)


def _forwards(packed: tuple[list[list[int]], list[int]]) -> list[list[list[int]]]:
    """The bins (longest first) grouped into forwards of at most _FORWARD_TOKENS tokens, padding included."""
    bins, filled = packed
    forwards: list[list[list[int]]] = []
    width = 0
    for one, used in zip(bins, filled, strict=True):
        if forwards and (len(forwards[-1]) + 1) * width <= _FORWARD_TOKENS:
            forwards[-1].append(one)
        else:
            forwards.append([one])
            width = used  # the first bin of a forward is its longest
    return forwards


def _batch_scores(
    model, opening: Pot, rows: list[list[int]], bins: list[list[int]], question_len: int, device, detail: bool
) -> dict[int, Judgement]:
    """The scores of the rows laid in `bins`, one batch row per bin: each row sees the opening and itself only,
    read from the opening's next position on."""
    batch = len(bins)
    width = max(sum(len(rows[index]) for index in one) for one in bins)
    opened = opening.next_position
    padded = torch.zeros(batch, width, dtype=torch.int64, device=device)  # (B, T)
    positions = torch.full((batch, width), opened, dtype=torch.int64, device=device)  # (B, T)
    segment = torch.full((batch, width), -1, dtype=torch.int64, device=device)  # (B, T): the row each token is of
    predicting = []  # (row index, batch row, its first position, where its question's tokens are predicted from)
    for b, one in enumerate(bins):
        start = 0
        for index in one:
            row = rows[index]
            end = start + len(row)
            padded[b, start:end] = torch.tensor(row, device=device)
            positions[b, start:end] = torch.arange(opened, opened + len(row), device=device)
            segment[b, start:end] = index
            predicting.append((index, b, start, end - question_len - 1))
            start = end
    layers = [
        (keys.expand(batch, -1, -1, -1), values.expand(batch, -1, -1, -1))
        for keys, values in zip(opening.keys, opening.values, strict=True)
    ]
    cache = hf_adapter.cache_from_layers(layers)  # (B, H_kv, P, D) per layer, shared with the opening pot
    mask = None
    if any(len(one) > 1 for one in bins):
        mask = _rows_mask(segment, opening.keys[0].shape[2], opening.keys[0].dtype)  # (B, 1, T, P + T)
    hidden = hf_adapter.run_decoder(model, cache, padded, positions, mask)  # (B, T, hidden)
    offsets = torch.arange(question_len, device=device)  # (q,)
    scores = {}
    for first in range(0, len(predicting), _LOGIT_ROWS):
        chosen = predicting[first : first + _LOGIT_ROWS]
        batch_rows = torch.tensor([b for _, b, _, _ in chosen], device=device)[:, None]  # (R, 1)
        starts = torch.tensor([start for _, _, start, _ in chosen], device=device)[:, None]  # (R, 1)
        at = torch.tensor([before for _, _, _, before in chosen], device=device)[:, None] + offsets  # (R, q)
        at = torch.maximum(at, starts)  # a row of the question alone: never predicted from the row before it
        logits = hf_adapter.vocab_logits(model, hidden[batch_rows, at])  # (R, q, V) fp32
        targets = padded[batch_rows, at + 1]  # (R, q): the question's tokens
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, targets[..., None])[..., 0]  # (R, q)
        means = logprobs.mean(dim=-1).tolist()
        if not detail:
            scores.update({index: Judgement(mean) for (index, *_), mean in zip(chosen, means, strict=True)})
            continue
        states = hidden[batch_rows[:, 0], at[:, -1] + 1].float().cpu()  # (R, hidden): after the last question token
        for row, ((index, *_), mean) in enumerate(zip(chosen, means, strict=True)):
            scores[index] = Judgement(mean, tuple(logprobs[row].tolist()), states[row])
    return scores


def _rows_mask(segment: torch.Tensor, opening_entries: int, dtype: torch.dtype) -> torch.Tensor:
    """The additive mask (B, 1, T, P + T) of bins holding several rows: every query sees the opening's P entries,
    and within its bin the earlier tokens of its own row (0 where seen, the dtype's lowest value where not).
    Padding (segment -1) sees only the opening."""
    batch, width = segment.shape
    own = segment[:, :, None] == segment[:, None, :]  # (B, T, T)
    causal = torch.ones(width, width, dtype=torch.bool, device=segment.device).tril()  # (T, T)
    seen = own & causal & (segment[:, None, :] >= 0)  # (B, T, T)
    opening = torch.ones(batch, width, opening_entries, dtype=torch.bool, device=segment.device)  # (B, T, P)
    allowed = torch.cat((opening, seen), dim=-1)[:, None]  # (B, 1, T, P + T)
    return hf_adapter.additive_mask(allowed, dtype)


def best_spans(scores: Sequence[float], keep: int) -> list[int]:
    """Indices of the `keep` best scores, best first (ties: the earlier index)."""
    order = sorted(range(len(scores)), key=lambda index: (-scores[index], index))
    return order[:keep]
