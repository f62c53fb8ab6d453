"""The CCD engine end to end on tiny random-weight models of every supported architecture."""

import pytest
import torch
from helpers import record_cache_lengths, reference_greedy
from tiny_models import ARCHITECTURES, GEMMA3_WINDOW, random_ids, tiny_loaded

from infinipot.core import hf_adapter
from infinipot.core.answer.rerank import question_likelihoods
from infinipot.core.config import PotConfig
from infinipot.core.decoding import DecodingConfig, choose_token, contrasted, sampler
from infinipot.core.distill import catalyst_attention, compress_pot
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.errors import PotTooSmallError
from infinipot.core.selection import KEPT_NOVELTY, KEPT_READ, KEPT_RECENT, KEPT_SCORE, KEPT_SINK


def reference_with_rules(
    engine: Engine, ids: list[int], decoding: DecodingConfig, prior_ids: list[int] | None = None
) -> list[int]:
    """Plain full-KV generation with transformers' own forward and logits, each token chosen by the same rules
    (core.decoding.choose_token, the word ban included) but with no text-level stop: the engine's answer is this,
    or its start.
    With `prior_ids`, each step's logits are contrasted (core.decoding.contrasted) with those of the same answer
    after `prior_ids`, run alongside, and the answer ends where the uncontrasted best token ends the turn."""
    generator = sampler(decoding)
    word_keys = engine.answer_word_keys() if decoding.no_repeat_ngram else None
    answer: list[int] = []
    with torch.no_grad():
        out = engine.model(torch.tensor([ids]), use_cache=True)
        prior = engine.model(torch.tensor([prior_ids]), use_cache=True) if prior_ids else None
        for _ in range(decoding.max_new_tokens):
            logits = out.logits[0, -1].float()
            if prior is not None:
                if int(logits.argmax()) in engine.stop_ids:  # the document-conditioned model ends the answer
                    break
                logits = contrasted(logits, prior.logits[0, -1].float(), decoding.contrast)
            token = choose_token(logits, answer, decoding, generator, word_keys).token
            if token in engine.stop_ids:
                break
            answer.append(token)
            out = engine.model(torch.tensor([[token]]), past_key_values=out.past_key_values, use_cache=True)
            if prior is not None:
                prior = engine.model(torch.tensor([[token]]), past_key_values=prior.past_key_values, use_cache=True)
    return answer


def has_repeated_ngram(ids: list[int], n: int) -> bool:
    grams = [tuple(ids[i : i + n]) for i in range(len(ids) - n + 1)]
    return len(set(grams)) < len(grams)


PLAIN_GREEDY = DecodingConfig(max_new_tokens=16, no_repeat_ngram=0, stop_on_repeat=False)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_answer_equals_full_kv_greedy_when_document_fits(arch):
    engine = Engine(tiny_loaded(arch), PotConfig(pot_size=512, keep_size=256, forward_tokens=37))
    document = random_ids(180, seed=5)
    pot = engine.read([document[:100], document[100:]])
    assert pot.cycles == 0
    stats = AnswerStats()
    "".join(engine.answer(pot, "What is the passkey?", PLAIN_GREEDY, stats=stats))
    full = engine.prefix_ids + document + engine.answer_prompt_ids("What is the passkey?")
    assert stats.token_ids == reference_greedy(engine, full, 16)
    assert len(stats.token_ids) > 0


