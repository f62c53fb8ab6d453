"""The strict decision's threshold, chosen on recorded answers: for a model the calibrated decision was not fitted on
(core.answer.answer_confidence.ConfidenceModel.for_model), the likeliest sentence is stated at probability `strict`
or more and the writer is never weighed, so a run's records say what any threshold would have stated.

    python -m benchmarks.devset.strict --records benchmarks/results/gemma3/devset-answers.jsonl.gz [--run LABEL]
        [--half tuning] [--thresholds 0.5,0.6,0.7,0.8,0.9]

For each threshold: stated right, stated wrong, not stated while the likeliest holds the answer, unanswerable
marked; choose on the tuning half, report the held-out half at the threshold chosen.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .check import load_questions, load_unanswerable
from .documents import DOCUMENTS
from .records import read_jsonl
from .score import is_correct


def sweep(records: list[dict], thresholds: list[float]) -> list[dict]:
    """Per threshold, the answerable questions' counts and the unanswerable ones marked, from recorded likeliest
    sentences and their probabilities (a record without one is never stated)."""
    questions = {q["id"]: q for q in load_questions()}
    unanswerable = {q["id"] for q in load_unanswerable()}
    rows = []
    for threshold in thresholds:
        row = {"threshold": threshold, "answerable": 0, "right": 0, "wrong": 0, "holds": 0, "unanswerable": 0}
        row["marked"] = 0
        for record in records:
            stated = record.get("confidence") is not None and record["confidence"] >= threshold
            if record["set"] == "answerable" and record["id"] in questions:
                holds = is_correct(record.get("answer_sentence") or "", questions[record["id"]]["answers"])
                row["answerable"] += 1
                row["right"] += stated and holds
                row["wrong"] += stated and not holds
                row["holds"] += not stated and holds
            elif record["set"] == "unanswerable" and record["id"] in unanswerable:
                row["unanswerable"] += 1
                row["marked"] += not stated
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| threshold | stated right | stated wrong | not stated, likeliest holds it | unanswerable marked |",
        "|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        n = max(row["answerable"], 1)
        lines.append(
            f"| {row['threshold']:.2f} | {row['right']}/{row['answerable']} ({100 * row['right'] / n:.0f}%) "
            f"| {row['wrong']} ({100 * row['wrong'] / n:.0f}%) | {row['holds']} ({100 * row['holds'] / n:.0f}%) "
            f"| {row['marked']}/{row['unanswerable']} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=Path, required=True)
    parser.add_argument("--run", help="the run's label (the last run in the file when not given)")
    parser.add_argument("--half", choices=("all", "tuning", "heldout"), default="all")
    parser.add_argument("--thresholds", default="0.5,0.6,0.7,0.8,0.85,0.9")
    args = parser.parse_args()
    records = list(read_jsonl(args.records))
    run = args.run or records[-1]["run"]
    keys = {key for key, doc in DOCUMENTS.items() if args.half == "all" or doc.half == args.half}
    chosen = [r for r in records if r["run"] == run and r["document"] in keys]
    print(f"{run} ({args.half} half, {len(chosen)} records)")
    print(table(sweep(chosen, [float(t) for t in args.thresholds.split(",")])))


if __name__ == "__main__":
    main()
