"""Citations: entry scores per document token, their pages and lines, and the full path on tiny models.

The planted-needle tests use a tiny model whose every query attends to one token (tiny_models.
build_attending_model), so the page or line holding that token is the one an answer must cite.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from helpers import FILLER, NEEDLE_TOKEN, assert_same_pot, filler_pages, plant_needle, write_pdf
from tiny_models import build_attending_model, random_ids, save_attending_model_folder, tiny_loaded, tiny_tokenizer

from infinipot.app.ask.citing import CitingConfig, cite_tokens
from infinipot.app.cli import main
from infinipot.core.answer.citations import CitationConfig, answer_attention, document_token_scores
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import LoadedModel
from infinipot.core.pot import Pot
from infinipot.ingest import open_document
from infinipot.storage.store import Store


def provenance_pot(origin: torch.Tensor, prefix_len: int) -> Pot:
    """A pot with only the provenance the scoring reads: origin (L, H_kv, n)."""
    layers, heads, n = origin.shape
    empty = torch.zeros(1, heads, n, 2)
    return Pot(
        keys=[empty] * layers,
        values=[empty] * layers,
        origin=origin,
        kept_by=torch.zeros_like(origin, dtype=torch.uint8),
        novelty=torch.zeros(origin.shape),
        positions=torch.arange(n).expand(layers, heads, n).clone(),
        next_position=n,
        prefix_len=prefix_len,
        tokens_read=int(origin.max()) + 1,
        cycles=1,
        peak_entries=n,
        last_logprobs=None,
    )


def test_document_token_scores_add_up_per_token_over_counted_layers_and_heads():
    prefix = 2
    # 4 layers x 2 KV heads x 5 entries; heads hold different tokens (document tokens = origin - 2).
    origin = torch.tensor([[[0, 1, 6, 8, 9], [0, 2, 7, 8, 11]]] * 4)
    attention = torch.zeros(4, 2, 5)
    attention[:, :, 0] = 5.0  # the chat template's opening: never cited
    attention[:, 0, 1] = 3.0  # document token -1 (head 0) is still the opening
    attention[:2, :, 4] = 100.0  # early layers, not counted with first_layer_fraction 0.5
    attention[2:, 0, 3] = 1.0  # document token 6, head 0
    attention[2:, 1, 3] = 2.0  # document token 6 again, held by head 1
    attention[2:, 1, 2] = 1.0  # document token 5
    attention[2:, 0, 2] = 0.5  # document token 4: the first after the 4 sink tokens 0..3
    config = CitationConfig(first_layer_fraction=0.5, sink_tokens=4)
    tokens, scores = document_token_scores(provenance_pot(origin, prefix), attention, config)
    assert tokens.tolist() == [4, 5, 6, 7, 9]
    expected = torch.tensor([1.0, 2.0, 6.0, 0.0, 0.0])  # summed over layers 2 and 3 and both heads
    assert torch.allclose(scores, expected / expected.sum())
    assert scores.sum().item() == pytest.approx(1.0)


def test_document_token_scores_leave_out_the_first_document_tokens_as_sinks():
    origin = torch.tensor([[[0, 1, 2, 3, 4, 5]]])
    attention = torch.tensor([[[9.0, 9.0, 9.0, 9.0, 1.0, 3.0]]])
    tokens, scores = document_token_scores(provenance_pot(origin, 1), attention, CitationConfig(sink_tokens=3))
    assert tokens.tolist() == [3, 4] and torch.allclose(scores, torch.tensor([0.25, 0.75]))


def test_answer_attention_of_a_model_attending_to_a_planted_token_finds_it():
    loaded = LoadedModel(build_attending_model(NEEDLE_TOKEN), tiny_tokenizer(), "tiny-attending", torch.device("cpu"))
    engine = Engine(loaded, PotConfig(pot_size=512, keep_size=128))
    document = [t if t != NEEDLE_TOKEN else NEEDLE_TOKEN + 1 for t in random_ids(300, seed=3)]
    document[217] = NEEDLE_TOKEN
    pot = engine.read([document])
    stats = AnswerStats()
    "".join(engine.answer(pot, "What is the passkey?", 4, stats))
    assert stats.token_ids, "the answer must have tokens to cite from"
    attention = answer_attention(loaded.model, pot, engine.answer_prompt_ids("What is the passkey?"), stats.token_ids)
    assert attention.shape == pot.origin.shape
    tokens, scores = document_token_scores(pot, attention, CitationConfig())
    assert tokens[scores.argmax()].item() == 217
    assert scores.max().item() > 0.9


def test_answer_attention_leaves_the_pot_unchanged():
    loaded = tiny_loaded()
    engine = Engine(loaded, PotConfig(pot_size=256, keep_size=64))
    pot = engine.read([random_ids(120)])
    before = pot.clone()
    attention = answer_attention(loaded.model, pot, engine.answer_prompt_ids("Why?"), random_ids(5, seed=1))
    assert attention.shape == pot.origin.shape and attention.sum() > 0
    assert_same_pot(pot, before)  # every key, value, provenance tensor and counter, bit for bit


# -- pages and lines -------------------------------------------------------------------------------
def location_map_of(path):
    stream = open_document(path).token_stream(tiny_tokenizer(), chunk_tokens=256)
    for _ in stream:
        pass
    return stream.location_map


def test_cite_tokens_cites_the_page_with_most_attention_first(tmp_path):
    pdf = write_pdf(tmp_path / "six.pdf", filler_pages(FILLER, pages=6, words_per_page=30))
    location_map = location_map_of(pdf)
    tokens = np.arange(len(location_map))
    pages = location_map.pages_of(tokens)
    scores = np.full(len(tokens), 1.0)
    scores[pages == 4] += 10.0  # page 4 gets the most
    scores[pages == 2] += 2.0  # page 2 the second most
    scores /= scores.sum()
    cited = cite_tokens(location_map, tokens, scores, "doc", CitingConfig(top=3, min_share=0.0))
    assert [c.page for c in cited] == [4, 2, cited[2].page] and cited[2].page not in (2, 4)
    assert [c.label for c in cited[:2]] == ["page 4", "page 2"]
    assert cited[0].score == pytest.approx(scores[pages == 4].sum(), abs=1e-3)
    assert cited[0].score > cited[1].score > cited[2].score
    first = cited[0].token  # where the visualization opens: the first token of page 4
    assert location_map.page_of(first) == 4 and location_map.page_of(first - 1) == 3
    assert all(c.line is None and c.document == "doc" for c in cited)

    # Places with a small share are left out, except the first.
    assert [c.page for c in cite_tokens(location_map, tokens, scores, "doc", CitingConfig(min_share=0.2))] == [4]


def test_cite_tokens_cites_lines_in_documents_without_pages(tmp_path):
    from tiny_models import write_notes

    notes = write_notes(tmp_path / "notes.txt", lines=30)
    location_map = location_map_of(notes)
    tokens = np.arange(len(location_map))
    lines = location_map.lines_of(tokens)
    assert location_map.page_of(0) is None and lines.min() == 1 and lines.max() == 30
    scores = np.where(lines == 12, 1.0, 0.001)
    cited = cite_tokens(location_map, tokens, scores / scores.sum(), "doc", CitingConfig())
    assert cited[0].line == 12 and cited[0].page is None and cited[0].label == "line 12"
    assert location_map.location(cited[0].token).line == 12 and location_map.location(cited[0].token - 1).line == 11
    assert len(cited) == 1  # the other lines hold far less than min_share


def test_cite_tokens_without_scored_tokens_cites_nothing(tmp_path):
    location_map = location_map_of(write_pdf(tmp_path / "one.pdf", [["Only page"]]))
    assert cite_tokens(location_map, np.zeros(0, np.int64), np.zeros(0), "doc", CitingConfig()) == []


def test_citing_config_is_validated():
    with pytest.raises(ValueError, match="at least 1"):
        CitingConfig(top=0)
    with pytest.raises(ValueError, match="between 0 and 1"):
        CitingConfig(min_share=1.5)
    with pytest.raises(ValueError, match="first layer fraction"):
        CitationConfig(first_layer_fraction=1.0)


# -- the whole path: CLI ask --json, the conversation record ----------------------------------------
def run_json(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def attending_model_dir(tmp_path_factory):
    return save_attending_model_folder(tmp_path_factory.mktemp("attending-llama"), NEEDLE_TOKEN)


@pytest.mark.parametrize("needle_page", [2, 5])
def test_ask_json_cites_the_page_of_a_planted_needle(
    capsys, tmp_path, infinipot_home, attending_model_dir, needle_page
):
    pages = plant_needle(filler_pages(FILLER, pages=6, words_per_page=30), needle_page, "The passkey is 12345.")
    pdf = write_pdf(tmp_path / "needle.pdf", pages)
    # A pot of 128 entries over ~500 tokens: the needle must survive compressions (CaP attends to it too).
    read = run_json(
        capsys, ["read", str(pdf), "--model", attending_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    )
    assert read["cycles"] > 0
    answer = run_json(capsys, ["ask", read["doc_id"], "What is the passkey?", "--max-new-tokens", "4", "--json"])
    assert answer["answer"]
    citations = answer["citations"]
    assert citations[0]["page"] == needle_page and citations[0]["label"] == f"page {needle_page}"
    assert citations[0]["score"] > 0.9 and citations[0]["document"] == read["doc_id"]

    # The conversation keeps them with the answer.
    messages = Store(infinipot_home).conversations.messages(answer["conversation_id"])
    assert messages[1].meta["citations"] == citations


def test_ask_json_citations_name_pages_of_the_document(capsys, tmp_path, tiny_model_dir):
    pdf = write_pdf(tmp_path / "plain.pdf", filler_pages(FILLER, pages=5, words_per_page=30))
    read = run_json(
        capsys, ["read", str(pdf), "--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    )
    # the random model's answer may decode to whitespace only; its tokens are still there to cite from
    answer = run_json(capsys, ["ask", read["doc_id"], "Which colour is the sky?", "--max-new-tokens", "6", "--json"])
    citations = answer["citations"]
    assert 1 <= len(citations) <= CitingConfig().top
    assert all(1 <= c["page"] <= 5 and c["line"] is None for c in citations)
    assert [c["score"] for c in citations] == sorted((c["score"] for c in citations), reverse=True)
    assert 0 < sum(c["score"] for c in citations) <= 1.0 + 1e-6


def test_ask_json_citations_name_lines_of_a_text_document(capsys, tiny_model_dir, document):
    read = run_json(
        capsys, ["read", str(document), "--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    )
    answer = run_json(capsys, ["ask", read["doc_id"], "What does the fox do?", "--max-new-tokens", "6", "--json"])
    citations = answer["citations"]
    assert citations and all(c["page"] is None and 1 <= c["line"] <= 30 for c in citations)
    assert all(c["label"] == f"line {c['line']}" for c in citations)


def test_an_answer_that_needed_a_distilled_copy_still_cites_the_needle_page(
    tmp_path, infinipot_home, attending_model_dir
):
    from infinipot.app.service import DocumentService

    pages = plant_needle(filler_pages(FILLER, pages=6, words_per_page=30), 4, "The passkey is 12345.")
    pdf = write_pdf(tmp_path / "needle.pdf", pages)
    service = DocumentService(infinipot_home, device="cpu")
    service.read(pdf, PotConfig(pot_size=128, keep_size=48), attending_model_dir)
    pieces, stats, _ = service.ask(str(pdf), "What is the passkey?", max_new_tokens=40)
    assert "".join(pieces)
    assert stats.compressed_for_answer  # 40 answer tokens did not fit beside the stored pot
    assert stats.citations[0]["page"] == 4 and stats.citations[0]["score"] > 0.9
    assert stats.answer_pot is None  # the copy is not kept alive once cited


def test_ask_across_cites_the_page_of_the_document_holding_the_needle(capsys, tmp_path, attending_model_dir):
    plain = write_pdf(tmp_path / "plain.pdf", filler_pages(FILLER, pages=4, words_per_page=30))
    pages = plant_needle(filler_pages(FILLER, pages=4, words_per_page=30), 3, "The passkey is 12345.")
    needle = write_pdf(tmp_path / "needle.pdf", pages)
    settings = ["--model", attending_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    plain_id = run_json(capsys, ["read", str(plain), *settings])["doc_id"]
    needle_id = run_json(capsys, ["read", str(needle), *settings])["doc_id"]
    answer = run_json(
        capsys,
        ["ask-across", plain_id, needle_id, "--question", "What is the passkey?", "--max-new-tokens", "4", "--json"],
    )
    assert answer["peak_entries"] <= 128
    first = answer["citations"][0]
    assert first["document"] == needle_id and first["page"] == 3
    assert first["label"] == "needle.pdf, page 3" and first["score"] > 0.9
    # shares are of one total over both documents
    assert sum(c["score"] for c in answer["citations"]) <= 1.0 + 1e-6
