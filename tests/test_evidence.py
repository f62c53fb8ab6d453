"""Answer mode `evidence` and whole-document summaries on tiny models: span ranking and widening, the context
within |M|, the pot unchanged, the spans read in the answer's context, and citations carrying their text."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch
from helpers import expect_one_line_error, record_cache_lengths, reference_greedy
from tiny_models import build_attending_model, random_ids, save_attending_model_folder, tiny_loaded, tiny_tokenizer

from infinipot.app.ask.modes import AnswerSettings
from infinipot.app.cli import main
from infinipot.app.service import DocumentService
from infinipot.core import hf_adapter
from infinipot.core.answer.citations import answer_attention
from infinipot.core.answer.evidence import (
    Bucket,
    EvidenceConfig,
    Span,
    attention_pointer,
    choose_spans,
    find_evidence,
    follow,
    fused,
    most_likely_spans,
    parse_pot_entries,
    ranked_buckets,
    span_breaks,
    spans_to_read,
    verbatim_tail_start,
    widen,
    with_neighbours,
    words_per_attention,
)
from infinipot.core.answer.rerank import question_likelihoods
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import LoadedModel
from infinipot.core.prompts import encode
from infinipot.core.summary import is_run_on

STOP = 0  # the token that ends a sentence in the index-level tests
CONTINUATION = 7  # a token that continues the word before it ("19" after "4.")


def ends(before: int, after: int | None = None) -> bool:
    """A sentence's edge after a stop, whatever follows (choose_spans' breaks, one token's rule)."""
    return before == STOP


# -- widening and choosing spans: plain index arithmetic -------------------------------------------------
def test_a_bucket_widens_to_the_sentences_it_touches():
    #        0  1  2  3  4  5  6  7  8  9 10 11
    ids = [5, 5, 0, 5, 5, 5, 5, 5, 0, 5, 5, 0]  # sentences end at 2, 8 and 11
    assert widen(4, 6, ids, 0, ends, limit=20) == (3, 9)  # from after the stop at 2 through the stop at 8
    assert widen(9, 10, ids, 0, ends, limit=20) == (9, 12)
    assert widen(0, 1, ids, 0, ends, limit=20) == (0, 3)  # the window's start is a sentence start


def test_widening_stops_at_the_limit_and_never_starts_mid_sentence_further_left():
    ids = [5] * 40 + [0]
    left, right = widen(20, 22, ids, 0, ends, limit=8)
    assert left == 20  # no sentence start within reach: the bucket's own start
    assert right - left <= 8
    # a window that starts mid-document: positions are document positions
    assert widen(104, 106, [5, 0, 5, 5, 5, 5, 5, 0], 100, ends, limit=20) == (102, 108)


def test_a_span_begins_at_no_stop_that_the_next_token_continues():
    #        0  1  2  3  4  5  6  7  8  9
    ids = [5, 0, 7, 5, 5, 0, 5, 5, 0, 7]  # the stop at 1 is a number's ("41.914Z"); the one at 8 is too
    assert widen(4, 5, ids, 0, breaks, limit=20) == (0, 6)  # not from 2: it continues the word before
    assert widen(4, 5, ids, 0, ends, limit=20) == (2, 6)  # a stop alone would begin it mid-word
    assert widen(6, 7, ids, 0, breaks, limit=20) == (6, 10)  # the stop at 8 is followed by a continuation too


def test_span_breaks_take_a_line_end_always_and_a_stop_only_before_a_new_word():
    engine = attending_engine()
    tokenizer = engine.tokenizer
    breaks = span_breaks(engine)

    def edges(text: str) -> list[str]:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        pairs = zip(ids, [*ids[1:], None], strict=True)
        cut = [i + 1 for i, (before, after) in enumerate(pairs) if breaks(before, after)]
        return [tokenizer.decode(ids[a:b]) for a, b in zip([0, *cut], [*cut, len(ids)], strict=True) if a < b]

    assert edges("The fox ran. The dog sat.") == ["The fox ran.", " The dog sat."]
    # a log line's timestamp and a version number hold stops that end nothing; the lines' ends do
    assert edges("12:01.557Z fox 4.19 ran\n12:02.914Z dog") == ["12:01.557Z fox 4.19 ran\n", "12:02.914Z dog"]


def fetch_from(document: list[int]):
    return lambda start, end: document[start:end]


def test_chosen_spans_do_not_overlap_stay_in_budget_and_come_in_document_order():
    document = ([5] * 15 + [0]) * 40  # 640 tokens, a sentence every 16
    config = EvidenceConfig(budget_tokens=100, bucket_tokens=8, max_span_tokens=40, max_spans=5, span_tokens=0)
    shares = {30: 0.4, 31: 0.2, 2: 0.15, 70: 0.1, 3: 0.05, 50: 0.05}
    buckets = [Bucket(index, share, index * 8 + 3) for index, share in shares.items()]
    spans = choose_spans(buckets, len(document), fetch_from(document), ends, config)
    assert [s.start for s in spans] == sorted(s.start for s in spans)
    assert all(a.end <= b.start for a, b in zip(spans, spans[1:], strict=False))
    assert sum(len(s) for s in spans) <= config.budget_tokens
    assert len(spans) <= config.max_spans
    assert all(s.ids == tuple(document[s.start : s.end]) for s in spans)
    # every span begins a sentence and, unless cut by the budget, ends one
    assert all(s.start % 16 == 0 for s in spans)
    assert spans[0].start == 16 and spans[0].end == 32  # bucket 2 (tokens 16-23) widened to its sentence
    # bucket 31 lies in the sentence bucket 30 already took: no second span for it
    assert sum(1 for s in spans if s.start <= 240 < s.end) == 1
    # the best bucket is there with its share
    best = next(s for s in spans if s.start <= 240 < s.end)
    assert best.score == pytest.approx(0.4) and best.best == 243


