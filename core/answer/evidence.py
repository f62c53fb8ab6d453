"""The pot points, the document answers: rank document spans by the question's attention over the pot.

A small model reads a fact back poorly from far inside a 4K pot, yet the question's own attention over the
pot's entries points at the right place: summed per document token over the later half of the layers and
grouped into 64-token buckets, a needle's bucket ranked 2nd of ~495 at 32K. So the answer is read from the
document itself: the best buckets, each widened to whole sentences or lines, are read verbatim from the
document's token ids and placed between the pot and the question (Engine.answer's `evidence`).

Everything here is plain index arithmetic on the attention the engine measured; reading the token ids of a
window is the caller's (the app keeps them on disk), so core never touches files.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import torch

from ..engine import Engine
from ..pot import Pot
from ..stopping import check_stop
from .citations import CitationConfig, answer_attention, document_token_scores
from .rerank import best_spans, question_likelihoods
from .retrieval_heads import RetrievalHeads
from .text_units import passage_start
from .word_match import word_match_scores, word_neighbours

RANKINGS = ("attention", "words", "both")
SPAN_ORDERS = ("document", "likelihood")
POINTERS = ("sharper", "retrieval-heads", "later-layers")


@dataclass(frozen=True)
class EvidenceConfig:
    # Document tokens of the candidate spans, all together (the best `read_spans` of them are read). The default
    # is chosen from the measured curve of accuracy against time to first token
    # (benchmarks/results/devset/evidence-context/modes.md): with 12 spans at most, larger budgets find the same.
    budget_tokens: int = 1024
    # Attention is summed over buckets of this many document tokens before ranking: one fact spreads its
    # attention over a few neighbouring tokens, and a bucket also ranks a sentence's tokens together.
    bucket_tokens: int = 64
    # A bucket widens to the sentences or lines it touches, but never beyond this many tokens (a table or a
    # log line without stops would otherwise take the whole budget).
    max_span_tokens: int = 192
    # A span then takes the sentences after its own while it stays within this many tokens (and max_span_tokens):
    # the question's words name a subject, and the fact about it tends to follow ("Above the village ... stood the
    # lighthouse ..." and then "There were one hundred and twelve steps ..."). 0: the bucket's sentences alone.
    # Measured: the three spans read held the answer for 42 questions of 54 with sentences alone, 48 at 160.
    span_tokens: int = 160
    # Most spans read: beyond a handful, more spans dilute what a small model attends to.
    max_spans: int = 12
    # How a bucket's tokens rank it: "max", its most attended token (a fact draws sharp attention to a few
    # tokens), or "sum", the attention of all its tokens. On a 16K passkey pot the needle's bucket ranked 1st by
    # max and 8th by sum (docs/method.md, "Answering").
    bucket_score: str = "max"
    # Counted layers and sinks, as for citations: the later half holds the retrieval heads (measured: the
    # needle's bucket ranked 2nd counting the later half, 8th to 13th counting every layer).
    attention: CitationConfig = CitationConfig()
    # What points at the spans: "attention", the question's attention over the pot (it sees only what the pot
    # kept); "words", the question's words found in the whole stored document (word_match); "both", the
    # two rankings fused. Measured on the development set (docs/experiments.md, "Evidence answers ...").
    ranking: str = "both"
    # How "both" merges the two rankings: this many of the word ranking's buckets, then the attention's next
    # one, and so on, each bucket once. The words find a fact wherever it lies; the pot's attention adds the
    # places the question's words miss. Measured on both development sets (docs/experiments.md, "Retrieval
    # heads"); reciprocal-rank fusion pushed the words' first buckets down behind places the attention alone
    # liked (spans holding the answer for 45-47 questions of 54 against 51 this way).
    words_per_attention: int = 2
    # ... but only when the words point sharply: when no bucket scores this much for the question's words (they
    # are common in the document, or absent), the attention leads and the words follow. A question in the
    # user's own words shares only ordinary words with the document (median best score 13 on the paraphrased
    # development questions, 21 on the word-sharing ones). 0: the words always lead. Measured on both sets
    # (docs/experiments.md, "Retrieval heads").
    words_lead_score: float = 10.0
    # The words also sought for each content word of the question: this many the model's input embeddings put
    # nearest it, at a cosine of at least `neighbour_similarity` (word_match.neighbour_keys), each scoring as
    # a question word. A question in the user's own words shares no content word with the sentence that answers
    # it ("vessel" for "ship", "supplier" for "vendor"). 0 (default): the question's own words alone. Measured on
    # both development sets (docs/experiments.md, "Words the model takes for the question's"): with 8 the words
    # alone rank the answering sentence's bucket among their 12 best for 17 paraphrased questions of 44 instead of
    # 9, but the passages read held the answer for 19 of 44 instead of 18 and for 47 of 54 word-sharing questions
    # instead of 49; sought only where the question's own words point weakly, 18 and 49.
    word_neighbours: int = 0
    neighbour_similarity: float = 0.45
    # Whose attention points: "retrieval-heads", the few heads calibrated per model to point at a fact from the
    # question (core.answer.retrieval_heads; every layer counted, the other heads left out); "later-layers", every
    # head of the layers `attention` counts (also used when no calibration is at hand); "sharper" (default),
    # the retrieval heads when they lead (the words point weakly, see words_lead_score) and the later layers
    # when they back words that lead. Measured on both development sets (docs/experiments.md, "Retrieval
    # heads"): the retrieval heads raised the paraphrased questions' recall but lost two word-sharing ones
    # behind the words; "sharper" keeps those and most of the gain.
    pointer: str = "sharper"
    # What the passages are read after: None, the whole pot (distilled with the question to |C| when the
    # passages need the room: the pot, then the passages, then the question); 0, none of it, only the chat
    # template's opening (the pot ranks the passages and the document answers); N, a copy of the pot distilled
    # to N entries with the question as catalyst. The 135M model reads the passages best alone: the pot's
    # entries draw its attention away from them (benchmarks/results/devset/evidence-context/modes.md).
    pot_entries: int | None = 0
    # Spans read: the candidates (found within budget_tokens and max_spans) are reranked by how likely the model
    # finds the question after each one on its own (rerank), and the best `read_spans` are read, placed as
    # `order` says. 0: every candidate is read, unreranked. A 135M model reads the answer out of 3 spans far
    # more often than out of 12 (benchmarks/results/devset/evidence-context/modes.md).
    read_spans: int = 3
    # Whether the question is also written before the spans (it always follows them). Measured, not assumed: a
    # span ending in a numbered list made the model continue the list instead of answering.
    question_first: bool = False
    # The order the spans read are placed in: "document" (as they come in the document) or "likelihood" (the
    # reranking's order, the likeliest last, right before the question). Only with read_spans > 0. Measured: the
    # same 22 of 54 development answers right either way, and on a 32K passkey the needle's span no longer
    # comes before a numbered list that the model went on writing instead of answering (2 of 5 at depth 0.1
    # in document order).
    order: str = "likelihood"
    # The spans read (after reranking) take this many whole sentences more on each side, each within
    # `neighbour_tokens`, without reaching into another span read: a candidate stops where another candidate began,
    # and a fact in the sentence just before or after ("All numbers are in network (big-endian) order." before
    # the span about why) was lost when that other candidate was not read. 0: the spans as ranked.
    neighbour_sentences: int = 1
    neighbour_tokens: int = 64
    # A span read that begins inside a term's description (an option of a manual page, a setting of a reference:
    # core.answer.text_units) starts at the term's line when that line is at most this many tokens before it, so that
    # its sentences say what they describe ("--hole-detection=METHOD ... Default is seek"). 0: never.
    term_tokens: int = 96

    def __post_init__(self) -> None:
        self._check_sizes()
        self._check_choices()
        self._check_word_ranking()
        self._check_spans_read()

    def _check_sizes(self) -> None:
        """The token budget, buckets and spans the candidates are found in."""
        if self.budget_tokens < 1:
            raise ValueError(f"evidence budget must be at least 1 token, got {self.budget_tokens}")
        if self.bucket_tokens < 1:
            raise ValueError(f"evidence bucket must be at least 1 token, got {self.bucket_tokens}")
        if self.max_span_tokens < self.bucket_tokens:
            raise ValueError(
                f"the longest evidence span ({self.max_span_tokens}) must hold a bucket ({self.bucket_tokens})"
            )
        if self.term_tokens < 0:
            raise ValueError(f"term tokens must be 0 or more, got {self.term_tokens}")
        if self.span_tokens < 0:
            raise ValueError(f"evidence span length must be 0 (its sentences alone) or more, got {self.span_tokens}")
        if self.max_spans < 1:
            raise ValueError(f"at least one evidence span is needed, got {self.max_spans}")

    def _check_choices(self) -> None:
        """The settings that name one of a few ways."""
        if self.bucket_score not in ("max", "sum"):
            raise ValueError(f"bucket score must be 'max' or 'sum', got {self.bucket_score!r}")
        if self.ranking not in RANKINGS:
            raise ValueError(f"evidence ranking must be one of {', '.join(RANKINGS)}, got {self.ranking!r}")
        if self.pointer not in POINTERS:
            raise ValueError(f"evidence pointer must be one of {', '.join(POINTERS)}, got {self.pointer!r}")

    def _check_word_ranking(self) -> None:
        """The settings of the question's words' ranking and of the neighbours it takes along."""
        if not _is_count(self.words_per_attention):
            raise ValueError(f"word buckets per attention bucket must be 0 or more, got {self.words_per_attention!r}")
        if not _is_count(self.word_neighbours):
            raise ValueError(f"word neighbours must be 0 or more, got {self.word_neighbours!r}")
        if not -1.0 <= self.neighbour_similarity <= 1.0:
            raise ValueError(f"neighbour similarity must be a cosine in [-1, 1], got {self.neighbour_similarity!r}")
        if not self.words_lead_score >= 0:
            raise ValueError(f"the words' lead score must be 0 or more, got {self.words_lead_score!r}")

    def _check_spans_read(self) -> None:
        """How the spans read are picked, placed and widened, and the pot entries before them."""
        if self.order not in SPAN_ORDERS:
            raise ValueError(f"span order must be one of {', '.join(SPAN_ORDERS)}, got {self.order!r}")
        if not _is_count(self.read_spans):
            raise ValueError(f"spans read must be 0 (every candidate) or more, got {self.read_spans!r}")
        if not _is_count(self.neighbour_sentences):
            raise ValueError(f"neighbour sentences must be 0 or more, got {self.neighbour_sentences!r}")
        if self.neighbour_tokens < 1:
            raise ValueError(f"a neighbour sentence must be allowed at least 1 token, got {self.neighbour_tokens}")
        if self.pot_entries is not None and not _is_count(self.pot_entries):
            raise ValueError(
                f"the pot entries before the passages must be 0 or more (or all of them), got {self.pot_entries!r}"
            )


def _is_count(value) -> bool:
    """A whole number, 0 or more. Not True or False: Python's bool is an int, but a setting given as one is a
    mistake."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def after_pot_suffix(pot_entries: int | None) -> str:
    """How benchmark reports name what the passages follow: "" alone (0), "+pot" the whole pot (None), "+potN"."""
    return "+pot" if pot_entries is None else ("" if pot_entries == 0 else f"+pot{pot_entries}")


