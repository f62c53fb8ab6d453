"""The reading ceiling: how well the default model answers when handed the answer's own passage, per prompt layout.

    python -m benchmarks.devset.prompt_shapes [--docs bench-results/devset-docs] [--out benchmarks/devset/results]
        [--layouts a,b,c,...] [--ids story-01,log-05] [--window 450] [--max-new-tokens 40] [--device cpu]
        [--dtype float32] [--threads 1]

For every question of questions.jsonl it cuts a passage of about --window tokens (whole lines, 300-600 tokens)
around the evidence from the document's extracted text (infinipot.ingest), the evidence starting somewhere
between 20% and 70% into the passage (a fixed position per question), then asks the bundled SmolLM2-135M-Instruct
through its chat template with greedy decoding, in each prompt layout (LAYOUTS below). No memory pot and no
compression: plain transformers with a full KV cache. Each answer is scored with score.py. Writes
prompt_shapes.jsonl (one record per question and layout) and prompt_shapes.md (summary, per-document table,
every answer) under --out.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import statistics
import sys
import time
from pathlib import Path

from .check import QUESTIONS, load_questions
from .doctext import DocText, squash
from .documents import DEFAULT_DIR, document_path
from .score import evidence_holds, format_table, score_answer, summarize

RESULTS = Path(__file__).with_name("results")
ANSWER_FROM_TEXT = "Answer from the text above in one short sentence. "
OWN_WORDS = "Answer from the text above in one short sentence, using the text's own words. "
# One worked example for layout i: made up, sharing no words of note with the development documents.
EXAMPLE_PASSAGE = (
    "The bridge over the Varn river was finished in 1887 after four years of work. It is 212 metres long and "
    "carries two railway tracks. Its engineer, Ada Holm, also designed the station at Lessing."
)
EXAMPLE_QUESTION = "How long is the bridge over the Varn?"
EXAMPLE_ANSWER = "The bridge over the Varn is 212 metres long."
QUOTE_SYSTEM = "You answer questions about a text. Quote the answer from the text in one short sentence."

# name -> (description, builder(passage, question) -> chat messages)
LAYOUTS = {
    "a-passage-question": (
        'user: passage + "\\n\\n" + question',
        lambda p, q: [{"role": "user", "content": f"{p}\n\n{q}"}],
    ),
    "b-question-passage-question": (
        'user: question + "\\n\\n" + passage + "\\n\\n" + question',
        lambda p, q: [{"role": "user", "content": f"{q}\n\n{p}\n\n{q}"}],
    ),
    "c-answer-from-text": (
        f'user: passage + "\\n\\n{ANSWER_FROM_TEXT}" + question',
        lambda p, q: [{"role": "user", "content": f"{p}\n\n{ANSWER_FROM_TEXT}{q}"}],
    ),
    "d-system-quote": (
        f'system: "{QUOTE_SYSTEM}"; user: "Text:\\n" + passage + "\\n\\nQuestion: " + question',
        lambda p, q: [
            {"role": "system", "content": QUOTE_SYSTEM},
            {"role": "user", "content": f"Text:\n{p}\n\nQuestion: {q}"},
        ],
    ),
    "e-question-first-text": (
        'user: "Question: " + question + "\\n\\nText:\\n" + passage + "\\n\\n" + "Answer the question from the text '
        'in one short sentence. Question: " + question',
        lambda p, q: [
            {
                "role": "user",
                "content": f"Question: {q}\n\nText:\n{p}\n\nAnswer the question from the text in one short sentence. "
                f"Question: {q}",
            }
        ],
    ),
    "f-question-answer-from-text": (
        f'user: question + "\\n\\n" + passage + "\\n\\n{ANSWER_FROM_TEXT}" + question',
        lambda p, q: [{"role": "user", "content": f"{q}\n\n{p}\n\n{ANSWER_FROM_TEXT}{q}"}],
    ),
    "g-answer-own-words": (
        f'user: passage + "\\n\\n{OWN_WORDS}" + question',
        lambda p, q: [{"role": "user", "content": f"{p}\n\n{OWN_WORDS}{q}"}],
    ),
    "h-answer-from-text-labelled": (
        'user: passage + "\\n\\nAnswer from the text above in one short sentence.\\nQuestion: " + question '
        '+ "\\nAnswer:"',
        lambda p, q: [
            {
                "role": "user",
                "content": f"{p}\n\nAnswer from the text above in one short sentence.\nQuestion: {q}\nAnswer:",
            }
        ],
    ),
    "i-one-example": (
        f"layout c after one worked example (user: example passage + {ANSWER_FROM_TEXT!r} + example question; "
        "assistant: a one-sentence answer naming the exact value)",
        lambda p, q: [
            {"role": "user", "content": f"{EXAMPLE_PASSAGE}\n\n{ANSWER_FROM_TEXT}{EXAMPLE_QUESTION}"},
            {"role": "assistant", "content": EXAMPLE_ANSWER},
            {"role": "user", "content": f"{p}\n\n{ANSWER_FROM_TEXT}{q}"},
        ],
    ),
}


def _fraction(qid: str) -> float:
    """Where the evidence starts inside its passage, 0.2-0.7, fixed per question id."""
    digest = hashlib.sha256(qid.encode()).digest()
    return 0.2 + 0.5 * digest[0] / 255


class PassageCutter:
    """Cuts whole-line passages of about `window` tokens around a quote from one document's text."""

    def __init__(self, doc: DocText, tokenizer, window: int) -> None:
        self.doc = doc
        self.tokenizer = tokenizer
        self.window = window
        encoded = tokenizer(doc.text, add_special_tokens=False, return_offsets_mapping=True)
        self.offsets = encoded["offset_mapping"]
        self.starts = [start for start, _ in self.offsets]

    def _token_at(self, char: int) -> int:
        import bisect

        return max(0, bisect.bisect_right(self.starts, char) - 1)

    def cut(self, quote: str, fraction: float) -> tuple[int, int]:
        """Char range [start, end) of the passage: whole lines, the quote inside it."""
        text = self.doc.text
        at = self.doc.find(quote)
        if at is None:
            raise ValueError(f"evidence not in {self.doc.path.name}: {quote!r}")
        quote_end = at + len(quote)
        first = self._token_at(at)
        start_tok = max(0, first - round(fraction * self.window))
        end_tok = min(len(self.offsets) - 1, start_tok + self.window)
        start_tok = max(0, min(start_tok, end_tok - self.window))
        start = text.rfind("\n", 0, self.offsets[start_tok][0] + 1) + 1
        end = text.find("\n", max(self.offsets[end_tok][1], quote_end))
        end = len(text) if end < 0 else end
        return start, end


