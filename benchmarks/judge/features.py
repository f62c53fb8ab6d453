"""The judge's pass over every training question: what the learned judge reads, recorded once.

    python -m benchmarks.judge.features [--data bench-results/judge] [--threads 2] [--most 2400] [--seed 64]
        [--home /tmp/ip-judge-home]

For each question of <data>/questions.jsonl, its unit and hard negatives are judged as the app judges the
sentences of the passages it reads (core.answer.answer_sentences.judge_units in detail: the bundled model's
question likelihood after each unit, per token, and its last hidden state; the same after no text). Writes
<data>/judged.pt: per question, the ranked units' texts, scores, token log-probabilities, which is the answer, and
the hidden states (float16). Resumable: questions already judged are kept (a partial file is written every 200).
`--most`: judge every validation question and a seeded sample of the training questions up to that many in all
(each question costs a forward of its ~8 units: ~0.4 s on two CPU cores).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch

from .make_data import DEFAULT_OUT


def judge_question(engine, record: dict) -> dict:
    """The question's units (its answer's unit first in reading order: passage 0; negatives after) judged in
    detail, best first."""
    from infinipot.core.answer.answer_sentences import judge_units

    units = ([(0, record["unit"])] if record["unit"] else []) + [(1, text) for text in record["negatives"]]
    ranked, blank = judge_units(engine, units, record["question"], detail=True)
    return {
        "id": record["id"],
        "texts": [s.text for s in ranked],
        "spans": [s.span for s in ranked],
        "scores": [s.score for s in ranked],
        "tokens": [list(s.judgement.tokens) for s in ranked],
        "labels": [bool(record["unit"]) and s.text == record["unit"] for s in ranked],
        "blank_score": blank.score,
        "blank_tokens": list(blank.tokens),
        "states": torch.stack([s.judgement.state for s in ranked] + [blank.state]).half(),  # (units + 1, hidden)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-judge-home"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--most", type=int, default=2400, help="questions judged at most (all validation ones)")
    parser.add_argument("--seed", type=int, default=64)
    args = parser.parse_args()
    from tqdm import tqdm

    from infinipot.core.config import PotConfig
    from infinipot.core.engine import Engine
    from infinipot.core.model import ModelSpec, load_model

    torch.set_num_threads(args.threads)
    records = [json.loads(line) for line in (args.data / "questions.jsonl").read_text().splitlines()]
    validation = [r for r in records if r["split"] == "validation"]
    training = [r for r in records if r["split"] == "train"]
    random.Random(args.seed).shuffle(training)
    records = validation + training[: max(0, args.most - len(validation))]
    out = args.data / "judged.pt"
    judged = torch.load(out) if out.exists() else {"model": "", "questions": {}}
    loaded = load_model(ModelSpec(name="default", device="cpu", dtype="auto"), args.home)
    engine = Engine(loaded, PotConfig())
    judged["model"] = loaded.identity
    todo = [r for r in records if r["id"] not in judged["questions"]]
    for number, record in enumerate(tqdm(todo, desc="questions judged", unit="q")):
        judged["questions"][record["id"]] = judge_question(engine, record)
        if number % 200 == 199:
            torch.save(judged, out)
    torch.save(judged, out)
    print(f"{len(judged['questions'])} questions judged by {loaded.identity} -> {out}")


if __name__ == "__main__":
    main()