@pytest.mark.parametrize("arch", ARCHITECTURES)
@pytest.mark.parametrize(
    "decoding", [DecodingConfig(max_new_tokens=24), DecodingConfig(24, temperature=0.8, top_p=0.9)]
)
def test_answer_equals_full_kv_generation_under_the_default_rules(arch, decoding):
    engine = Engine(tiny_loaded(arch), PotConfig(pot_size=512, keep_size=256, forward_tokens=37))
    document = random_ids(180, seed=5)
    pot = engine.read([document[:100], document[100:]])
    stats = AnswerStats()
    text = "".join(engine.answer(pot, "What is the passkey?", decoding, stats=stats))
    reference = reference_with_rules(
        engine, engine.prefix_ids + document + engine.answer_prompt_ids("What is the passkey?"), decoding
    )
    if stats.stopped_by in ("repeat", "new-turn"):  # cut by a text-level stop: the text is the tokens' start
        assert stats.token_ids == reference[: len(stats.token_ids)]
        assert engine.tokenizer.decode(stats.token_ids, skip_special_tokens=True).startswith(text)
    else:
        assert stats.token_ids == reference
        assert stats.stopped_by == ("length" if len(reference) == 24 else "end")
    assert len(stats.token_ids) > 0


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_contrasted_answer_equals_full_kv_generation_contrasted_with_the_question_alone(arch):
    engine = Engine(tiny_loaded(arch), PotConfig(pot_size=512, keep_size=256, forward_tokens=37))
    document = random_ids(180, seed=5)
    pot = engine.read([document[:100], document[100:]])
    question = "What is the passkey?"
    decoding = DecodingConfig(max_new_tokens=16, no_repeat_ngram=0, stop_on_repeat=False, contrast=1.0)
    stats, plain_stats = AnswerStats(), AnswerStats()
    "".join(engine.answer(pot, question, decoding, stats=stats))
    request = engine.answer_prompt_ids(question)
    reference = reference_with_rules(
        engine, engine.prefix_ids + document + request, decoding, prior_ids=engine.prefix_ids + request
    )
    assert stats.token_ids == reference and len(reference) > 0
    # the contrast changes the answer of these random weights, and the opening's pot is left as it was
    "".join(engine.answer(pot, question, DecodingConfig(16, no_repeat_ngram=0, stop_on_repeat=False), plain_stats))
    assert plain_stats.token_ids != stats.token_ids
    assert engine.opening_pot().entries == len(engine.prefix_ids)


def test_the_old_length_argument_still_works_with_the_default_rules():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=512, keep_size=256, forward_tokens=37))
    pot = engine.read([random_ids(180, seed=5)])
    question = "What is the passkey?"
    answers = {}
    for name, call in {
        "plain": lambda s: engine.answer(pot, question, PLAIN_GREEDY, s),
        "positional": lambda s: engine.answer(pot, question, 16, s),
        "keyword": lambda s: engine.answer(pot, question, max_new_tokens=16, stats=s),
        "config": lambda s: engine.answer(pot, question, DecodingConfig(max_new_tokens=16), s),
        "override": lambda s: engine.answer(pot, question, DecodingConfig(max_new_tokens=99), s, max_new_tokens=16),
    }.items():
        stats = AnswerStats()
        "".join(call(stats))
        answers[name] = stats.token_ids
        assert stats.new_tokens <= 16
    # an int length gets the default rules (a looping answer broken by them: tests/test_decoding.py)
    assert answers["positional"] == answers["keyword"] == answers["config"] == answers["override"]
    assert not has_repeated_ngram(answers["config"], 4)
    assert answers["config"][:8] == answers["plain"][:8]  # rules only act on a repeat
    with pytest.raises(ValueError, match="twice"):
        engine.answer(pot, question, 16, max_new_tokens=16)
    with pytest.raises(ValueError, match="positive"):
        engine.answer(pot, question, 0)
    summary = AnswerStats()
    "".join(engine.summarize(pot, DecodingConfig(max_new_tokens=5, no_repeat_ngram=0), summary))
    assert summary.new_tokens <= 5 and summary.stopped_by in ("end", "length")


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_reading_20x_the_pot_never_holds_more_than_the_pot(arch):
    config = PotConfig(pot_size=96, keep_size=48, forward_tokens=40)
    engine = Engine(tiny_loaded(arch), config)
    lengths = record_cache_lengths(engine.model)
    document = random_ids(20 * config.pot_size, seed=7)
    pot = engine.read([document[i : i + 300] for i in range(0, len(document), 300)])

    assert max(lengths) <= config.pot_size
    assert pot.peak_entries == max(lengths) == config.pot_size  # the catalyst pass fills it exactly
    assert pot.cycles >= 20
    assert pot.document_tokens == len(document)
    assert pot.entries <= config.pot_size - len(engine.catalyst_ids)
    # provenance: strictly increasing original indices per layer and head, sinks everywhere
    assert bool((pot.origin[..., 1:] > pot.origin[..., :-1]).all())
    prefix = len(engine.prefix_ids)
    assert bool((pot.origin[..., :prefix] == torch.arange(prefix)).all())
    assert bool((pot.kept_by[..., :prefix] == KEPT_SINK).all())
    reasons = set(pot.kept_by.unique().tolist())
    assert {KEPT_NOVELTY, KEPT_SCORE, KEPT_READ} <= reasons
    # CR-RoPE: positions are 0..n-1 and reading continues right after them
    assert bool((pot.positions == torch.arange(pot.entries)).all())
    assert pot.next_position == pot.entries
    # the answer is generated within the bound as well
    stats = AnswerStats()
    lengths.clear()
    "".join(engine.answer(pot, "Key?", max_new_tokens=8, stats=stats))
    assert max(lengths) <= config.pot_size
    assert stats.new_tokens > 0