def parse_pot_entries(text: str) -> int | None:
    """EvidenceConfig.pot_entries from a user's words: "all" (the whole pot) or a whole number of entries."""
    text = text.strip().lower()
    if text == "all":
        return None
    if not text.isdigit():
        raise ValueError(f"pot entries before the passages must be 'all' or a whole number, got {text!r}")
    return int(text)


class Bucket(NamedTuple):
    index: int  # document token // bucket_tokens
    share: float  # of the counted attention
    best: int  # the bucket's most attended document token
    # The words ranking's own score (word_match, BM25-like: a rare question word found there scores high,
    # a common one little); 0 for the attention's buckets.
    score: float = 0.0


@dataclass(frozen=True)
class Span:
    """Document tokens [start, end) read verbatim, with the attention share of the bucket that chose it and
    that bucket's most attended token (where a citation points).

    `held`: the span lies in the pot's verbatim tail, which the answer already reads at full detail; it is
    cited (the question's words point there) but not read a second time, and costs no budget."""

    start: int
    end: int
    ids: tuple[int, ...]
    score: float
    best: int
    held: bool = False

    def __len__(self) -> int:
        return self.end - self.start


def ranked_buckets(
    pot: Pot, attention: torch.Tensor, document_tokens: int, config: EvidenceConfig, until: int | None = None
) -> list[Bucket]:
    """Buckets (document token // bucket_tokens) by the attention they received, best first.

    attention: (L, H_kv, n) over the pot's entries (citations.answer_attention with the question's tokens).
    Shares are of the counted attention; buckets that no pot entry comes from are left out, and so are the
    buckets from document token `until` on (the pot's verbatim tail: see verbatim_tail_start).
    """
    tokens, scores = document_token_scores(pot, attention, config.attention)  # (m,), (m,)
    inside = tokens < (document_tokens if until is None else min(document_tokens, until))
    tokens, scores = tokens[inside], scores[inside]
    if tokens.numel() == 0:
        return []
    buckets = tokens // config.bucket_tokens  # (m,)
    count = int(buckets.max()) + 1
    shares = torch.zeros(count, dtype=torch.float64).index_add_(0, buckets, scores.double())  # (B,)
    if config.bucket_score == "max":
        ranking = torch.zeros(count, dtype=torch.float64).scatter_reduce_(0, buckets, scores.double(), "amax")  # (B,)
    else:
        ranking = shares
    best: dict[int, int] = {}
    for index in torch.argsort(scores, descending=True, stable=True).tolist():
        best.setdefault(int(buckets[index]), int(tokens[index]))
    order = torch.argsort(ranking, descending=True, stable=True)  # ties: earlier bucket first
    return [Bucket(int(b), float(shares[b]), best[int(b)]) for b in order if shares[b] > 0]


