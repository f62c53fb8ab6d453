"""Decoding that ends: the token chooser, the sentence-repeat stop, and a looping model answered through the engine."""

import math

import pytest
import torch
from tiny_models import random_ids, tiny_loaded, tiny_tokenizer
from transformers import LlamaConfig, LlamaForCausalLM

from infinipot.core.config import PotConfig
from infinipot.core.decoding import (
    HOLD_WORD_CHARS,
    RUN_ON_CHARS,
    DecodingConfig,
    RepeatStop,
    WordKeys,
    banned_tokens,
    banned_words,
    choose_token,
    contrasted,
    decoding_for,
    normalized,
    sampler,
)
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import LoadedModel

SENTENCE = " The quick brown fox jumps over the lazy dog."  # distinct tokens of the tiny tokenizer


def sentence_tokens() -> int:
    return len(tiny_tokenizer()(SENTENCE, add_special_tokens=False)["input_ids"])


QUESTION = "Which animal is in this:" + SENTENCE  # the question holds the sentence too: copying it is allowed
OFF = dict(no_repeat_ngram=0, stop_on_repeat=False)


def logits_preferring(*tokens: int, vocab: int = 50) -> torch.Tensor:
    """Fake fp32 logits (V,): `tokens` best first, every other token far behind."""
    logits = torch.zeros(vocab)
    for rank, token in enumerate(tokens):
        logits[token] = 10.0 - rank
    return logits


# -- the token chooser ---------------------------------------------------------------------------------


def test_ngram_ban_reads_only_the_answers_own_tokens():
    assert banned_tokens([5, 6, 7, 5, 6], 3) == {7}  # (5, 6) was followed by 7: 5 6 7 may not come again
    assert banned_tokens([5, 6, 7, 5, 6, 8, 5, 6], 3) == {7, 8}
    assert banned_tokens([5, 6, 7, 5, 6], 0) == set()
    assert banned_tokens([5, 6, 7, 8], 3) == set()
    config = DecodingConfig(no_repeat_ngram=3)
    assert choose_token(logits_preferring(7, 9), [5, 6, 7, 5, 6], config) == (9, True)
    # the chooser is given the answer's tokens only: what the prompt held (here 5 6 7) may be copied
    assert choose_token(logits_preferring(7, 9), [5, 6], config) == (7, False)
    assert choose_token(logits_preferring(7, 9), [5, 6, 7, 5, 6], DecodingConfig(no_repeat_ngram=0)) == (7, False)


def test_word_ngram_ban_sees_one_phrase_across_case_spacing_and_line_breaks():
    # tokens 10 " The"/11 "the" and 12 " text"/13 "text" share keys; 20 "\n" and 21 '"' have none (NO_KEY)
    keys = [-1] * 40
    keys[10] = keys[11] = 0  # the
    keys[12] = keys[13] = 1  # text
    keys[14], keys[15], keys[16], keys[17] = 2, 3, 4, 5  # is, a, continuation, original
    keys[18] = 4  # " Continuation": another token of the same word
    said = [10, 12, 14, 15, 16]  # " The text is a continuation"
    again = said + [21, 11, 13, 20, 14, 15]  # ' "the text\nis a': three words of it again, tokens all different
    assert banned_words(again, keys, 4) == {4}  # the word that would complete "the text is a" a second time
    assert banned_words(again, keys, 0) == set() and banned_words(again, None, 4) == set()
    assert banned_words(said + [21, 11, 13, 17], keys, 4) == set()  # "the text original": no phrase repeated
    config = DecodingConfig(no_repeat_ngram=4)
    word_keys = WordKeys.of(torch.tensor(keys))
    # the token ban alone lets it through (no token 4-gram repeats); the word ban takes both spellings away
    assert choose_token(logits_preferring(16, 18, 17, vocab=40), again, config) == (16, False)
    assert choose_token(logits_preferring(16, 18, 17, vocab=40), again, config, None, word_keys) == (17, True)
    off = DecodingConfig(**OFF)  # no_repeat_ngram 0 turns both bans off
    assert choose_token(logits_preferring(16, 17, vocab=40), again, off, None, word_keys) == (16, False)