def test_heads_keep_different_entries_and_nuc_share_is_respected():
    config = PotConfig(pot_size=96, keep_size=48, forward_tokens=40, nuc_ratio=0.5)
    engine = Engine(tiny_loaded("llama"), config)
    snapshots = []
    reader = engine.new_reader(on_step=lambda pot: snapshots.append(pot))
    reader.start(engine.prefix_ids)
    reader.feed(random_ids(400, seed=2))
    compressed = [p for p in snapshots if p.cycles > 0]
    assert compressed
    pot = compressed[0]
    # right after a compression, the first `keep` entries came out of the selection
    kept = pot.kept_by[..., : config.keep_size]
    sinks = max(config.min_sink_tokens, len(engine.prefix_ids))
    expected_nuc = round(0.5 * (config.keep_size - sinks))
    assert bool(((kept == KEPT_NOVELTY).sum(-1) == expected_nuc).all())
    origins = pot.origin[..., : config.keep_size]
    assert not all(torch.equal(origins[0, 0], origins[layer, head]) for layer in range(2) for head in range(2))


def test_pot_left_unchanged_by_answering_and_answers_repeat():
    engine = Engine(tiny_loaded("qwen2"), PotConfig(pot_size=96, keep_size=48, forward_tokens=40))
    pot = engine.read([random_ids(500, seed=4)])
    before = [k.clone() for k in pot.keys], pot.entries
    first = AnswerStats()
    "".join(engine.answer(pot, "What is the passkey?", max_new_tokens=12, stats=first))
    second = AnswerStats()
    "".join(engine.answer(pot, "What is the passkey?", max_new_tokens=12, stats=second))
    assert first.token_ids == second.token_ids
    assert pot.entries == before[1]
    assert all(torch.equal(a, b) for a, b in zip(before[0], pot.keys, strict=True))


def test_question_too_long_for_the_pot_is_a_clear_error():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=96, keep_size=48, forward_tokens=40))
    pot = engine.read([random_ids(400, seed=1)])
    with pytest.raises(PotTooSmallError, match="shorter question"):
        list(engine.answer(pot, "What is the passkey? " * 30, max_new_tokens=8))


def test_question_aware_catalyst_changes_what_is_kept():
    loaded = tiny_loaded("llama")
    general = Engine(loaded, PotConfig(pot_size=96, keep_size=48, forward_tokens=40))
    question = Engine(
        loaded, PotConfig(pot_size=96, keep_size=48, forward_tokens=40, cap_mode="question", question="the fox?")
    )
    assert general.catalyst_ids != question.catalyst_ids
    reader = general.new_reader()
    reader.start(general.prefix_ids)
    reader.feed(random_ids(50, seed=9))
    kept = []
    for catalyst_ids in (general.catalyst_ids, question.catalyst_ids):
        with torch.inference_mode():  # as the reader runs: its slab was made under inference mode
            attention = catalyst_attention(general.model, reader.cache, catalyst_ids, reader.pot.next_position)
        assert hf_adapter.cache_length(reader.cache) == reader.pot.entries  # CaP entries taken back out
        kept.append(compress_pot(general.model, reader.pot, reader.scorer, attention, 48, reader.sink_tokens, True))
    assert not torch.equal(kept[0].origin, kept[1].origin)


def test_without_cr_rope_positions_keep_growing():
    config = PotConfig(pot_size=96, keep_size=48, forward_tokens=40, cr_rope=False)
    engine = Engine(tiny_loaded("llama"), config)
    pot = engine.read([random_ids(500, seed=3)])
    assert pot.next_position == pot.tokens_read
    assert int(pot.positions.max()) == pot.tokens_read - 1