def word_ranked_buckets(
    document_ids: torch.Tensor,
    question_ids: list[int],
    keys: torch.Tensor,
    config: EvidenceConfig,
    until: int,
    neighbours: set[int] | frozenset[int] = frozenset(),
) -> list[Bucket]:
    """Buckets by how well they match the question's words and their `neighbours` (word_match), best first;
    buckets with no match and those from document token `until` on are left out. A bucket's share is its part of
    the total match score; its best token is its first matching one."""
    scores, first = word_match_scores(
        document_ids[:until], question_ids, keys, config.bucket_tokens, neighbours
    )  # (B,), (B,)
    total = float(scores.sum())
    if total <= 0:
        return []
    order = torch.argsort(scores, descending=True, stable=True)
    return [Bucket(int(b), float(scores[b]) / total, int(first[b]), float(scores[b])) for b in order if scores[b] > 0]


def fused(attention: list[Bucket], words: list[Bucket], words_per_attention: int = 2) -> list[Bucket]:
    """The two rankings taken in turn: `words_per_attention` word buckets, then one attention bucket, each
    bucket once, until both are used up (0: the attention's first, then the words' that it left).

    A bucket keeps the attention's share and best token where the attention ranked it (a citation points where
    the pot looked), else the words'."""
    by_attention = {bucket.index: bucket for bucket in attention}
    if words_per_attention == 0:
        seen = {bucket.index for bucket in attention}
        return list(attention) + [bucket for bucket in words if bucket.index not in seen]
    turns = [iter(words)] * words_per_attention + [iter(attention)]
    merged: list[Bucket] = []
    seen: set[int] = set()
    while turns:
        for turn in list(turns):
            bucket = next((b for b in turn if b.index not in seen), None)
            if bucket is None:
                turns = [t for t in turns if t is not turn]
                continue
            seen.add(bucket.index)
            merged.append(by_attention.get(bucket.index, bucket))
    return merged


