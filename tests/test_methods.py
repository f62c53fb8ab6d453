"""Every method through one matrix on tiny models, then what makes each baseline that baseline."""

import pytest
import torch
from helpers import assert_same_pot, record_cache_lengths, reference_greedy
from tiny_models import random_ids, tiny_loaded

from infinipot.core import capacity, hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.errors import FullContextError, PotTooSmallError
from infinipot.core.scorers import METHODS, LayerEvidence, make_scorer
from infinipot.core.scorers.h2o import H2OScorer
from infinipot.core.scorers.sirllm import SirLLMScorer
from infinipot.core.scorers.tova import TovaScorer
from infinipot.core.selection import KEPT_BY_NAMES, select_entries

QUESTION = "What is the passkey?"
MATRIX_ARCHS = ("llama", "qwen3", "gemma2")


def small_config(method: str, **overrides) -> PotConfig:
    settings = dict(pot_size=128, keep_size=48, forward_tokens=40, window_step=16, method=method)
    return PotConfig(**{**settings, **overrides})


@pytest.mark.parametrize("arch", MATRIX_ARCHS)
@pytest.mark.parametrize("method", METHODS)
def test_every_method_reads_within_its_bound_keeps_order_and_answers(method, arch):
    config = small_config(method)
    engine = Engine(tiny_loaded(arch), config)
    lengths = record_cache_lengths(engine.model)
    document = random_ids(300, seed=11)
    pot = engine.read([document[:170], document[170:]])

    total = len(engine.prefix_ids) + len(document)
    assert pot.document_tokens == len(document) and pot.tokens_read == total
    assert pot.peak_entries == max(lengths)
    if make_scorer(method, config.nuc_ratio).compresses:
        assert max(lengths) <= config.pot_size
        assert pot.entries <= config.pot_size - len(engine.catalyst_ids)
        assert pot.entries < len(document)
    else:  # full: every token stays, its peak is the tokens read
        assert max(lengths) == pot.entries == total
    # provenance: strictly increasing stream indices per layer and head, ending with the last token read
    assert bool((pot.origin[..., 1:] > pot.origin[..., :-1]).all())
    assert int(pot.origin[..., -1].min()) == total - 1
    assert set(pot.kept_by.unique().tolist()) <= set(KEPT_BY_NAMES)
    # positions are the cache's own 0..n-1 (CR-RoPE, or never compressed) and reading continues after them
    assert bool((pot.positions == torch.arange(pot.entries)).all())
    assert pot.next_position == pot.entries

    lengths.clear()
    stats = AnswerStats()
    "".join(engine.answer(pot, QUESTION, max_new_tokens=6, stats=stats))
    assert stats.new_tokens > 0
    if make_scorer(method, config.nuc_ratio).compresses:
        assert max(lengths) <= config.pot_size


@pytest.mark.parametrize("method", METHODS)
def test_every_method_equals_plain_greedy_when_the_document_fits(method):
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=512, keep_size=256, forward_tokens=37, method=method))
    document = random_ids(150, seed=5)
    pot = engine.read([document[:90], document[90:]])
    assert pot.cycles == 0
    stats = AnswerStats()
    "".join(engine.answer(pot, QUESTION, max_new_tokens=12, stats=stats))
    full = engine.prefix_ids + document + engine.answer_prompt_ids(QUESTION)
    assert stats.token_ids == reference_greedy(engine, full, 12)


def test_streaming_keeps_exactly_four_sinks_and_the_latest_entries():
    config = small_config("streaming")
    engine = Engine(tiny_loaded("llama"), config)
    assert len(engine.prefix_ids) > 4  # so the chat template's opening is not simply all kept
    document = random_ids(400, seed=3)
    pot = engine.read([document])
    total = len(engine.prefix_ids) + len(document)
    limit = config.pot_size - len(engine.catalyst_ids)
    # a rolling window: it stays full up to one step below the limit
    assert limit - config.rolling_step <= pot.entries <= limit
    expected = [0, 1, 2, 3, *range(total - (pot.entries - 4), total)]
    assert bool((pot.origin == torch.tensor(expected)).all())


def test_streaming_without_cr_rope_keeps_original_positions():
    engine = Engine(tiny_loaded("llama"), small_config("streaming", cr_rope=False))
    pot = engine.read([random_ids(300, seed=3)])
    assert pot.next_position == pot.tokens_read
    assert bool((pot.positions[..., 4:] == pot.origin[..., 4:]).all())


def count_decoder_tokens(model) -> list[int]:
    """Independent instrumentation: how many input tokens every forward of the decoder took."""
    seen: list[int] = []

    def hook(_module, _args, kwargs):
        seen.append(int(kwargs["input_ids"].shape[1]))

    hf_adapter.decoder(model).register_forward_pre_hook(hook, with_kwargs=True)
    return seen