def test_a_span_takes_the_whole_sentences_after_it_up_to_its_length():
    #        0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
    ids = [5, 5, 0, 5, 5, 5, 0, 5, 5, 5, 5, 5, 5, 0, 5, 5]  # sentences end at 2, 6 and 13; the last runs on
    assert follow(0, 3, ids, 0, ends, target=6, limit=20) == 7  # one sentence more reaches 7 >= 6 tokens
    assert follow(0, 3, ids, 0, ends, target=8, limit=20) == 14  # under 8 after it: the next one too
    assert follow(0, 3, ids, 0, ends, target=8, limit=10) == 7  # the sentence to 13 would pass the limit
    assert follow(0, 3, ids, 0, ends, target=3, limit=20) == 3  # already long enough
    assert follow(0, 14, ids, 0, ends, target=30, limit=40) == 16  # the window's end closes the last one
    assert follow(100, 103, ids[:7], 100, ends, target=6, limit=20) == 107  # document positions


def test_chosen_spans_carry_the_sentences_after_their_bucket_without_overlap():
    document = ([5] * 15 + [0]) * 40  # 640 tokens, a sentence every 16
    config = EvidenceConfig(budget_tokens=200, bucket_tokens=8, max_span_tokens=64, max_spans=5, span_tokens=40)
    buckets = [Bucket(30, 0.5, 243), Bucket(34, 0.4, 275), Bucket(28, 0.3, 227)]
    earlier, best = choose_spans(buckets, len(document), fetch_from(document), ends, config)
    assert (best.start, best.end) == (240, 288)  # its sentence and two more: 48 tokens, the first >= 40
    assert best.ids == tuple(document[240:288]) and best.score == pytest.approx(0.5)
    # bucket 34 lies inside the best span: nothing more; bucket 28 grows into it and is trimmed at its start
    assert (earlier.start, earlier.end) == (224, 240)


def breaks(before: int, after: int) -> bool:
    """A sentence's edge between two tokens: a stop, then a new word (CONTINUATION continues the word before)."""
    return ends(before) and after != CONTINUATION


def span_of(document: list[int], start: int, end: int) -> Span:
    return Span(start, end, tuple(document[start:end]), 1.0, start)


def test_spans_read_take_a_whole_sentence_more_on_each_side_without_reaching_into_each_other():
    document = ([5] * 7 + [0]) * 20  # 160 tokens, a sentence every 8
    config = EvidenceConfig(neighbour_sentences=1, neighbour_tokens=8)

    def span(start, end, score=1.0, held=False):
        return Span(start, end, tuple(document[start:end]), score, start + 1, held)

    first, second, held = span(40, 56), span(64, 72, 0.5), span(120, 128, 0.2, held=True)
    grown = with_neighbours([second, first, held], len(document), fetch_from(document), breaks, config)
    # Same order; the sentence between `first` and `second` is read once, by `first`; held spans stay.
    assert [(s.start, s.end) for s in grown] == [(64, 80), (32, 64), (120, 128)]
    assert all(s.ids == tuple(document[s.start : s.end]) for s in grown[:2])
    assert grown[1].best == 41 and grown[1].score == 1.0
    # A sentence longer than neighbour_tokens is not taken, on either side.
    long = [5] * 11 + [0] + [5] * 8 + [0] + [5] * 11 + [0]  # sentences end at 11, 20 and 32
    middle = Span(12, 21, tuple(long[12:21]), 1.0, 13)
    (alone,) = with_neighbours([middle], len(long), fetch_from(long), breaks, config)
    assert (alone.start, alone.end) == (12, 21)
    (alone,) = with_neighbours([middle], len(long), fetch_from(long), breaks, replace(config, neighbour_tokens=12))
    assert (alone.start, alone.end) == (0, 33) and alone.ids == tuple(long)
    # Short lines (a list, a page number) are taken together until they add 24 tokens or more.
    lines = [5] * 31 + [0] + ([5] * 9 + [0]) * 6  # a sentence to 31, then lines of 10 tokens to 91
    (listed,) = with_neighbours([Span(0, 32, tuple(lines[:32]), 1.0, 1)], len(lines), fetch_from(lines), breaks, config)
    assert (listed.start, listed.end) == (0, 32)  # no line ends within neighbour_tokens (8)
    roomy = replace(config, neighbour_tokens=64)
    (listed,) = with_neighbours([Span(0, 32, tuple(lines[:32]), 1.0, 1)], len(lines), fetch_from(lines), breaks, roomy)
    assert (listed.start, listed.end) == (0, 62)  # three lines: the first stop 24 tokens or more away
    # A stop inside a number ("4.19.0": the stop, then no new word) is no sentence's edge.
    version = [5] * 10 + [0, 7] + [5] * 27 + [0] + [5] * 8  # a stop at 10 followed by a continuation (7)
    (kept,) = with_neighbours([span_of(version, 40, 48)], len(version), fetch_from(version), breaks, roomy)
    assert (kept.start, kept.end) == (0, 48)  # from the document's start, not from the continuation at 11
    # The document's edges are sentence edges.
    (edge,) = with_neighbours([span(8, 16)], 24, fetch_from(document[:24]), breaks, config)
    assert (edge.start, edge.end) == (0, 24)


