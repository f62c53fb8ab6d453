"""Checks questions.jsonl, followups.jsonl and unanswerable.jsonl against the documents as the project extracts them.

    python -m benchmarks.devset.check [DOCS_DIR] [--questions benchmarks/devset/questions.jsonl]
        [--followups benchmarks/devset/followups.jsonl] [--unanswerable benchmarks/devset/unanswerable.jsonl]

For every question: the fields are there, the document is known, the evidence quote occurs in the text that
infinipot.ingest extracts (whitespace runs compared as one space), one occurrence sits on the recorded page
(PDF) or line (text), and the quote itself holds an accepted answer. For every document: at least 6 questions,
with evidence in its first, middle and last third.

Every follow-up pair gets the same evidence check for its follow-up's answers, and its follow-up and standalone
wording must not already hold an answer; every document needs at least 4 pairs. Every unanswerable question
needs its fields, a known document and kind ("absent" or "near-miss"), a unique id; every document needs at
least 6, of both kinds. Its optional "in_text" terms must occur in the extracted text and its "not_in_text"
terms must not (whole words, case and punctuation ignored, as score.is_correct compares).

Exits 1 and lists the problems when any check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

from .doctext import DocText
from .documents import DEFAULT_DIR, DOCUMENTS, document_path
from .score import evidence_holds, is_correct, normalize

QUESTIONS = Path(__file__).with_name("questions.jsonl")
FOLLOWUPS = Path(__file__).with_name("followups.jsonl")
UNANSWERABLE = Path(__file__).with_name("unanswerable.jsonl")
FIELDS = ("id", "document", "question", "answers", "evidence", "where")
FOLLOWUP_FIELDS = ("id", "document", "first", "followup", "standalone", "answers", "evidence", "where")
UNANSWERABLE_FIELDS = ("id", "document", "question", "kind", "why")
KINDS = ("absent", "near-miss")
MIN_PER_DOCUMENT = 6
MIN_FOLLOWUPS_PER_DOCUMENT = 4
MIN_UNANSWERABLE_PER_DOCUMENT = 6


def _load_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def load_questions(path: Path = QUESTIONS) -> list[dict]:
    return _load_jsonl(path)


def load_followups(path: Path = FOLLOWUPS) -> list[dict]:
    return _load_jsonl(path)


def load_unanswerable(path: Path = UNANSWERABLE) -> list[dict]:
    return _load_jsonl(path)


def _extent(doc: DocText) -> int:
    """Last page (PDF) or line (text) of the document."""
    return doc.where(max(0, len(doc.text) - 1)) or 1


def _texts(docs_dir: Path):
    """A loader that extracts each document once: texts(key) -> DocText."""
    cache: dict[str, DocText] = {}

    def get(key: str) -> DocText:
        if key not in cache:
            cache[key] = DocText.load(document_path(docs_dir, key))
        return cache[key]

    return get


def _check_header(number: int, item: dict, fields: tuple[str, ...], seen: set[str], problems: list[str]) -> str | None:
    """The record's label when its fields are there and its document is known (a duplicate id is reported but
    the record still checked); None, with the problem recorded, otherwise."""
    label = item.get("id", f"line {number}")
    missing = [field for field in fields if field not in item]
    if missing:
        problems.append(f"{label}: missing {', '.join(missing)}")
        return None
    if item["id"] in seen:
        problems.append(f"{label}: duplicate id")
    seen.add(item["id"])
    if item["document"] not in DOCUMENTS:
        problems.append(f"{label}: unknown document {item['document']!r}")
        return None
    return label


def _answers_ok(label: str, answers, problems: list[str]) -> bool:
    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) and a.strip() for a in answers):
        problems.append(f"{label}: answers must be a non-empty list of strings")
        return False
    return True


def _check_evidence(label: str, item: dict, doc: DocText, problems: list[str]) -> tuple[int, int] | None:
    """Whether item's evidence holds one of its answers and is found on its page/line; returns (where, extent)
    when the quote was found (even on another page or line, which is reported), None otherwise."""
    key = item["document"]
    if not evidence_holds(item["evidence"], item["answers"]):
        problems.append(f"{label}: the evidence quote holds none of the accepted answers")
    hits = doc.find_all(item["evidence"])
    if not hits:
        problems.append(f"{label}: evidence not found in {DOCUMENTS[key].file}: {item['evidence']!r}")
        return None
    places = sorted({doc.where(hit) for hit in hits})
    if item["where"] not in places:
        unit = doc.page_or_line_label()
        problems.append(f"{label}: evidence is on {unit} {places}, not {unit} {item['where']}")
    return item["where"], _extent(doc)


def check(
    docs_dir: Path = DEFAULT_DIR, questions_path: Path = QUESTIONS, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems found (empty when all is well) and per-document coverage {key: [(where, extent), ...]}.

    `keys` limits the check to some documents (e.g. when the PDFs are not installed)."""
    problems: list[str] = []
    seen: set[str] = set()
    texts = _texts(docs_dir)
    coverage: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for number, q in enumerate(load_questions(questions_path), start=1):
        label = _check_header(number, q, FIELDS, seen, problems)
        if label is None:
            continue
        key = q["document"]
        if keys is not None and key not in keys:
            continue
        if not _answers_ok(label, q["answers"], problems):
            continue
        spot = _check_evidence(label, q, texts(key), problems)
        if spot is not None:
            coverage[key].append(spot)
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


