"""The engine's public face: read a token stream into a pot, then generate from that pot (the answer stage that
chooses what is read and checks what is said is core.answer)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import torch

from . import hf_adapter
from .capacity import check_full_context
from .config import PotConfig
from .copy_drafts import CopyDrafts
from .decoding import DecodingConfig, RepeatStop, WordKeys, decoding_for
from .distill import distill
from .errors import PotTooSmallError
from .generate import Prior, TextStreamer, generate, stop_token_ids, tokens_for_text
from .model import LoadedModel
from .pot import Pot
from .prompts import PromptLayout, catalyst_texts, encode
from .reader import ContinualReader
from .scorers import make_scorer
from .words import TokenBoundaries, token_boundaries, token_keys

T = TypeVar("T")


@dataclass
class AnswerStats:
    """Filled while an answer streams."""

    ttft_seconds: float | None = None
    seconds: float = 0.0
    new_tokens: int = 0
    compressed_for_answer: bool = False
    answer_entries: int = 0  # pot entries the answer was generated from (fewer when distilled or focused)
    peak_entries: int = 0
    # The answer's tokens (new_tokens counts every token generated, a cut-off repeat included; these are the
    # ones whose text was shown).
    token_ids: list[int] = field(default_factory=list)
    # What ended the answer: "end" (an end-of-turn token), "length" (max_new_tokens), "repeat" (it started
    # repeating a sentence or line it already wrote; the repeat is not part of the answer), "run-on" (a
    # whitespace-free chain of RUN_ON_CHARS characters, dropped) or "new-turn" (a later paragraph opened with a
    # question of its own, dropped).
    stopped_by: str = ""
    # The pot the answer was generated from: the stored one, or the copy distilled to make room (citations
    # re-read the answer's attention over exactly these entries).
    answer_pot: Pot | None = field(default=None, repr=False)


class Engine:
    """A loaded model bound to pot settings."""

    def __init__(self, loaded: LoadedModel, config: PotConfig) -> None:
        self.loaded = loaded
        self.model = loaded.model
        hf_adapter.use_reader_sdpa(self.model)  # the same attention, cheaper on a CPU; lets the catalyst ride along
        hf_adapter.stop_between_layers(self.model)  # an answer stops within a layer of its Stop (core.stopping)
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
        self.answer_template = texts["answer"]
        self.rerank_request_ids = self.request_ids(texts["rerank"])
        self.evidence_opening_ids = encode(self.tokenizer, "\n\n")
        self.evidence_gap_ids = encode(self.tokenizer, "\n...\n")
        self.stop_ids = stop_token_ids(self.model, self.tokenizer)

    def request_ids(self, instruction: str, gap: str = "\n\n") -> list[int]:
        """Tokens after the document for a question, a summary or a catalyst prompt."""
        return encode(self.tokenizer, self.layout.request(instruction, gap))

    def new_reader(
        self, on_step: Callable[[Pot], None] | None = None, fixed_shapes: bool | None = None
    ) -> ContinualReader:
        """A reader for this engine's pot settings; `fixed_shapes`: see ContinualReader (default: on a GPU)."""
        return ContinualReader(
            self.model,
            self.config,
            self.catalyst_ids,
            on_step=on_step,
            boundaries=self.boundaries(),
            fixed_shapes=fixed_shapes,
        )

    @property
    def vocab_size(self) -> int:
        """Rows of the model's output embedding: the ids it can produce (can exceed the tokenizer's vocabulary)."""
        return self.model.get_output_embeddings().weight.shape[0]

    def table(self, name: str, build: Callable[[], T]) -> T:
        """The model's table `name` (a vocabulary table, or the opening's pot), built on first use and kept with
        the loaded model (LoadedModel.tables): every Engine of the model shares it, and an Engine is made per
        question."""
        tables = self.loaded.tables
        if name not in tables:
            tables[name] = build()  # two threads may both build it: the same table, the last one kept
        return tables[name]

    def boundaries(self) -> TokenBoundaries | None:
        """Word starts and sentence ends for NuC per word; None when NuC scores tokens alone."""
        return self._vocabulary_boundaries() if self.config.nuc_per_word else None

    def _vocabulary_boundaries(self) -> TokenBoundaries:
        """Word starts, sentence ends and line ends on the CPU, for NuC and the evidence (one pass over the
        vocabulary, made once per model)."""
        return self.table("boundaries", lambda: token_boundaries(self.tokenizer, self.vocab_size))

    def sentence_ends(self) -> torch.Tensor:
        """(V,) bool: the vocabulary entries that end a sentence or a line (core.words)."""
        return self._vocabulary_boundaries().sentence_ends

    def word_starts(self) -> torch.Tensor:
        """(V,) bool: the vocabulary entries that begin a word (core.words; "19" after "4." does not)."""
        return self._vocabulary_boundaries().word_starts

    def line_ends(self) -> torch.Tensor:
        """(V,) bool: the vocabulary entries that hold a newline (core.words)."""
        return self._vocabulary_boundaries().line_ends

    def word_keys(self) -> torch.Tensor:
        """(V,) int64: each vocabulary entry's case- and space-free key (core.words.token_keys), made once per model."""
        return self.table("word keys", lambda: token_keys(self.tokenizer, self.vocab_size))

    def answer_word_keys(self) -> WordKeys:
        """The word keys in the form the answer's word n-gram ban reads them (core.decoding), made once per model
        and kept on the model's device, where each answer step's logits are."""
        return self.table("answer word keys", lambda: WordKeys.of(self.word_keys().to(self.loaded.device)))

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
        decoding: DecodingConfig | int | None = None,
        stats: AnswerStats | None = None,
        focus: int | None = None,
        *,
        max_new_tokens: int | None = None,
        evidence: Sequence[Sequence[int]] = (),
        pot_entries: int | None = None,
        question_first: bool = False,
        allowed_tokens: torch.Tensor | None = None,
        history: Sequence[tuple[str, str]] = (),
    ) -> Iterator[str]:
        """Stream the answer to `question` as text pieces; `pot` itself is left unchanged.

        `decoding`: how tokens are chosen and when the answer ends (None: DecodingConfig's defaults). An int
        there, or `max_new_tokens`, sets only the answer length (how callers passed it before DecodingConfig).
        `focus`: answer from a copy of the pot distilled to this many entries with the question as the
        catalyst prompt (CaP-Q at ask time), so a small model looks at fewer, question-relevant entries.
        `evidence`: document token spans (core.answer.evidence), read verbatim in this order between the pot and the
        question at fresh positions; the pot is distilled with the question as catalyst when they need room.
        `pot_entries` (with `evidence` only; core.answer.evidence.EvidenceConfig.pot_entries): how much of the pot the
        spans follow: None all of it, 0 none (only the chat template's opening), N a copy distilled to N entries
        with the question as catalyst. `question_first`: the question is also written before the spans.
        `allowed_tokens` (V,) bool: the only vocabulary entries the answer may write (core.answer.grounding's
        answer_vocabulary).
        `history`: earlier (question, answer) turns of the conversation, oldest first: they are written as chat
        turns after the evidence, and `question` is asked as the next turn (a follow-up sees what "it" is).
        """
        if not question or not question.strip():
            raise ValueError("the question is empty")
        decoding = decoding_for(decoding, max_new_tokens)
        request = self.question_ids(question)
        prompt = self.answer_prompt_ids(question, evidence, question_first, history)
        if history and len(prompt) + decoding.max_new_tokens > self.request_room():
            # The earlier turns do not fit beside what the pot keeps: the question is asked on its own.
            prompt = self.answer_prompt_ids(question, evidence, question_first)
        if evidence and pot_entries == 0:
            pot = self.opening_pot()
        elif evidence and pot_entries is not None and pot_entries < pot.entries:
            focus = pot_entries
        return self._respond(
            pot,
            prompt,
            decoding,
            stats or AnswerStats(),
            focus,
            catalyst=request,
            prior_request=request,
            allowed=allowed_tokens,
        )

    def request_room(self) -> int:
        """Most tokens a request and its answer may take after a full pot distilled to |C| (compressing
        methods); `full` has no bound here (the model's context decides)."""
        if not make_scorer(self.config.method, self.config.nuc_ratio).compresses:
            return 1 << 62
        return self.config.pot_size - self.config.keep_size

    def opening_pot(self) -> Pot:
        """A pot of the chat template's opening alone, before any document: what passages read without the
        pot follow. Read once per loaded model (a few dozen tokens, ~0.1 s on 2 CPU cores, and an Engine is made
        per question); answers never change it. The pot settings do not change it: a few dozen tokens never fill
        a pot, so nothing is compressed and no catalyst is read (one per question pot's settings would also pile
        up with every question read again)."""
        return self.table("opening pot", lambda: self.read([]))

    def local_window(self, layer: int) -> int | None:
        """How many of the latest tokens layer `layer` sees when it is a local (sliding-window) layer whose window
        is shorter than the pot, so that it keeps the newest entries (core.distill); None for a layer that sees
        every entry."""
        window = hf_adapter.layer_windows(self.model)[layer]
        return window if window is not None and window < self.config.pot_size else None

    def answer_prompt_ids(
        self,
        question: str,
        evidence: Sequence[Sequence[int]] = (),
        question_first: bool = False,
        history: Sequence[tuple[str, str]] = (),
    ) -> list[int]:
        """Everything `answer` puts after the pot: the evidence block (led by the question itself with
        `question_first`), then the question's request; with `history`, the earlier turns' requests and answers
        come first and the question is the last turn."""
        lead = self.question_lead_ids(question) if question_first else []
        ids = self.evidence_ids(evidence, lead)
        if not history:
            return ids + self.question_ids(question)
        ids += self.question_ids(history[0][0])
        for (_, answered), (asked, _) in zip(history, [*history[1:], (question, "")], strict=True):
            instruction = self.question_instruction(asked).strip()
            ids += encode(self.tokenizer, answered.strip() + self.layout.between + instruction + self.layout.closing)
        return ids

    def question_lead_ids(self, question: str) -> list[int]:
        """The question as a line of its own before the spans, and a blank line after it."""
        return encode(self.tokenizer, question.strip() + "\n\n")

    def evidence_room(
        self,
        question: str,
        max_new_tokens: int,
        spans: int,
        pot_entries: int | None = None,
        question_first: bool = False,
    ) -> int:
        """Evidence tokens that fit with the question and the whole answer after the pot distilled to |C| (or
        after `pot_entries` of it; 0: the template's opening alone), for up to `spans` spans (each gap between
        two costs a few tokens): the context then stays within |M|."""
        overhead = len(self.evidence_opening_ids) + max(0, spans - 1) * len(self.evidence_gap_ids)
        if question_first:
            overhead += len(self.question_lead_ids(question))
        request = len(self.question_ids(question))
        if pot_entries is None:
            before = self.config.keep_size
        elif pot_entries == 0:
            before = len(self.prefix_ids)
        else:
            before = min(pot_entries, self.config.keep_size)
        return self.config.pot_size - before - request - max_new_tokens - overhead

    def question_parts(self, question: str) -> tuple[list[int], list[int]]:
        """(what precedes the question in its request, the question's own tokens), for measuring where the
        question alone looks in the pot."""
        instruction = self.question_instruction(question)
        lead = instruction[: instruction.index(question.strip())]
        return encode(self.tokenizer, "\n" + lead), encode(self.tokenizer, question.strip())

    def question_ids(self, question: str) -> list[int]:
        """The question's request: one line break after the text, then the answer prompt. A blank line there
        tokenizes differently after a text that ends with a newline, and the default model answered the demo
        question wrongly with it (docs/method.md, "Answer prompt")."""
        return self.request_ids(self.question_instruction(question), gap="\n")

    def question_instruction(self, question: str) -> str:
        """The question as the answer prompt words it (assets/cap_prompts.json "answer", chosen by measurement)."""
        return self.answer_template.format(question=question.strip())

    def evidence_ids(self, spans: Sequence[Sequence[int]], lead: Sequence[int] = ()) -> list[int]:
        """Spans as one block after the pot: a blank line before it, then `lead`, then the spans (nothing when
        there are no spans)."""
        return list(self.evidence_opening_ids) + list(lead) + self.joined_spans(spans) if spans else []

    def joined_spans(self, spans: Sequence[Sequence[int]]) -> list[int]:
        """Spans in the given order with an ellipsis line between two of them."""
        ids: list[int] = []
        for index, span in enumerate(spans):
            if index:
                ids += self.evidence_gap_ids
            ids += list(span)
        return ids

    def summarize(
        self,
        pot: Pot,
        decoding: DecodingConfig | int | None = None,
        stats: AnswerStats | None = None,
        *,
        max_new_tokens: int | None = None,
    ) -> Iterator[str]:
        decoding = decoding_for(decoding, max_new_tokens)
        return self._respond(pot, self.request_ids(self.summary_instruction), decoding, stats or AnswerStats())

    def _respond(
        self,
        pot: Pot,
        request: list[int],
        decoding: DecodingConfig,
        stats: AnswerStats,
        focus: int | None = None,
        catalyst: list[int] | None = None,
        prior_request: list[int] | None = None,
        allowed: torch.Tensor | None = None,
    ) -> Iterator[str]:
        """`request` follows the pot; `catalyst` (default: the request) distils the pot when it needs room.
        `prior_request` (with DecodingConfig.contrast): what the answer is contrasted with, read after the chat
        template's opening alone (no document)."""
        started = time.perf_counter()
        cache, next_position, entries = self._cache_for_request(
            pot, request, decoding.max_new_tokens, stats, focus, catalyst or request
        )
        cache = hf_adapter.room_to_grow(cache, len(request) + decoding.max_new_tokens)
        prior = None
        if prior_request is not None and decoding.contrast > 0:
            opening = self.opening_pot()
            prior = Prior(opening.as_cache(), prior_request, opening.next_position)
        stats.answer_entries = entries
        streamer = TextStreamer(self.tokenizer)
        repeats = RepeatStop(enabled=decoding.stop_on_repeat)  # holds back text only while it may be a repeat
        stats.stopped_by = "end"
        word_keys = self.answer_word_keys() if decoding.no_repeat_ngram else None
        drafts = CopyDrafts(request, decoding.copy_draft) if decoding.copy_draft else None
        for choice in generate(
            self.model, cache, request, next_position, decoding, self.stop_ids, prior, word_keys, allowed, drafts
        ):
            if choice.banned_best and repeats.retracing():
                repeats.drop_unfinished()  # it wanted to go on copying an earlier sentence: it started repeating
                break
            if stats.ttft_seconds is None:
                stats.ttft_seconds = time.perf_counter() - started
            stats.new_tokens += 1
            stats.token_ids.append(choice.token)
            stats.peak_entries = entries + len(request) + stats.new_tokens
            piece = repeats.push(streamer.push(choice.token))
            if piece:
                yield piece
            stats.seconds = time.perf_counter() - started
            if repeats.repeated:
                break
        else:
            if stats.new_tokens == decoding.max_new_tokens:
                stats.stopped_by = "length"
        piece = repeats.finish()
        if piece:
            yield piece
        if repeats.repeated:
            stats.stopped_by = "run-on" if repeats.run_on else ("new-turn" if repeats.new_turn else "repeat")
            stats.token_ids = tokens_for_text(self.tokenizer, stats.token_ids, repeats.text)
        stats.seconds = time.perf_counter() - started

    @torch.inference_mode()
    def _cache_for_request(
        self,
        pot: Pot,
        request: list[int],
        max_new_tokens: int,
        stats: AnswerStats,
        focus: int | None,
        catalyst: list[int],
    ):
        """A cache over the pot with room for the request and answer, distilling a copy when it is too full
        (or, with `focus`, larger than `focus` entries)."""
        limit = self.config.pot_size
        request_len = len(request)
        needed = request_len + max_new_tokens
        cache = pot.as_cache()
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
        catalyst_fits = pot.entries + len(catalyst) <= limit
        if focus is not None and focus < pot.entries and catalyst_fits and focus + needed <= limit:
            return self._distilled_cache(cache, pot, scorer, catalyst, focus, sinks, stats)
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
        # The question itself is the best catalyst (CaP-Q with the real question) when it fits beside the pot.
        catalyst_ids = catalyst if catalyst_fits else self.catalyst_ids
        return self._distilled_cache(cache, pot, scorer, catalyst_ids, keep, sinks, stats)

    def _distilled_cache(self, cache, pot: Pot, scorer, catalyst_ids: list[int], keep: int, sinks: int, stats):
        """A cache over a copy of the pot distilled to `keep` entries (`pot` itself is not changed)."""
        fitted = distill(self.model, cache, pot, scorer, catalyst_ids, keep, sinks, self.config.cr_rope)
        stats.compressed_for_answer = True
        stats.answer_pot = fitted
        cache = fitted.as_cache()
        return cache, fitted.next_position, fitted.entries
