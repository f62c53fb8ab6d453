"""The learned judge replayed over the development set's recorded signals, with today's decision beside it.

    python -m benchmarks.judge.replay [--signals bench-results/judge/signals] [--half tuning|heldout]
        [--head assets/judge_head.safetensors]

The signals (benchmarks.devset.signals: the app's own passages and judge, each sentence's token log-probabilities
and hidden states, the writer's answer) are decided twice from the same run: by the head (core.answer.learned_judge)
and, head off, by the decision it replaces (core.answer.answer_confidence's shipped weights, the writer in its doubt
band). Printed per half: stated right / stated wrong / "closest" or "not found" while the quote holds the answer /
not found, and unanswerable questions marked.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import torch

from benchmarks.devset.check import load_questions
from benchmarks.devset.records import read_jsonl
from benchmarks.devset.score import is_correct
from benchmarks.devset.tally import Tally

SIGNALS = Path("bench-results/judge/signals")


@dataclass
class Recorded:
    """One recorded question: its record, ranked Sentences judged in detail, and no text's Judgement."""

    record: dict
    ranked: list
    blank: object


def judged_again(units, tokens, states: torch.Tensor, blank_score: float, blank_tokens):
    """Recorded judgements as the judge gave them: the ranked Sentences ((text, span, score) per unit, each with its
    token log-probabilities and its row of `states`, (units + 1, hidden)) and no text's Judgement (the last row)."""
    from infinipot.core.answer.answer_sentences import Sentence
    from infinipot.core.answer.rerank import Judgement

    states = states.float()
    ranked = [
        Sentence(text, span, score, Judgement(score, tuple(one), states[i]))
        for i, ((text, span, score), one) in enumerate(zip(units, tokens, strict=True))
    ]
    return ranked, Judgement(blank_score, tuple(blank_tokens), states[-1])


def load_recorded(signals: Path, half: str) -> list[Recorded]:
    out = []
    for record in read_jsonl(signals / f"signals-{half}.jsonl"):
        states = torch.load(signals / f"states-{half}" / f"{record['set']}-{record['id']}.pt")
        ranked, blank = judged_again(record["ranked"], record["tokens"], states, record["no_text"],
                                     record["no_text_tokens"])  # fmt: skip
        out.append(Recorded(record, ranked, blank))
    return out


def head_choices(recorded: list[Recorded], head) -> list[tuple[object, float]]:
    """The head's likeliest sentence and its probability, per recorded question."""
    from infinipot.core.answer.answer_confidence import AskedAbout
    from infinipot.core.answer.learned_judge import learned_likeliest

    choices = []
    for one in recorded:
        r = one.record
        asked = AskedAbout(names=r["names"], passages=r["passages"], best_span=len(r["passages"]) - 1)
        choices.append(learned_likeliest(one.ranked, one.blank, r["question"], head, asked))
    return choices


def outcome(recorded: list[Recorded], choices, stated_at: float) -> Tally:
    """The answers the choices give when stated at `stated_at` or more."""
    accepted = {q["id"]: q["answers"] for q in load_questions()}
    tally = Tally()
    for one, (sentence, p) in zip(recorded, choices, strict=True):
        stated = sentence is not None and p >= stated_at
        if one.record["set"] == "unanswerable":
            tally.count_unanswerable(stated)
        else:
            right = sentence is not None and is_correct(sentence.text, accepted[one.record["id"]])
            tally.count_answer(stated, right)
    return tally


def today_choices(recorded: list[Recorded]) -> list[tuple[object, float]]:
    """The decision the head replaces, with the shipped weights: the likeliest of the judge's best three by the
    logistic model, the writer's recorded answer weighed in the doubt band; (sentence, 1.0 when stated else 0.0)."""
    from infinipot.core.answer.answer_confidence import AskedAbout, ConfidenceModel, likeliest

    model = ConfidenceModel()
    choices = []
    for one in recorded:
        r = one.record
        asked = AskedAbout(names=r["names"], passages=r["passages"], best_span=len(r["passages"]) - 1)
        sentence, p = likeliest(one.ranked, r["question"], r["no_text"], model, asked)
        stated = sentence is not None and p >= model.sure
        if not stated and sentence is not None and p > model.unsure:
            sentence, p = likeliest(one.ranked, r["question"], r["no_text"], model, asked, r["written"])
            stated = p >= model.threshold
        choices.append((sentence, 1.0 if stated else 0.0))
    return choices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signals", type=Path, default=SIGNALS)
    parser.add_argument("--half", action="append", choices=("tuning", "heldout"))
    parser.add_argument("--head", type=Path, default=None, help="a head file (default: the shipped one)")
    args = parser.parse_args()
    from infinipot.core.answer.learned_judge import load_head, shipped_head

    head = load_head(args.head) if args.head else shipped_head()
    for half in args.half or ["tuning", "heldout"]:
        recorded = load_recorded(args.signals, half)
        print(f"{half} ({len(recorded)} questions)")
        learned = outcome(recorded, head_choices(recorded, head), head.stated)
        print(f"  head on  (stated at {head.stated:g}): {learned.line()}")
        print(f"  head off (today's decision): {outcome(recorded, today_choices(recorded), 0.5).line()}")


if __name__ == "__main__":
    main()
