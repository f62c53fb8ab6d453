"""NuC per word: word starts from the vocabulary, sums over words, and the reader's scores against a plain forward."""

import pytest
import torch
from tiny_models import tiny_loaded, tiny_tokenizer

from infinipot.core import reader as reader_module
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.reader import ContinualReader
from infinipot.core.words import (
    max_over_sentences,
    share_with_edges,
    sum_over_words,
    token_boundaries,
    token_ends_sentence,
    token_starts_word,
    word_start_flags,
)


@pytest.mark.parametrize(
    ("token", "starts"),
    [("Ġkey", True), ("Ċ", True), ("▁key", True), (".", True), ("<|im_end|>", True), ("", True)]
    + [("7", False), ("ably", False), ("v", False)],
)
def test_a_word_starts_at_a_space_marker_or_punctuation(token, starts):
    assert token_starts_word(token) is starts


@pytest.mark.parametrize(
    ("token", "ends"),
    [(".", True), ("?", True), ("Ġ!", True), ("Ċ", True), ("ĊĊ", True), ("<0x0A>", True), (".Ġ", True)]
    + [("Ġkey", False), (",", False), (":", False), ("7", False), ("", False)],
)
def test_a_sentence_ends_at_a_stop_or_a_newline(token, ends):
    assert token_ends_sentence(token) is ends


def test_every_token_of_a_sentence_takes_its_most_novel_word():
    # " The pass key is 27611." then " Remember it." : the number makes its whole sentence novel
    words = torch.tensor([1.0, 3.0, 0.5, 0.2, 9.0, 9.0, 0.1, 2.0, 0.3, 0.1])
    ends = torch.tensor([False, False, False, False, False, False, True, False, False, True])
    expected = torch.tensor([9.0] * 7 + [2.0] * 3)
    assert torch.equal(max_over_sentences(words, ends), expected)


def test_a_sentence_without_a_stop_is_scored_in_spans_of_the_longest_allowed():
    words = torch.arange(10, dtype=torch.float)
    ends = torch.zeros(10, dtype=torch.bool)
    ends[1] = True  # a two-token sentence, then eight tokens without a stop: spans of 3, 3 and 2
    expected = torch.tensor([1.0, 1.0, 4.0, 4.0, 4.0, 7.0, 7.0, 7.0, 9.0, 9.0])
    assert torch.equal(max_over_sentences(words, ends, longest=3), expected)