def test_truncate_reads_the_first_and_last_halves_only_and_answers_like_a_truncated_prompt():
    config = small_config("truncate")
    engine = Engine(tiny_loaded("llama"), config)
    seen = count_decoder_tokens(engine.model)
    document = random_ids(3000, seed=8)
    reader = engine.new_reader()
    reader.start(engine.prefix_ids)
    for start in range(0, len(document), 100):  # a long stream in many pieces: the queue stays bounded
        reader.feed(document[start : start + 100])
        assert len(reader.tail.ids) <= reader.tail.size
    pot = reader.finish()

    limit = config.pot_size - len(engine.catalyst_ids)
    head, tail = limit // 2, limit - limit // 2
    total = len(engine.prefix_ids) + len(document)
    assert sum(seen) == limit  # the model never saw the middle
    assert pot.cycles == 0 and pot.tokens_read == total
    expected = [*range(head), *range(total - tail, total)]
    assert bool((pot.origin == torch.tensor(expected)).all())

    stats = AnswerStats()
    "".join(engine.answer(pot, QUESTION, max_new_tokens=8, stats=stats))
    prefix = len(engine.prefix_ids)
    truncated = engine.prefix_ids + document[: head - prefix] + document[-tail:] + engine.answer_prompt_ids(QUESTION)
    assert stats.token_ids == reference_greedy(engine, truncated, 8)


def test_full_keeps_everything_beyond_the_pot_and_equals_plain_greedy():
    engine = Engine(tiny_loaded("qwen2"), small_config("full", pot_size=96))
    document = random_ids(400, seed=2)
    pot = engine.read([document])
    assert pot.entries == pot.peak_entries == len(engine.prefix_ids) + len(document) > 96
    stats = AnswerStats()
    "".join(engine.answer(pot, QUESTION, max_new_tokens=10, stats=stats))
    assert stats.token_ids == reference_greedy(
        engine, engine.prefix_ids + document + engine.answer_prompt_ids(QUESTION), 10
    )


def test_full_is_refused_when_memory_is_too_small(monkeypatch):
    engine = Engine(tiny_loaded("llama"), small_config("full"))
    per_entry = capacity.kv_bytes_per_entry(engine.model)
    monkeypatch.setattr(capacity, "available_bytes", lambda _device: 100 * per_entry)
    with pytest.raises(FullContextError, match="memory is free") as refused:
        engine.read([random_ids(300, seed=1)])
    assert "\n" not in str(refused.value)


def test_full_is_refused_beyond_the_model_context():
    engine = Engine(tiny_loaded("llama"), small_config("full"))
    engine.model.config.max_position_embeddings = 200
    with pytest.raises(FullContextError, match="model's context of 200"):
        engine.read([random_ids(300, seed=1)])


def eager_attention_of_one_pass(model, ids: list[int]) -> list[torch.Tensor]:
    """Independent reference: attention weights of one eager forward over all ids, per layer (H_q, T, T)."""
    with hf_adapter.eager_attention(model), torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    return [a[0].float() for a in out.attentions]


def per_kv_head(rows: torch.Tensor, kv_heads: int) -> torch.Tensor:
    return rows.view(kv_heads, -1, rows.shape[-1]).mean(dim=1)  # (H_kv, n)


@pytest.mark.parametrize("method", ["h2o", "tova"])
def test_h2o_and_tova_evidence_comes_from_the_reading_passes_attention_rows(method):
    engine = Engine(tiny_loaded("qwen2"), PotConfig(pot_size=512, keep_size=256, forward_tokens=30, method=method))
    document = random_ids(120, seed=4)
    reader = engine.new_reader()
    reader.start(engine.prefix_ids)
    reader.feed(document)  # four pieces, no compression
    carried = reader.evidence.tensors["attention"]  # (L, H_kv, n)
    kv_heads = hf_adapter.kv_heads(engine.model)
    for layer, weights in enumerate(eager_attention_of_one_pass(engine.model, engine.prefix_ids + document)):
        if method == "h2o":  # attention received from every query so far (a causal pass gives the same sums)
            expected = per_kv_head(weights.sum(dim=1), kv_heads)
        else:  # the newest query's row
            expected = per_kv_head(weights[:, -1], kv_heads)
        torch.testing.assert_close(carried[layer], expected, rtol=1e-4, atol=1e-5)