@pytest.mark.parametrize(
    "settings",
    [dict(pot_size=8), dict(keep_size=5000), dict(nuc_ratio=1.5), dict(method="nope"), dict(cap_mode="question")],
)
def test_impossible_settings_are_refused(settings):
    with pytest.raises(ValueError):
        PotConfig(**settings)


def test_catalyst_filling_the_pot_is_refused():
    with pytest.raises(PotTooSmallError):
        Engine(tiny_loaded("llama"), PotConfig(pot_size=40, keep_size=39)).new_reader()


def test_a_full_pot_is_distilled_for_the_answer_within_the_bound():
    config = PotConfig(pot_size=128, keep_size=48, forward_tokens=40)
    engine = Engine(tiny_loaded("llama"), config)
    lengths = record_cache_lengths(engine.model)
    pot = engine.read([random_ids(730, seed=6)])
    assert pot.entries + len(engine.answer_prompt_ids("What is the passkey?")) + 20 > config.pot_size
    lengths.clear()
    stats = AnswerStats()
    "".join(engine.answer(pot, "What is the passkey?", max_new_tokens=20, stats=stats))
    assert stats.compressed_for_answer
    assert max(lengths) <= config.pot_size
    assert stats.new_tokens > 0


def test_a_focused_answer_reads_a_question_distilled_copy_of_that_size():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=80, forward_tokens=40))
    pot = engine.read([random_ids(600, seed=8)])
    keys_before, entries_before = [k.clone() for k in pot.keys], pot.entries
    question = "What is the passkey?"
    lengths = record_cache_lengths(engine.model)
    focused = AnswerStats()
    "".join(engine.answer(pot, question, max_new_tokens=10, stats=focused, focus=40))
    assert focused.compressed_for_answer
    assert focused.answer_pot.entries == 40
    # the answer starts from the 40 focused entries plus the question, not from the whole pot
    assert min(lengths[-focused.new_tokens :]) >= 40 + len(engine.answer_prompt_ids(question))
    assert max(lengths[-focused.new_tokens :]) < entries_before
    # the question is the catalyst: a different question keeps different entries
    other = AnswerStats()
    "".join(engine.answer(pot, "Summarize the second half of the text in detail.", 10, other, focus=40))
    assert not torch.equal(focused.answer_pot.origin, other.answer_pot.origin)
    # the stored pot is untouched, and an unfocused answer still reads all of it
    assert pot.entries == entries_before
    assert all(torch.equal(a, b) for a, b in zip(keys_before, pot.keys, strict=True))
    whole = AnswerStats()
    "".join(engine.answer(pot, question, max_new_tokens=10, stats=whole))
    assert not whole.compressed_for_answer and whole.answer_pot is pot


@pytest.mark.parametrize("focus", [0, 3, 160, 5000])
def test_an_impossible_focus_is_a_clear_error(focus):
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=160, keep_size=80, forward_tokens=40))
    pot = engine.read([random_ids(300, seed=2)])
    with pytest.raises(ValueError, match="focus"):
        list(engine.answer(pot, "What is the passkey?", max_new_tokens=4, focus=focus))


def test_the_vocabulary_tables_are_made_once_per_model_and_shared_by_its_engines():
    """An Engine is made per stored pot opened, so per question: the passes over the vocabulary (word keys, sentence
    and line ends, function words) are kept with the loaded model, not the Engine (issue 55: they cost a 100K pot's
    question ~0.45 s)."""
    from infinipot.core.answer.grounding import function_word_entries
    from infinipot.core.words import token_boundaries, token_keys

    loaded = tiny_loaded()
    first, second = Engine(loaded, PotConfig(pot_size=64)), Engine(loaded, PotConfig(pot_size=128, keep_size=32))
    assert second.word_keys() is first.word_keys()
    assert torch.equal(first.word_keys(), token_keys(loaded.tokenizer, first.vocab_size))
    assert second.sentence_ends() is first.sentence_ends()
    fresh = token_boundaries(loaded.tokenizer, first.vocab_size)
    assert torch.equal(first.sentence_ends(), fresh.sentence_ends)
    assert torch.equal(first.line_ends(), fresh.line_ends) and torch.equal(first.word_starts(), fresh.word_starts)
    assert function_word_entries(second) is function_word_entries(first)
    assert second.answer_word_keys() is first.answer_word_keys()
    other = tiny_loaded()  # another loaded model keeps tables of its own
    assert Engine(other, PotConfig(pot_size=64)).word_keys() is not first.word_keys()