def _load(device: str, dtype: str, threads: int, home: Path):
    import torch

    from infinipot.core.model import ModelSpec, load_model

    if threads > 0:
        # One thread is ~10x faster than two when other jobs share the 2 cores (measured: 0.1 vs 1 s/token).
        torch.set_num_threads(threads)
    loaded = load_model(ModelSpec(name="default", device=device), home)
    if dtype != "auto":
        loaded.model.to(getattr(torch, dtype))
    loaded.model.eval()
    return loaded, torch


def _generate(model, tokenizer, torch, messages: list[dict], max_new_tokens: int) -> dict:
    """Greedy decoding with a plain KV cache; time to first token and in all."""
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"].to(model.device)
    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos]) | {tokenizer.eos_token_id}
    new: list[int] = []
    with torch.inference_mode():
        began = time.perf_counter()
        out = model(input_ids=ids, use_cache=True)
        token = int(out.logits[0, -1].argmax())
        ttft = time.perf_counter() - began
        past = out.past_key_values
        while token not in eos:
            new.append(token)
            if len(new) >= max_new_tokens:
                break
            out = model(input_ids=torch.tensor([[token]], device=model.device), past_key_values=past, use_cache=True)
            past = out.past_key_values
            token = int(out.logits[0, -1].argmax())
        seconds = time.perf_counter() - began
    return {
        "answer": tokenizer.decode(new, skip_special_tokens=True).strip(),
        "prompt_tokens": int(ids.shape[1]),
        "new_tokens": len(new),
        "ttft_seconds": round(ttft, 3),
        "seconds": round(seconds, 3),
    }


def _cell(text: str) -> str:
    return squash(text).replace("|", "\\|") or "(empty)"


