"""Generation after a pot: prefill the request, then decode one token at a time (core.decoding chooses them)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import torch

from . import hf_adapter
from .copy_drafts import CopyDrafts
from .decoding import Choice, DecodingConfig, WordKeys, choose_token, contrasted, sampler
from .one_token import decoded_hidden


def _hidden_after(model, cache, ids: list[int], start_position: int) -> torch.Tensor:
    """The final hidden states (1, T, hidden) of `ids` read after the cache at positions from `start_position`."""
    device = next(model.parameters()).device
    input_ids = torch.tensor([ids], device=device)  # (1, T)
    positions = torch.arange(start_position, start_position + len(ids), device=device)[None]  # (1, T)
    return hf_adapter.run_decoder(model, cache, input_ids, positions)  # (1, T, hidden)


def prefill(model, cache, ids: list[int], start_position: int) -> torch.Tensor:
    """Run the request tokens after the pot; returns the logits of the last one (V,)."""
    return hf_adapter.vocab_logits(model, _hidden_after(model, cache, ids, start_position)[0, -1])


def decode_one_token(model, cache, token: int, position: int) -> torch.Tensor:
    """The logits (V,) after one decoded token, read at `position` after the cache."""
    return read_after(model, cache, [token], position)[0]


class Prior(NamedTuple):
    """What the answer is contrasted with (DecodingConfig.contrast): a cache and the request read after it."""

    cache: object
    request_ids: list[int]
    start_position: int


def read_after(model, cache, ids: list[int], start_position: int) -> torch.Tensor:
    """Run `ids` after the cache; returns the logits after each of them (T, V), fp32. One token goes through the
    lean one-token decoder where it applies (core.one_token: the same logits, without the modules' overhead)."""
    hidden = decoded_hidden(model, cache, ids[0], start_position) if len(ids) == 1 else None  # (hidden,)
    if hidden is not None:
        return hf_adapter.vocab_logits(model, hidden[None])  # (1, V)
    return hf_adapter.vocab_logits(model, _hidden_after(model, cache, ids, start_position)[0])  # (T, V)


@torch.inference_mode()
def generate(
    model,
    cache,
    request_ids: list[int],
    start_position: int,
    decoding: DecodingConfig,
    stop_ids: set[int],
    prior: Prior | None = None,
    word_keys: WordKeys | None = None,
    allowed: torch.Tensor | None = None,
    drafts: CopyDrafts | None = None,
) -> Iterator[Choice]:
    """Yield the answer's choices until an end-of-turn token or `decoding.max_new_tokens`; the stop token is not
    yielded. The n-gram bans see only the tokens yielded here, never the request or the pot (the word ban needs
    `word_keys`). With `prior` and
    `decoding.contrast`, the same answer is also run after `prior` and each choice is contrasted with it.
    `allowed` (V,) bool: the only entries the answer may write (core.answer.grounding); None: any.

    With `drafts` (core.copy_drafts), each token is read together with a draft of the next ones; a drafted token
    the decoding then chooses costs no forward of its own, and the first one it does not choose is dropped from the
    cache with every drafted token after it. The choices are those of decoding one token at a time, up to the
    rounding of a forward over several tokens (in bfloat16 a near tie can fall the other way). Not with the
    contrast: the prior would have to read every draft too."""
    logits = prefill(model, cache, request_ids, start_position)  # (V,)
    position = start_position + len(request_ids)
    contrast = prior is not None and decoding.contrast > 0
    if contrast:
        prior_logits = prefill(model, prior.cache, prior.request_ids, prior.start_position)  # (V,)
        prior_position = prior.start_position + len(prior.request_ids)
        drafts = None
    ahead: list[tuple[int, torch.Tensor]] = []  # drafted tokens in the cache, each with the logits after it (V,)
    generator = sampler(decoding, logits.device)
    answer: list[int] = []
    for step in range(decoding.max_new_tokens):
        if contrast and int(logits.argmax()) in stop_ids:
            # The contrast would hold back the end of turn (it is as likely without the document), and the answer
            # would drift on: the document-conditioned model alone decides when the answer is complete.
            return
        scores = contrasted(logits, prior_logits, decoding.contrast) if contrast else logits
        if allowed is not None:
            scores = scores.masked_fill(~allowed[: scores.shape[-1]], -math.inf)  # (V,)
        choice = choose_token(scores, answer, decoding, generator, word_keys)
        if choice.token in stop_ids:
            return
        answer.append(choice.token)
        yield choice
        if step + 1 == decoding.max_new_tokens:
            return
        if ahead and ahead[0][0] == choice.token:
            logits = ahead.pop(0)[1]  # drafted and chosen: already read
            continue
        if ahead:
            hf_adapter.drop_last(cache, len(ahead))  # the answer left the draft here
            position -= len(ahead)
            ahead = []
        draft = drafts.propose(answer, decoding.max_new_tokens - step - 2) if drafts is not None else []
        read = read_after(model, cache, [choice.token, *draft], position)  # (1 + k, V)
        position += 1 + len(draft)
        logits = read[0]
        ahead = list(zip(draft, read[1:], strict=True))
        if contrast:
            prior_logits = decode_one_token(model, prior.cache, choice.token, prior_position)
            prior_position += 1


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


def tokens_for_text(tokenizer, ids: list[int], text: str) -> list[int]:
    """The shortest prefix of `ids` whose text covers `text` (the answer's tokens once a repeat was cut off)."""
    for count in range(len(ids) + 1):
        if len(tokenizer.decode(ids[:count], skip_special_tokens=True)) >= len(text):
            return ids[:count]
    return ids