def test_greedy_is_the_argmax_and_ignores_any_generator():
    logits = torch.randn(300, generator=torch.Generator().manual_seed(1))
    config = DecodingConfig(no_repeat_ngram=0)
    picks = {choose_token(logits, [], config, torch.Generator().manual_seed(seed)).token for seed in range(5)}
    assert picks == {int(logits.argmax())}


def test_sampling_is_reproducible_by_seed_and_differs_between_seeds():
    logits = torch.zeros(200)  # uniform: any token may come

    def draws(seed: int) -> list[int]:
        config = DecodingConfig(temperature=1.0, seed=seed, no_repeat_ngram=0)
        generator = sampler(config)
        return [choose_token(logits, [], config, generator).token for _ in range(20)]

    assert draws(3) == draws(3)
    assert draws(3) != draws(4)
    assert len(set(draws(3))) > 5  # it really samples


def test_a_tiny_top_p_is_greedy_and_top_p_keeps_the_nucleus():
    for seed in range(20):
        logits = torch.randn(300, generator=torch.Generator().manual_seed(seed))
        answer = random_ids(12, seed=seed)  # bans apply before the nucleus is cut
        greedy = choose_token(logits, answer, DecodingConfig())
        nucleus = DecodingConfig(temperature=1.5, top_p=1e-6, seed=seed)
        assert choose_token(logits, answer, nucleus, sampler(nucleus)) == greedy
    probs = torch.tensor([0.4, 0.3, 0.2, 0.1])
    config = DecodingConfig(temperature=1.0, top_p=0.6, no_repeat_ngram=0)
    generator = sampler(config)
    seen = {choose_token(probs.log(), [], config, generator).token for _ in range(200)}
    assert seen == {0, 1}  # 0.4 + 0.3 reach 0.6; 2 and 3 are cut


@pytest.mark.parametrize(
    "settings",
    [
        dict(max_new_tokens=0),
        dict(max_new_tokens=2.5),
        dict(temperature=-0.1),
        dict(temperature=math.inf),
        dict(top_p=0.0),
        dict(top_p=1.5),
        dict(seed=-1),
        dict(no_repeat_ngram=1),
        dict(no_repeat_ngram=-2),
        dict(stop_on_repeat="yes"),
    ],
)
def test_impossible_decoding_settings_are_refused(settings):
    with pytest.raises(ValueError):
        DecodingConfig(**settings)


def test_an_old_style_length_becomes_a_config():
    assert decoding_for(None) == DecodingConfig()
    assert decoding_for(12) == DecodingConfig(max_new_tokens=12)
    assert decoding_for(None, 12) == DecodingConfig(max_new_tokens=12)
    sampled = DecodingConfig(temperature=0.7)
    assert decoding_for(sampled, 12) == DecodingConfig(max_new_tokens=12, temperature=0.7)
    with pytest.raises(ValueError, match="twice"):
        decoding_for(12, 12)
    with pytest.raises(ValueError):
        decoding_for("12")


def test_contrast_favours_what_the_passages_make_likelier_among_plausible_tokens():
    # token 0: likely with or without the passages (the prior); 1: likely only with them; 3: implausible
    with_passages = torch.log(torch.tensor([0.50, 0.40, 0.09, 0.01]))
    without = torch.log(torch.tensor([0.70, 0.05, 0.05, 0.20]))
    assert int(with_passages.argmax()) == 0
    scores = contrasted(with_passages, without, weight=1.0)
    assert int(scores.argmax()) == 1
    assert torch.allclose(scores[:3], 2 * torch.log_softmax(with_passages, -1)[:3] - torch.log_softmax(without, -1)[:3])
    assert scores[3] == -math.inf  # under a tenth of the best token's probability: never chosen
    assert torch.equal(contrasted(with_passages, without, weight=0.0)[:3], torch.log_softmax(with_passages, -1)[:3])


