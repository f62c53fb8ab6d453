"""Which document tokens an answer drew on: the answer tokens' attention over the pot's entries.

After an answer is generated, the request and the answer are run once more over the pot (teacher-forced,
with eager attention so the weights exist), and every pot entry gets the attention the answer's queries paid
to it. An entry of layer l and KV head h holds document token `origin[l, h, i] - prefix_len`, so the entry
scores add up per document token; app/ask/citing.py maps those tokens to pages and lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .. import hf_adapter
from ..pot import Pot


@dataclass(frozen=True)
class CitationConfig:
    # Only layers from this fraction of the depth on count. On the default model the early layers spread
    # attention broadly over recent and frequent tokens, while the later ones hold the retrieval heads that
    # copy the needle into the answer (measured: see README "Citations").
    first_layer_fraction: float = 0.5
    # Leading document tokens never cited (besides the chat template's opening, which never is): the first
    # entries work as attention sinks and collect attention whatever the answer says.
    sink_tokens: int = 4

    def __post_init__(self) -> None:
        if not 0.0 <= self.first_layer_fraction < 1.0:
            raise ValueError(f"first layer fraction must be in [0, 1), got {self.first_layer_fraction}")
        if self.sink_tokens < 0:
            raise ValueError(f"sink tokens must not be negative, got {self.sink_tokens}")

    def layers(self, layer_count: int) -> range:
        """The layers whose attention is counted (at least the last one)."""
        first = min(int(self.first_layer_fraction * layer_count), layer_count - 1)
        return range(first, layer_count)


@torch.inference_mode()
def answer_attention(model, pot: Pot, request_ids: list[int], answer_ids: list[int]) -> torch.Tensor:
    """Attention of the answer's queries over the pot's entries, per layer and KV head: (L, H_kv, n).

    Each answer token's attention row is summed over the answer (GQA groups averaged to one value per KV
    head), so an entry's score is the attention mass the whole answer paid it. The request runs first only so
    that the answer's queries are the ones generation computed; its own queries are not counted. The pot is
    not changed: the pass extends a cache that shares the pot's tensors, and a DynamicLayer grows by
    concatenation into new tensors.
    """
    n = pot.entries
    kv_heads = pot.origin.shape[1]
    if not answer_ids:
        return torch.zeros(pot.origin.shape, dtype=torch.float32)
    ids = request_ids + answer_ids
    first_answer_query = len(request_ids)

    def reduce(_layer_idx: int, weights: torch.Tensor) -> torch.Tensor:
        answer_rows = weights[0, :, first_answer_query:, :n].float()  # (H_q, T_answer, n)
        per_query_head = answer_rows.sum(dim=1)  # (H_q, n)
        return hf_adapter.mean_per_kv_head(per_query_head, kv_heads).cpu()  # (H_kv, n)

    cache = pot.as_cache()
    device = pot.keys[0].device
    input_ids = torch.tensor([ids], device=device)  # (1, T)
    positions = torch.arange(pot.next_position, pot.next_position + len(ids), device=device)[None]  # (1, T)
    with hf_adapter.eager_attention(model), hf_adapter.captured_attention(model, reduce) as per_layer:
        hf_adapter.run_decoder(model, cache, input_ids, positions)
    return torch.stack(per_layer)  # (L, H_kv, n)


def document_token_scores(
    pot: Pot, attention: torch.Tensor, config: CitationConfig
) -> tuple[torch.Tensor, torch.Tensor]:
    """The attention each document token received, summed over the counted layers and all their KV heads.

    attention: (L, H_kv, n) from answer_attention. Returns (tokens, scores), both (m,): distinct document
    token indexes in increasing order and their scores as shares of the counted total (summing to 1; both
    empty when nothing was counted). The chat template's opening and the first `sink_tokens` document tokens
    are left out.
    """
    return source_token_scores(pot, attention, config, documents=1)[0]


def source_token_scores(
    pot: Pot, attention: torch.Tensor, config: CitationConfig, documents: int
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """document_token_scores for each source document of a merged pot (core.merge), shares of one total.

    Returns one (tokens, scores) pair per document index 0..documents-1; a pot without `source` is
    document 0. Shares add up to 1 over all documents together, so they compare across documents.
    """
    layers = list(config.layers(attention.shape[0]))
    document_position = pot.origin.cpu()[layers] - pot.prefix_len  # (L', H_kv, n)
    source = torch.zeros_like(document_position) if pot.source is None else pot.source.cpu()[layers]
    weights = attention.float().cpu()[layers]  # (L', H_kv, n)
    counted = document_position >= config.sink_tokens  # (L', H_kv, n)
    total = weights[counted].double().sum()
    per_document = []
    for index in range(documents):
        mine = counted & (source == index)  # (L', H_kv, n)
        tokens, slot = torch.unique(document_position[mine], return_inverse=True)  # (m,), (k,)
        scores = torch.zeros(len(tokens), dtype=torch.float64).index_add_(0, slot, weights[mine].double())  # (m,)
        if total <= 0:
            per_document.append((tokens[:0], scores[:0].float()))
        else:
            per_document.append((tokens, (scores / total).float()))
    return per_document
