"""Greedy generation after a pot: prefill the request, then decode one token at a time."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from . import hf_adapter


def prefill(model, cache, ids: list[int], start_position: int) -> torch.Tensor:
    """Run the request tokens after the pot; returns the logits of the last one (V,)."""
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)  # (1, T)
    positions = torch.arange(start_position, start_position + len(ids), device=device)[None]  # (1, T)
    hidden = hf_adapter.decoder(model)(
        input_ids=input_ids, position_ids=positions, past_key_values=cache, use_cache=True
    ).last_hidden_state  # (1, T, hidden)
    return hf_adapter.vocab_logits(model, hidden[0, -1])


def decode_one_token(model, cache, token: int, position: int) -> torch.Tensor:
    return prefill(model, cache, [token], position)


@torch.inference_mode()
def generate_greedy(
    model, cache, request_ids: list[int], start_position: int, max_new_tokens: int, stop_ids: set[int]
) -> Iterator[int]:
    """Yield greedily chosen token ids until a stop token or `max_new_tokens`; the stop token is not yielded."""
    logits = prefill(model, cache, request_ids, start_position)
    position = start_position + len(request_ids)
    for step in range(max_new_tokens):
        token = int(logits.argmax())
        if token in stop_ids:
            return
        yield token
        if step + 1 < max_new_tokens:
            logits = decode_one_token(model, cache, token, position)
            position += 1


def stop_token_ids(model, tokenizer) -> set[int]:
    """End-of-turn ids from the tokenizer and the generation config (which may list several)."""
    ids: set[int] = set()
    for source in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(source, int):
            ids.add(source)
        elif source:
            ids.update(int(i) for i in source)
    for marker in ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>"):
        token_id = tokenizer.convert_tokens_to_ids(marker)
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id and token_id is not None:
            ids.add(token_id)
    return ids


class TextStreamer:
    """Turns a growing list of token ids into text deltas, holding back incomplete UTF-8 sequences."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.emitted = ""

    def push(self, token: int) -> str:
        self.ids.append(token)
        text = self.tokenizer.decode(self.ids, skip_special_tokens=True)
        if text.endswith("\ufffd"):
            return ""
        delta, self.emitted = text[len(self.emitted) :], text
        return delta