@pytest.mark.parametrize("bad", [-0.5, 11, float("nan"), True, "1"])
def test_impossible_contrast_is_refused(bad):
    with pytest.raises(ValueError, match="contrast"):
        DecodingConfig(contrast=bad)


# -- the sentence-repeat stop --------------------------------------------------------------------------


def stream(text: str, stop: RepeatStop, size: int = 3) -> list[str]:
    """Push `text` in pieces of `size` characters; every piece returned, then what finish() gives."""
    pieces = [stop.push(text[i : i + size]) for i in range(0, len(text), size)]
    return [*pieces, stop.finish()]


def test_a_repeated_sentence_ends_the_text_and_is_never_shown():
    stop = RepeatStop()
    pieces = stream("The function returns the element. It is fast. The function returns the element. More.", stop)
    assert "".join(pieces) == "The function returns the element. It is fast."
    assert stop.repeated
    assert sum(1 for piece in pieces if piece) > 5  # the first sentences streamed as they came


def test_repeats_compare_without_case_or_spacing_and_lines_count_too():
    stop = RepeatStop()
    text = "- first item here\n- second item here\n-  First   ITEM here\n- more"
    assert "".join(stream(text, stop)) == "- first item here\n- second item here\n"
    assert normalized("The  end is near!") == normalized("the end is near.")


def test_a_sentence_that_only_begins_like_an_earlier_one_is_held_then_released():
    stop = RepeatStop()
    assert stop.push("The cat sat on the mat.") == "The cat sat on the mat."
    assert stop.push(" The cat") == ""  # could still become a repeat
    assert stop.retracing()
    assert stop.push(" ran") == " The cat ran"  # it differs now: shown, and streams again
    assert not stop.retracing()
    assert stop.push(" away.") == " away."
    assert stop.finish() == "" and not stop.repeated


def test_short_pieces_and_a_trailing_repeat():
    stop = RepeatStop()  # "e.g." twice is no loop: pieces under three words are not compared
    assert "".join(stream("Fruit, e.g. apples grow. Nuts, e.g. pecans grow.", stop)) == (
        "Fruit, e.g. apples grow. Nuts, e.g. pecans grow."
    )
    assert not stop.repeated
    stop = RepeatStop()  # a repeat that ends the generation, with no whitespace after it, is dropped too
    assert "".join(stream("Seven is the key. Seven is the key.", stop)) == "Seven is the key."
    assert stop.repeated
    off = RepeatStop(enabled=False)
    assert "".join(stream("Seven is the key. Seven is the key.", off)) == "Seven is the key. Seven is the key."


def test_a_run_on_identifier_chain_ends_the_text_and_is_mostly_never_shown():
    stop = RepeatStop()
    chain = "_".join(["asn1", "create", "element", "node", "value", "type", "name", "tag"] * 6)
    assert len(chain) > RUN_ON_CHARS
    pieces = stream("It calls asn1_create_element " + chain + " and more words.", stop)
    shown = "".join(pieces)
    assert stop.repeated and stop.run_on
    assert shown == stop.text  # the final text is what was shown
    assert shown.startswith("It calls asn1_create_element ")
    assert len(shown) - len("It calls asn1_create_element ") < HOLD_WORD_CHARS  # at most the first part of the chain
    assert "more words" not in shown
    assert stop.push(" later.") == "" and stop.finish() == ""


def test_a_later_paragraph_that_asks_a_question_ends_the_answer_and_is_never_shown():
    answer = "The GNU Libtasn1 is a library for ASN.1 and DER manipulation."
    stop = RepeatStop()
    pieces = stream(answer + "\n\nWhat is libtasn2?\nIt is a library.", stop)
    assert "".join(pieces).strip() == answer and stop.text.strip() == answer
    assert stop.repeated and stop.new_turn and not stop.run_on
    assert not any("What" in piece for piece in pieces)  # the question's start was held back, never shown
    stop = RepeatStop()  # the question ends the generation, no whitespace after it: dropped by finish
    assert "".join(stream(answer + "\n\nWhat is libtasn2?", stop)).strip() == answer and stop.new_turn


