"""Copy-draft settings replayed: which draft length and shortest match cost the writer's decoding least.

    python -m benchmarks.copy_draft_replay [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev]
        [--dtype auto|float32|bfloat16] [--threads 2]

1. The answerable development questions are asked with copy drafts off (DocumentService.ask, default settings
   otherwise); every answer the model writes is kept with the prompt it was written after (the request read after
   the pot: the passages and the question).
2. One forward of T tokens after a 1,500-token cache is timed for T = 1, 3, 5, 9 (median of 9) in the model's dtype.
3. Each setting (draft length, longest and shortest match) is replayed on the kept answers: the drafts
   core.copy_drafts would propose, how many of them the answer then takes, and the forwards' cost from step 2
   (interpolated between the timed T). Printed: forwards, and the cost relative to token-by-token decoding.

A replay, not a run: the answers are the recorded token-by-token ones, so rounding (docs/method.md, "Copy drafts")
does not enter; benchmarks/copy_draft.py runs the chosen setting for real.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

STEP_TOKENS = (1, 3, 5, 9)
SETTINGS = [(length, longest, shortest) for length in (2, 3, 4, 6, 8) for longest in (2, 3) for shortest in (1, 2)]


def captured_answers(service, docs: Path) -> list[tuple[list[int], list[int]]]:
    """(request ids, answer ids) of every answer the model wrote for the answerable questions, drafts off."""
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.core import engine
    from infinipot.core.config import PotConfig

    from .devset.check import load_questions
    from .devset.documents import document_path

    kept: list[tuple[list[int], list[int]]] = []
    original = engine.generate

    def recording(model, cache, request_ids, *args, **kwargs):
        answer: list[int] = []
        kept.append((list(request_ids), answer))
        for choice in original(model, cache, request_ids, *args, **kwargs):
            answer.append(choice.token)
            yield choice

    engine.generate = recording
    try:
        base = AnswerSettings()
        settings = replace(base, decoding=replace(base.decoding, copy_draft=0))
        doc_ids: dict[str, str] = {}
        for question in load_questions():
            if question["document"] not in doc_ids:
                path = document_path(docs, question["document"])
                doc_ids[question["document"]] = service.read(path, PotConfig()).doc_id
            pieces, _, _ = service.ask(doc_ids[question["document"]], question["question"], settings, record=False)
            "".join(pieces)
    finally:
        engine.generate = original
    return [(request, answer) for request, answer in kept if len(answer) > 1]


def step_costs(model, cached: int = 1500) -> dict[int, float]:
    """Median milliseconds of one forward of T tokens (and their logits) after `cached` entries."""
    import torch

    from infinipot.core import hf_adapter

    costs = {}
    with torch.inference_mode():
        cache = hf_adapter.new_cache()
        hf_adapter.run_decoder(model, cache, torch.randint(100, 40000, (1, cached)), torch.arange(cached)[None])
        for tokens in STEP_TOKENS:
            times = []
            for _ in range(9):
                ids = torch.randint(100, 40000, (1, tokens))
                began = time.perf_counter()
                hidden = hf_adapter.run_decoder(model, cache, ids, torch.arange(cached, cached + tokens)[None])
                hf_adapter.vocab_logits(model, hidden[0])
                times.append((time.perf_counter() - began) * 1000)
                hf_adapter.drop_last(cache, tokens)
            costs[tokens] = statistics.median(times)
    return costs


def cost_of(costs: dict[int, float], tokens: int) -> float:
    """Milliseconds of a forward of `tokens`, interpolated (and extrapolated past the last) between the timed."""
    timed = sorted(costs)
    for low, high in zip(timed, timed[1:], strict=False):
        if low <= tokens <= high:
            return costs[low] + (costs[high] - costs[low]) * (tokens - low) / (high - low)
    low, high = timed[-2], timed[-1]
    return costs[high] + (tokens - high) * (costs[high] - costs[low]) / (high - low)


def replayed(answers, costs, length: int, longest: int, shortest: int) -> tuple[int, float]:
    """(forwards, cost relative to token by token) of the setting over the recorded answers."""
    from infinipot.core.copy_drafts import CopyDrafts

    forwards, spent, alone = 0, 0.0, 0.0
    for request, answer in answers:
        drafts = CopyDrafts(request, length, longest, shortest)
        alone += cost_of(costs, 1) * (len(answer) - 1)
        known = 1  # the prefill chose the first token; each forward reads the newest one and a draft
        while known < len(answer):
            draft = drafts.propose(answer[:known], len(answer) - known - 1)
            taken = 0
            while taken < len(draft) and answer[known + taken] == draft[taken]:
                taken += 1
            spent += cost_of(costs, 1 + len(draft))
            forwards += 1
            known += 1 + taken
    return forwards, spent / alone


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=None)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--dtype", default=None, help="the model's dtype for the step timings (default: auto)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.service import DocumentService

    from .devset.documents import DEFAULT_DIR

    service = DocumentService(args.home, device="cpu")
    answers = captured_answers(service, args.docs or DEFAULT_DIR)
    loaded = service.model("default", args.dtype)
    costs = step_costs(loaded.model)
    dtype = str(next(loaded.model.parameters()).dtype).removeprefix("torch.")
    print(f"{len(answers)} written answers, {sum(len(a) for _, a in answers)} tokens; {dtype} forward of T tokens:")
    print("  " + ", ".join(f"T={tokens} {ms:.1f} ms" for tokens, ms in costs.items()))
    print("length longest shortest  forwards  cost vs token by token")
    for length, longest, shortest in SETTINGS:
        forwards, relative = replayed(answers, costs, length, longest, shortest)
        print(f"{length:6} {longest:7} {shortest:8}  {forwards:8}  {relative:.3f}")


if __name__ == "__main__":
    main()
