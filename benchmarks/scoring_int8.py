"""The reranker's and the judge's scoring passes with int8 weights and activations, against the model as it runs.

    python -m benchmarks.scoring_int8 [--rounds 3] [--home DIR]

The two question-likelihood passes (core.rerank: the reranker's candidate spans, the judge's sentences) are most of
a checked answer's first-token time on a CPU without native bfloat16. torch's dynamic quantization (int8 weights,
activations quantized per tensor at run time, fbgemm/onednn kernels) is the one way to multiply faster there
without a new model. It is only worth having if the rankings stay those of the model itself: this times the same
rows both ways and compares the scores and the orders they give.

Rows are cut from the stored-pot benchmark's essays (benchmarks.stored_pot_ttft, built under --home if missing), at
the lengths one 100K ask scored: 7 spans of 103-201 tokens, 18 sentences of 35-100 tokens, with that ask's
question. Prints medians of --rounds, the two ways taking turns.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import torch

from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine
from infinipot.core.rerank import question_likelihoods

from .stored_pot_ttft import SECOND_QUESTION, build_document

SPAN_LENGTHS = (103, 152, 191, 197, 198, 199, 201)
SENTENCE_LENGTHS = (57, 59, 64, 68, 71, 83, 90, 100, 47, 49, 50, 52, 52, 55, 55, 56, 38, 40)


def rows_from(ids: list[int], lengths: tuple[int, ...], start: int, stride: int) -> list[list[int]]:
    return [ids[start + index * stride : start + index * stride + length] for index, length in enumerate(lengths)]


def order(scores: list[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda index: (-scores[index], index))


def int8_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A copy of `model` whose Linear layers run dynamically quantized int8 products (the model is unchanged)."""
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao.quantization's deprecation notice
        return quantize_dynamic(copy.deepcopy(model), {torch.nn.Linear}, dtype=torch.qint8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--home", type=Path, default=Path(tempfile.gettempdir()) / "infinipot-stored-pot-bench")
    args = parser.parse_args()
    service = DocumentService(home=args.home.resolve(), device="cpu")
    loaded = service.model("default")
    engine = Engine(loaded, PotConfig())
    path = build_document(service, 4000, args.home.resolve() / "documents")
    ids = loaded.tokenizer(path.read_text(encoding="utf-8"), add_special_tokens=False)["input_ids"]
    sets = {
        "reranker spans": rows_from(ids, SPAN_LENGTHS, 0, 211),
        "judge sentences": rows_from(ids, SENTENCE_LENGTHS, 1600, 97),
    }
    _, question_ids = engine.question_parts(SECOND_QUESTION)
    quantized = int8_copy(loaded.model)
    ways = {f"model ({loaded.dtype})": loaded.model, "dynamic int8": quantized}
    seconds = {(way, name): [] for way in ways for name in sets}
    scores: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for way, model in ways.items():
            for name, rows in sets.items():
                started = time.perf_counter()
                scores[way, name] = question_likelihoods(
                    model, engine.opening_pot(), rows, engine.rerank_request_ids, question_ids
                )
                seconds[way, name].append(time.perf_counter() - started)
    print(f"torch threads {torch.get_num_threads()}, quantized engine {torch.backends.quantized.engine}")
    base = next(iter(ways))
    for name, rows in sets.items():
        tokens = sum(len(row) for row in rows)
        for way in ways:
            shift = statistics.mean(abs(a - b) for a, b in zip(scores[way, name], scores[base, name], strict=True))
            print(
                f"{name:>15}, {way:>22}: {statistics.median(seconds[way, name]):6.2f} s ({len(rows)} rows, "
                f"{tokens} tokens); order {order(scores[way, name])}; mean |score shift| {shift:.3f}"
            )


if __name__ == "__main__":
    main()