def test_both_rankings_take_turns_two_word_buckets_to_one_of_attention():
    attention = [Bucket(9, 0.6, 90), Bucket(1, 0.3, 12), Bucket(7, 0.1, 70)]
    words = [Bucket(1, 0.5, 10), Bucket(2, 0.3, 20), Bucket(3, 0.1, 30), Bucket(4, 0.05, 40), Bucket(5, 0.05, 50)]
    merged = fused(attention, words)
    assert [b.index for b in merged] == [1, 2, 9, 3, 4, 7, 5]  # each once; the words run on after attention ends
    # a bucket both ranked keeps the attention's share and best token (where the pot looked)
    assert merged[0] == Bucket(1, 0.3, 12) and merged[1] == Bucket(2, 0.3, 20)
    assert fused([], words) == words and fused(attention, []) == attention


def test_the_sharper_pointer_leads_the_interleave():
    attention = [Bucket(9, 0.6, 90), Bucket(1, 0.3, 12), Bucket(7, 0.1, 70)]
    words = [Bucket(1, 0.5, 10, 4.0), Bucket(2, 0.3, 20, 2.0), Bucket(3, 0.2, 30, 1.0)]
    assert [b.index for b in fused(attention, words, 1)] == [1, 9, 2, 7, 3]
    assert [b.index for b in fused(attention, words, 0)] == [9, 1, 7, 2, 3]  # attention first, then the words left
    config = EvidenceConfig(words_per_attention=2, words_lead_score=5.0)
    assert words_per_attention(words, config) == 0  # best word bucket scores 4 < 5: the attention leads
    sharp = [Bucket(1, 0.5, 10, 5.0), *words[1:]]
    assert words_per_attention(sharp, config) == 2
    assert words_per_attention([], config) == 0
    assert words_per_attention(words, replace(config, words_lead_score=0.0)) == 2  # 0: the words always lead
    with pytest.raises(ValueError, match="lead score"):
        EvidenceConfig(words_lead_score=-1.0)


def test_the_retrieval_heads_point_when_the_attention_leads_the_later_layers_when_it_backs_the_words():
    sharper = EvidenceConfig(pointer="sharper")
    assert attention_pointer(sharper, 0) == "retrieval-heads"  # the words point weakly: the pot leads
    assert attention_pointer(sharper, 2) == "later-layers"  # the words lead: the broad attention backs them
    for fixed in ("retrieval-heads", "later-layers"):
        assert (
            attention_pointer(EvidenceConfig(pointer=fixed), 0)
            == attention_pointer(EvidenceConfig(pointer=fixed), 2)
            == fixed
        )


def test_a_span_is_cut_at_the_budget_edge():
    document = [5] * 200 + [0]
    config = EvidenceConfig(budget_tokens=70, bucket_tokens=64, max_span_tokens=128)
    (span,) = choose_spans([Bucket(1, 1.0, 100)], len(document), fetch_from(document), ends, config)
    assert len(span) == 70 and span.start <= 64 < span.end  # the bucket (64-127) itself is read


def test_a_bucket_in_the_pots_verbatim_tail_is_cited_but_not_read_and_costs_no_budget():
    document = ([5] * 15 + [0]) * 40  # 640 tokens, a sentence every 16
    config = EvidenceConfig(budget_tokens=32, bucket_tokens=8, max_span_tokens=40, max_spans=3, span_tokens=0)
    buckets = [Bucket(75, 0.5, 603), Bucket(10, 0.3, 83), Bucket(20, 0.2, 163)]  # the best is in the tail
    spans = choose_spans(buckets, len(document), fetch_from(document), ends, config, held_from=592)
    held = [s for s in spans if s.held]
    assert [(s.start, s.end) for s in held] == [(592, 608)]  # widened inside the tail only
    assert sum(len(s) for s in spans if not s.held) == 32  # the whole budget left for spans to read
    assert [s.start for s in spans] == [80, 160, 592]
    assert spans_to_read(spans) == [s.ids for s in spans[:2]]
    # without a tail every span is read
    assert not any(s.held for s in choose_spans(buckets, len(document), fetch_from(document), ends, config))


# -- on a model whose every query attends to one planted token --------------------------------------------
NEEDLE = 300


def attending_engine(pot_size: int = 128, keep: int = 48) -> Engine:
    loaded = LoadedModel(build_attending_model(NEEDLE), tiny_tokenizer(), "tiny-attending", torch.device("cpu"))
    return Engine(loaded, PotConfig(pot_size=pot_size, keep_size=keep, forward_tokens=40))


