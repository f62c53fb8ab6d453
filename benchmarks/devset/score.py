"""Scoring answers against the development set: pure functions, no torch.

    is_correct(answer, accepted)       any accepted answer is contained in the answer (normalised)
    evidence_holds(snippets, targets)  a cited snippet contains an accepted answer or the evidence quote
    cites_location(citations, where)   a citation of `infinipot ask --json` points at the evidence's page/line
    loops(answer)                      some word 4-gram occurs 3 or more times
    score_answer(answer, question, snippets)  -> {"correct", "evidence", "looped"}
    summarize(records) / format_table(rows)    per-mode summary: evidence recall %, correct %, looping
                                               count, median seconds to first token

Normalisation: Unicode compatibility form without accents, lower case, every character that is not a letter or
digit becomes a space, runs of spaces collapse. Numbers are compared as written ("nine" is not "9", "14" is not
"14.0"), with three exceptions that keep a number's meaning: a thousands comma between digits is dropped
("4,318" == "4318"), a point between digits is kept ("2.7.1"), and a minus sign before a digit at the start of
a word is kept ("-1" is not "1"). Containment is on word boundaries, so "14" does not match "140" or "2014".
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_DIGIT_POINT = re.compile(r"(?<=\d)\.(?=\d)")
_MINUS = re.compile(r"(?:(?<=^)|(?<=\s))[-\u2212](?=\d)")
_KEEP_POINT, _KEEP_MINUS = "\x00", "\x01"


def normalize(text: str) -> str:
    """Lower-case words and numbers separated by single spaces (see the module's docstring)."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = _THOUSANDS.sub("", text)
    text = _DIGIT_POINT.sub(_KEEP_POINT, text)
    text = _MINUS.sub(_KEEP_MINUS, text)
    text = "".join(ch if ch.isalnum() or ch in (_KEEP_POINT, _KEEP_MINUS) else " " for ch in text)
    text = " ".join(text.split())
    return text.replace(_KEEP_POINT, ".").replace(_KEEP_MINUS, "-")


def _as_list(value: str | Iterable[str] | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return [v for v in value if v is not None]


def contains(haystack: str, needle: str) -> bool:
    """Whether normalised `needle` occurs in normalised `haystack` as whole words."""
    needle = normalize(needle)
    if not needle:
        return False
    return f" {needle} " in f" {normalize(haystack)} "


def is_correct(answer: str, accepted: str | Iterable[str]) -> bool:
    """Whether the answer contains any of the accepted answers (case, punctuation and whitespace ignored)."""
    return any(contains(answer or "", option) for option in _as_list(accepted))


def evidence_holds(snippets: str | Iterable[str] | None, targets: str | Iterable[str]) -> bool:
    """Whether one cited snippet holds an accepted answer or the evidence quote (pass either or both)."""
    texts = _as_list(snippets)
    return any(contains(text, target) for text in texts for target in _as_list(targets))


def cites_location(citations: Iterable[dict] | None, where: int, slack: int = 2) -> bool:
    """Whether a citation ({"page", "line"} as `infinipot ask --json` gives them) points at the evidence.

    `where` is questions.jsonl's page (documents with pages: the cited page must be it) or line (text: the
    cited line must be `where` .. `where + slack`, since a quote can run on over the next lines)."""
    for citation in citations or []:
        page, line = citation.get("page"), citation.get("line")
        if page is not None:
            if page == where:
                return True
        elif line is not None and where <= line <= where + slack:
            return True
    return False


def loops(answer: str, n: int = 4, times: int = 3) -> bool:
    """Whether some word n-gram (default 4) occurs `times` (default 3) or more times in the answer."""
    words = normalize(answer or "").split()
    if len(words) < n:
        return False
    counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    return max(counts.values()) >= times


def score_answer(answer: str, question: dict, snippets: str | Sequence[str] | None = None) -> dict:
    """Score one answer to one question of questions.jsonl; `evidence` is None when no snippets were cited."""
    accepted = question["answers"]
    evidence = None
    if snippets is not None:
        evidence = evidence_holds(snippets, [*accepted, question.get("evidence", "")])
    return {"correct": is_correct(answer, accepted), "evidence": evidence, "looped": loops(answer)}


def score_records(records: Iterable[dict], questions: Iterable[dict]) -> list[dict]:
    """Score answer records {"id", "mode", "answer", optional "snippets" | "citations", "ttft_seconds"} against
    the questions; unknown ids are an error. Returns the records with correct, evidence, looped added."""
    by_id = {q["id"]: q for q in questions}
    scored = []
    for record in records:
        question = by_id[record["id"]]
        result = score_answer(record.get("answer", ""), question, record.get("snippets"))
        if result["evidence"] is None and record.get("citations") is not None:
            result["evidence"] = cites_location(record["citations"], question["where"])
        scored.append({**record, "document": question["document"], **result})
    return scored


def _percent(flags: list[bool]) -> float | None:
    return round(100.0 * sum(flags) / len(flags), 1) if flags else None


def summarize(records: Iterable[dict], key: str = "mode") -> list[dict]:
    """One row per mode (in first-seen order) from records carrying `key`, correct, evidence, looped,
    ttft_seconds: n, evidence_recall (% of records with snippets whose snippets hold the answer), correct (%),
    looping (count), median_ttft (seconds)."""
    groups: dict[str, list[dict]] = {}
    for record in records:
        groups.setdefault(record[key], []).append(record)
    rows = []
    for mode, items in groups.items():
        ttfts = [r["ttft_seconds"] for r in items if r.get("ttft_seconds") is not None]
        rows.append(
            {
                "mode": mode,
                "n": len(items),
                "evidence_recall": _percent([bool(r["evidence"]) for r in items if r.get("evidence") is not None]),
                "correct": _percent([bool(r["correct"]) for r in items]),
                "looping": sum(bool(r.get("looped")) for r in items),
                "median_ttft": round(statistics.median(ttfts), 2) if ttfts else None,
            }
        )
    return rows


def format_table(rows: Sequence[dict]) -> str:
    """Markdown table of summarize()'s rows."""

    def cell(value, suffix=""):
        return "n/a" if value is None else f"{value}{suffix}"

    lines = [
        "| mode | n | evidence recall | correct | looping | median s to first token |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['mode']} | {row['n']} | {cell(row['evidence_recall'], '%')} | {cell(row['correct'], '%')} "
            f"| {row['looping']} | {cell(row['median_ttft'])} |"
        )
    return "\n".join(lines)


def main() -> None:
    import argparse
    import json
    from pathlib import Path

    parser = argparse.ArgumentParser(description="Score answer records (JSONL) against the development set.")
    parser.add_argument("answers", type=Path, help='JSONL: {"id", "mode", "answer", "snippets"|"citations", ...}')
    parser.add_argument("--questions", type=Path, default=Path(__file__).with_name("questions.jsonl"))
    args = parser.parse_args()
    with open(args.questions, encoding="utf-8") as handle:
        questions = [json.loads(line) for line in handle if line.strip()]
    with open(args.answers, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    print(format_table(summarize(score_records(records, questions))))


if __name__ == "__main__":
    main()