def words_lead(words: list[Bucket], config: EvidenceConfig) -> bool:
    """Whether the question's words point sharply: their best bucket scores at least config.words_lead_score."""
    return bool(words) and words[0].score >= config.words_lead_score


def words_per_attention(words: list[Bucket], config: EvidenceConfig) -> int:
    """How `fused` interleaves for this question: config.words_per_attention when the words lead (words_lead),
    else 0 (the attention first, then the words)."""
    return config.words_per_attention if words_lead(words, config) else 0


def attention_pointer(config: EvidenceConfig, interleave: int) -> str:
    """Whose attention ranks for this question: config.pointer, but with "sharper" the retrieval heads when the
    attention leads (interleave 0) and the later layers when it backs words that lead."""
    if config.pointer != "sharper":
        return config.pointer
    return "retrieval-heads" if interleave == 0 else "later-layers"


def verbatim_tail_start(pot: Pot) -> int:
    """The first document token of the pot's verbatim tail: from there on, every token read is held by every
    (layer, head), uncompressed (what was read since the last compression). Spans from there would repeat what
    the answer already reads at full detail; the document's length when the pot holds none of it that way."""
    document_tokens = pot.document_tokens
    if pot.source is not None or pot.entries == 0:
        return document_tokens
    n = pot.entries
    # Entry j of every head holds token tokens_read - n + j exactly where the tail since the last compression is.
    expected = torch.arange(pot.tokens_read - n, pot.tokens_read, device=pot.origin.device)  # (n,)
    in_place = (pot.origin == expected).flatten(0, -2).all(dim=0)  # (n,) bool, over every (layer, head)
    misplaced = torch.nonzero(~in_place)
    run = n if misplaced.numel() == 0 else n - 1 - int(misplaced[-1])
    return max(0, document_tokens - run)


