"""Answer modes on whole documents, and the evidence budget curve, on the development questions.

    python -m benchmarks.devset.run_modes [--docs bench-results/devset-docs] [--home /tmp/ip-home-devset-modes]
        [--out benchmarks/devset/results] [--modes evidence,pot,focus] [--budgets 768] [--questions N]
        [--ids story-01,log-05] [--threads 1] [--report-only]

Every document is read once into a stored pot (DocumentService.read with the default PotConfig; a later run
reuses it from --home), then every question is asked through the app's Python API, DocumentService.ask, with
record=False and the default decoding (AnswerSettings().decoding), in each answer mode: `evidence` at each
--budgets (EvidenceConfig.budget_tokens), `pot` and `focus` once (the budget does not apply to them; their
records carry budget null). --questions N keeps the first N questions of each document (a quick run).

One JSON line per (mode, budget, question) is appended to <out>/modes.jsonl as soon as it is answered, in the
format score.score_records reads ({"id", "mode", "answer", "snippets", "citations", "ttft_seconds", ...}); a
rerun skips the records already there (resumable). An answer that raised is written to <out>/modes-errors.jsonl
instead (with its traceback) and asked again on the next run. After answering, <out>/modes.md (tables over
every record in modes.jsonl) and <out>/evidence_budget.png (correct % and evidence recall % against median time
to first token, evidence mode per budget) are rewritten; --report-only rewrites them without answering.

Evidence recall here is score.evidence_holds over the cited snippets (one snippet holds an accepted answer or
the evidence quote): in evidence mode the snippets are the spans read into the answer's context; in pot and
focus modes they are the text around the places the answer's attention cites (app.ask.citing), so they say
whether the answer drew on the right place, not what the model was shown.

torch runs on --threads threads (1 by default: on the shared 2-core machines, one thread is far faster than two
when other jobs run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shlex
import statistics
import subprocess
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path

from .check import load_questions
from .documents import DEFAULT_DIR, DOCUMENTS, document_path
from .score import score_records

RESULTS = Path(__file__).with_name("results")
ROOT = Path(__file__).resolve().parents[2]
DEFAULT_HOME = Path("/tmp/ip-home-devset-modes")
MODES = ("evidence", "pot", "focus")
DEFAULT_BUDGET = 1024
CURVE_BUDGETS = (256, 512, 768, 1024, 1536)
# The reading ceiling: layout c of prompt_shapes (the model handed the answer's own ~450-token passage).
CEILING = {"label": "c-answer-from-text (prompt_shapes.md)", "correct": 44.4, "n": 54, "right": 24}
CEILING_PER_DOCUMENT = {"libtasn1": 43, "mime-spec": 43, "story": 64, "log": 25}


def run_name(
    mode: str,
    budget: int | None,
    pot_entries: int | None = None,
    read_spans: int = 0,
    question_first: bool = False,
    contrast: float = 0.0,
) -> str:
    """`evidence@768` (every candidate within the budget read after the template's opening alone,
    EvidenceConfig.pot_entries 0), `evidence@768+pot` (after the whole pot), `evidence@768+pot256` (after a copy
    distilled to 256 entries); `/read3`: only the 3 candidates the question is likeliest after are read; `/qfirst`:
    the question is also written before the spans; `/contrast0.5`: context-contrast decoding with that weight
    (DecodingConfig.contrast), in any mode."""
    contrasted = f"/contrast{contrast:g}" if contrast else ""
    if mode != "evidence":
        return mode + contrasted
    from infinipot.core.evidence import after_pot_suffix

    return (
        f"{mode}@{budget}{after_pot_suffix(pot_entries)}"
        + (f"/read{read_spans}" if read_spans else "")
        + ("/qfirst" if question_first else "")
        + contrasted
    )


def record_pot(record: dict) -> int | None:
    """The record's EvidenceConfig.pot_entries; records made before the setting existed followed the whole pot."""
    return record.get("pot_entries") if record["mode"] == "evidence" else None


