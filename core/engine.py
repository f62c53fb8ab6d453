"""The engine's public face: read a token stream into a pot, then answer questions from that pot."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import torch

from . import hf_adapter
from .capacity import check_full_context
from .config import PotConfig
from .distill import distill
from .errors import PotTooSmallError
from .generate import TextStreamer, generate_greedy, stop_token_ids
from .model import LoadedModel
from .pot import Pot
from .prompts import PromptLayout, catalyst_texts, encode
from .reader import ContinualReader
from .scorers import make_scorer
from .words import TokenBoundaries, token_boundaries


@dataclass
class AnswerStats:
    """Filled while an answer streams."""

    ttft_seconds: float | None = None
    seconds: float = 0.0
    new_tokens: int = 0
    compressed_for_answer: bool = False
    answer_entries: int = 0  # pot entries the answer was generated from (fewer when distilled or focused)
    peak_entries: int = 0
    token_ids: list[int] = field(default_factory=list)
    # The pot the answer was generated from: the stored one, or the copy distilled to make room (citations
    # re-read the answer's attention over exactly these entries).
    answer_pot: Pot | None = field(default=None, repr=False)


class Engine:
    """A loaded model bound to pot settings."""

    def __init__(self, loaded: LoadedModel, config: PotConfig) -> None:
        self.loaded = loaded
        self.model = loaded.model
        self.tokenizer = loaded.tokenizer
        self.config = config
        self.layout = PromptLayout.for_tokenizer(self.tokenizer)
        self.prefix_ids = encode(self.tokenizer, self.layout.opening)
        texts = catalyst_texts()
        if config.cap_mode == "question":
            instruction = texts["question"].format(question=config.question.strip())
        else:
            instruction = texts["general"]
        self.catalyst_ids = self.request_ids(instruction)
        self.summary_instruction = texts["summary"]
        self.stop_ids = stop_token_ids(self.model, self.tokenizer)
        self._boundaries: TokenBoundaries | None = None

    def request_ids(self, instruction: str) -> list[int]:
        """Tokens after the document for a question, a summary or a catalyst prompt."""
        return encode(self.tokenizer, self.layout.request(instruction))

    def new_reader(self, on_step: Callable[[Pot], None] | None = None) -> ContinualReader:
        return ContinualReader(
            self.model, self.config, self.catalyst_ids, on_step=on_step, boundaries=self.boundaries()
        )

    def boundaries(self) -> TokenBoundaries | None:
        """Word starts and sentence ends for NuC per word, built on first use (a pass over the vocabulary)."""
        if self.config.nuc_per_word and self._boundaries is None:
            vocab = self.model.get_output_embeddings().weight.shape[0]
            self._boundaries = token_boundaries(self.tokenizer, vocab)
        return self._boundaries

    def read(self, chunks: Iterable[list[int]], on_step: Callable[[Pot], None] | None = None) -> Pot:
        """Read a whole token stream (without the template opening, which is added here)."""
        reader = self.new_reader(on_step)
        reader.start(self.prefix_ids)
        for ids in chunks:
            reader.feed(ids)
        return reader.finish()

    def answer(
        self,
        pot: Pot,
        question: str,
        max_new_tokens: int = 256,
        stats: AnswerStats | None = None,
        focus: int | None = None,
    ) -> Iterator[str]:
        """Stream the answer to `question` as text pieces; `pot` itself is left unchanged.

        `focus`: answer from a copy of the pot distilled to this many entries with the question as the
        catalyst prompt (CaP-Q at ask time), so a small model looks at fewer, question-relevant entries.
        """
        if not question or not question.strip():
            raise ValueError("the question is empty")
        return self._respond(pot, self.request_ids(question), max_new_tokens, stats or AnswerStats(), focus)

    def summarize(self, pot: Pot, max_new_tokens: int = 256, stats: AnswerStats | None = None) -> Iterator[str]:
        return self._respond(pot, self.request_ids(self.summary_instruction), max_new_tokens, stats or AnswerStats())

    def _respond(
        self, pot: Pot, request: list[int], max_new_tokens: int, stats: AnswerStats, focus: int | None = None
    ) -> Iterator[str]:
        if max_new_tokens < 1:
            raise ValueError(f"max new tokens must be positive, got {max_new_tokens}")
        started = time.perf_counter()
        cache, next_position, entries = self._cache_for_request(pot, request, max_new_tokens, stats, focus)
        stats.answer_entries = entries
        streamer = TextStreamer(self.tokenizer)
        for token in generate_greedy(self.model, cache, request, next_position, max_new_tokens, self.stop_ids):
            if stats.ttft_seconds is None:
                stats.ttft_seconds = time.perf_counter() - started
            stats.new_tokens += 1
            stats.token_ids.append(token)
            stats.peak_entries = entries + len(request) + stats.new_tokens
            delta = streamer.push(token)
            if delta:
                yield delta
            stats.seconds = time.perf_counter() - started
        stats.seconds = time.perf_counter() - started

    @torch.inference_mode()
    def _cache_for_request(
        self, pot: Pot, request: list[int], max_new_tokens: int, stats: AnswerStats, focus: int | None = None
    ):
        """A cache over the pot with room for the request and answer, distilling a copy when it is too full
        (or, with `focus`, larger than `focus` entries)."""
        limit = self.config.pot_size
        request_len = len(request)
        needed = request_len + max_new_tokens
        cache = hf_adapter.cache_from_layers(list(zip(pot.keys, pot.values, strict=True)))
        stats.answer_pot = pot
        scorer = make_scorer(self.config.method, self.config.nuc_ratio)
        sinks = scorer.sink_tokens(pot.prefix_len, self.config.min_sink_tokens)
        if focus is not None and not sinks < focus < limit:
            raise ValueError(
                f"focus must be between {sinks + 1} and {limit - 1} entries (the pot's {sinks} attention sinks "
                f"are always kept), got {focus}"
            )
        if not scorer.compresses:  # full: no bound, only the model's context and free memory limit it
            check_full_context(self.model, pot.entries + needed, held=pot.entries)
            return cache, pot.next_position, pot.entries
        request_fits = pot.entries + request_len <= limit
        if focus is not None and focus < pot.entries and request_fits and focus + needed <= limit:
            return self._distilled_cache(cache, pot, scorer, request, focus, sinks, stats)
        if pot.entries + needed <= limit:
            return cache, pot.next_position, pot.entries
        # CCD methods shrink to |C|; window methods (rolling, truncate) keep as much as leaves room for the request.
        room = limit - (sinks + 1 if scorer.fills_window else self.config.keep_size)
        if needed > room:
            raise PotTooSmallError(
                f"the request ({request_len} tokens) plus up to {max_new_tokens} answer tokens needs {needed} "
                f"entries, but a pot of {limit} keeping {limit - room} leaves {room}; "
                "ask a shorter question, lower --max-new-tokens, or use a larger --pot-size"
            )
        keep = limit - needed if scorer.fills_window else self.config.keep_size
        if focus is not None:
            keep = min(keep, focus)
        # The request itself is the best catalyst (CaP-Q with the real question) when it fits beside the pot.
        catalyst_ids = request if request_fits else self.catalyst_ids
        return self._distilled_cache(cache, pot, scorer, catalyst_ids, keep, sinks, stats)

    def _distilled_cache(self, cache, pot: Pot, scorer, catalyst_ids: list[int], keep: int, sinks: int, stats):
        """A cache over a copy of the pot distilled to `keep` entries (`pot` itself is not changed)."""
        fitted = distill(self.model, cache, pot, scorer, catalyst_ids, keep, sinks, self.config.cr_rope)
        stats.compressed_for_answer = True
        stats.answer_pot = fitted
        cache = hf_adapter.cache_from_layers(list(zip(fitted.keys, fitted.values, strict=True)))
        return cache, fitted.next_position, fitted.entries