# Whether a sentence or a line ends between two tokens (`after` None: the window ends there): see span_breaks.
Breaks = Callable[[int, int | None], bool]


def span_breaks(engine: Engine) -> Breaks:
    """Where a candidate span may begin or end: after a line's end, or after a stop that the next token does not
    continue. So the stop in "4.19.0", "version 0.21" or a log line's "13:37:47.557Z" ends nothing, and a span
    of a log starts where its line does instead of at "557Z ERROR ..."; a hard-wrapped line's end still does."""
    ends, starts, lines = engine.sentence_ends(), engine.word_starts(), engine.line_ends()  # (V,) bool each
    vocab = ends.shape[0]

    def breaks(before: int, after: int | None) -> bool:
        if before >= vocab or not ends[before]:
            return False
        return after is None or after >= vocab or bool(lines[before]) or bool(starts[after])

    return breaks


def _ends_before(window_ids: list[int], window_start: int, breaks: Breaks) -> Callable[[int], bool]:
    """Whether a sentence or a line ends between document tokens p - 1 and p (p inside the fetched window, whose
    tokens from window_start on are window_ids; p at the window's end: the window ends there)."""
    window_end = window_start + len(window_ids)

    def ends_before(p: int) -> bool:
        return breaks(window_ids[p - 1 - window_start], window_ids[p - window_start] if p < window_end else None)

    return ends_before


def widen(
    start: int, end: int, window_ids: list[int], window_start: int, breaks: Breaks, limit: int
) -> tuple[int, int]:
    """[start, end) widened to whole sentences or lines inside the fetched window, at most `limit` tokens.

    window_ids are the document's tokens from window_start on. The span grows left until a sentence (or a line)
    ends just before it, and right until it includes a sentence end; it stops growing on a side once it would
    exceed `limit`, so a text without stops keeps the bucket itself.
    """
    window_end = window_start + len(window_ids)
    start, end = max(start, window_start), min(end, window_end)
    ends_before = _ends_before(window_ids, window_start, breaks)
    left = start
    while left > window_start and end - left < limit and not ends_before(left):
        left -= 1
    if left > window_start and not ends_before(left):
        left = start  # no sentence start within reach: do not begin mid-sentence further left
    right = end
    while right < window_end and right - left < limit and not ends_before(right):
        right += 1
    return left, right


def follow(
    left: int,
    right: int,
    window_ids: list[int],
    window_start: int,
    breaks: Breaks,
    target: int,
    limit: int,
) -> int:
    """The new right end of [left, right) after taking the whole sentences that follow it, while the span is
    shorter than `target` and a sentence taken keeps it within `limit` tokens (and inside the fetched window)."""
    window_end = window_start + len(window_ids)
    ends_before = _ends_before(window_ids, window_start, breaks)
    while right < window_end and right - left < target:
        after = right + 1  # the next sentence ends at the first break from `right` on
        while after < window_end and not ends_before(after):
            after += 1
        if after - left > limit:
            break
        right = after
    return right


def choose_spans(
    buckets: list[Bucket],
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    breaks: Breaks,
    config: EvidenceConfig,
    held_from: int | None = None,
) -> list[Span]:
    """The best buckets widened to sentences (and the sentences after them, `follow`), without overlap, within the
    budget, in document order.

    fetch(start, end) returns the document's token ids [start, end). A bucket already covered by a chosen
    span adds nothing; a span that would overflow the budget is cut at the budget's edge. Buckets from
    document token `held_from` on (the pot's verbatim tail) give `held` spans, inside the tail: they count
    towards max_spans but not the budget.
    """
    chosen: list[Span] = []
    used = 0
    reach = config.max_span_tokens
    held_from = document_tokens if held_from is None else held_from
    for bucket, score, best, _ in buckets:
        if len(chosen) >= config.max_spans or used >= config.budget_tokens:
            break
        start = bucket * config.bucket_tokens
        end = min(start + config.bucket_tokens, document_tokens)
        if start >= document_tokens or any(s.start <= start and end <= s.end for s in chosen):
            continue
        held = start >= held_from
        window_start = max(held_from if held else 0, start - reach)
        window_ids = fetch(window_start, min(document_tokens, end + reach))
        left, right = widen(start, end, window_ids, window_start, breaks, reach)
        right = follow(left, right, window_ids, window_start, breaks, config.span_tokens, reach)
        for other in chosen:  # no overlap: trim on the side of a chosen span, keeping the bucket's side
            if other.start < right and left < other.end:
                if start + end >= other.start + other.end:
                    left = max(left, other.end)
                else:
                    right = min(right, other.start)
        remaining = config.budget_tokens - used
        if not held and right - left > remaining:  # cut to the budget around the bucket, not away from it
            left = max(left, min(start, right - remaining))
            right = left + remaining
        if right <= left:
            continue
        ids = tuple(window_ids[left - window_start : right - window_start])
        chosen.append(Span(left, right, ids, score, best if left <= best < right else left, held))
        used += 0 if held else right - left
    return sorted(chosen, key=lambda span: span.start)


