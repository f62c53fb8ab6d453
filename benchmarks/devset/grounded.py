"""Answers a user can trust, measured: the 54 questions, the unanswerable ones and the follow-up pairs, asked
through the app's Python API (DocumentService.ask) with one answer-grounding setting.

    python -m benchmarks.devset.grounded [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev]
        [--out benchmarks/results/devset/grounded] [--style checked|sentence|free] [--threshold P]
        [--sets answerable,unanswerable,followups,paraphrases] [--pointer retrieval-heads|later-layers]
        [--words-per-attention N] [--words-lead-score S] [--neighbour-sentences N] [--threads 2]
        [--half all|tuning|heldout] [--note WHAT] [--report-only]

Each run is named by its style and what --note says it tries (`checked, calibrated`, `free`, ...); runs before
issue 53 were named by the rules of their time (`checked+standout0.75@none`). Each run has a file of its own,
<out>/answers-<when it started>-<its label>.jsonl.gz: one JSON line per answer is appended to the same name without
.gz while it runs (a rerun of the same label skips what is there) and compressed when it ends. <out>/report.md is
rewritten from every run's file there (and answers.jsonl, where earlier runs kept all their records in one file) with
tables per half and per kind of document (tally.py), then the first development set's table per run:

- answerable questions (questions.jsonl): correct (score.is_correct on the answer text), split into stated (an
  answer given as the document's) and in the closest passage (an answer marked `answerable: false` that quotes
  a sentence holding it), **confidently wrong** (not correct and not marked `answerable: false`), marked not
  found, evidence recall (a passage read holds the answer), loops, median seconds to first token;
- unanswerable questions (unanswerable.jsonl): the share marked `answerable: false`, by kind;
- follow-ups (followups.jsonl): the first question asked in a new conversation, the follow-up asked in it
  (`conversation_id`), and the standalone wording asked on its own; right counts of both;
- paraphrased questions (paraphrases.jsonl, no content word shared with the answering sentence): correct, and
  evidence recall with that sentence as the evidence.

--pointer, --words-per-attention, --words-lead-score and --neighbour-sentences change the evidence (EvidenceConfig)
without naming the run: give such a run its own --out.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import statistics
import time
from dataclasses import replace
from pathlib import Path

from .check import load_followups, load_paraphrases, load_questions, load_unanswerable
from .documents import DEFAULT_DIR, DOCUMENTS, HALVES, document_path
from .records import append_jsonl, read_jsonl, write_jsonl_gz
from .score import evidence_holds, is_correct, loops
from .tally import HALF_HEADER, KIND_HEADER, half_row, kind_row, tally

HERE = Path(__file__).parent
RESULTS = HERE.parent / "results" / "devset" / "grounded"
# Where every run's records went, one file for all, before each run had its own; still read.
ALL_RUNS = "answers.jsonl"
SETS = ("answerable", "unanswerable", "followups", "paraphrases")
# The four documents of the first development set (54 answerable questions), whose table is kept as it was.
FIRST_FOUR = {key for key, doc in DOCUMENTS.items() if doc.paraphrased}


def run_file(out: Path, label: str) -> Path:
    """The compressed records of the run named `label`: the file there for it, or a new name stamped with the time
    (UTC) it starts; the label is shortened for the name, and a hash of it keeps names apart."""
    slug = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:40].strip("-")
    name = f"{slug}-{hashlib.sha1(label.encode()).hexdigest()[:6]}.jsonl"
    there = sorted(out.glob(f"answers-*-{name}.gz")) + sorted(out.glob(f"answers-*-{name}"))
    if there:
        return there[0].with_name(there[0].name.removesuffix(".gz") + ".gz")
    return out / f"answers-{time.strftime('%Y-%m-%d-%H%M', time.gmtime())}-{name}.gz"


def finish_run(kept: Path) -> None:
    """The run's records appended while it ran, added to its compressed file (which holds them all after)."""
    under_way = kept.with_suffix("")
    if under_way.exists():
        write_jsonl_gz(kept, read_jsonl(kept) + read_jsonl(under_way))
        under_way.unlink()