def planted_document(length: int, at: int) -> list[int]:
    document = [t if t != NEEDLE else NEEDLE + 1 for t in random_ids(length, seed=3)]
    document[at] = NEEDLE
    return document


def test_the_question_attention_ranks_the_needle_bucket_first():
    engine = attending_engine()
    document = planted_document(600, at=431)
    pot = engine.read([document])
    assert pot.cycles > 0
    attention = answer_attention(engine.model, pot, [], engine.answer_prompt_ids("Where is it?"))
    buckets = ranked_buckets(pot, attention, len(document), EvidenceConfig())
    assert buckets[0].index == 431 // 64 and buckets[0].share > 0.5 and buckets[0].best == 431


@pytest.mark.parametrize("pot_entries", [None, 0, 40])
def test_evidence_answers_within_the_pot_and_leave_the_pot_unchanged(pot_entries):
    engine = attending_engine(pot_size=256, keep=64)
    document = planted_document(600, at=431)
    pot = engine.read([document])
    keys_before = [k.clone() for k in pot.keys]
    origin_before = pot.origin.clone()
    config = EvidenceConfig(pot_entries=pot_entries)
    spans = find_evidence(engine, pot, "Where is it?", len(document), fetch_from(document), config, 8)
    assert spans and any(s.start <= 431 < s.end for s in spans)
    assert sum(len(s) for s in spans) <= engine.evidence_room("Where is it?", 8, config.max_spans, pot_entries)
    lengths = record_cache_lengths(engine.model)
    stats = AnswerStats()
    evidence = [s.ids for s in spans]
    "".join(
        engine.answer(pot, "Where is it?", max_new_tokens=8, stats=stats, evidence=evidence, pot_entries=pot_entries)
    )
    assert stats.new_tokens > 0
    assert max(lengths) <= engine.config.pot_size
    assert all(torch.equal(a, b) for a, b in zip(keys_before, pot.keys, strict=True))
    assert torch.equal(origin_before, pot.origin)


def test_evidence_is_read_after_the_pot_exactly_as_a_full_context_would_read_it():
    """A document that fits: pot + evidence + question must answer as plain full-KV greedy over those tokens."""
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=512, keep_size=256, forward_tokens=37))
    document = random_ids(150, seed=11)
    pot = engine.read([document])
    evidence = [document[10:30], document[90:120]]
    stats = AnswerStats()
    decoding = {"max_new_tokens": 12}
    "".join(engine.answer(pot, "What is the passkey?", stats=stats, evidence=evidence, **decoding))
    full = engine.prefix_ids + document + engine.answer_prompt_ids("What is the passkey?", evidence)
    expected = reference_greedy(engine, full, 12)
    assert stats.token_ids == expected[: len(stats.token_ids)]
    assert stats.token_ids  # something was answered


def test_passages_read_alone_answer_as_plain_greedy_over_the_opening_the_passages_and_the_question():
    """pot_entries 0: the pot only chose the passages; the answer is a full-KV answer to the template's opening, the
    passages and the question, whatever the pot holds (here a pot compressed several times)."""
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=96, forward_tokens=37))
    document = random_ids(900, seed=12)
    pot = engine.read([document])
    assert pot.cycles > 2
    evidence = [document[100:140], document[400:450], document[650:690]]
    stats = AnswerStats()
    question = "What is the passkey?"
    "".join(engine.answer(pot, question, max_new_tokens=10, stats=stats, evidence=evidence, pot_entries=0))
    expected = reference_greedy(engine, engine.prefix_ids + engine.answer_prompt_ids(question, evidence), 10)
    assert stats.token_ids and stats.token_ids == expected[: len(stats.token_ids)]
    assert stats.answer_entries == len(engine.prefix_ids)  # none of the pot's entries
    # the question written before the spans as well
    first = AnswerStats()
    pieces = engine.answer(
        pot, question, max_new_tokens=10, stats=first, evidence=evidence, pot_entries=0, question_first=True
    )
    "".join(pieces)
    lead = engine.tokenizer(question + "\n\n", add_special_tokens=False)["input_ids"]
    spans = engine.joined_spans(evidence)
    prompt = engine.prefix_ids + engine.evidence_opening_ids + lead + spans + engine.question_ids(question)
    expected_first = reference_greedy(engine, prompt, 10)
    assert first.token_ids and first.token_ids == expected_first[: len(first.token_ids)]
    # the same spans after the whole pot answer from other keys and values
    after_pot = AnswerStats()
    "".join(engine.answer(pot, question, max_new_tokens=10, stats=after_pot, evidence=evidence[:1]))
    assert after_pot.answer_entries > len(engine.prefix_ids)


def test_passages_after_n_entries_follow_a_copy_of_the_pot_distilled_to_n():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=96, forward_tokens=64))
    document = random_ids(900, seed=13)
    pot = engine.read([document])
    keys_before = [k.clone() for k in pot.keys]
    stats = AnswerStats()
    evidence = [document[200:260]]
    "".join(engine.answer(pot, "Why?", max_new_tokens=6, stats=stats, evidence=evidence, pot_entries=40))
    assert stats.compressed_for_answer and stats.answer_entries == 40 and stats.answer_pot.entries == 40
    assert all(torch.equal(a, b) for a, b in zip(keys_before, pot.keys, strict=True))
    # no evidence (a document that fits, or no span found): the pot answers as it is, whatever pot_entries says
    plain, default = AnswerStats(), AnswerStats()
    "".join(engine.answer(pot, "Why?", max_new_tokens=6, stats=plain, pot_entries=0))
    "".join(engine.answer(pot, "Why?", max_new_tokens=6, stats=default))
    assert plain.answer_entries == default.answer_entries > len(engine.prefix_ids)
    assert plain.token_ids == default.token_ids