def write_report(records: list[dict], layouts: list[str], out: Path, meta: dict) -> str:
    rows = summarize(records, key="layout")
    lines = [
        "# Prompt shapes: the reading ceiling",
        "",
        "The default model (SmolLM2-135M-Instruct, the bundled Q4_1 GGUF de-quantized) answers each question of",
        "`benchmarks/devset/questions.jsonl` from a passage of about "
        f"{meta['window']} tokens cut around the answer's evidence (full KV cache, no pot),",
        f"greedy decoding, at most {meta['max_new_tokens']} new tokens. Evidence recall is 100% by construction (the "
        "passage holds the evidence); it checks the cutter.",
        "",
        f"Command: `{meta['command']}`",
        "",
        *([meta["note"], ""] if meta["note"] else []),
        f"Machine: {meta['machine']}; torch {meta['torch']}, {meta['threads']} threads, device {meta['device']}; "
        f"passages {meta['passage_tokens_min']}-{meta['passage_tokens_max']} tokens "
        f"(median {meta['passage_tokens_median']}); {meta['generation_minutes']} min of generation in all.",
        "",
        "## Summary (correct % per layout)",
        "",
        format_table(rows).replace("| mode |", "| layout |"),
        "",
        "## Correct % per document",
        "",
    ]
    documents = list(dict.fromkeys(r["document"] for r in records))
    lines.append("| layout | " + " | ".join(documents) + " |")
    lines.append("|---|" + "---:|" * len(documents))
    for layout in layouts:
        cells = []
        for document in documents:
            items = [r for r in records if r["layout"] == layout and r["document"] == document]
            cells.append(f"{100 * sum(r['correct'] for r in items) / len(items):.0f}%" if items else "n/a")
        lines.append(f"| {layout} | " + " | ".join(cells) + " |")
    best = max(rows, key=lambda row: (row["correct"], -row["looping"]))["mode"]
    right = {(r["layout"], r["id"]): r["correct"] for r in records}
    ids = list(dict.fromkeys(r["id"] for r in records))
    lines += [
        "",
        f"## Paired against the best layout ({best})",
        "",
        f"Questions {best} gets right and the other wrong / the other right and {best} wrong.",
        "",
        "| layout | only best right | only this right |",
        "|---|---:|---:|",
    ]
    for layout in layouts:
        if layout != best:
            wins = sum(right[(best, i)] and not right[(layout, i)] for i in ids)
            losses = sum(right[(layout, i)] and not right[(best, i)] for i in ids)
            lines.append(f"| {layout} | {wins} | {losses} |")
    lines += ["", "## Layouts", ""]
    for layout in layouts:
        lines.append(f"- **{layout}**: {LAYOUTS[layout][0]} (one chat turn through the model's chat template)")
    lines += ["", "## Every answer", "", "Mark: `+` correct, `-` wrong, `L` looping (a word 4-gram 3+ times).", ""]
    by_question: dict[str, list[dict]] = {}
    for record in records:
        by_question.setdefault(record["id"], []).append(record)
    for qid, items in by_question.items():
        first = items[0]
        lines.append(f"### {qid} ({first['document']}, {first['unit']} {first['where']})")
        lines.append("")
        lines.append(f"Q: {first['question']}  ")
        lines.append(f"Accepted: {', '.join(first['answers'])}")
        lines.append("")
        lines.append("| layout | mark | answer |")
        lines.append("|---|---|---|")
        for record in items:
            mark = ("+" if record["correct"] else "-") + (" L" if record["looped"] else "")
            lines.append(f"| {record['layout']} | {mark} | {_cell(record['answer'])} |")
        lines.append("")
    report = "\n".join(lines)
    (out / "prompt_shapes.md").write_text(report, encoding="utf-8")
    return format_table(rows)


def _machine() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        return f"{names[0]}, {len(names)} CPUs" if names else platform.machine()
    except OSError:
        return platform.machine()


