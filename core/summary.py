"""Summaries of a whole document longer than one pot: summarize what the pot ranks important, part by part.

Asked to summarize a 4K pot of a 100K-token text at once, a small model writes gibberish: the pot is a mosaic
of kept sentences. Instead the general catalyst (the CaP-G prompt the pot was distilled with) measures what
the pot itself holds important; those spans are read verbatim from the document, in document order, grouped
into blocks that fit the context comfortably, each block is summarized on its own, and then the partial
summaries are summarized into one. The document's opening always comes first in the first block, and is read
again after the partial summaries, right before the request that combines them: a title page, an abstract or
a first paragraph says what the whole document is, which scattered spans from its middle rarely do, and a
135M model's partial summary of a block of fragments often loses it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .answer_sentences import split_sentences
from .decoding import DecodingConfig
from .engine import AnswerStats, Engine
from .errors import PotTooSmallError
from .evidence import (
    Bucket,
    EvidenceConfig,
    Span,
    attention_ranking,
    choose_buckets,
    holds_whole_document,
    verbatim_tail_start,
)
from .grounding import unsupported_words
from .pot import Pot

SUMMARY_STYLES = ("extractive", "written")
# A sentence that can be a main point: this many words at least (headings, table rows and page furniture are
# shorter) and at most (a run-on table or listing is longer).
_POINT_WORDS = (6, 60)


@dataclass(frozen=True)
class SummaryConfig:
    # Document tokens read for the summary, all blocks together: about 4 blocks, a few minutes on a laptop CPU.
    span_tokens: int = 6144
    # Tokens of one block: far inside the default model's 8K context, and short enough that a 135M model
    # keeps track of what it reads.
    block_tokens: int = 1536
    # Length of each partial summary (the final one uses the caller's decoding).
    part_new_tokens: int = 160
    # The document's first tokens, read first whatever the attention ranks (part of span_tokens).
    opening_tokens: int = 256
    # Asked of the opening alone; its answer leads the partial summaries ("" asks nothing).
    lead_question: str = "What is this document about?"
    # "extractive": the answer to lead_question (checked against the opening: a written lead whose content words
    # the opening does not hold gives way to the opening's first sentence), then the main points as the
    # document's own sentences, from the places the pot ranks most important, in document order; nothing the
    # document does not say. "written": the model summarizes part by part and then the parts (it invents: a
    # "blog post about digital wallets" for the libtasn1 manual). Measured: benchmarks/devset/results/summaries.
    style: str = "extractive"
    # Main points of an extractive summary.
    points: int = 6

    def __post_init__(self) -> None:
        if self.style not in SUMMARY_STYLES:
            raise ValueError(f"summary style must be one of {', '.join(SUMMARY_STYLES)}, got {self.style!r}")
        if self.points < 1:
            raise ValueError(f"a summary needs at least one main point, got {self.points}")
        if self.block_tokens < 64:
            raise ValueError(f"a summary block must hold at least 64 tokens, got {self.block_tokens}")
        if self.span_tokens < self.block_tokens:
            raise ValueError(f"summary spans ({self.span_tokens}) must fill at least one block ({self.block_tokens})")
        if self.part_new_tokens < 1:
            raise ValueError(f"partial summaries need at least 1 token, got {self.part_new_tokens}")
        if not 0 <= self.opening_tokens <= self.span_tokens:
            raise ValueError(
                f"the opening read first must be 0 to {self.span_tokens} tokens (the summary's spans), "
                f"got {self.opening_tokens}"
            )

    def spans(self) -> EvidenceConfig:
        """How the spans are chosen: as evidence, with the summary's budget and room for many spans, each the
        sentences of its bucket alone (a summary wants many places more than the facts after one)."""
        return EvidenceConfig(budget_tokens=self.span_tokens, max_spans=max(8, self.span_tokens // 64), span_tokens=0)


def opening_first(buckets: list[Bucket], opening_tokens: int, bucket_tokens: int) -> list[Bucket]:
    """The ranking with the buckets of the document's first `opening_tokens` moved to its top, in order."""
    count = (opening_tokens + bucket_tokens - 1) // bucket_tokens
    opening = [Bucket(index, 0.0, index * bucket_tokens) for index in range(count)]
    return opening + [bucket for bucket in buckets if bucket.index >= count]