def test_the_room_for_passages_grows_with_fewer_pot_entries_before_them():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=96))
    rooms = [engine.evidence_room("Why?", 8, 4, entries) for entries in (None, 200, 60, 0)]
    lead = len(engine.question_lead_ids("Why?"))
    assert lead > 0 and engine.evidence_room("Why?", 8, 4, 0, question_first=True) == rooms[3] - lead
    assert rooms[0] == rooms[1]  # a copy is never larger than |C| beside passages
    assert rooms[0] < rooms[2] < rooms[3]
    assert rooms[3] == 256 - len(engine.prefix_ids) - len(engine.question_ids("Why?")) - 8 - (
        len(engine.evidence_opening_ids) + 3 * len(engine.evidence_gap_ids)
    )


@pytest.mark.parametrize("bad", [-1, True, 2.5, "3"])
def test_pot_entries_before_the_passages_are_checked(bad):
    with pytest.raises(ValueError, match="pot entries before the passages must be 0 or more"):
        EvidenceConfig(pot_entries=bad)


def test_pot_entries_are_parsed_from_a_users_words():
    assert parse_pot_entries("all") is None and parse_pot_entries(" ALL ") is None
    assert parse_pot_entries("0") == 0 and parse_pot_entries("512") == 512
    for bad in ("-3", "half", "", "1.5"):
        with pytest.raises(ValueError, match="must be 'all' or a whole number"):
            parse_pot_entries(bad)


def test_a_document_that_fits_the_pot_has_no_evidence_to_add():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=512, keep_size=256))
    document = random_ids(150, seed=2)
    pot = engine.read([document])
    assert find_evidence(engine, pot, "Why?", len(document), fetch_from(document), EvidenceConfig(), 8) == []


def test_a_run_of_fragments_is_recognised():
    assert is_run_on("The [gnu-h-h-n-h-l-h-m-n-m-m-h-t-t-h-w-w-h-v-w-v-h-i-i-h-j-j-i-j-m-j-n-n-s-n-t-n-w-n-y-y-z")
    assert not is_run_on("The manual describes libtasn1, a library for ASN.1 and DER encoding.")
    assert not is_run_on("It documents asn1_read_value_type and asn1_der_decoding_startEnd among others.")
    assert not is_run_on("")


# -- through the service and the CLI ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def attending_model_dir(tmp_path_factory):
    return save_attending_model_folder(tmp_path_factory.mktemp("attending-evidence"), NEEDLE)