def test_sentence_ends_come_from_the_vocabulary():
    tokenizer = tiny_tokenizer()
    boundaries = token_boundaries(tokenizer, len(tokenizer) + 3)
    ids = tokenizer("The fox. The dog?", add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    marks = boundaries.sentence_ends[ids].tolist()
    assert [p for p, m in zip(pieces, marks, strict=True) if m] == [".", "?"], pieces
    assert not bool(boundaries.sentence_ends[len(tokenizer) :].any())
    assert torch.equal(boundaries.word_starts, word_start_flags(tokenizer, len(tokenizer) + 3))


def test_sum_over_words_gives_every_token_its_words_total():
    scores = torch.tensor([1.0, 2.0, 0.5, 0.5, 3.0, 4.0])
    starts = torch.tensor([False, True, False, False, True, False])  # the first token always starts a word
    assert torch.equal(sum_over_words(scores, starts), torch.tensor([1.0, 3.0, 3.0, 3.0, 7.0, 7.0]))


def test_edge_tokens_take_the_score_of_the_word_beside_them():
    # words: [" is"] [" 27611" as " ", "2", "7"] ["."] [" Remember"]; the number is the novel word
    words = torch.tensor([1.0, 9.0, 9.0, 9.0, 0.5, 2.0])
    starts = torch.tensor([True, True, False, False, True, True])
    shared = share_with_edges(words, starts)
    # " is" ends just before the number and "." starts just after it: both rank with it; " Remember",
    # two words away, keeps its own score, and the number's inner token is unchanged
    assert torch.equal(shared, torch.tensor([9.0, 9.0, 9.0, 9.0, 9.0, 2.0]))


def test_a_word_never_loses_score_by_sharing_with_its_edges():
    scores = torch.rand(40) * 5
    starts = torch.rand(40) < 0.4
    words = sum_over_words(scores, starts)
    assert bool((share_with_edges(words, starts) >= words).all())


def test_digits_continue_the_number_they_belong_to():
    tokenizer = tiny_tokenizer()
    flags = word_start_flags(tokenizer, len(tokenizer) + 3)
    ids = tokenizer(" key 12345.", add_special_tokens=False)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    digit_positions = [i for i, piece in enumerate(pieces) if piece.lstrip("Ġ").isdigit()]
    assert digit_positions, pieces
    marks = flags[ids].tolist()
    number_start = digit_positions[0] if pieces[digit_positions[0]].startswith("Ġ") else digit_positions[0] - 1
    assert marks[number_start] is True
    assert not any(marks[number_start + 1 : digit_positions[-1] + 1])
    assert marks[-1] is True  # the full stop starts its own unit
    assert bool(flags[len(tokenizer) :].all())  # ids past the tokenizer start a word


TEXT = "The quick brown fox jumps over the lazy dog. A passkey is 12345 and 67890. " * 3


def plain_token_cross_entropy(engine: Engine, ids: list[int]) -> torch.Tensor:
    """-log p(x_t | x_<t) from one ordinary forward over the template opening and the document (T,)."""
    stream = engine.prefix_ids + ids
    with torch.no_grad():
        logits = engine.model(torch.tensor([stream])).logits[0].float()  # (S, V)
    logprobs = torch.log_softmax(logits, dim=-1)
    nll = -logprobs[:-1].gather(1, torch.tensor(stream[1:])[:, None])[:, 0]  # (S-1,)
    return torch.cat([torch.zeros(1), nll])[len(engine.prefix_ids) :]


@pytest.mark.parametrize("unit", ["token", "word", "word-edges", "sentence"])
def test_reader_novelty_is_cross_entropy_per_token_or_summed_per_word(unit):
    loaded = tiny_loaded("llama")
    ids = loaded.tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    # forward pieces of 17 tokens: words cut by a piece edge are summed per part, as the reader documents
    engine = Engine(loaded, PotConfig(pot_size=512, keep_size=256, forward_tokens=17, nuc_unit=unit))
    pot = engine.read([ids])
    assert pot.cycles == 0
    novelty = pot.novelty[0, 0, len(engine.prefix_ids) :]  # (T,) the same in every layer and head
    expected = plain_token_cross_entropy(engine, ids)
    if unit != "token":
        starts = engine.boundaries().word_starts[torch.tensor(ids)].clone()
        piece_starts = torch.arange(len(ids)) % 17 == 0  # the opening is read on its own, then pieces of 17
        starts |= piece_starts
        expected = sum_over_words(expected, starts)
        if unit == "word-edges":  # edges are shared within a forward piece, never across its cut
            bare = expected
            expected = torch.cat(
                [share_with_edges(expected[i : i + 17], starts[i : i + 17]) for i in range(0, len(ids), 17)]
            )
            assert not torch.allclose(novelty, bare, atol=1e-3)
        if unit == "sentence":  # sentences, like words, are scored per part where a forward piece cuts them
            bare = expected
            ends = engine.boundaries().sentence_ends[torch.tensor(ids)]
            expected = torch.cat(
                [max_over_sentences(expected[i : i + 17], ends[i : i + 17]) for i in range(0, len(ids), 17)]
            )
            assert not torch.allclose(novelty, bare, atol=1e-3)
        assert not torch.allclose(novelty, plain_token_cross_entropy(engine, ids), atol=1e-3)
    assert torch.allclose(novelty, expected, atol=1e-3)


def fed_in_pieces_of_40(loaded) -> tuple[Engine, ContinualReader, list[int]]:
    """A reader (not finished) that has read the test sentence three times in forward pieces of 40 tokens."""
    ids = loaded.tokenizer(TEXT, add_special_tokens=False)["input_ids"]
    engine = Engine(loaded, PotConfig(pot_size=512, keep_size=256, forward_tokens=40, nuc_unit="token"))
    reader = engine.new_reader()
    reader.start(engine.prefix_ids)
    reader.feed(ids)
    return engine, reader, ids


@pytest.mark.parametrize("arch", ["llama", "gemma2"])
def test_novelty_in_slices_through_the_reused_buffers_is_cross_entropy(monkeypatch, arch):
    """Pieces of 40 tokens scored 7 rows at a time: the same two buffers serve every slice, the short last slice
    of each piece and every piece; gemma2 caps its logits in them. The buffers are let go when the read ends."""
    monkeypatch.setattr(reader_module, "_NOVELTY_ROWS", 7)
    loaded = tiny_loaded(arch)
    engine, reader, ids = fed_in_pieces_of_40(loaded)
    assert reader._novelty_buffers.shape == (2, 7, loaded.model.config.vocab_size)
    pot = reader.finish()
    assert reader._novelty_buffers is None
    novelty = pot.novelty[0, 0, len(engine.prefix_ids) :]  # (T,)
    assert len(ids) > 40 and len(ids) % 40 % 7 != 0
    assert torch.allclose(novelty, plain_token_cross_entropy(engine, ids), atol=1e-3)


def test_novelty_slices_shrink_to_keep_each_buffer_within_its_byte_limit(monkeypatch):
    """A large vocabulary gets fewer rows per slice, not larger buffers; the scores stay the cross-entropy."""
    loaded = tiny_loaded("llama")
    vocab = loaded.model.config.vocab_size
    monkeypatch.setattr(reader_module, "_NOVELTY_BUFFER_BYTES", 5 * vocab * 4 + 3)  # room for 5 fp32 rows
    engine, reader, ids = fed_in_pieces_of_40(loaded)
    assert reader._novelty_buffers.shape == (2, 5, vocab)
    novelty = reader.finish().novelty[0, 0, len(engine.prefix_ids) :]
    assert torch.allclose(novelty, plain_token_cross_entropy(engine, ids), atol=1e-3)


def test_word_unit_is_part_of_the_pot_identity_and_validated():
    assert PotConfig().identity()["nuc_unit"] == "sentence"
    for unit in ("token", "word", "word-edges"):
        assert PotConfig(nuc_unit=unit).identity() != PotConfig().identity()
    with pytest.raises(ValueError, match="NuC unit"):
        PotConfig(nuc_unit="paragraph")