def read_runs(out: Path) -> list[dict]:
    """Every run's records in `out`, in the order the runs started: answers.jsonl's first, then each run's file,
    the records of a run under way (or interrupted) included."""
    files = [p for p in out.glob("answers-*.jsonl*") if p.suffix in (".jsonl", ".gz")]
    files.sort(key=lambda p: p.name.removesuffix(".gz"))
    return [record for path in [out / ALL_RUNS, *files] for record in read_jsonl(path)]


def _ask(service, doc_id, question, settings, conversation_id=None, record=False, model="default") -> dict:
    began = time.perf_counter()
    pieces, stats, _ = service.ask(
        doc_id, question, settings, conversation_id=conversation_id, record=record, model_name=model
    )
    answer = "".join(pieces).strip()
    return {
        "answer": answer,
        "answerable": stats.answerable,
        "answer_state": stats.answer_state,
        "answer_sentence": stats.answer_sentence,
        "written": stats.written_answer,
        "answered_by": stats.answered_by,
        "decided_by": stats.decided_by,
        "confidence": stats.confidence,
        "ranked": stats.ranked_sentences,
        "ranked_scores": stats.ranked_scores,
        "snippets": [c.get("snippet") or "" for c in stats.citations],
        "quote": (stats.citations[0].get("quote") if stats.citations else "") or "",
        "labels": [c.get("label") for c in stats.citations],
        "ttft_seconds": stats.first_token_seconds,
        "wall_seconds": round(time.perf_counter() - began, 3),
        "conversation_id": stats.conversation_id,
    }


def answer_all(args, label: str) -> None:
    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.app.service import DocumentService
    from infinipot.core.answer.grounded_answer import GroundingConfig
    from infinipot.core.config import PotConfig

    settings = AnswerSettings()
    grounding = GroundingConfig(style=args.style, learned=not args.no_learned)
    if args.threshold is not None:
        grounding = replace(grounding, confidence=replace(grounding.confidence, threshold=args.threshold))
    settings = replace(settings, grounding=grounding)
    pointing = {
        "pointer": args.pointer,
        "words_per_attention": args.words_per_attention,
        "words_lead_score": args.words_lead_score,
        "neighbour_sentences": args.neighbour_sentences,
    }
    settings = replace(
        settings, evidence=replace(settings.evidence, **{k: v for k, v in pointing.items() if v is not None})
    )
    args.out.mkdir(parents=True, exist_ok=True)
    kept = run_file(args.out, label)
    under_way = kept.with_suffix("")  # the same name without .gz, appended to as each answer comes
    earlier = [r for r in read_jsonl(args.out / ALL_RUNS) if r["run"] == label]
    done = {(r["set"], r["id"]) for r in earlier + read_jsonl(kept) + read_jsonl(under_way)}
    service = DocumentService(Path(args.home), device="cpu")
    work = []
    if "answerable" in args.sets:
        work += [("answerable", q) for q in load_questions()]
    if "unanswerable" in args.sets:
        work += [("unanswerable", q) for q in load_unanswerable()]
    if "followups" in args.sets:
        work += [("followups", q) for q in load_followups()]
    if "paraphrases" in args.sets:
        work += [("paraphrases", q) for q in load_paraphrases()]
    keys = set(DOCUMENTS) if args.half == "all" else {k for k, d in DOCUMENTS.items() if d.half == args.half}
    if args.documents:
        keys &= set(args.documents.split(","))
    work = [(kind, q) for kind, q in work if q["document"] in keys]
    doc_ids: dict[str, str] = {}
    for kind, q in work:
        if (kind, q["id"]) in done:
            continue
        if q["document"] not in doc_ids:
            doc_ids[q["document"]] = service.read(
                document_path(args.docs, q["document"]), PotConfig(), args.model
            ).doc_id
        doc_id = doc_ids[q["document"]]
        record = {"run": label, "set": kind, "id": q["id"], "document": q["document"]}
        if kind == "followups":
            first = _ask(service, doc_id, q["first"], settings, record=True, model=args.model)
            conversation = first["conversation_id"]
            follow = _ask(service, doc_id, q["followup"], settings, conversation_id=conversation, model=args.model)
            alone = _ask(service, doc_id, q["standalone"], settings, model=args.model)
            record.update(first=first, followup=follow, standalone=alone)
            shown = follow["answer"]
        else:
            record.update(question=q["question"], **_ask(service, doc_id, q["question"], settings, model=args.model))
            shown = record["answer"]
        append_jsonl(under_way, record)
        print(f"{label} {kind} {q['id']}: {shown[:100]!r}", flush=True)
    finish_run(kept)


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def halves_tables(records: list[dict], questions: dict, unanswerable: dict, followups: dict) -> list[str]:
    """The tables per half (held-out first, then tuning, then the first four documents) and per kind of document."""
    runs = list(dict.fromkeys(r["run"] for r in records))
    wide = [run for run in runs if any(r["run"] == run and r["document"] not in FIRST_FOUR for r in records)]
    if not wide:
        return []
    lines = ["## Held-out and tuning halves", "", HALF_HEADER]
    scopes = [(half, {k for k, d in DOCUMENTS.items() if d.half == half}) for half in reversed(HALVES)]
    scopes.append(("first four (the 54)", FIRST_FOUR))
    for half, keys in scopes:
        for run in wide:
            mine = [r for r in records if r["run"] == run]
            if any(r["document"] in keys for r in mine):
                lines.append(half_row(run, half, tally(mine, questions, unanswerable, followups, keys)))
    lines += ["", "## Per kind of document", "", KIND_HEADER]
    for run in wide:
        mine = [r for r in records if r["run"] == run]
        for half in HALVES:
            genres = dict.fromkeys(d.genre for d in DOCUMENTS.values() if d.half == half)
            for genre in genres:
                keys = {k for k, d in DOCUMENTS.items() if d.half == half and d.genre == genre}
                if any(r["document"] in keys for r in mine):
                    lines.append(kind_row(run, genre, half, tally(mine, questions, unanswerable, followups, keys)))
    return lines + [""]


