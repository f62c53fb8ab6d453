"""Which layers and normalisation make citations find a passkey's page: the evidence behind core.citations' defaults.

    python -m benchmarks.citation_layers [--trials 6] [--words-per-page 50] [--seed 100]

Reads one 40-page passkey PDF per trial with the default model (the document fits the 4K pot), answers the
pass-key question, captures every answer and request query's attention over the pot, and prints one JSON line
per variant (queries: answer or request+answer; raw attention or shares renormalised per head; which layers):
how often the needle's page is cited first, its share, and the best other page's share.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from infinipot.app.bench.needle import QUESTION, haystack_text, needle_sentence
from infinipot.core import hf_adapter
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import ModelSpec, load_model
from infinipot.ingest import open_document
from infinipot.storage.paths import data_home

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from helpers import filler_pages, plant_needle, write_pdf  # noqa: E402

PAGES = 40
SINK_TOKENS = 4


def attention_rows(model, pot, ids: list[int]) -> torch.Tensor:
    """Every query's attention over the pot entries: (L, H_q, T, n)."""
    n = pot.entries
    cache = pot.as_cache()
    positions = torch.arange(pot.next_position, pot.next_position + len(ids))[None]  # (1, T)
    with (
        torch.inference_mode(),
        hf_adapter.eager_attention(model),
        hf_adapter.captured_attention(model, lambda _i, w: w[0, :, :, :n].float().clone()) as per_layer,
    ):
        hf_adapter.run_decoder(model, cache, torch.tensor([ids]), positions)
    return torch.stack(per_layer)


def trial(loaded, folder: Path, seed: int, words_per_page: int) -> dict:
    rng = random.Random(seed)
    page, key = rng.randint(1, PAGES), str(rng.randint(10000, 99999))
    pages = filler_pages(haystack_text()[rng.randint(0, 100_000) :], PAGES, words_per_page)
    pdf = write_pdf(folder / f"passkey-{seed}.pdf", plant_needle(pages, page, needle_sentence(key).strip(), seed))
    stream = open_document(pdf).token_stream(loaded.tokenizer, chunk_tokens=1024)
    engine = Engine(loaded, PotConfig())
    pot = engine.read(stream)
    stats = AnswerStats()
    answer = "".join(engine.answer(pot, QUESTION, 16, stats))
    request = engine.answer_prompt_ids(QUESTION)
    rows = attention_rows(loaded.model, pot, request + stats.token_ids)  # (L, H_q, T, n)
    document_position = (pot.origin - pot.prefix_len)[0, 0].numpy()  # no compression: the same in every head
    if pot.cycles:
        raise ValueError("the document did not fit the pot; use fewer words per page")
    counted = document_position >= SINK_TOKENS
    return {
        "needle_page": page,
        "found": key in answer,
        "pages": stream.location_map.pages_of(document_position[counted]),
        "answer": rows[:, :, len(request) :, counted].sum(2).numpy(),  # (L, H_q, m)
        "request": rows[:, :, : len(request), counted].sum(2).numpy(),  # (L, H_q, m)
    }


def page_ranking(result: dict, queries: str, renormalise: bool, layers: range) -> tuple[bool, float, float]:
    scores = result["answer"] + (result["request"] if queries == "request+answer" else 0)  # (L, H_q, m)
    if renormalise:
        scores = scores / scores.sum(-1, keepdims=True)
    per_token = scores[list(layers)].sum((0, 1))  # (m,)
    shares = np.bincount(result["pages"], weights=per_token, minlength=PAGES + 1)
    shares = shares / shares.sum()
    needle = result["needle_page"]
    others = np.delete(shares, needle)
    return bool(shares[needle] > others.max()), float(shares[needle]), float(others.max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6)
    parser.add_argument("--words-per-page", type=int, default=50)
    parser.add_argument("--seed", type=int, default=100, help="trial i uses seed + i (the test uses 1000 + i)")
    args = parser.parse_args()
    loaded = load_model(ModelSpec(device="cpu"), data_home())
    with tempfile.TemporaryDirectory() as folder:
        results = [trial(loaded, Path(folder), args.seed + i, args.words_per_page) for i in range(args.trials)]
    layer_count = results[0]["answer"].shape[0]
    layer_sets = {
        "all": range(layer_count),
        "first half": range(layer_count // 2),
        "later half": range(layer_count // 2, layer_count),
        "last third": range(2 * layer_count // 3, layer_count),
    }
    print(json.dumps({"answers_found": sum(r["found"] for r in results), "trials": len(results)}))
    for queries in ("answer", "request+answer"):
        for renormalise in (False, True):
            for name, layers in layer_sets.items():
                ranked = [page_ranking(r, queries, renormalise, layers) for r in results]
                line = {
                    "queries": queries,
                    "normalisation": "per head" if renormalise else "raw",
                    "layers": name,
                    "needle_page_first": sum(first for first, _, _ in ranked),
                    "needle_share": [round(share, 3) for _, share, _ in ranked],
                    "best_other_share": [round(other, 3) for _, _, other in ranked],
                }
                print(json.dumps(line))


if __name__ == "__main__":
    main()