# A "word" this long in a partial summary is a run of fragments ("gnu-h-h-n-h-l-h-m-..."): what the default
# model writes when a block of table-of-contents lines defeats it and the 4-gram ban forbids plain repeating.
_RUN_ON_WORD = 25


def is_run_on(part: str) -> bool:
    """Whether most of a partial summary's text is in run-on fragments (long "words" of one- or two-letter
    pieces) rather than words; a long identifier such as asn1_der_decoding_startEnd is not one."""
    words = part.split()

    def fragments(word: str) -> bool:
        pieces = [piece for piece in re.split(r"[-_./]", word) if piece]
        return len(word) > _RUN_ON_WORD and bool(pieces) and len(word) / len(pieces) < 3

    letters = sum(len(word) for word in words)
    return letters > 0 and sum(len(word) for word in words if fragments(word)) > 0.3 * letters


def blocks_of(spans: list[Span], block_tokens: int) -> list[list[Span]]:
    """Consecutive spans (document order) grouped into blocks of at most `block_tokens` (a longer span alone)."""
    blocks: list[list[Span]] = []
    size = 0
    for span in spans:
        if blocks and size + len(span) <= block_tokens:
            blocks[-1].append(span)
            size += len(span)
        else:
            blocks.append([span])
            size = len(span)
    return blocks


def part_decoding_for(config: SummaryConfig, decoding: DecodingConfig) -> DecodingConfig:
    """How a partial summary or the lead is decoded: greedy, at most part_new_tokens, with the caller's repeat rules."""
    return DecodingConfig(
        max_new_tokens=min(config.part_new_tokens, decoding.max_new_tokens),
        no_repeat_ngram=decoding.no_repeat_ngram,
        stop_on_repeat=decoding.stop_on_repeat,
    )


def summarize_document(
    engine: Engine,
    pot: Pot,
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    config: SummaryConfig,
    decoding: DecodingConfig,
    stats: AnswerStats,
    on_part: Callable[[int, int], None] | None = None,
    locate: Callable[[int], str] | None = None,
) -> Iterator[str]:
    """Stream the summary of the whole document. `on_part(k, n)` is called before part k of n is summarized
    and with k = n + 1 before the parts are combined. A pot that holds the whole document is summarized as it is.
    """
    if config.style == "extractive":
        yield from extractive_summary(engine, pot, document_tokens, fetch, config, decoding, stats, on_part, locate)
        return
    if holds_whole_document(pot):
        yield from engine.summarize(pot, decoding, stats)
        return
    span_config = config.spans()
    ranked = attention_ranking(engine, pot, engine.catalyst_ids, [], document_tokens, span_config)
    ranked = opening_first(ranked, min(config.opening_tokens, document_tokens), span_config.bucket_tokens)
    spans = choose_buckets(engine, ranked, document_tokens, fetch, span_config)
    blocks = blocks_of(spans, config.block_tokens)
    if not blocks:
        yield from engine.summarize(pot, decoding, stats)
        return
    part_decoding = part_decoding_for(config, decoding)
    parts = []
    for index, block in enumerate(blocks, start=1):
        if on_part is not None:
            on_part(index, len(blocks))
        ids = engine.joined_spans([span.ids for span in block])
        parts.append("".join(engine.summarize(engine.read([ids]), part_decoding)).strip())
    parts = [part for part in parts if not is_run_on(part)] or parts  # keep every part if all are run-on
    opening = list(fetch(0, min(config.opening_tokens, document_tokens)))
    if config.lead_question and opening:
        lead = "".join(engine.answer(engine.read([opening]), config.lead_question, part_decoding)).strip()
        if lead and not is_run_on(lead):
            parts = [lead, *parts]
    if len(parts) == 1:
        yield parts[0]
        return
    if on_part is not None:
        on_part(len(blocks) + 1, len(blocks))
    partial = engine.tokenizer("\n\n".join(parts) + "\n\n", add_special_tokens=False)["input_ids"]
    combined = engine.read([partial + opening])
    yield from engine.summarize(combined, decoding, stats)


@dataclass(frozen=True)
class Point:
    """A main point of an extractive summary: a sentence of the document and the first token of its passage."""

    text: str
    token: int


