"""Fits and replays the checked answer's decision (core.answer.answer_confidence) over recorded signals,
without the model.

    python -m benchmarks.devset.decide [--signals benchmarks/results/devset/signals/signals-tuning.jsonl]
        [--l2 1] [--candidates 3] [--thresholds 0.45,0.5,0.55,0.6] [--cascades 0.2/0.65/0.48,...]
        [--drop FEATURE,...] [--fit]

Each of the judge's best few sentences of a recorded question (benchmarks.devset.signals) gets the features of
core.answer.answer_confidence and a label: whether it holds an accepted answer (never, for an unanswerable question). A
logistic model (L2-penalised, by L-BFGS) of that label is fitted. Printed, per threshold: the answers it would
give when each document's questions are decided by a model fitted on the other documents (leave one document
out: how a kind of document never seen fares), stated right / stated wrong / not found while the quote holds the
answer / not found, and unanswerable questions marked; then, when the signals hold the writer's answers, the same
for the decision with the writer in between (--cascades: below `unsure` not found, at `sure` or more stated, in
between decided by the model with the writer's two signals at `threshold`). --fit prints the weights fitted on
every question, in the order ConfidenceModel takes them.

Only the tuning half is fitted on; the held-out half is answered once, by the app, with the weights chosen here.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from .check import load_questions
from .records import read_jsonl
from .score import is_correct
from .tally import Tally

SIGNALS = Path(__file__).resolve().parents[1] / "results" / "devset" / "signals" / "signals-tuning.jsonl"


@dataclass
class Candidate:
    text: str
    features: dict[str, float]
    label: bool


def candidates(record: dict, accepted: Sequence[str] | None, most: int = 3, writer: bool = False) -> list[Candidate]:
    """The record's candidates (core.answer.answer_confidence.candidate_indices: the judge's best `most`, with `writer`
    the sentence the recorded written answer copied from too), with their features and whether each holds an
    accepted answer (`accepted` None: an unanswerable question, none does)."""
    from infinipot.core.answer.answer_confidence import (
        AskedAbout,
        ConfidenceModel,
        candidate_indices,
        sentence_features,
        writer_features,
    )
    from infinipot.core.answer.answer_sentences import Sentence

    ranked = [Sentence(text, span, score) for text, span, score in record["ranked"]]
    written = record["written"] if writer else None
    out = []
    for i in candidate_indices(ranked, ConfidenceModel(candidates=most), record["question"], written):
        asked = AskedAbout(names=record["names"], passages=record["passages"], best_span=len(record["passages"]) - 1)
        features = sentence_features(ranked, i, record["question"], record["no_text"], asked)
        if writer:
            features |= writer_features(ranked, i, written, record["question"])
        out.append(Candidate(ranked[i].text, features, bool(accepted) and is_correct(ranked[i].text, accepted)))
    return out


def fit(cands: list[Candidate], features: Sequence[str], l2: float) -> tuple[torch.Tensor, float]:
    """Logistic regression weights (F,) and bias, the weights L2-penalised, by L-BFGS."""
    x = torch.tensor([[c.features[f] for f in features] for c in cands], dtype=torch.float64)  # (n, F)
    y = torch.tensor([float(c.label) for c in cands], dtype=torch.float64)  # (n,)
    w = torch.zeros(len(features) + 1, dtype=torch.float64, requires_grad=True)  # (F + 1,): the bias last
    optimizer = torch.optim.LBFGS([w], max_iter=500, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        logits = x @ w[:-1] + w[-1]  # (n,)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, reduction="sum")
        loss = loss + 0.5 * l2 * (w[:-1] * w[:-1]).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    w = w.detach()
    return w[:-1], float(w[-1])


def probability(c: Candidate, weights: torch.Tensor, bias: float, features: Sequence[str]) -> float:
    z = bias + sum(float(weights[i]) * c.features[f] for i, f in enumerate(features))
    return 1.0 / (1.0 + math.exp(-z))


def count(outcome: Tally, record: dict, chosen: Candidate | None, stated: bool) -> None:
    """Count one question's answer: `chosen` stated (or not found), right when it is labelled as holding the answer."""
    if record["set"] == "unanswerable":
        outcome.count_unanswerable(stated)
    else:
        outcome.count_answer(stated, chosen is not None and chosen.label)