def needle_text(path, lines: int = 60, needle_line: int = 41):
    """A text whose one line holds the needle token's text, the rest plain sentences."""
    needle = tiny_tokenizer().decode([NEEDLE])
    rows = [f"Line {i}: the quick brown fox jumps over the lazy dog." for i in range(1, lines + 1)]
    rows[needle_line - 1] = f"Line {needle_line}: the passkey is{needle} here."
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_ask_json_in_evidence_mode_cites_the_needle_line_with_its_text(
    capsys, tmp_path, infinipot_home, attending_model_dir
):
    path = needle_text(tmp_path / "notes.txt")
    settings = ["--model", attending_model_dir, "--pot-size", "256", "--keep", "64"]
    assert main(["read", str(path), *settings, "--json"]) == 0
    read = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert read["cycles"] > 0
    pot_file_bytes = {p: p.read_bytes() for p in (infinipot_home / "pots").rglob("*") if p.is_file()}

    assert main(["ask", read["doc_id"], "What is the passkey?", "--max-new-tokens", "6", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert answer["answer_from"] == "evidence" and answer["evidence_tokens"] > 0
    first = answer["citations"][0]
    assert "the passkey is" in first["snippet"]
    # cited at the line its quote begins on: the needle's passage starts in the line before it
    assert first["line"] in (40, 41) and first["label"] == f"line {first['line']}"
    assert first["quote"] and first["quote"][-20:] in path.read_text().splitlines()[first["line"] - 1]
    assert all(c["snippet"] for c in answer["citations"])
    # the stored pot is never modified by answering
    assert {p: p.read_bytes() for p in (infinipot_home / "pots").rglob("*") if p.is_file()} == pot_file_bytes

    # the paper's answer from the pot alone is still there, with attention citations that carry text too
    assert (
        main(["ask", read["doc_id"], "What is the passkey?", "--answer-from", "pot", "--max-new-tokens", "6", "--json"])
        == 0
    )
    pot_answer = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert pot_answer["answer_from"] == "pot" and pot_answer["evidence_tokens"] == 0
    assert pot_answer["citations"][0]["line"] == 41 and "passkey" in pot_answer["citations"][0]["snippet"]


def test_ask_names_the_stored_pot_that_answers(tmp_path, infinipot_home, attending_model_dir):
    path = needle_text(tmp_path / "notes.txt")
    service = DocumentService(infinipot_home, device="cpu")
    infinipot = service.read(path, PotConfig(pot_size=160, keep_size=64), attending_model_dir)
    truncate = service.read(path, PotConfig(pot_size=160, keep_size=64, method="truncate"), attending_model_dir)
    assert infinipot.pot_id != truncate.pot_id
    settings = AnswerSettings(answer_from="pot")
    for config, pot_id in (
        (PotConfig(pot_size=160, keep_size=64), infinipot.pot_id),
        (PotConfig(pot_size=160, keep_size=64, method="truncate"), truncate.pot_id),
    ):
        pieces, stats, reused = service.ask(
            str(path), "Why?", settings, pot_config=config, model_name=attending_model_dir, max_new_tokens=3
        )
        "".join(pieces)
        assert reused
        conversation = service.store.conversations.get(stats.conversation_id)
        assert conversation.pot_id == pot_id


def test_a_summary_is_stored_and_given_again_until_a_new_one_is_asked_for(
    tmp_path, infinipot_home, attending_model_dir
):
    path = needle_text(tmp_path / "notes.txt")
    service = DocumentService(infinipot_home, device="cpu")
    service.read(path, PotConfig(pot_size=160, keep_size=64), attending_model_dir)
    parts = []
    pieces, stats = service.summarize(str(path), max_new_tokens=5, on_part=lambda k, n: parts.append((k, n)))
    first = "".join(pieces).strip()
    assert parts and not stats.reused_summary
    again, stats = service.summarize(str(path), max_new_tokens=5, on_part=lambda k, n: parts.append("again"))
    assert "".join(again) == first and stats.reused_summary and "again" not in parts
    anew, stats = service.summarize(str(path), max_new_tokens=5, new=True)
    "".join(anew)
    assert not stats.reused_summary
    # the summary is one of the document's files: deleting the document deletes it
    assert service.library.files.summary(service.find_document(str(path)).id).is_file()
    service.delete(str(path))
    assert not list((infinipot_home / "summaries").glob("*.json"))


@pytest.mark.parametrize(("pot_entries", "held"), [(None, True), (0, False), (40, False)])
def test_a_span_in_the_pots_tail_is_read_unless_the_whole_pot_precedes_the_spans(pot_entries, held):
    """The pot's verbatim tail is in the answer's context only after the whole pot; after the opening alone or a
    distilled copy, the question's words found there must be read like any other span."""
    engine = attending_engine(pot_size=256, keep=64)
    question = "Where is the lighthouse?"
    document = planted_document(600, at=131)
    _, question_ids = engine.question_parts(question)
    document[580 : 580 + len(question_ids)] = question_ids  # the question's own words, in the verbatim tail
    pot = engine.read([document])
    assert verbatim_tail_start(pot) < 580
    config = EvidenceConfig(pot_entries=pot_entries, ranking="words")
    spans = find_evidence(engine, pot, question, len(document), fetch_from(document), config, 8)
    tail = [s for s in spans if s.start <= 580 < s.end]
    assert tail and all(s.held == held for s in tail)
    assert (tail[0].ids in spans_to_read(spans)) != held


# -- reranking the candidates by the question's likelihood (core.answer.rerank) ----------------------------


def test_question_likelihoods_of_a_padded_batch_equal_a_plain_forward_over_each_span():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=96))
    spans = [random_ids(length, seed=20 + length) for length in (5, 31, 12, 47, 3, 22, 9, 40, 17)]  # 2 batches
    question = "Who made the theodolite?"
    scores = question_likelihoods(engine, spans, question)
    _, question_ids = engine.question_parts(question)
    expected = []
    with torch.no_grad():
        for span in spans:
            ids = engine.prefix_ids + span + engine.rerank_request_ids + question_ids
            logits = engine.model(torch.tensor([ids])).logits[0].float()  # (T, V)
            logprobs = torch.log_softmax(logits[-len(question_ids) - 1 : -1], dim=-1)  # (q, V)
            expected.append(logprobs.gather(1, torch.tensor(question_ids)[:, None]).mean().item())
    assert scores == pytest.approx(expected, abs=1e-4)
    assert len(set(round(s, 4) for s in scores)) > 1  # the spans are told apart


@pytest.mark.parametrize("attention", [None, "sdpa", "eager"], ids=["ours", "sdpa", "eager"])
def test_short_rows_share_a_batch_row_and_each_scores_as_if_read_alone(monkeypatch, attention):
    """Rows laid side by side in one batch row (core.answer.rerank._packed) see the opening and themselves only:
    each span's score is its score in a forward of its own, and the 9 spans go in one forward of fewer batch rows."""
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=96))
    spans = [random_ids(length, seed=40 + length) for length in (3, 5, 9, 60, 12, 55, 4, 8, 47)]
    question = "Who made the theodolite?"
    if attention is not None:  # None: the engine's own (hf_adapter.use_reader_sdpa)
        engine.model.set_attn_implementation(attention)
    alone = [question_likelihoods(engine, [span], question)[0] for span in spans]
    forwards = []
    run_decoder = hf_adapter.run_decoder
    monkeypatch.setattr(
        hf_adapter,
        "run_decoder",
        lambda model, cache, ids, *rest: forwards.append(ids.shape) or run_decoder(model, cache, ids, *rest),
    )
    scores = question_likelihoods(engine, spans, question)
    assert len(forwards) == 1 and forwards[0][0] < len(spans)
    assert scores == pytest.approx(alone, abs=1e-4)
    assert len(set(round(s, 4) for s in scores)) > 1