def is_point(sentence: str) -> bool:
    """Whether a sentence reads as a statement: it starts a sentence (a capital or a quote), is long enough, is not
    a run of fragments or a web address, ends like a sentence, and is mostly words (not a table row, a listing or a
    line of dots)."""
    words = sentence.split()
    if not _POINT_WORDS[0] <= len(words) <= _POINT_WORDS[1] or not sentence.endswith((".", "!", "?", ".”", '."')):
        return False
    if not (sentence[0].isupper() or sentence[0] in "\"“'") or "://" in sentence:
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence) and not is_run_on(sentence) and ". . ." not in sentence


def main_points(engine: Engine, spans: list[Span], most: int, skip: set[str], document_tokens: int) -> list[Point]:
    """One statement-like sentence from each of `most` equal parts of the document, in document order: the first
    such sentence of the part's best span (by the share of the catalyst's attention) that has one. A summary
    covers the document instead of the few places the attention favours most."""
    tokenizer = engine.tokenizer
    part = max(1, -(-document_tokens // most))
    chosen: list[Point] = []
    seen = set(skip)
    for first in range(0, document_tokens, part):
        inside = [span for span in spans if first <= span.start < first + part]
        for span in sorted(inside, key=lambda s: -s.score):
            text = tokenizer.decode(list(span.ids), skip_special_tokens=True)
            sentence = next((s for s in split_sentences(text) if is_point(s) and s not in seen), None)
            if sentence is not None:
                seen.add(sentence)
                chosen.append(Point(sentence, span.start))
                break
    return chosen


def checked_lead(engine: Engine, opening: list[int], question: str, decoding: DecodingConfig) -> str:
    """What the document is about, in one sentence: the model's answer from the opening when every content word it
    uses is the opening's (or the question's), else the opening's first statement-like sentence ("" if none)."""
    if not opening:
        return ""
    text = engine.tokenizer.decode(opening, skip_special_tokens=True)
    sentences = split_sentences(text)
    first = next((s for s in sentences if is_point(s)), sentences[0] if sentences else "")
    if not question:
        return first
    try:
        written = "".join(engine.answer(engine.read([opening]), question, decoding)).strip()
    except PotTooSmallError:  # a pot too small for the question and its answer: the opening's sentence leads
        return first
    if written and not is_run_on(written) and not unsupported_words(written, [text, question]):
        return written
    return first


def extractive_summary(
    engine: Engine,
    pot: Pot,
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    config: SummaryConfig,
    decoding: DecodingConfig,
    stats: AnswerStats,
    on_part: Callable[[int, int], None] | None = None,
    locate: Callable[[int], str] | None = None,
) -> Iterator[str]:
    """The lead (checked_lead), then "Main points:" with the document's own sentences from the places the pot's
    general catalyst ranks most important (summarize_document's spans), as a bulleted list. `on_part` is called
    with (1, 2) before the lead and (2, 2) before the points. Without the document's text (fetch returns
    nothing) the pot is summarized by the model as before. `locate(token)`: where a document token is ("page 3"),
    written after each point ("" writes nothing)."""
    span_config = config.spans()
    opening = list(fetch(0, min(config.opening_tokens, document_tokens))) if document_tokens else []
    if not opening:
        yield from engine.summarize(pot, decoding, stats)
        return
    if on_part is not None:
        on_part(1, 2)
    lead_decoding = part_decoding_for(config, decoding)
    lead = checked_lead(engine, opening, config.lead_question, lead_decoding)
    if on_part is not None:
        on_part(2, 2)
    if holds_whole_document(pot):
        ranked = [
            Bucket(i, 1.0, i * span_config.bucket_tokens)
            for i in range(-(-document_tokens // span_config.bucket_tokens))
        ]
    else:
        until = verbatim_tail_start(pot)  # the attention favours the pot's verbatim tail whatever it is asked
        ranked = attention_ranking(engine, pot, engine.catalyst_ids, [], document_tokens, span_config, until)
    opening_buckets = -(-min(config.opening_tokens, document_tokens) // span_config.bucket_tokens)
    ranked = [bucket for bucket in ranked if bucket.index >= opening_buckets]  # the lead speaks for the opening
    spans = choose_buckets(engine, ranked, document_tokens, fetch, span_config)
    points = main_points(engine, spans, config.points, {lead}, document_tokens)
    text = lead
    if points:
        where = [locate(point.token) if locate else "" for point in points]
        lines = [
            f"- {point.text}" + (f" ({place})" if place else "") for point, place in zip(points, where, strict=True)
        ]
        text += "\n\nMain points:\n" + "\n".join(lines)
    yield text