def test_h2o_keeps_half_recent_and_half_heavy_hitters():
    attention = torch.tensor([[5.0, 0.1, 9.0, 0.2, 8.0, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3]])
    n, keep = attention.shape[1], 6
    evidence = LayerEvidence(
        catalyst=None, novelty=torch.zeros(1, n), origin=torch.arange(n)[None], attention=attention, keep=keep
    )
    protected = torch.arange(n)[None] < 1
    kept, _ = select_entries(H2OScorer().score(evidence), evidence.novelty, protected, keep, 0.0)
    assert kept.tolist() == [[0, 2, 4, 9, 10, 11]]  # sink + two heaviest + the three newest


def test_tova_ranks_by_the_layer_mean_of_the_last_row():
    attention = torch.tensor([[0.0, 1.0, 0.0, 0.5], [1.0, 0.0, 0.0, 0.6]])
    scores = TovaScorer().score(LayerEvidence(None, torch.zeros(2, 4), torch.arange(4).expand(2, 4), attention))
    assert torch.equal(scores[0], scores[1])  # layer-wise: every head keeps the same tokens
    torch.testing.assert_close(scores[0], torch.tensor([0.5, 0.5, 0.0, 0.55]))


def test_sirllm_decays_older_entries_and_is_nuc_only_without_decay():
    novelty = torch.tensor([[4.0, 4.0, 3.0]])
    age = torch.tensor([[3, 0, 0]])
    evidence = LayerEvidence(None, novelty, torch.arange(3)[None], age=age)
    decayed = SirLLMScorer(decay=0.5).score(evidence)
    assert decayed.argsort(descending=True).tolist() == [[1, 2, 0]]
    assert torch.equal(SirLLMScorer(decay=1.0).score(evidence), novelty)


def test_sirllm_reader_counts_compressions_survived():
    engine = Engine(tiny_loaded("llama"), small_config("sirllm"))
    reader = engine.new_reader()
    reader.start(engine.prefix_ids)
    reader.feed(random_ids(400, seed=6))
    age = reader.evidence.tensors["age"]
    assert age.shape == reader.pot.origin.shape
    assert int(age[..., 0].min()) == reader.pot.cycles  # a sink has survived every compression
    assert int(age[..., -1].max()) == 0  # the newest entries have not been through one yet


def test_rolling_window_that_leaves_no_room_is_refused():
    with pytest.raises(ValueError):
        PotConfig(pot_size=64, keep_size=32, window_step=64, method="streaming")


def test_window_step_leaving_nothing_to_keep_is_a_clear_error():
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=64, keep_size=16, window_step=40, method="streaming"))
    with pytest.raises(PotTooSmallError, match="window step"):
        engine.new_reader()


def test_truncate_through_the_service_reads_the_documents_end(tiny_model_dir, document, infinipot_home):
    from infinipot.app.service import DocumentService

    service = DocumentService(home=infinipot_home, device="cpu")
    whole = service.read(document, PotConfig(pot_size=128, keep_size=48), model_name=tiny_model_dir)
    config = PotConfig(pot_size=128, keep_size=48, method="truncate")
    service.read(document, config, model_name=tiny_model_dir)
    stored, _ = service.open_pot_reused(whole.doc_id)
    pot = stored.pot
    assert stored.record.method == "truncate"
    assert whole.tokens > config.pot_size  # a document the head alone cannot hold
    assert pot.document_tokens == whole.tokens
    assert int(pot.origin.max()) == pot.prefix_len + whole.tokens - 1  # the document's last token is in the pot
    assert pot.entries <= config.pot_size


@pytest.mark.parametrize("method", METHODS)
def test_a_restored_reader_snapshot_reads_on_exactly_as_an_unbroken_read(method):
    engine = Engine(tiny_loaded("llama"), small_config(method))
    first, second = random_ids(330, seed=3), random_ids(330, seed=4)
    second[:150] = first[:150]  # two documents that open alike, as the trials of a passkey cell do
    opening, first_rest, second_rest = first[:150], first[150:], second[150:]

    reader = engine.new_reader()
    reader.start(engine.prefix_ids)
    reader.feed(opening[:90])
    reader.feed(opening[90:])
    state = reader.snapshot()
    reader.feed(first_rest)
    first_pot = reader.finish()
    reader.restore(state)
    reader.feed(second_rest)
    second_pot = reader.finish()
    reader.restore(state)  # the snapshot is untouched by the reads made after it
    reader.feed(first_rest)
    first_again = reader.finish()

    scorer = make_scorer(method, 0.5)
    assert first_pot.cycles > 0 or not scorer.compresses or scorer.reads_ends_only
    assert_same_pot(first_pot, engine.read([opening[:90], opening[90:], first_rest]))
    assert_same_pot(second_pot, engine.read([opening[:90], opening[90:], second_rest]))
    assert_same_pot(first_again, first_pot)
    assert not torch.equal(first_pot.values[-1], second_pot.values[-1])  # the second read was its own