def test_rows_are_packed_first_fit_within_the_longest_row_and_forwards_keep_their_token_bound():
    from infinipot.core.answer.rerank import _forwards, _packed

    lengths = [107, 31, 100, 68, 35, 91, 42, 71, 64, 60]
    bins, filled = _packed(lengths, share_rows=True)
    assert sorted(index for one in bins for index in one) == list(range(len(lengths)))
    assert filled == sorted(filled, reverse=True) and filled[0] == 107
    assert filled == [sum(lengths[index] for index in one) for one in bins]
    assert len(bins) == 7  # 107 | 100 | 91 | 71+35 | 68+31 | 64+42 | 60 alone: nothing left fits beside it
    assert _packed(lengths, share_rows=False)[0] == [[0], [2], [5], [7], [3], [8], [9], [6], [4], [1]]
    wide = _packed([600] * 5 + [300, 250], share_rows=True)  # 300 and 250 share a bin: 550 <= 600
    assert [len(forward) for forward in _forwards(wide)] == [3, 3]  # 3 x 600 <= 2,048 < 4 x 600
    assert _forwards(wide)[1][-1] == [5, 6]
    assert _forwards(_packed([3000, 10], share_rows=True)) == [[[0]], [[1]]]  # longer than the bound: alone


def test_a_follow_up_is_scored_alone_after_the_earlier_question_it_leans_on():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=96))
    spans = [random_ids(length, seed=60 + length) for length in (7, 19, 33)]
    earlier, question = "Under which license is this manual distributed?", "What version of it?"
    scores = question_likelihoods(engine, spans, question, context=earlier)
    _, question_ids = engine.question_parts(question)
    context_ids = encode(engine.tokenizer, earlier + "\n")
    expected = []
    with torch.no_grad():
        for span in spans:
            ids = engine.prefix_ids + span + engine.rerank_request_ids + context_ids + question_ids
            logits = engine.model(torch.tensor([ids])).logits[0].float()  # (T, V)
            logprobs = torch.log_softmax(logits[-len(question_ids) - 1 : -1], dim=-1)  # (q, V): the follow-up only
            expected.append(logprobs.gather(1, torch.tensor(question_ids)[:, None]).mean().item())
    assert scores == pytest.approx(expected, abs=1e-4)
    assert scores != pytest.approx(question_likelihoods(engine, spans, question), abs=1e-4)  # the context counts


class FixedScores:
    """Stands in for the reranker (core.answer.rerank.question_likelihoods) with a fixed score per span (its first
    token)."""

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores
        self.asked: list[list[int]] = []

    def __call__(self, engine, spans, question):
        self.asked.append([span[0] for span in spans])
        return [self.scores[span[0]] for span in spans]


def span_at(start: int, held: bool = False) -> Span:
    return Span(start, start + 4, (start, start + 1, start + 2, start + 3), 0.1, start, held)


def test_the_likeliest_spans_are_read_in_document_order_and_held_spans_stay_cited(monkeypatch):
    spans = [span_at(0), span_at(10), span_at(20), span_at(30), span_at(40, held=True)]
    scores = FixedScores({0: -3.0, 10: -1.0, 20: -4.0, 30: -2.0})
    monkeypatch.setattr("infinipot.core.answer.evidence.question_likelihoods", scores)
    engine = None  # the fixed scores stand in for the model's
    kept = most_likely_spans(engine, spans, "Why?", 2)
    assert [s.start for s in kept] == [10, 30, 40]  # the best two, in document order, and the held span
    assert scores.asked == [[0, 10, 20, 30]]  # held spans are not scored: they are not read
    assert most_likely_spans(engine, spans, "Why?", 0) == spans  # 0: every candidate
    assert most_likely_spans(engine, spans, "Why?", 4) == spans  # no more candidates than that: nothing to score
    assert len(scores.asked) == 1
    # the likeliest last, right before the question; the held span first (cited, not read)
    assert [s.start for s in most_likely_spans(engine, spans, "Why?", 3, "likelihood")] == [40, 0, 30, 10]
    assert [s.start for s in most_likely_spans(engine, spans, "Why?", 4, "likelihood")] == [40, 20, 0, 30, 10]


def test_find_evidence_reads_only_the_spans_the_question_is_likeliest_after():
    engine = attending_engine(pot_size=256, keep=64)
    document = planted_document(900, at=431)
    pot = engine.read([document])
    question = "Where is it?"
    # many short candidates, read as ranked (with_neighbours is tested on its own)
    small = {"bucket_tokens": 8, "max_span_tokens": 16, "neighbour_sentences": 0}
    every = find_evidence(engine, pot, question, 900, fetch_from(document), EvidenceConfig(read_spans=0, **small), 8)
    read = find_evidence(engine, pot, question, 900, fetch_from(document), EvidenceConfig(read_spans=2, **small), 8)
    in_order = EvidenceConfig(read_spans=2, order="document", **small)
    in_document_order = find_evidence(engine, pot, question, 900, fetch_from(document), in_order, 8)
    assert len(every) > 2 and len(read) == 2
    scores = question_likelihoods(engine, [s.ids for s in every], question)
    best = sorted(range(len(every)), key=lambda i: -scores[i])[:2]
    assert [(s.start, s.end) for s in read] == [(every[i].start, every[i].end) for i in reversed(best)]  # best last
    assert [(s.start, s.end) for s in in_document_order] == sorted((every[i].start, every[i].end) for i in best)


