"""How far each pointer can reach: the rank of the answering sentence's bucket under every signal the pot offers.

    PYTHONPATH=. .venv/bin/python -m benchmarks.devset.pointer_ceiling --set paraphrases \\
        [--docs bench-results/devset-docs] [--home /tmp/ip-home-dev] [--out benchmarks/devset/results/pointers]

Retrieval is scored per 64-token bucket (EvidenceConfig.bucket_tokens), before spans are widened and reranked:
a question counts at k when one bucket of the sentence that answers it (paraphrases.jsonl's "sentence",
questions.jsonl's "evidence"; found in the document's stored token ids, letters and digits alone compared) is
among a signal's k best buckets. The signals:

- `question attention`: the question's attention over the pot, as `ask` ranks it (core.evidence);
- `question words`: the question's words in the whole stored document (core.word_match);
- `question words and their neighbours`: the same with the 8 words the model's input embeddings put nearest each
  of the question's content words (cosine 0.45 or more; EvidenceConfig.word_neighbours);
- `retrieval heads`: the question's attention through the model's calibrated retrieval heads alone
  (core.retrieval_heads), as `ask` ranks by default;
- `draft attention`: the attention that an answer written from the pot alone (32 tokens, greedy) pays the pot,
  as citations measure it: where the model drew what it wrote;
- `draft words`: the question's and that draft's words in the whole document;
- `best head (chosen on half)`: the question's attention through one (layer, KV head), the head chosen as the
  best on the even-numbered questions and scored on the odd ones (and the other way round), so that a head
  picked by chance on the same questions does not count; `best head (oracle)` takes each question's best.

The union rows say how often any of several signals holds the sentence in its k best: a ceiling for a reranker
that reads all of their candidates. Writes pointer_ceiling-SET.json and pointer_ceiling-SET.md under --out.
--no-draft leaves out the two draft signals (a draft answer costs a generation per question).
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

from .check import load_paraphrases, load_questions
from .documents import DEFAULT_DIR, document_path

RESULTS = Path(__file__).with_name("results") / "pointers"
KS = (3, 6, 12)
UNIONS = (
    ("question attention", "question words"),
    ("question attention", "question words and their neighbours"),
    ("retrieval heads", "question words"),
    ("question attention", "question words", "draft attention"),
    ("question attention", "question words", "draft attention", "draft words"),
)
NOT_RANKED = 10**6
# The question words' neighbours sought (core.word_match.neighbour_keys): per content word, at least this cosine.
NEIGHBOURS = (8, 0.45)


def _letters(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


class StoredText:
    """A stored document's token ids with, per token, where its letters and digits start in their concatenation,
    so that a sentence is found whatever the PDF did to its spaces and line breaks."""

    def __init__(self, ids: list[int], tokenizer) -> None:
        self.ids = ids
        pieces = [_letters(tokenizer.decode([i])) for i in ids]
        self.starts: list[int] = []
        offset = 0
        for piece in pieces:
            self.starts.append(offset)
            offset += len(piece)
        self.text = "".join(pieces)

    def buckets_of(self, sentence: str, bucket_tokens: int) -> set[int]:
        """The buckets the sentence's tokens fall in (empty when it is not in the document)."""
        target = _letters(sentence)
        at = self.text.find(target) if target else -1
        if at < 0:
            return set()
        first = bisect.bisect_right(self.starts, at) - 1
        last = bisect.bisect_right(self.starts, at + len(target) - 1) - 1
        return set(range(first // bucket_tokens, last // bucket_tokens + 1))


def gold_rank(order: list[int], gold: set[int]) -> int:
    """The best rank (0 first) of a gold bucket in `order`; NOT_RANKED when none is in it."""
    return min((rank for rank, bucket in enumerate(order) if bucket in gold), default=NOT_RANKED)


def head_ranks(pot, attention: torch.Tensor, gold: set[int], total: int, until: int, config) -> torch.Tensor:
    """(L, H_kv) rank of the gold bucket when one head's attention alone ranks the buckets (core.evidence's
    ranked_buckets, every layer counted, the other heads' attention zeroed)."""
    from infinipot.core.evidence import ranked_buckets

    every_layer = replace(config, attention=replace(config.attention, first_layer_fraction=0.0))
    layers, heads, _ = attention.shape
    ranks = torch.full((layers, heads), NOT_RANKED)
    for layer in range(layers):
        for head in range(heads):
            alone = torch.zeros_like(attention)  # (L, H_kv, n)
            alone[layer, head] = attention[layer, head]
            order = ranked_buckets(pot, alone, total, every_layer, until)
            ranks[layer, head] = gold_rank([bucket.index for bucket in order], gold)
    return ranks


def measure(args: argparse.Namespace) -> list[dict]:
    from infinipot.app.library.documents import require_document, stored_token_ids
    from infinipot.app.library.token_ids import read_window, token_count
    from infinipot.app.service import DocumentService
    from infinipot.core.citations import answer_attention
    from infinipot.core.config import PotConfig
    from infinipot.core.evidence import (
        EvidenceConfig,
        attention_ranking,
        ranked_buckets,
        verbatim_tail_start,
        word_ranked_buckets,
    )

    config = EvidenceConfig()
    service = DocumentService(args.home, device="cpu")
    questions = load_paraphrases() if args.set == "paraphrases" else load_questions()
    opened: dict[str, tuple] = {}
    records = []
    for question in questions:
        name = question["document"]
        if name not in opened:
            report = service.read(document_path(args.docs, name), PotConfig())
            stored = service.open_pot(report.doc_id)
            document = require_document(service.library.store, stored.doc_id)
            path = stored_token_ids(service.library.files, document, stored.engine.loaded)
            ids = read_window(path, 0, token_count(path))
            opened[name] = (stored, StoredText(ids, stored.engine.tokenizer), torch.tensor(ids, dtype=torch.int64))
        stored, text, document_ids = opened[name]
        engine, pot = stored.engine, stored.pot
        gold = text.buckets_of(question.get("sentence") or question["evidence"], config.bucket_tokens)
        if not gold:
            print(f"  {question['id']}: its sentence is not in the stored text; left out", flush=True)
            continue
        total = len(text.ids)
        until = verbatim_tail_start(pot)
        keys = engine.word_keys()
        before, question_ids = engine.question_parts(question["question"])
        asked = answer_attention(engine.model, pot, before, question_ids)  # (L, H_kv, n)
        heads = service.library.heads.get(engine)
        orders = {
            "question attention": ranked_buckets(pot, asked, total, config, until),
            "retrieval heads": attention_ranking(engine, pot, question_ids, before, total, config, until, heads),
            "question words": word_ranked_buckets(document_ids, question_ids, keys, config, total),
            "question words and their neighbours": word_ranked_buckets(
                document_ids, question_ids, keys, config, total, engine.word_neighbours(question_ids, *NEIGHBOURS)
            ),
        }
        draft, draft_seconds = "", None
        if args.draft:
            began = time.perf_counter()
            draft = "".join(engine.answer(pot, question["question"], 32)).strip()
            draft_seconds = time.perf_counter() - began
            draft_ids = engine.tokenizer(" " + draft, add_special_tokens=False)["input_ids"]
            drew = answer_attention(engine.model, pot, engine.question_ids(question["question"]), draft_ids)
            orders["draft attention"] = ranked_buckets(pot, drew, total, config, until)
            orders["draft words"] = word_ranked_buckets(document_ids, question_ids + draft_ids, keys, config, total)
        ranks = {signal: gold_rank([b.index for b in order], gold) for signal, order in orders.items()}
        single = head_ranks(pot, asked, gold, total, until, config)
        records.append(
            {
                "id": question["id"],
                "gold_buckets": sorted(gold),
                "in_verbatim_tail": min(gold) * config.bucket_tokens >= until,
                "ranks": ranks,
                "head_ranks": single.tolist(),
                "draft": draft,
                "draft_seconds": None if draft_seconds is None else round(draft_seconds, 2),
            }
        )
        print(f"  {question['id']}: {ranks} best head {int(single.min())}", flush=True)
    return records


def chosen_head_hits(records: list[dict], k: int) -> int:
    """Questions whose gold is in the k best buckets of a head chosen on the other half of the questions."""
    hits = 0
    for half in (0, 1):
        choose = [r for i, r in enumerate(records) if i % 2 == half]
        score = [r for i, r in enumerate(records) if i % 2 != half]
        counts = (torch.tensor([r["head_ranks"] for r in choose]) < k).sum(dim=0)  # (L, H_kv)
        layer, head = divmod(int(torch.argmax(counts)), counts.shape[1])
        hits += sum(r["head_ranks"][layer][head] < k for r in score)
    return hits


def report(records: list[dict], command: str) -> str:
    n = len(records)
    lines = [
        "# How far each pointer reaches (the answering sentence's bucket among a signal's k best)",
        "",
        f"{n} questions; {sum(r['in_verbatim_tail'] for r in records)} of them answered in the pot's verbatim "
        "tail (the attention rankings leave the tail out; the answer reads it whole when the pot precedes it).",
        "",
        "| signal | " + " | ".join(f"top {k}" for k in KS) + " |",
        "|---|" + "---:|" * len(KS),
    ]
    for signal in records[0]["ranks"]:
        cells = " | ".join(f"{sum(r['ranks'][signal] < k for r in records)}" for k in KS)
        lines.append(f"| {signal} | {cells} |")
    cells = " | ".join(str(chosen_head_hits(records, k)) for k in KS)
    lines.append(f"| best head (chosen on half) | {cells} |")
    cells = " | ".join(str(sum(min(map(min, r["head_ranks"])) < k for r in records)) for k in KS)
    lines.append(f"| best head (oracle, each question's own) | {cells} |")
    for union in UNIONS:
        if not all(signal in records[0]["ranks"] for signal in union):
            continue
        cells = " | ".join(str(sum(any(r["ranks"][s] < k for s in union) for r in records)) for k in KS)
        lines.append(f"| any of {', '.join(union)} | {cells} |")
    seconds = sorted(r["draft_seconds"] for r in records if r["draft_seconds"] is not None)
    if seconds:
        lines += ["", f"Draft answer from the pot: median {seconds[len(seconds) // 2]:.1f} s on this machine."]
    lines += ["", f"Command: `{command}`"]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=("questions", "paraphrases"), default="paraphrases")
    parser.add_argument("--docs", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-dev"))
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--no-draft", dest="draft", action="store_false", help="leave out the draft signals")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    records = measure(args)
    if not records:
        raise SystemExit("no question's sentence was found in its stored document")
    command = "python -m benchmarks.devset.pointer_ceiling " + " ".join(sys.argv[1:])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"pointer_ceiling-{args.set}.json").write_text(json.dumps(records) + "\n")
    text = report(records, command)
    (args.out / f"pointer_ceiling-{args.set}.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