def record_read(record: dict) -> int:
    """The record's EvidenceConfig.read_spans; records made before reranking existed read every candidate (0)."""
    return record.get("read_spans", 0) if record["mode"] == "evidence" else 0


def record_run(record: dict) -> str:
    name = run_name(
        record["mode"],
        record.get("budget"),
        record_pot(record),
        record_read(record),
        record_question_first(record),
        record.get("contrast", 0.0),
    )
    return name + ("/best-last" if record["mode"] == "evidence" and record.get("order") == "likelihood" else "")


def record_question_first(record: dict) -> bool:
    return bool(record.get("question_first", False)) and record["mode"] == "evidence"


def record_key(record: dict) -> tuple:
    evidence = record["mode"] == "evidence"
    budget = record.get("budget") if evidence else None
    return (
        record["id"],
        record["mode"],
        budget,
        record_pot(record),
        record_read(record),
        record_question_first(record),
        record.get("order", "document") if evidence else "document",
        record.get("contrast", 0.0),
    )


def run_fields(
    args: argparse.Namespace, mode: str, budget: int | None, pot_entries: int | None, read_spans: int
) -> dict:
    """The settings a record of this run carries (what record_key and record_run read back)."""
    evidence = mode == "evidence"
    return {
        "mode": mode,
        "budget": budget,
        "pot_entries": pot_entries,
        "read_spans": read_spans,
        "question_first": args.question_first and evidence,
        "order": args.order if evidence else "document",
        "contrast": args.contrast,
    }


def parse_pot_entries(text: str) -> list[int | None]:
    """`--evidence-pot`: comma-separated entries before the passages, `all` for the whole pot."""
    return [None if part.strip() == "all" else int(part) for part in text.split(",") if part.strip()]


def read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    records = []
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"{path}:{number}: skipping a line that is not JSON (an interrupted write?)", file=sys.stderr)
    return records


def append_jsonl(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()


# The answering code a record was made with (other work edits it between runs): a hash of these files.
CODE_FILES = (
    "app/service.py",
    "app/ask/evidence.py",
    "app/ask/modes.py",
    "app/ask/conversation.py",
    "app/ask/citing.py",
    "core/evidence.py",
    "core/engine.py",
    "core/generate.py",
    "core/decoding.py",
    "core/prompts.py",
    "core/citations.py",
    "core/distill.py",
    "assets/cap_prompts.json",
)


def code_hash(root: Path = ROOT) -> str:
    digest = hashlib.sha256()
    for name in CODE_FILES:
        path = root / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.is_file() else b"(missing)") + b"\0")
    return digest.hexdigest()[:10]


def git_head(root: Path = ROOT) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return ""


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# -- answering -----------------------------------------------------------------------------------------------


def pick_questions(questions: list[dict], per_document: int | None, ids: set[str] | None) -> list[dict]:
    chosen, seen = [], {}
    for question in questions:
        if ids and question["id"] not in ids:
            continue
        seen[question["document"]] = seen.get(question["document"], 0) + 1
        if per_document is not None and seen[question["document"]] > per_document:
            continue
        chosen.append(question)
    return chosen