def check_followups(
    docs_dir: Path | None = DEFAULT_DIR, path: Path = FOLLOWUPS, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems in followups.jsonl and the pairs whose evidence was found, {key: [(where, extent), ...]}.

    The structure (fields, answers, the evidence quote holding an answer, no answer already in the follow-up
    or its standalone form, at least 4 pairs a document) is checked for every pair; the evidence's place only
    for the documents in `keys` (all when None; none when docs_dir is None)."""
    problems: list[str] = []
    seen: set[str] = set()
    texts = _texts(docs_dir) if docs_dir is not None else None
    counts: Counter[str] = Counter()
    coverage: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for number, pair in enumerate(load_followups(path), start=1):
        label = _check_header(number, pair, FOLLOWUP_FIELDS, seen, problems)
        if label is None:
            continue
        key = pair["document"]
        texts_ok = all(isinstance(pair[f], str) and pair[f].strip() for f in ("first", "followup", "standalone"))
        if not texts_ok:
            problems.append(f"{label}: first, followup and standalone must be non-empty strings")
            continue
        if not _answers_ok(label, pair["answers"], problems):
            continue
        counts[key] += 1
        if pair["followup"].strip() == pair["standalone"].strip():
            problems.append(f"{label}: the standalone question repeats the follow-up")
        for field in ("followup", "standalone"):
            if is_correct(pair[field], pair["answers"]):
                problems.append(f"{label}: the {field} question already holds an accepted answer")
        if texts is None or (keys is not None and key not in keys):
            if not evidence_holds(pair["evidence"], pair["answers"]):
                problems.append(f"{label}: the evidence quote holds none of the accepted answers")
            continue
        spot = _check_evidence(label, pair, texts(key), problems)
        if spot is not None:
            coverage[key].append(spot)
    for key in DOCUMENTS:
        if counts[key] < MIN_FOLLOWUPS_PER_DOCUMENT:
            problems.append(f"{key}: {counts[key]} follow-up pairs, want at least {MIN_FOLLOWUPS_PER_DOCUMENT}")
    return problems, dict(coverage)


def check_unanswerable(
    docs_dir: Path | None = None, path: Path = UNANSWERABLE, keys: set[str] | None = None
) -> tuple[list[str], dict]:
    """Problems in unanswerable.jsonl and the counts {key: {"absent": n, "near-miss": n}}.

    Fields, kinds, unique ids and at least 6 questions of both kinds a document are checked always; with
    docs_dir, also that each question's "in_text" terms occur in its document's extracted text and its
    "not_in_text" terms do not (for the documents in `keys`; all when None)."""
    problems: list[str] = []
    seen: set[str] = set()
    texts = _texts(docs_dir) if docs_dir is not None else None
    normalized: dict[str, str] = {}
    counts: dict[str, Counter[str]] = {key: Counter() for key in DOCUMENTS}
    for number, q in enumerate(load_unanswerable(path), start=1):
        label = _check_header(number, q, UNANSWERABLE_FIELDS, seen, problems)
        if label is None:
            continue
        key = q["document"]
        if not all(isinstance(q[f], str) and q[f].strip() for f in ("question", "why")):
            problems.append(f"{label}: question and why must be non-empty strings")
            continue
        if q["kind"] not in KINDS:
            problems.append(f"{label}: kind {q['kind']!r} is not one of {', '.join(KINDS)}")
            continue
        counts[key][q["kind"]] += 1
        terms = {field: q.get(field, []) for field in ("in_text", "not_in_text")}
        if not all(isinstance(t, list) and all(isinstance(s, str) and s.strip() for s in t) for t in terms.values()):
            problems.append(f"{label}: in_text and not_in_text must be lists of strings")
            continue
        if texts is None or (keys is not None and key not in keys):
            continue
        if key not in normalized:
            normalized[key] = f" {normalize(texts(key).text)} "
        text = normalized[key]
        for term in terms["in_text"]:
            if f" {normalize(term)} " not in text:
                problems.append(f"{label}: {term!r} is not in {DOCUMENTS[key].file}")
        for term in terms["not_in_text"]:
            if f" {normalize(term)} " in text:
                problems.append(f"{label}: {term!r} occurs in {DOCUMENTS[key].file}")
    for key, kinds in counts.items():
        total = sum(kinds.values())
        if total < MIN_UNANSWERABLE_PER_DOCUMENT:
            problems.append(f"{key}: {total} unanswerable questions, want at least {MIN_UNANSWERABLE_PER_DOCUMENT}")
        lacking = [kind for kind in KINDS if not kinds[kind]]
        if lacking:
            problems.append(f"{key}: no {' or '.join(lacking)} unanswerable question")
    return problems, {key: dict(kinds) for key, kinds in counts.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path, nargs="?", default=DEFAULT_DIR, help=f"documents folder ({DEFAULT_DIR})")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--followups", type=Path, default=FOLLOWUPS)
    parser.add_argument("--unanswerable", type=Path, default=UNANSWERABLE)
    args = parser.parse_args()
    absent = [doc.file for doc in DOCUMENTS.values() if not (args.docs / doc.file).is_file()]
    if absent:
        sys.exit(f"{args.docs} lacks {', '.join(absent)}: run python -m benchmarks.devset.documents --out {args.docs}")
    problems, coverage = check(args.docs, args.questions)
    for key, spots in coverage.items():
        extent = spots[0][1]
        unit = "pages" if DOCUMENTS[key].kind == "pdf" else "lines"
        print(f"{key:10} {len(spots):3} questions, evidence at {sorted(w for w, _ in spots)} of {extent} {unit}")
    follow_problems, follow_coverage = check_followups(args.docs, args.followups)
    per_doc = ", ".join(f"{key} {len(spots)}" for key, spots in follow_coverage.items())
    print(
        f"followups: {sum(len(s) for s in follow_coverage.values())} pairs with evidence found ({per_doc}), "
        f"{len(follow_problems)} problems"
    )
    unans_problems, kinds = check_unanswerable(args.docs, args.unanswerable)
    per_doc = ", ".join(f"{key} {k.get('absent', 0)}+{k.get('near-miss', 0)}" for key, k in kinds.items())
    print(
        f"unanswerable: {sum(sum(k.values()) for k in kinds.values())} questions "
        f"(absent+near-miss: {per_doc}), {len(unans_problems)} problems"
    )
    problems += follow_problems + unans_problems
    if problems:
        print("\n".join(problems), file=sys.stderr)
        sys.exit(1)
    print(f"ok: {sum(len(s) for s in coverage.values())} questions, every evidence quote found where recorded")


if __name__ == "__main__":
    main()