def _ask_all(loaded, torch, questions: list[dict], layouts: list[str], args) -> list[dict]:
    model, tokenizer = loaded.model, loaded.tokenizer
    cutters: dict[str, PassageCutter] = {}
    records: list[dict] = []
    for number, q in enumerate(questions, start=1):
        key = q["document"]
        if key not in cutters:
            cutters[key] = PassageCutter(DocText.load(document_path(args.docs, key)), tokenizer, args.window)
        cutter = cutters[key]
        start, end = cutter.cut(q["evidence"], _fraction(q["id"]))
        passage = cutter.doc.text[start:end].strip()
        passage_tokens = len(tokenizer(passage, add_special_tokens=False)["input_ids"])
        cited = evidence_holds([passage], [q["evidence"]])
        for layout in layouts:
            result = _generate(model, tokenizer, torch, LAYOUTS[layout][1](passage, q["question"]), args.max_new_tokens)
            scored = score_answer(result["answer"], q, [passage])
            records.append(
                {
                    "id": q["id"],
                    "document": key,
                    "layout": layout,
                    "question": q["question"],
                    "answers": q["answers"],
                    "where": q["where"],
                    "unit": cutter.doc.page_or_line_label(),
                    **result,
                    **scored,
                    "evidence": cited,
                    "passage_chars": [start, end],
                    "passage_tokens": passage_tokens,
                }
            )
            mark = "+" if scored["correct"] else "-"
            print(f"[{number}/{len(questions)}] {q['id']} {layout}: {mark} {result['answer'][:90]!r}", flush=True)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--layouts", default=",".join(LAYOUTS), help="comma-separated layout names (or prefixes)")
    parser.add_argument("--ids", default="", help="comma-separated question ids (default: all)")
    parser.add_argument("--window", type=int, default=450, help="passage tokens (whole lines are kept)")
    parser.add_argument("--max-new-tokens", type=int, default=40)
    parser.add_argument(
        "--merge", action="store_true", help="keep the other layouts' records already in OUT/prompt_shapes.jsonl"
    )
    parser.add_argument(
        "--report-only", action="store_true", help="rewrite prompt_shapes.md from OUT/prompt_shapes.jsonl; no model"
    )
    parser.add_argument("--note", default="", help="how the records were made, for the report (default: the command)")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "auto"])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (0: torch's default)")
    parser.add_argument(
        "--home", type=Path, default=Path("/tmp/ip-home-devset"), help="where the converted default model is cached"
    )
    args = parser.parse_args()

    layouts = [name for want in args.layouts.split(",") for name in LAYOUTS if name.startswith(want.strip())]
    layouts = list(dict.fromkeys(layouts))
    questions = load_questions(args.questions)
    if args.ids:
        wanted = {i.strip() for i in args.ids.split(",")}
        questions = [q for q in questions if q["id"] in wanted]
    previous = args.out / "prompt_shapes.jsonl"
    if args.report_only:
        import torch

        with open(previous, encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
        layouts = [name for name in LAYOUTS if any(r["layout"] == name for r in records)]
        device = f"{args.device} {args.dtype}"
        threads = args.threads
    else:
        loaded, torch = _load(args.device, args.dtype, args.threads, args.home)
        records = _ask_all(loaded, torch, questions, layouts, args)
        device = f"{loaded.model.device} {str(loaded.model.dtype).replace('torch.', '')}"
        threads = torch.get_num_threads()
        args.out.mkdir(parents=True, exist_ok=True)
        if args.merge and previous.is_file():  # greedy float32 on one thread is deterministic: old records stand
            asked = {q["id"] for q in questions}
            with open(previous, encoding="utf-8") as handle:
                kept = [json.loads(line) for line in handle if line.strip()]
            kept = [r for r in kept if r["layout"] not in layouts and r["layout"] in LAYOUTS and r["id"] in asked]
            records = kept + records
            layouts = [name for name in LAYOUTS if any(r["layout"] == name for r in records)]
            order = {name: i for i, name in enumerate(LAYOUTS)}
            position = {q["id"]: i for i, q in enumerate(questions)}
            records.sort(key=lambda r: (position[r["id"]], order[r["layout"]]))
        with open(previous, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    sizes = list({r["id"]: r["passage_tokens"] for r in records}.values())
    partial = args.ids or args.layouts != ",".join(LAYOUTS) or args.merge or args.report_only
    meta = {
        "window": args.window,
        "max_new_tokens": args.max_new_tokens,
        "command": "python -m benchmarks.devset.prompt_shapes --docs bench-results/devset-docs "
        "--out benchmarks/devset/results",
        "note": args.note
        or (
            "This file was written by: "
            + " ".join(["python -m benchmarks.devset.prompt_shapes", *sys.argv[1:]])
            + " (runs are deterministic: greedy float32 decoding on one thread gives the same answers on a re-run)."
            if partial
            else ""
        ),
        "machine": _machine(),
        "torch": torch.__version__,
        "threads": threads,
        "device": device,
        "passage_tokens_min": min(sizes),
        "passage_tokens_max": max(sizes),
        "passage_tokens_median": int(statistics.median(sizes)),
        "generation_minutes": round(sum(r["seconds"] for r in records) / 60, 1),
    }
    print(write_report(records, layouts, args.out, meta))


if __name__ == "__main__":
    main()