def answer_all(
    args: argparse.Namespace, questions: list[dict], runs: list[tuple[str, int | None, int | None, int]]
) -> dict:
    import torch

    torch.set_num_threads(args.threads)
    code = code_hash()  # hashed before importing the app, so it is the code this run answers with

    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig
    from infinipot.core.evidence import EvidenceConfig
    from infinipot.core.precision import dtype_name

    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    records_path, errors_path, reads_path = out / "modes.jsonl", out / "modes-errors.jsonl", out / "modes-reads.json"
    done = {record_key(r) for r in read_jsonl(records_path)}
    reads = json.loads(reads_path.read_text()) if reads_path.is_file() else {}
    decoding = replace(AnswerSettings().decoding, contrast=args.contrast)
    started = time.perf_counter()
    service = DocumentService(Path(args.home), device="cpu")
    answered = errors = 0
    by_document: dict[str, list[dict]] = {}
    for question in questions:
        by_document.setdefault(question["document"], []).append(question)
    for document, items in by_document.items():
        todo = [
            (mode, budget, pot, read, q)
            for mode, budget, pot, read in runs
            for q in items
            if record_key({"id": q["id"], **run_fields(args, mode, budget, pot, read)}) not in done
        ]
        if not todo:
            print(f"{document}: all {len(items) * len(runs)} answers already in {records_path}", flush=True)
            continue
        path = document_path(args.docs, document)
        began = time.perf_counter()
        report = service.read(path, PotConfig())
        read_seconds = time.perf_counter() - began
        reused = bool(getattr(report, "reused", False))
        print(f"{document}: pot {report.doc_id} ({read_seconds:.1f} s{', reused' if reused else ''})", flush=True)
        dtype = dtype_name(service.open_pot(report.doc_id).engine.loaded.dtype)
        if not reused or document not in reads:
            reads[document] = {"doc_id": report.doc_id, "seconds": round(read_seconds, 1), "reused": reused}
            for name in ("tokens", "document_tokens", "entries", "pot_entries"):
                value = getattr(report, name, None)
                if isinstance(value, int | float):
                    reads[document][name] = value
            reads_path.write_text(json.dumps(reads, indent=2) + "\n", encoding="utf-8")
        for mode, budget, pot_entries, read_spans, question in todo:
            evidence = EvidenceConfig(
                budget_tokens=budget or DEFAULT_BUDGET,
                pot_entries=pot_entries,
                read_spans=read_spans,
                question_first=args.question_first,
                order=args.order,
            )
            settings = AnswerSettings(answer_from=mode, evidence=evidence, decoding=decoding)
            began = time.perf_counter()
            try:
                pieces, stats, pot_reused = service.ask(report.doc_id, question["question"], settings, record=False)
                answer = "".join(pieces).strip()
            except Exception as exc:  # noqa: BLE001 - recorded, retried on the next run
                errors += 1
                message = f"{type(exc).__name__}: {exc}"
                print(
                    f"  {question['id']} {run_name(mode, budget, pot_entries, read_spans)}: ERROR {message}", flush=True
                )
                append_jsonl(
                    errors_path,
                    {
                        "id": question["id"],
                        "mode": mode,
                        "budget": budget,
                        "pot_entries": pot_entries,
                        "read_spans": read_spans,
                        "error": message,
                        "traceback": traceback.format_exc(),
                        "at": time.strftime("%Y-%m-%d %H:%M:%S"),
                    },
                )
                continue
            wall = time.perf_counter() - began
            citations = [
                {k: c.get(k) for k in ("label", "page", "line", "token", "score", "snippet")}
                for c in (stats.citations or [])
            ]
            fields = run_fields(args, mode, budget, pot_entries, read_spans)
            record = {
                "id": question["id"],
                "document": document,
                **fields,
                "run": run_name(mode, budget, pot_entries, read_spans, fields["question_first"], fields["contrast"]),
                "question": question["question"],
                "answer": answer,
                "ttft_seconds": None if stats.first_token_seconds is None else round(stats.first_token_seconds, 3),
                "seconds": round(stats.seconds, 3),
                "wall_seconds": round(wall, 3),
                "load_seconds": round(stats.load_seconds, 3),
                "evidence_seconds": round(stats.evidence_seconds, 3),
                "new_tokens": stats.new_tokens,
                "stopped_by": stats.stopped_by,
                "evidence_tokens": stats.evidence_tokens,
                "answer_entries": stats.answer_entries,
                "warnings": list(stats.warnings),
                "snippets": [c["snippet"] or "" for c in citations],
                "citations": citations,
                "pot_reused": pot_reused,
                "threads": args.threads,
                "dtype": dtype,
                "code": code,
            }
            append_jsonl(records_path, record)
            answered += 1
            print(
                f"  {question['id']} {record['run']}: ttft {record['ttft_seconds']} s, {record['seconds']} s, "
                f"{record['new_tokens']} tok ({record['stopped_by']}): {answer[:90]!r}",
                flush=True,
            )
    minutes = round((time.perf_counter() - started) / 60, 1)
    return {"answered": answered, "errors": errors, "minutes": minutes, "code": code, "git_head": git_head()}