def spans_to_read(spans: list[Span]) -> list[tuple[int, ...]]:
    """The token ids the answer reads after the pot: every span but those the pot holds verbatim."""
    return [span.ids for span in spans if not span.held]


def holds_whole_document(pot: Pot) -> bool:
    """Whether every token read is still in the pot (nothing compressed): then there is nothing to add."""
    return pot.entries == pot.tokens_read and pot.source is None


def find_evidence(
    engine: Engine,
    pot: Pot,
    question: str,
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    config: EvidenceConfig,
    max_new_tokens: int,
    heads: RetrievalHeads | None = None,
) -> list[Span]:
    """The spans to read for `question`, in document order; none when the pot holds the whole document.

    `heads`: the model's retrieval heads, which point when config.pointer says so (the later layers without).
    The two steps (candidate_spans, then spans_read) are also called one at a time by a caller that shows the
    candidates the moment they are found.
    """
    candidates, config = candidate_spans(engine, pot, question, document_tokens, fetch, config, max_new_tokens, heads)
    return spans_read(engine, candidates, question, document_tokens, fetch, config)


def candidate_spans(
    engine: Engine,
    pot: Pot,
    question: str,
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    config: EvidenceConfig,
    max_new_tokens: int,
    heads: RetrievalHeads | None = None,
) -> tuple[list[Span], EvidenceConfig]:
    """The candidate spans the question's words and the pot's attention point at, in document order, and the
    config with its budget fitted to the room beside the pot; none when the pot holds the whole document.

    The budget shrinks to what fits beside what precedes the spans (config.pot_entries), the question and
    `max_new_tokens`. The question's words are also sought in the pot's verbatim tail: when the whole pot
    precedes the spans, a match there is a `held` span, cited but not read again (spans_to_read); otherwise it
    is read like any other. The attention is not: it favours that recent tail whatever is asked.

    The question's attention is measured over the pot as it is (the stored pot is not changed: the pass
    extends a cache that shares its tensors).
    """
    if holds_whole_document(pot):
        return [], config
    room = engine.evidence_room(question, max_new_tokens, config.max_spans, config.pot_entries, config.question_first)
    if room < config.bucket_tokens:  # too little room beside the pot to be worth it
        return [], config
    config = replace(config, budget_tokens=min(config.budget_tokens, room))
    until = verbatim_tail_start(pot)
    # Only the question's own tokens count: the instruction and the template around it attend broadly (on a 16K
    # passkey pot the needle's bucket ranked 8th by the question's rows and 20th by the whole prompt's).
    before, question_ids = engine.question_parts(question)
    words: list[Bucket] = []
    if config.ranking in ("words", "both"):
        document_ids = torch.tensor(fetch(0, document_tokens), dtype=torch.int64)  # (T,)
        keys = engine.word_keys()
        neighbours = set()
        if config.word_neighbours:
            neighbours = word_neighbours(engine, question_ids, config.word_neighbours, config.neighbour_similarity)
        words = word_ranked_buckets(document_ids, question_ids, keys, config, document_tokens, neighbours)
    check_stop()
    if config.ranking == "words":
        buckets = words
    else:
        interleave = words_per_attention(words, config) if config.ranking == "both" else 0
        pointing = replace(config, pointer=attention_pointer(config, interleave))
        attention = attention_ranking(engine, pot, question_ids, before, document_tokens, pointing, until, heads)
        buckets = fused(attention, words, interleave) if config.ranking == "both" else attention
    check_stop()
    # The pot's verbatim tail is in the answer's context only when the whole pot is: otherwise a span there is
    # read like any other.
    held_from = until if config.pot_entries is None else document_tokens
    return choose_buckets(engine, buckets, document_tokens, fetch, config, held_from=held_from), config