def test_later_paragraphs_and_questions_inside_the_answer_are_shown():
    stop = RepeatStop()  # a later paragraph of statements: its first sentence is held until it ends, then shown
    assert stop.push("It has two parts.\n\nThe first") == "It has two parts.\n\n"
    assert stop.push(" part reads.") == ""  # ended once whitespace follows
    assert stop.push(" Then") == "The first part reads. Then"  # a statement: shown, and streams again
    assert stop.push(" more.") == " more."
    text = "Is it free? Yes, under the LGPL.\nWhy? Because it says so."  # questions in the first paragraph, a line
    stop = RepeatStop()
    assert "".join(stream(text, stop)) == text and not stop.repeated
    off = RepeatStop(enabled=False)
    assert "".join(stream("Done.\n\nWhat next?", off)) == "Done.\n\nWhat next?"


def test_a_long_word_is_held_back_until_it_ends_then_shown():
    url = "https://www.example.org/" + "a" * (RUN_ON_CHARS - 40)  # between the hold length and the run-on length
    assert HOLD_WORD_CHARS < len(url) < RUN_ON_CHARS
    stop = RepeatStop()
    head = url[: HOLD_WORD_CHARS - 1]
    assert stop.push("See " + head) == "See " + head  # streamed while short
    assert stop.push(url[len(head) :]) == ""  # grown long: held
    assert stop.push(" for details.") == url[len(head) :] + " for details."  # it ended: shown
    assert stop.finish() == "" and not stop.repeated and not stop.run_on
    off = RepeatStop(enabled=False)
    assert "".join(stream("x" * (2 * RUN_ON_CHARS), off)) == "x" * (2 * RUN_ON_CHARS)


# -- a looping model through the engine ----------------------------------------------------------------


def looping_loaded(ends: bool = False) -> LoadedModel:
    """A tiny Llama that writes SENTENCE again and again (or, with `ends`, once and then its end-of-turn token).

    Attention and MLP outputs are zeroed, so the last hidden state is the current token's embedding: each
    sentence token's embedding is its own one-hot feature and the LM head maps it to the next token's row; the
    request's last token (the template's "\\n") starts the sentence. Every other row is zero, so nothing else is
    ever the best token.
    """
    tokenizer = tiny_tokenizer()
    cycle = tokenizer(SENTENCE, add_special_tokens=False)["input_ids"]
    assert len(set(cycle)) == len(cycle)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        eos_token_id=3, bos_token_id=1, pad_token_id=1,
    )  # fmt: skip
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    start = tokenizer.convert_tokens_to_ids("Ċ")  # byte-level "\n", the last token of every request
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings, head = model.get_input_embeddings().weight, model.lm_head.weight  # (V, hidden) each
        head.zero_()
        for feature, token in enumerate([start, *cycle]):
            embeddings[token] = 0.0
            embeddings[token, feature] = 1.0
        for position in range(len(cycle)):  # the sentence's token at `position` has feature position + 1
            head[cycle[(position + 1) % len(cycle)], position + 1] = 4.0
        head[cycle[0], 0] = 4.0
        if ends:
            head[config.eos_token_id, len(cycle)] = 8.0  # after the sentence's last token
    return LoadedModel(model=model.eval(), tokenizer=tokenizer, identity="tiny-looping", device=torch.device("cpu"))