def test_the_openings_pot_is_read_once_per_model_and_no_answer_changes_it():
    """The opening's pot (what passages read alone, the reranker's rows and the contrast's prior follow) is shared
    by the model's engines whatever their pot settings, as the vocabulary tables are: it is what any settings read
    (a few tokens, never compressed). An answer over it leaves it as it was, so the next question's engine may use
    it."""
    loaded = tiny_loaded()
    first = Engine(loaded, PotConfig(pot_size=128, keep_size=32))
    opening = first.opening_pot()
    asked = Engine(loaded, PotConfig(pot_size=256, keep_size=32, cap_mode="question", question="Where is the key?"))
    assert asked.opening_pot() is opening
    for engine in (Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=32)), asked):  # read anew: the same pot
        fresh = engine.read([])
        pairs = zip((*opening.keys, *opening.values), (*fresh.keys, *fresh.values), strict=True)
        assert all(torch.equal(a, b) for a, b in pairs)
        assert (fresh.next_position, fresh.prefix_len) == (opening.next_position, opening.prefix_len)
    assert Engine(tiny_loaded(), PotConfig(pot_size=128, keep_size=32)).opening_pot() is not opening  # another model

    before = [tensor.clone() for tensor in (*opening.keys, *opening.values)]
    evidence = [random_ids(12, seed=3), random_ids(9, seed=4)]
    pot = first.read([random_ids(100, seed=2)])
    "".join(first.answer(pot, "Where is it?", max_new_tokens=6, evidence=evidence, pot_entries=0))
    question_likelihoods(first, evidence, "Where is it?")
    assert all(torch.equal(a, b) for a, b in zip(before, (*opening.keys, *opening.values), strict=True))


def test_local_layers_keep_their_window_so_a_compressed_read_answers_as_the_model_reading_everything():
    """A sliding-window layer never sees past its window, so a pot whose local layers keep their newest entries
    loses nothing there: a Gemma 3 of local layers only, read 12x past its pot with many compressions, answers
    exactly as the model's own generation over the whole document (positions reset by CR-RoPE on the local base)."""
    engine = Engine(tiny_loaded("gemma3", layer_types=["sliding_attention"] * 2), PotConfig(pot_size=96, keep_size=48))
    assert hf_adapter.windowed_layers(engine.model, 90) == [0, 1]
    document = random_ids(1200, seed=9)
    pot = engine.read([document[i : i + 300] for i in range(0, len(document), 300)])
    assert pot.cycles >= 10
    newest = pot.origin[0, 0, -GEMMA3_WINDOW:]
    assert torch.equal(newest, torch.arange(pot.tokens_read - GEMMA3_WINDOW, pot.tokens_read))
    prefix = len(engine.prefix_ids)
    assert bool((pot.kept_by[..., prefix:] != KEPT_NOVELTY).all())  # nothing there kept by the catalyst's choice
    stats = AnswerStats()
    "".join(engine.answer(pot, "What is the passkey?", PLAIN_GREEDY, stats=stats))
    full = engine.prefix_ids + document + engine.answer_prompt_ids("What is the passkey?")
    assert stats.token_ids == reference_greedy(engine, full, 16) and len(stats.token_ids) > 0


def test_a_mixed_gemma3_keeps_newest_entries_in_local_layers_and_chooses_in_global_ones():
    engine = Engine(tiny_loaded("gemma3"), PotConfig(pot_size=96, keep_size=48, forward_tokens=40))
    pot = engine.read([random_ids(600, seed=4)])
    local, global_ = pot.kept_by[0], pot.kept_by[1]  # layer 0 local, layer 1 global
    prefix = len(engine.prefix_ids)
    compressed = pot.origin[0, 0] < pot.origin[0, 0, -1] - 40  # entries older than the tail read since
    assert set(local[:, prefix:][:, compressed[prefix:]].unique().tolist()) == {KEPT_RECENT}
    assert {KEPT_NOVELTY, KEPT_SCORE} <= set(global_.unique().tolist())
    # local layers hold a contiguous run of the newest tokens after the sinks
    run = pot.origin[0, :, prefix:]
    assert bool((run[:, 1:] - run[:, :-1] == 1).all())