# -- report --------------------------------------------------------------------------------------------------


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 2) if values else None


def _pct(flags: list[bool]) -> float | None:
    return round(100.0 * sum(flags) / len(flags), 1) if flags else None


def _cell(value, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value}{suffix}"


def _squash(text: str, limit: int | None = None) -> str:
    text = " ".join((text or "").split()).replace("|", "\\|")
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text or "(empty)"


def _run_order(record: dict) -> tuple:
    mode, pot = record["mode"], record_pot(record)
    pot_order = -1 if pot is None else pot
    return (MODES.index(mode) if mode in MODES else 9, pot_order, record_read(record), record.get("budget") or 0)


def _sort_runs(records: list[dict]) -> list[str]:
    """The runs of these records, by mode, then what the passages follow, then budget."""
    firsts: dict[str, dict] = {}
    for record in records:
        firsts.setdefault(record_run(record), record)
    return sorted(firsts, key=lambda name: _run_order(firsts[name]))


def summary_rows(scored: list[dict]) -> list[dict]:
    groups: dict[str, list[dict]] = {}
    for record in scored:
        record["run"] = record_run(record)
        groups.setdefault(record["run"], []).append(record)
    rows = []
    for name in _sort_runs(scored):
        items = groups[name]
        rows.append(
            {
                "run": name,
                "mode": items[0]["mode"],
                "budget": items[0].get("budget"),
                "pot_entries": record_pot(items[0]),
                "read_spans": record_read(items[0]),
                "n": len(items),
                "evidence_recall": _pct([bool(r["evidence"]) for r in items if r.get("evidence") is not None]),
                "evidence_right": sum(bool(r["evidence"]) for r in items),
                "correct": _pct([bool(r["correct"]) for r in items]),
                "right": sum(bool(r["correct"]) for r in items),
                "looping": sum(bool(r["looped"]) for r in items),
                "median_ttft": _median([r.get("ttft_seconds") for r in items]),
                "median_seconds": _median([r.get("seconds") for r in items]),
                "median_new_tokens": _median([r.get("new_tokens") for r in items]),
                "median_evidence_tokens": _median([r.get("evidence_tokens") for r in items]),
                "length_stops": sum(r.get("stopped_by") == "length" for r in items),
                "repeat_stops": sum(r.get("stopped_by") == "repeat" for r in items),
            }
        )
    return rows


def rows_table(rows: list[dict]) -> list[str]:
    lines = [
        "| run | n | evidence recall | correct | looping | median s to first token | median s answering "
        "| median new tokens | stopped by length / repeat | median evidence tokens | ceiling (layout c) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['run']} | {row['n']} | {_cell(row['evidence_recall'], '%')} ({row['evidence_right']}) "
            f"| {_cell(row['correct'], '%')} ({row['right']}) | {row['looping']} | {_cell(row['median_ttft'])} "
            f"| {_cell(row['median_seconds'])} | {_cell(row['median_new_tokens'])} "
            f"| {row['length_stops']} / {row['repeat_stops']} | {_cell(row['median_evidence_tokens'])} "
            f"| {CEILING['correct']}% |"
        )
    return lines