def looping_answer(decoding: DecodingConfig, ends: bool = False) -> tuple[list[str], AnswerStats, Engine]:
    engine = Engine(looping_loaded(ends), PotConfig(pot_size=256, keep_size=128, forward_tokens=64))
    request = engine.answer_prompt_ids(QUESTION)
    assert request[-1] == tiny_tokenizer().convert_tokens_to_ids("Ċ")
    cycle = tiny_tokenizer()(SENTENCE, add_special_tokens=False)["input_ids"]
    assert any(request[i : i + len(cycle)] == cycle for i in range(len(request)))
    pot = engine.read([tiny_tokenizer()(SENTENCE * 2, add_special_tokens=False)["input_ids"]])
    stats = AnswerStats()
    pieces = list(engine.answer(pot, QUESTION, decoding, stats))
    return pieces, stats, engine


def test_without_rules_the_looping_model_runs_to_the_length_limit():
    pieces, stats, _ = looping_answer(DecodingConfig(max_new_tokens=60, **OFF))
    assert "".join(pieces).count("lazy dog.") >= 3  # the sentence, again and again
    assert stats.stopped_by == "length" and stats.new_tokens == 60


@pytest.mark.parametrize("ngram", [4, 0])
def test_the_looping_model_stops_where_it_repeats_its_sentence(ngram):
    pieces, stats, engine = looping_answer(DecodingConfig(max_new_tokens=60, no_repeat_ngram=ngram))
    assert "".join(pieces) == SENTENCE  # once, copied from the document, then it ends
    assert stats.stopped_by == "repeat"
    assert stats.new_tokens < 2 * sentence_tokens() + 2  # at most the sentence again and the space after it
    assert len([piece for piece in pieces if piece]) >= 10  # streamed token by token, not held to the end
    assert engine.tokenizer.decode(stats.token_ids) == SENTENCE


def test_the_ban_alone_forbids_the_copy_but_not_the_document():
    """Document and question hold the sentence; the answer still copies it whole (the prompt's n-grams are free),
    and only its own second copy is banned. transformers' no_repeat_ngram_size counts the prompt and cannot."""
    pieces, stats, engine = looping_answer(DecodingConfig(max_new_tokens=40, no_repeat_ngram=4, stop_on_repeat=False))
    assert "".join(pieces).startswith(SENTENCE)
    grams = [tuple(stats.token_ids[i : i + 4]) for i in range(len(stats.token_ids) - 3)]
    assert len(grams) == len(set(grams)) and stats.stopped_by != "repeat"
    request = engine.answer_prompt_ids(QUESTION)
    document = tiny_tokenizer()(SENTENCE * 2, add_special_tokens=False)["input_ids"]
    prompt = torch.tensor([engine.prefix_ids + document + request])
    with torch.no_grad():
        length = sentence_tokens()
        plain = engine.model.generate(prompt, max_new_tokens=length, do_sample=False)
        banned = engine.model.generate(prompt, max_new_tokens=length, do_sample=False, no_repeat_ngram_size=4)
    assert engine.tokenizer.decode(plain[0, prompt.shape[1] :]) == SENTENCE
    assert engine.tokenizer.decode(banned[0, prompt.shape[1] :]) != SENTENCE


def test_an_answer_that_ends_by_itself_says_so():
    pieces, stats, _ = looping_answer(DecodingConfig(max_new_tokens=60), ends=True)
    assert "".join(pieces) == SENTENCE
    assert stats.stopped_by == "end" and stats.new_tokens == sentence_tokens()


def test_sampling_through_the_engine_is_reproducible():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=128, forward_tokens=64))
    pot = engine.read([random_ids(100, seed=3)])

    def tokens(**settings) -> list[int]:
        stats = AnswerStats()
        "".join(engine.answer(pot, "What is the passkey?", DecodingConfig(max_new_tokens=12, **settings), stats))
        return stats.token_ids

    greedy = tokens()
    assert tokens() == greedy
    assert tokens(temperature=2.0, seed=1) == tokens(temperature=2.0, seed=1)
    assert any(tokens(temperature=2.0, seed=seed) != tokens(temperature=2.0, seed=1) for seed in (2, 3, 4))
    assert tokens(temperature=2.0, top_p=1e-6, seed=5) == greedy
