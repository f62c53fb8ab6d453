"""Checks questions.jsonl against the documents as the project extracts them.

    python -m benchmarks.devset.check [DOCS_DIR] [--questions benchmarks/devset/questions.jsonl]

For every question: the fields are there, the document is known, the evidence quote occurs in the text that
infinipot.ingest extracts (whitespace runs compared as one space), one occurrence sits on the recorded page
(PDF) or line (text), and the quote itself holds an accepted answer. For every document: at least 6 questions,
with evidence in its first, middle and last third. Exits 1 and lists the problems when any check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from .doctext import DocText
from .documents import DEFAULT_DIR, DOCUMENTS, document_path
from .score import evidence_holds

QUESTIONS = Path(__file__).with_name("questions.jsonl")
FIELDS = ("id", "document", "question", "answers", "evidence", "where")
MIN_PER_DOCUMENT = 6


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _extent(doc: DocText) -> int:
    """Last page (PDF) or line (text) of the document."""
    return doc.where(max(0, len(doc.text) - 1)) or 1


def check(
    docs_dir: Path = DEFAULT_DIR, questions_path: Path = QUESTIONS, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems found (empty when all is well) and per-document coverage {key: [(where, extent), ...]}.

    `keys` limits the check to some documents (e.g. when the PDFs are not installed)."""
    problems: list[str] = []
    questions = load_questions(questions_path)
    seen: set[str] = set()
    texts: dict[str, DocText] = {}
    coverage: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for number, q in enumerate(questions, start=1):
        label = q.get("id", f"line {number}")
        missing = [field for field in FIELDS if field not in q]
        if missing:
            problems.append(f"{label}: missing {', '.join(missing)}")
            continue
        if q["id"] in seen:
            problems.append(f"{label}: duplicate id")
        seen.add(q["id"])
        key = q["document"]
        if key not in DOCUMENTS:
            problems.append(f"{label}: unknown document {key!r}")
            continue
        if keys is not None and key not in keys:
            continue
        answers = q["answers"]
        if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
            problems.append(f"{label}: answers must be a non-empty list of strings")
            continue
        if not evidence_holds(q["evidence"], answers):
            problems.append(f"{label}: the evidence quote holds none of the accepted answers")
        if key not in texts:
            texts[key] = DocText.load(document_path(docs_dir, key))
        doc = texts[key]
        hits = doc.find_all(q["evidence"])
        if not hits:
            problems.append(f"{label}: evidence not found in {DOCUMENTS[key].file}: {q['evidence']!r}")
            continue
        places = sorted({doc.where(hit) for hit in hits})
        if q["where"] not in places:
            unit = doc.page_or_line_label()
            problems.append(f"{label}: evidence is on {unit} {places}, not {unit} {q['where']}")
        coverage[key].append((q["where"], _extent(doc)))
    for key in DOCUMENTS if keys is None else sorted(keys):
        spots = coverage.get(key, [])
        if len(spots) < MIN_PER_DOCUMENT:
            problems.append(f"{key}: {len(spots)} questions with valid evidence, want at least {MIN_PER_DOCUMENT}")
            continue
        thirds = {min(2, 3 * (where - 1) // extent) for where, extent in spots}
        if thirds != {0, 1, 2}:
            names = ", ".join(("beginning", "middle", "end")[t] for t in sorted({0, 1, 2} - thirds))
            problems.append(f"{key}: no question's evidence in the document's {names}")
    return problems, dict(coverage)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path, nargs="?", default=DEFAULT_DIR, help=f"documents folder ({DEFAULT_DIR})")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    args = parser.parse_args()
    absent = [doc.file for doc in DOCUMENTS.values() if not (args.docs / doc.file).is_file()]
    if absent:
        sys.exit(f"{args.docs} lacks {', '.join(absent)}: run python -m benchmarks.devset.documents --out {args.docs}")
    problems, coverage = check(args.docs, args.questions)
    for key, spots in coverage.items():
        extent = spots[0][1]
        unit = "pages" if DOCUMENTS[key].kind == "pdf" else "lines"
        print(f"{key:10} {len(spots):3} questions, evidence at {sorted(w for w, _ in spots)} of {extent} {unit}")
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"ok: {sum(len(s) for s in coverage.values())} questions, every evidence quote found where recorded")


if __name__ == "__main__":
    main()