def likeliest(cands: list[Candidate], weights, bias, features) -> tuple[Candidate | None, float]:
    scored = [(probability(c, weights, bias, features), c) for c in cands]
    p, best = max(scored, key=lambda item: item[0], default=(0.0, None))
    return best, p


def main() -> None:
    from infinipot.core.answer.answer_confidence import FEATURES, WRITER_FEATURES

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signals", type=Path, default=SIGNALS)
    parser.add_argument("--l2", type=float, default=1.0)
    parser.add_argument("--candidates", type=int, default=3, help="the judge's best sentences that may answer")
    parser.add_argument("--drop", default="", help="features left out, comma-separated")
    parser.add_argument("--thresholds", type=lambda t: [float(x) for x in t.split(",")], default=[0.45, 0.5, 0.55, 0.6])
    parser.add_argument(
        "--cascades",
        type=lambda t: [tuple(float(x) for x in c.split("/")) for c in t.split(",")],
        default=[(0.2, 0.65, 0.48)],
        help="unsure/sure/threshold triples: the writer runs between unsure and sure (recorded written answers)",
    )
    parser.add_argument("--fit", action="store_true", help="print the weights fitted on every question")
    args = parser.parse_args()
    accepted = {q["id"]: q["answers"] for q in load_questions()}
    records = read_jsonl(args.signals)
    features = [f for f in FEATURES if f not in set(args.drop.split(","))]
    per = {
        r["id"]: candidates(r, accepted.get(r["id"]) if r["set"] == "answerable" else None, args.candidates)
        for r in records
    }
    documents = sorted({r["document"] for r in records})
    answerable = [r for r in records if r["set"] == "answerable"]
    ceiling = sum(any(c.label for c in per[r["id"]]) for r in answerable)
    print(f"{len(records)} questions, {len(documents)} documents; a candidate holds the answer for {ceiling} of "
          f"{len(answerable)} answerable")  # fmt: skip
    fitted = {
        d: fit([c for r in records if r["document"] != d for c in per[r["id"]]], features, args.l2) for d in documents
    }
    chosen_right = sum(
        bool(c and c.label) for r in answerable for c in [likeliest(per[r["id"]], *fitted[r["document"]], features)[0]]
    )
    print(f"leave one document out: the likeliest candidate holds the answer for {chosen_right}")
    for threshold in args.thresholds:
        outcome = Tally()
        for r in records:
            best, p = likeliest(per[r["id"]], *fitted[r["document"]], features)
            count(outcome, r, best, best is not None and p >= threshold)
        print(f"leave one document out, threshold {threshold:g}: {outcome.line()}")
    wrote = all("written" in r for r in records)
    if wrote:
        late_features = [f for f in WRITER_FEATURES if f not in set(args.drop.split(","))]
        late = {
            r["id"]: candidates(r, accepted.get(r["id"]) if r["set"] == "answerable" else None, args.candidates, True)
            for r in records
        }
        fitted_late = {
            d: fit([c for r in records if r["document"] != d for c in late[r["id"]]], late_features, args.l2)
            for d in documents
        }
        for unsure, sure, threshold in args.cascades:
            outcome, writing = Tally(), 0
            for r in records:
                best, p = likeliest(per[r["id"]], *fitted[r["document"]], features)
                if unsure < p < sure:
                    writing += 1
                    best, p = likeliest(late[r["id"]], *fitted_late[r["document"]], late_features)
                    count(outcome, r, best, best is not None and p >= threshold)
                else:
                    count(outcome, r, best, p >= sure)
            print(
                f"leave one document out, the writer between {unsure:g} and {sure:g} (run for {writing} of "
                f"{len(records)}), then {threshold:g}: {outcome.line()}"
            )
    if args.fit:
        weights, bias = fit([c for r in records for c in per[r["id"]]], features, args.l2)
        print("fitted on every question:", json.dumps({f: round(float(weights[i]), 3) for i, f in enumerate(features)}))
        print(f"weights=({', '.join(f'{float(v):.3f}' for v in weights)}), bias={bias:.3f}")
        if wrote:
            weights, bias = fit([c for r in records for c in late[r["id"]]], late_features, args.l2)
            print(f"writer_weights=({', '.join(f'{float(v):.3f}' for v in weights)}), writer_bias={bias:.3f}")


if __name__ == "__main__":
    main()