def report(args) -> str:
    records = read_runs(args.out)
    questions = {q["id"]: q for q in load_questions()}
    followups = {q["id"]: q for q in load_followups()}
    unanswerable = {q["id"]: q for q in load_unanswerable()}
    paraphrases = {q["id"]: {**q, "evidence": q["sentence"]} for q in load_paraphrases()}
    lines = ["# Grounded answers on the development set", "", "Written by `python -m benchmarks.devset.grounded`.", ""]
    lines += halves_tables(records, questions, unanswerable, followups)
    first_four = [r for r in records if r["document"] in FIRST_FOUR]
    lines += ["## The first development set (four documents, 54 answerable questions)", ""]
    lines += [
        "| run | answerable n | correct (stated + in the closest passage) | confidently wrong | marked not found "
        "| evidence recall | loops | median s to first token | unanswerable marked | follow-ups right "
        "| same asked alone | paraphrased: correct (stated + closest), evidence recall |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in dict.fromkeys(r["run"] for r in first_four):
        mine = [r for r in first_four if r["run"] == run]
        asked = [r for r in mine if r["set"] == "answerable" and r["id"] in questions]
        right = [is_correct(r["answer"], questions[r["id"]]["answers"]) for r in asked]
        marked = [not r["answerable"] for r in asked]
        held = [
            evidence_holds(r["snippets"], [*questions[r["id"]]["answers"], questions[r["id"]]["evidence"]])
            for r in asked
        ]
        wrong = sum(1 for ok, no in zip(right, marked, strict=True) if not ok and not no)
        loops_count = sum(loops(r["answer"]) for r in asked)
        unans = [r for r in mine if r["set"] == "unanswerable" and r["id"] in unanswerable]
        caught = sum(not r["answerable"] for r in unans)
        follows = [r for r in mine if r["set"] == "followups" and r["id"] in followups]
        follow_right = sum(is_correct(r["followup"]["answer"], followups[r["id"]]["answers"]) for r in follows)
        alone_right = sum(is_correct(r["standalone"]["answer"], followups[r["id"]]["answers"]) for r in follows)
        stated = sum(1 for ok, no in zip(right, marked, strict=True) if ok and not no)
        para = [r for r in mine if r["set"] == "paraphrases" and r["id"] in paraphrases]
        para_right = [is_correct(r["answer"], paraphrases[r["id"]]["answers"]) for r in para]
        para_stated = sum(ok and r["answerable"] for ok, r in zip(para_right, para, strict=True))
        para_held = sum(
            evidence_holds(r["snippets"], [*paraphrases[r["id"]]["answers"], paraphrases[r["id"]]["sentence"]])
            for r in para
        )
        para_cell = f"{sum(para_right)} ({para_stated} + {sum(para_right) - para_stated}), {para_held} of {len(para)}"
        lines.append(
            f"| {run} | {len(asked)} | {sum(right)} ({stated} + {sum(right) - stated}) | {wrong} | {sum(marked)} "
            f"| {sum(held)} | {loops_count} "
            f"| {_median([r.get('ttft_seconds') for r in asked])} | {caught}/{len(unans)} "
            f"| {follow_right}/{len(follows)} | {alone_right}/{len(follows)} | {para_cell if para else '-'} |"
        )
    lines += ["", "## Every answer", ""]
    for r in records:
        if r["set"] == "followups":
            q = followups[r["id"]]
            ok = is_correct(r["followup"]["answer"], q["answers"])
            lines.append(
                f"- {r['run']} {r['id']} {'RIGHT' if ok else 'wrong'}: {q['first']} -> {r['first']['answer']!r}; "
                f"{q['followup']} -> {r['followup']['answer']!r} (alone: {r['standalone']['answer']!r})"
            )
        elif r["set"] == "unanswerable":
            verdict = "marked" if not r["answerable"] else "ANSWERED"
            lines.append(f"- {r['run']} {r['id']} {verdict}: {r['question']} -> {r['answer']!r}")
        elif r["id"] in questions or r["id"] in paraphrases:
            ok = is_correct(r["answer"], {**questions, **paraphrases}[r["id"]]["answers"])
            tag = "right" if ok else ("abstained" if not r["answerable"] else "WRONG")
            lines.append(f"- {r['run']} {r['id']} {tag}: {r['question']} -> {r['answer']!r}")
    text = "\n".join(lines) + "\n"
    (args.out / "report.md").write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--style", default="checked")
    parser.add_argument("--threshold", type=float, help="the calibrated answer's threshold (its default otherwise)")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--pointer", help="whose attention points at the passages (EvidenceConfig's default)")
    parser.add_argument("--words-per-attention", type=int, help="how the two rankings interleave (the default)")
    parser.add_argument("--words-lead-score", type=float, help="when the words lead (the default)")
    parser.add_argument("--neighbour-sentences", type=int, help="sentences the spans read take on each side")
    parser.add_argument("--note", help="added to the run's label (what this run tries)")
    parser.add_argument("--half", choices=("all", *HALVES), default="all", help="the documents asked (default all)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--model", default="default", help="the model read and asked with (a GGUF file, a folder)")
    parser.add_argument("--documents", help="only these documents (keys, comma-separated)")
    parser.add_argument("--no-learned", action="store_true", help="decide without the learned judge (its ablation)")
    args = parser.parse_args()
    args.sets = [s for s in args.sets.split(",") if s]
    if not args.report_only:
        label = args.style + (f", threshold {args.threshold:g}" if args.threshold is not None else "")
        label += ", learned judge off" if args.no_learned else ""
        label += f", model {Path(args.model).name}" if args.model != "default" else ""
        answer_all(args, label + (f", {args.note}" if args.note else ""))
    print(report(args).split("## Every answer")[0])


if __name__ == "__main__":
    main()