def spans_read(
    engine: Engine,
    candidates: list[Span],
    question: str,
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    config: EvidenceConfig,
) -> list[Span]:
    """The candidates read (candidate_spans' config): the likeliest config.read_spans of them by the reranker,
    each with its neighbour sentences and from its term's line."""
    if not candidates:
        return []
    read = most_likely_spans(engine, candidates, question, config.read_spans, config.order)
    if not config.neighbour_sentences or not config.read_spans:
        return read
    ends, starts = engine.sentence_ends(), engine.word_starts()  # (V,) bool each
    vocab = ends.shape[0]

    def breaks(before: int, after: int) -> bool:
        # A break is a stop or a line's end followed by a token that begins a word (led by a space or punctuation).
        # So the stop in "4.19.0" or "www.gnu.org" breaks nothing; neither does a hard-wrapped line's end inside a
        # sentence ("as\nshe"), nor, as measured, a log line's end before a line that starts with a digit: log
        # spans seldom grow.
        return before < vocab and bool(ends[before]) and (after >= vocab or bool(starts[after]))

    grown = with_neighbours(read, document_tokens, fetch, breaks, config)
    return with_terms(grown, fetch, engine.tokenizer, config)


def with_terms(
    spans: list[Span], fetch: Callable[[int, int], list[int]], tokenizer, config: EvidenceConfig
) -> list[Span]:
    """The spans read, each that begins inside a term's description, or in the middle of a word hyphenated across
    lines, starting where its first unit does instead (core.answer.text_units.passage_start: the term's line) when that
    is within config.term_tokens before it, does not reach into another span of the list, and the budget allows;
    held spans unchanged; same order."""
    if not config.term_tokens:
        return spans
    room = config.budget_tokens - sum(len(span) for span in spans if not span.held)
    placed = sorted(spans, key=lambda span: span.start)
    floors = {id(span): (placed[i - 1].end if i else 0) for i, span in enumerate(placed)}
    out = []
    for span in spans:
        floor = max(floors[id(span)], span.start - min(config.term_tokens, room))
        if span.held or span.start <= floor:
            out.append(span)
            continue
        window = fetch(floor, span.start)
        before = tokenizer.decode(window, skip_special_tokens=True)
        at = passage_start(before, tokenizer.decode(list(span.ids[:48]), skip_special_tokens=True))
        if at == 0 and floor > 0 and not tokenizer.decode(fetch(floor - 1, floor)).endswith("\n"):
            at = None  # the window begins mid-line: its first line is no whole term
        # The window's tokens from p on decode to the text from the term line on: the first p that does.
        p = None if at is None else _suffix_from(window, tokenizer, len(before) - at)
        if p is None:
            out.append(span)
            continue
        room -= len(window) - p
        out.append(replace(span, start=floor + p, ids=tuple(window[p:]) + span.ids))
    return out


def _suffix_from(window: list[int], tokenizer, chars: int) -> int | None:
    """The position in `window` whose tokens to the end decode to exactly the last `chars` characters."""
    for p in range(len(window) - 1, -1, -1):
        length = len(tokenizer.decode(window[p:], skip_special_tokens=True))
        if length == chars:
            return p
        if length > chars:
            return None
    return None


# Sentences (or lines) are taken on a side until they add this many tokens: a line break, a page number or one
# line of a list is too little to hold what the span lacks.
_SHORTEST = 24


def _edge(ends_at: list[int], limit: int) -> int:
    """How far to reach, given the distances from a span's edge at which sentences end on that side (ascending):
    the first at least _SHORTEST away, else the farthest within `limit`; 0 when none is."""
    within = [distance for distance in ends_at if distance <= limit]
    return next((distance for distance in within if distance >= _SHORTEST), within[-1] if within else 0)


def _sentence_before(start: int, floor: int, fetch, breaks, limit: int) -> int:
    """Where the whole sentences just before `start` begin (_edge): no earlier than `floor` (the document's start or
    another span's end, where a sentence may begin)."""
    window_start = max(floor, start - limit - 1)
    window = fetch(window_start, start)
    # A sentence begins at position p when the tokens around p break (a stop, then a new word), or p is the floor.
    starts = [
        start - p
        for p in range(start - 1, window_start, -1)
        if breaks(window[p - 1 - window_start], window[p - window_start])
    ]
    if window_start == floor and start > floor:
        starts.append(start - floor)
    return start - _edge(starts, limit)