def per_document_table(scored: list[dict], runs: list[str]) -> list[str]:
    documents = list(DOCUMENTS)
    header = "| run | " + " | ".join(f"{d} correct / recall" for d in documents) + " |"
    lines = [header, "|---|" + "---:|" * len(documents)]
    for name in runs:
        cells = []
        for document in documents:
            items = [r for r in scored if r["run"] == name and r["document"] == document]
            if not items:
                cells.append("n/a")
                continue
            right = sum(bool(r["correct"]) for r in items)
            held = sum(bool(r["evidence"]) for r in items)
            cells.append(f"{right}/{len(items)} / {held}/{len(items)}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    ceiling = " | ".join(f"{CEILING_PER_DOCUMENT[d]}% / -" for d in documents)
    lines.append(f"| ceiling (layout c) | {ceiling} |")
    return lines


def _curve_words(pot_entries: int | None, read_spans: int) -> str:
    after = "after the whole pot" if pot_entries is None else ("alone" if pot_entries == 0 else f"after {pot_entries}")
    return after + (f", best {read_spans} read" if read_spans else ", all read")


def plot_budgets(rows: list[dict], path: Path) -> bool:
    evidence = [r for r in rows if r["mode"] == "evidence" and r["median_ttft"] is not None]
    if not evidence:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    curves: dict[tuple, list[dict]] = {}
    for r in evidence:
        curves.setdefault((r["pot_entries"], r["read_spans"]), []).append(r)
    for (pot_entries, read_spans), points in curves.items():
        points = sorted(points, key=lambda r: r["budget"])
        x = [r["median_ttft"] for r in points]
        after = _curve_words(pot_entries, read_spans)
        line = ax.plot(x, [r["correct"] for r in points], "o-", label=f"correct %, passages {after}")[0]
        ax.plot(
            x,
            [r["evidence_recall"] for r in points],
            "s--",
            color=line.get_color(),
            alpha=0.5,
            label=f"evidence recall %, passages {after}",
        )
        for r in points:
            ax.annotate(
                str(r["budget"]),
                (r["median_ttft"], r["correct"]),
                textcoords="offset points",
                xytext=(-10, -14),
                fontsize=8,
            )
    for r in rows:
        if r["mode"] != "evidence" and r["median_ttft"] is not None:
            ax.plot([r["median_ttft"]], [r["correct"]], "x", markersize=9, label=f"{r['run']} correct %")
    ax.axhline(CEILING["correct"], color="grey", linestyle=":", label=f"ceiling, layout c ({CEILING['correct']}%)")
    ax.set_xlabel("median seconds to first token")
    ax.set_ylabel("% of questions")
    ax.set_ylim(0, 100)
    ax.set_title(f"Evidence mode: budget (tokens) vs accuracy and time to first token (n={evidence[0]['n']})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def wrong_examples(scored: list[dict], questions: dict[str, dict], limit: int = 5) -> list[str]:
    """Wrong evidence-mode answers at the default budget: misses of retrieval (the snippets lack the answer)
    and of reading (they hold it), interleaved so both kinds show."""
    from infinipot.core.evidence import EvidenceConfig

    default_pot = EvidenceConfig().pot_entries
    wrong = [
        r
        for r in scored
        if r["mode"] == "evidence"
        and r.get("budget") == DEFAULT_BUDGET
        and record_pot(r) == default_pot
        and record_read(r) == EvidenceConfig().read_spans
        and not r["correct"]
    ]
    if not wrong:
        wrong = [r for r in scored if r["mode"] == "evidence" and not r["correct"]]
    held = [r for r in wrong if r["evidence"]]
    missed = [r for r in wrong if not r["evidence"]]
    picked, seen_docs = [], set()
    # one of each document first where possible, alternating reading and retrieval misses
    pools = [held, missed]
    while len(picked) < limit and (held or missed):
        for pool in pools:
            if len(picked) >= limit or not pool:
                continue
            choice = next((r for r in pool if r["document"] not in seen_docs), pool[0])
            pool.remove(choice)
            picked.append(choice)
            seen_docs.add(choice["document"])
    lines = []
    for r in picked:
        q = questions[r["id"]]
        kind = "reading miss (the snippets held the answer)" if r["evidence"] else "retrieval miss (no snippet held it)"
        cited = ", ".join(c.get("label") or "?" for c in r.get("citations") or [])
        lines += [
            f"### {r['id']} ({r['document']}, {'page' if r['document'] in ('libtasn1', 'mime-spec') else 'line'} "
            f"{q['where']}; {r['run']}): {kind}",
            "",
            f"- question: {q['question']}",
            f"- accepted: {' / '.join(q['answers'])}",
            f"- answer: {_squash(r['answer'], 400)}",
            f"- spans cited: {cited or '(none)'}",
            f"- evidence quote: {_squash(q['evidence'], 200)}",
            "",
        ]
    counts = (
        f"Of the {len(wrong)} wrong answers in {wrong[0]['run'] if wrong else 'evidence mode'}: "
        f"{sum(bool(r['evidence']) for r in wrong)} reading misses (the snippets held an accepted answer or the "
        f"quote), {sum(not r['evidence'] for r in wrong)} retrieval misses."
    )
    return [counts, "", *lines]


def every_answer(scored: list[dict], questions: list[dict], runs: list[str]) -> list[str]:
    by = {(r["id"], r["run"]): r for r in scored}
    lines = []
    for q in questions:
        if not any((q["id"], name) in by for name in runs):
            continue
        lines += [
            f"### {q['id']} ({q['document']}, where {q['where']})",
            "",
            f"{q['question']} — accepted: {' / '.join(q['answers'])}",
            "",
            "| run | ok | evidence | ttft s | answer | cited |",
            "|---|---|---|---:|---|---|",
        ]
        for name in runs:
            r = by.get((q["id"], name))
            if r is None:
                continue
            cited = ", ".join(c.get("label") or "?" for c in r.get("citations") or [])
            lines.append(
                f"| {name} | {'yes' if r['correct'] else 'no'}{' (loop)' if r['looped'] else ''} "
                f"| {'yes' if r['evidence'] else 'no'} | {_cell(r.get('ttft_seconds'))} | {_squash(r['answer'], 300)} "
                f"| {_squash(cited, 80)} |"
            )
        lines.append("")
    return lines


def best_budget(rows: list[dict]) -> str:
    """The cheapest budget near the best accuracy, among the runs that follow what EvidenceConfig's default does."""
    from infinipot.core.evidence import EvidenceConfig

    default_pot = EvidenceConfig().pot_entries
    points = sorted(
        (
            r
            for r in rows
            if r["mode"] == "evidence"
            and r["pot_entries"] == default_pot
            and r["read_spans"] == EvidenceConfig().read_spans
        ),
        key=lambda r: r["budget"],
    )
    if len(points) < 2:
        return "Only one budget measured so far."
    top = max(r["correct"] for r in points)
    # the cheapest budget within one question of the best accuracy
    n = points[0]["n"]
    near = [r for r in points if r["correct"] >= top - 100.0 / n - 1e-9]
    pick = min(near, key=lambda r: r["median_ttft"] or 0)
    best = [r["budget"] for r in points if r["correct"] == top]
    return (
        f"Most correct: budget {', '.join(map(str, best))} ({top}%). Cheapest within one question of that: "
        f"budget {pick['budget']} ({pick['correct']}%, median {pick['median_ttft']} s to first token)."
    )


def write_report(args: argparse.Namespace, meta: dict) -> str:
    questions = load_questions()
    by_id = {q["id"]: q for q in questions}
    records = read_jsonl(args.out / "modes.jsonl")
    scored = score_records(records, questions)
    rows = summary_rows(scored)
    runs = [r["run"] for r in rows]
    errors = read_jsonl(args.out / "modes-errors.jsonl")
    reads_path = args.out / "modes-reads.json"
    reads = json.loads(reads_path.read_text()) if reads_path.is_file() else {}
    plotted = plot_budgets(rows, args.out / "evidence_budget.png")
    mode_rows = [r for r in rows if r["mode"] != "evidence" or r["budget"] == DEFAULT_BUDGET]
    budget_rows = [r for r in rows if r["mode"] == "evidence"]
    minutes = meta.get("total_minutes")
    lines = [
        "# Answer modes on whole documents, and the evidence budget",
        "",
        "Each question of `benchmarks/devset/questions.jsonl` asked of its whole document through the app's Python",
        "API (`DocumentService.ask(doc_id, question, AnswerSettings(answer_from=mode, evidence=EvidenceConfig("
        "budget_tokens=b, pot_entries=p, read_spans=k)), record=False)`), the document read once into the default "
        "4,096-entry pot",
        "(`PotConfig()`), the bundled SmolLM2-135M, the default decoding (greedy, at most 256 new tokens, no-repeat",
        f"4-gram, stop on repeat), {', '.join(sorted({r.get('dtype', 'float32') for r in records}))} on CPU "
        "(`--dtype auto`; records before it existed ran float32). Scored with `score.py` (`score_records`).",
        "",
        "- **evidence recall**: share of questions where one cited snippet holds an accepted answer or the evidence",
        "  quote (`score.evidence_holds`). Evidence mode: the snippets are the document spans read into the answer's",
        "  context (retrieval). pot / focus: the text around the places the answer's attention cites afterwards",
        "  (what the answer drew on; the model saw only the pot).",
        "- **correct**: `score.is_correct` (an accepted answer contained in the answer, whole words). Containment is",
        "  lenient with long answers: read the answers below.",
        "- **looping**: a word 4-gram 3+ times (`score.loops`).",
        "- **s to first token**: `stats.first_token_seconds` (pot lookup/load + evidence ranking and reading +",
        "  prefill + first token); **s answering**: `stats.seconds` (the answer's generation).",
        f"- **ceiling**: the model handed the answer's own ~450-token passage, layout c of `prompt_shapes.md`:"
        f" {CEILING['correct']}% ({CEILING['right']}/{CEILING['n']}).",
        "",
        "Run names: `evidence@B` reads every candidate span found within B tokens after the chat template's opening",
        "alone (`EvidenceConfig.pot_entries` 0); `+pot` after the whole pot, `+potN` after a copy distilled to N",
        "entries; `/readK` reads only the K candidates after which the question is likeliest (`read_spans`).",
        "",
        "Commands (as run into this folder, in order; the documents first):",
        "",
        "```sh",
        ".venv/bin/python -m benchmarks.devset.documents --out bench-results/devset-docs",
        *[f".venv/bin/{command['command']}" for command in meta.get("commands", [])],
        "```",
        "",
        f"Machine: {meta['machine']} ({meta['cores']} cores, shared with a test suite); torch {meta['torch']} "
        f"with `torch.set_num_threads({meta['threads']})`; device cpu; Python {meta['python']}.",
        f"Answering time: {round(sum(r.get('wall_seconds') or 0 for r in records) / 60, 1)} min summed over the "
        f"{len(records)} answers (ask call to the last piece, citations included); the runs that finished took "
        f"{minutes} min in all (model load and any reading included; runs that were killed are not counted).",
        "",
        "## Answer modes (default budget 768)",
        "",
        *rows_table(mode_rows),
        "",
        "## Evidence budget",
        "",
        *rows_table(budget_rows),
        "",
        best_budget(rows),
        "",
        *(["![evidence budget](evidence_budget.png)", ""] if plotted else []),
        "## Per document (correct / evidence recall, counts)",
        "",
        *per_document_table(scored, runs),
        "",
    ]
    if reads:
        lines += [
            "## Reading the documents (once, stored in --home and reused)",
            "",
            "| document | doc_id | seconds | reused |",
            "|---|---|---:|---|",
            *[
                f"| {d} | {v.get('doc_id', '')[:12]} | {v.get('seconds')} | {v.get('reused')} |"
                for d, v in reads.items()
            ],
            "",
        ]
    versions: dict[str, dict[str, int]] = {}
    for r in records:
        counts = versions.setdefault(record_run(r), {})
        counts[r.get("code", "?")] = counts.get(r.get("code", "?"), 0) + 1
    lines += [
        "## Code versions",
        "",
        "Other work edits app/ and core/ while these runs go on; each record carries a hash of the answering code",
        "it ran with (`run_modes.CODE_FILES`). Runs answered by different code are not strictly comparable.",
        "",
        "| run | code hash: records |",
        "|---|---|",
        *[f"| {name} | {', '.join(f'{h}: {n}' for h, n in versions[name].items())} |" for name in _sort_runs(records)],
        "",
    ]
    for archived in sorted(args.out.glob("modes-code-*.jsonl")):
        earlier = score_records(read_jsonl(archived), questions)
        if not earlier:
            continue
        lines += [
            f"## Earlier code: `{archived.name}`",
            "",
            "Records answered by an earlier version of the answering code (kept for comparison, not in the tables",
            "above; the hash is in the file name).",
            "",
            *rows_table(summary_rows(earlier)),
            "",
        ]
    notes = args.out / "modes-notes.md"
    if notes.is_file():
        lines += [notes.read_text(encoding="utf-8").rstrip(), ""]
    if errors:
        lines += ["## Errors (answers that raised; asked again on the next run)", ""]
        for e in errors:
            lines.append(f"- {e['id']} {record_run(e)} at {e.get('at')}: `{e['error']}`")
        lines.append("")
    lines += [
        "## Wrong evidence-mode answers: retrieval or reading?",
        "",
        *wrong_examples(scored, by_id),
        "## Every answer",
        "",
        *every_answer(scored, questions, runs),
    ]
    text = "\n".join(lines).rstrip() + "\n"
    (args.out / "modes.md").write_text(text, encoding="utf-8")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--budgets", default=str(DEFAULT_BUDGET), help="evidence budgets, comma-separated")
    parser.add_argument(
        "--evidence-pot",
        default="0",
        help="evidence: pot entries the passages follow (EvidenceConfig.pot_entries), comma-separated; all: whole pot",
    )
    parser.add_argument(
        "--read-spans",
        default="3",
        help="evidence: candidates read after reranking by the question's likelihood (EvidenceConfig.read_spans), "
        "comma-separated; 0: every candidate, unreranked",
    )
    parser.add_argument(
        "--order",
        default="document",
        choices=("document", "likelihood"),
        help="evidence: the spans read in document order, or the likeliest last (EvidenceConfig.order)",
    )
    parser.add_argument(
        "--question-first", action="store_true", help="evidence: also write the question before the spans"
    )
    parser.add_argument(
        "--contrast", type=float, default=0.0, help="context-contrast weight of the decoding (DecodingConfig.contrast)"
    )
    parser.add_argument("--questions", type=int, default=None, help="first N questions of each document")
    parser.add_argument("--ids", default="", help="only these question ids, comma-separated")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown modes {unknown}; choose from {', '.join(MODES)}")
    budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    pots = parse_pot_entries(args.evidence_pot)
    reads = [int(r) for r in args.read_spans.split(",") if r.strip()]
    runs = [
        (m, b, p, r)
        for m in modes
        for b in (budgets if m == "evidence" else [None])
        for p in (pots if m == "evidence" else [None])
        for r in (reads if m == "evidence" else [0])
    ]

    meta_path = args.out / "modes-meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
    if not args.report_only:
        missing = [k for k in DOCUMENTS if not document_path(args.docs, k).is_file()]
        if missing:
            from .documents import build

            print(f"building the documents into {args.docs} (missing: {', '.join(missing)})", flush=True)
            build(args.docs)
        questions = pick_questions(load_questions(), args.questions, set(filter(None, args.ids.split(","))) or None)
        result = answer_all(args, questions, runs)
        print(f"answered {result['answered']}, errors {result['errors']}, {result['minutes']} min", flush=True)
        meta.setdefault("commands", []).append(
            {"command": "python -m benchmarks.devset.run_modes " + shlex.join(sys.argv[1:]), **result}
        )
        meta["total_minutes"] = round(sum(c.get("minutes", 0) for c in meta["commands"]), 1)
    import torch

    meta.update(
        machine=cpu_model(),
        cores=len(__import__("os").sched_getaffinity(0)),
        torch=torch.__version__,
        threads=args.threads,
        python=platform.python_version(),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    write_report(args, meta)
    print(f"wrote {args.out / 'modes.md'}", flush=True)


if __name__ == "__main__":
    main()