@pytest.mark.parametrize("bad", [-1, True, 1.5])
def test_spans_read_are_checked(bad):
    with pytest.raises(ValueError, match="spans read must be 0"):
        EvidenceConfig(read_spans=bad)
    with pytest.raises(ValueError, match="span order must be one of document, likelihood"):
        EvidenceConfig(order="random")


@pytest.mark.parametrize(
    ("flags", "fragment"),
    [
        (["--evidence-pot", "half"], "pot entries before the passages must be 'all' or a whole number"),
        (["--evidence-spans", "-2"], "spans read must be 0 (every candidate) or more"),
        (["--evidence-neighbours", "-1"], "neighbour sentences must be 0 or more"),
    ],
)
def test_impossible_evidence_settings_get_one_line_before_anything_is_read(
    capsys, tmp_path, infinipot_home, flags, fragment
):
    path = needle_text(tmp_path / "notes.txt")
    expect_one_line_error(capsys, ["ask", str(path), "What is the passkey?", *flags], fragment)
    assert not (infinipot_home / "pots").exists() or not any((infinipot_home / "pots").rglob("*.safetensors"))


def test_a_passage_of_lines_is_cited_at_the_line_its_quote_begins_on(tmp_path, infinipot_home, attending_model_dir):
    """A passage of a log spans several lines; its source label names the line of the sentence quoted under the
    answer, not the passage's first line, and a passage quoted at another's line is one source with it."""
    from infinipot.app.ask.evidence import document_span_citations
    from infinipot.app.ask.quoting import arranged_citations
    from infinipot.app.library.documents import stored_token_ids
    from infinipot.app.library.token_ids import read_window

    path = needle_text(tmp_path / "notes.txt", lines=12, needle_line=11)
    service = DocumentService(infinipot_home, device="cpu")
    read = service.read(path, PotConfig(pot_size=160, keep_size=64), attending_model_dir)
    stored = service.open_pot(read.doc_id)
    document = service.store.documents.get(read.doc_id)
    ids = read_window(stored_token_ids(service.library.files, document, stored.engine.loaded), 0, 10_000)
    tokenizer = stored.engine.tokenizer
    full = tokenizer.decode(ids)

    def token_of(marker: str) -> int:  # the token where `marker` begins
        at = full.index(marker)
        return next(n for n in range(len(ids)) if len(tokenizer.decode(ids[: n + 1])) > at)

    lines_4_to_7 = (token_of("Line 4:"), token_of("Line 8:"))
    line_6 = (token_of("Line 6:"), token_of("Line 7:"))
    spans = [Span(a, b, tuple(ids[a:b]), score, a) for (a, b), score in ((lines_4_to_7, 0.6), (line_6, 0.4))]
    citations = [c.as_json() for c in document_span_citations(service.library, read.doc_id, tokenizer, spans)]
    assert [c["label"] for c in citations] == ["line 4", "line 6"]
    assert [start[1] for start in citations[0]["line_starts"]] == [4, 5, 6, 7]

    answer = "Line 6: the quick brown fox jumps over the lazy dog."
    arranged = arranged_citations(citations, answer, "What does line 6 say?")
    assert len(arranged) == 1  # both passages quote line 6: one source
    assert arranged[0]["label"] == "line 6" and arranged[0]["line"] == 6 and arranged[0]["quote"] == answer
    assert full[len(tokenizer.decode(ids[: arranged[0]["token"]])) :].lstrip().startswith("Line 6:")
    assert "line_starts" not in arranged[0]

    answer = "Line 5: the quick brown fox jumps over the lazy dog."
    arranged = arranged_citations(citations, answer, "What does line 5 say?")
    assert [c["label"] for c in arranged] == ["line 5", "line 6"]


def test_the_rare_names_of_a_question_are_counted_in_the_stored_document(tmp_path, infinipot_home, attending_model_dir):
    from infinipot.app.ask.evidence import rare_names

    path = tmp_path / "notes.txt"
    rows = [f"Line {i}: Elena walked along the quay." for i in range(1, 40)]
    rows[20] = "Line 21: the schooner Margarethe struck the shoal."
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    service = DocumentService(infinipot_home, device="cpu")
    read = service.read(path, PotConfig(pot_size=160, keep_size=64), attending_model_dir)
    stored = service.open_pot(read.doc_id)
    question = "Did Elena see the Margarethe, or the Debian ship?"
    assert rare_names(service.library, stored, question, 2) == ["Margarethe", "Debian"]
    assert rare_names(service.library, stored, question, None) == []  # the rule off
    assert rare_names(service.library, stored, "What is the passkey?", 2) == []  # nothing named
