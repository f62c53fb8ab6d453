"""Rebuilds the learned judge's training questions from this machine's documents (seeded; a progress bar).

    python -m benchmarks.judge.make_data [--out bench-results/judge] [--seed 64] [--per-document 30]
        [--model-questions 0.35] [--home /tmp/ip-judge-home]

Documents: benchmarks.judge.corpus (kept out: the development set and the hidden checks' documents). For each, its
passages and units (benchmarks.judge.questions), the pattern questions, and for a seeded share of its prose units
the question the bundled model writes when asked which question the unit answers (greedy, filtered). Each
question gets its hard negatives. Documents are split, seeded, into training (85%) and validation (15%); one in
eight validation questions is also kept without the units that answer it (a question the passages do not answer).

Writes <out>/questions.jsonl (one question a line: id, document, kind, split, how, question, unit, answer,
negatives, answerable) and <out>/questions.sha256, and prints the counts and the hash. The data is not committed;
the command and the hash are (docs/experiments.md, "A judge that has learned").
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from collections import Counter
from pathlib import Path

from .corpus import PACKAGES, CorpusDocument, collect
from .questions import Made, model_question_ok, passages_of, pattern_questions, units_of, with_negatives

DEFAULT_OUT = Path("bench-results/judge")
VALIDATION_SHARE = 0.15
_ASK = (
    "Here is a sentence from a document:\n\n{unit}\n\n"
    "Write one short question that a reader would ask and that this sentence answers. Write only the question."
)


def install_packages() -> None:
    """The corpus's Debian packages, when missing (as root; the set-up's apt step)."""
    import os
    import shutil
    import subprocess

    missing = [p for p in PACKAGES if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if not missing:
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise SystemExit(f"install these Debian packages first: {' '.join(missing)}")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], check=True)


def document_text(doc: CorpusDocument) -> str:
    from infinipot.ingest import open_document

    return "".join(segment.text for segment in open_document(doc.path).segments())


class QuestionWriter:
    """The bundled model asked for the question a unit answers (greedy, at most 40 new tokens)."""

    def __init__(self, home: Path) -> None:
        from infinipot.core.model import ModelSpec, load_model

        self.loaded = load_model(ModelSpec(name="default", device="cpu", dtype="auto"), home)

    def __call__(self, units: list[str]) -> list[str]:
        """One question for each unit, written in one batched generate (padded on the left)."""
        import torch

        tokenizer, model = self.loaded.tokenizer, self.loaded.model
        prompts = [
            tokenizer.apply_chat_template(
                [{"role": "user", "content": _ASK.format(unit=unit)}], add_generation_prompt=True, tokenize=False
            )
            for unit in units
        ]
        tokenizer.padding_side = "left"
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        batch = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            out = model.generate(
                **batch, max_new_tokens=32, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )  # (B, T + new)
        texts = tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)
        return [text.strip().split("\n")[0].strip().strip('"').strip() for text in texts]


def made_for(
    doc: CorpusDocument, rng: random.Random, per_document: int, model_share: float, writer: QuestionWriter | None
) -> list[Made]:
    """The document's questions: patterns first, then the model's, at most `per_document`, each with negatives."""
    passages = [units_of(p) for p in passages_of(document_text(doc))]
    passages = [units for units in passages if len(units) >= 2]
    if len(passages) < 3:
        return []
    patterns = list(pattern_questions(passages, doc.kind == "log"))
    rng.shuffle(patterns)
    by_how: dict[str, list[Made]] = {}
    for made in patterns:
        by_how.setdefault(made.how, []).append(made)
    # Patterns interleaved so that no one pattern fills a document's share.
    chosen: list[Made] = []
    while any(by_how.values()) and len(chosen) < per_document * (1 - model_share):
        for how in sorted(by_how):
            if by_how[how]:
                chosen.append(by_how[how].pop())
    if writer is not None:
        prose = [(i, u) for i, units in enumerate(passages) for u in units if 8 <= len(u.split()) <= 50]
        rng.shuffle(prose)
        wanted = max(0, per_document - len(chosen))
        asked = prose[: 2 * wanted]
        written = writer([unit for _, unit in asked]) if asked else []
        kept = [
            Made(question, unit, "", "model", index)
            for (index, unit), question in zip(asked, written, strict=True)
            if model_question_ok(question, unit)
        ]
        chosen += kept[:wanted]
    return [made for made in (with_negatives(m, passages, rng) for m in chosen) if len(made.negatives) >= 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--seed", type=int, default=64)
    parser.add_argument("--per-document", type=int, default=26)
    parser.add_argument("--model-questions", type=float, default=0.22, help="the share the bundled model writes")
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-judge-home"), help="where the model is cached")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch
    from tqdm import tqdm

    torch.set_num_threads(args.threads)
    install_packages()
    rng = random.Random(args.seed)
    docs = collect(args.out / "documents", args.seed)
    validation = set(rng.sample([d.key for d in docs], max(1, round(VALIDATION_SHARE * len(docs)))))
    writer = QuestionWriter(args.home) if args.model_questions > 0 else None
    records = []
    for doc in tqdm(docs, desc="documents", unit="doc"):
        try:
            made = made_for(doc, rng, args.per_document, args.model_questions, writer)
        except Exception as error:  # a file ingest refuses (a scanned PDF) makes no question
            tqdm.write(f"{doc.key}: skipped ({error})")
            continue
        split = "validation" if doc.key in validation else "train"
        for number, m in enumerate(made):
            record = {
                "id": f"{doc.key}#{number}", "document": doc.key, "kind": doc.kind, "split": split, "how": m.how,
                "question": m.question, "unit": m.unit, "answer": m.answer, "negatives": m.negatives,
                "answerable": True,
            }  # fmt: skip
            records.append(record)
            if split == "validation" and number % 8 == 0:
                records.append(record | {"id": record["id"] + "/unanswered", "unit": "", "answerable": False})
    args.out.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in records)
    (args.out / "questions.jsonl").write_text(lines)
    digest = hashlib.sha256(lines.encode()).hexdigest()
    (args.out / "questions.sha256").write_text(digest + "\n")
    pairs = sum(bool(r["unit"]) + len(r["negatives"]) for r in records)
    print(f"{len(records)} questions, {pairs} (question, unit) pairs from {len({r['document'] for r in records})} "
          f"documents; sha256 {digest}")  # fmt: skip
    print("kinds:", dict(Counter(r["kind"] for r in records)))
    print("made by:", dict(Counter(r["how"] for r in records)))
    print("splits:", dict(Counter(r["split"] for r in records)))


if __name__ == "__main__":
    main()