def _sentence_after(end: int, ceiling: int, fetch, breaks, limit: int) -> int:
    """Where the whole sentences starting at `end` end (_edge): no later than `ceiling` (the document's end or
    another span's start)."""
    window_end = min(ceiling, end + limit)
    window = fetch(end, window_end + 1)  # with the token after, which must begin a new word
    stops = [
        p - end
        for p in range(end + 1, window_end + 1)
        if p == ceiling or (p - end < len(window) and breaks(window[p - 1 - end], window[p - end]))
    ]
    return end + _edge(stops, limit)


def with_neighbours(
    spans: list[Span],
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    breaks: Callable[[int, int], bool],
    config: EvidenceConfig,
) -> list[Span]:
    """The spans read, each with config.neighbour_sentences whole sentences more on each side (each sentence within
    config.neighbour_tokens), never reaching into another span of the list nor past config.budget_tokens read in
    all (the likeliest spans, last in the list, grow first); held spans unchanged; same order."""
    room = config.budget_tokens - sum(len(span) for span in spans if not span.held)
    grown: dict[int, Span] = {}
    for span in reversed(spans):
        if span.held or room <= 0:
            continue
        placed = sorted((grown.get(id(other), other) for other in spans), key=lambda other: other.start)
        index = next(i for i, other in enumerate(placed) if other is span)  # not grown yet: itself
        floor = placed[index - 1].end if index > 0 else 0
        ceiling = placed[index + 1].start if index + 1 < len(placed) else document_tokens
        left, right = span.start, span.end
        for _ in range(config.neighbour_sentences):
            before = _sentence_before(left, floor, fetch, breaks, config.neighbour_tokens)
            if right - before - len(span) <= room:
                left = before
            after = _sentence_after(right, ceiling, fetch, breaks, config.neighbour_tokens)
            if after - left - len(span) <= room:
                right = after
        if (left, right) != (span.start, span.end):
            room -= (right - left) - len(span)
            ids = tuple(fetch(left, span.start)) + span.ids + tuple(fetch(span.end, right))
            grown[id(span)] = replace(span, start=left, end=right, ids=ids)
    return [grown.get(id(span), span) for span in spans]


def likeliest(engine: Engine, spans: list[Span], question: str, keep: int) -> list[tuple[int, float]]:
    """(index, score) of the `keep` spans after which the question is likeliest (rerank), best first. One
    document's candidates and a library's (app.ask.library) are chosen alike."""
    scores = question_likelihoods(engine, [span.ids for span in spans], question)
    return [(index, scores[index]) for index in best_spans(scores, keep)]


def most_likely_spans(
    engine: Engine, spans: list[Span], question: str, keep: int, order: str = "document"
) -> list[Span]:
    """The `keep` spans after which the question is likeliest (rerank), with every held span (cited, not
    read); all of them when keep is 0 or they are no more than that (then unscored, in document order). In
    document order, or with order "likelihood" the held spans first and then the likeliest last."""
    to_read = [span for span in spans if not span.held]
    if keep == 0 or (len(to_read) <= keep and order == "document"):
        return spans
    best = [index for index, _ in likeliest(engine, to_read, question, keep)]
    if order == "likelihood":
        return [span for span in spans if span.held] + [to_read[index] for index in reversed(best)]
    kept = {id(to_read[index]) for index in best}
    return [span for span in spans if span.held or id(span) in kept]


def attention_ranking(
    engine: Engine,
    pot: Pot,
    prompt_ids: list[int],
    before: list[int],
    document_tokens: int,
    config: EvidenceConfig,
    until: int | None = None,
    heads: RetrievalHeads | None = None,
) -> list[Bucket]:
    """Buckets by the attention that `prompt_ids` (after `before`, whose own queries are not counted) pay over
    the pot, best first (ranked_buckets); through the retrieval heads alone when config.pointer asks for them
    and `heads` fit the model."""
    attention = answer_attention(engine.model, pot, before, prompt_ids)  # (L, H_kv, n): the prompt's queries
    if config.pointer != "later-layers" and heads is not None and heads.fits(attention):
        attention = attention * heads.mask().to(attention.device)[:, :, None]  # (L, H_kv, n)
        config = replace(config, attention=replace(config.attention, first_layer_fraction=0.0))
    return ranked_buckets(pot, attention, document_tokens, config, until)


def choose_buckets(
    engine: Engine,
    buckets: list[Bucket],
    document_tokens: int,
    fetch: Callable[[int, int], list[int]],
    config: EvidenceConfig,
    held_from: int | None = None,
) -> list[Span]:
    """choose_spans with the engine's sentence and line ends (span_breaks)."""
    return choose_spans(buckets, document_tokens, fetch, span_breaks(engine), config, held_from)
