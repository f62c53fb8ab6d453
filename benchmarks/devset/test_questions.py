"""The question set matches its documents: python -m pytest benchmarks/devset/test_questions.py

The story and the log are generated into a temp folder; the PDFs are checked where Debian installed them
(apt-get install libtasn1-doc shared-mime-info), and skipped otherwise.
"""

import json
from pathlib import Path

from benchmarks.devset.check import (
    QUESTIONS,
    check,
    check_followups,
    check_unanswerable,
    load_followups,
    load_questions,
    load_unanswerable,
)
from benchmarks.devset.documents import DOCUMENTS
from benchmarks.devset.make_log import log_lines
from benchmarks.devset.make_story import story_text


def test_generators_are_deterministic_and_sized():
    assert story_text() == story_text()
    assert log_lines() == log_lines()
    assert story_text(seed=8) != story_text()
    assert 60_000 < len(story_text()) < 120_000  # about 19K tokens
    assert len(log_lines()) == 250
    assert "SIGTERM" in log_lines()[-3]  # the shutdown closes the log


def test_generated_documents_match_their_questions(docs):
    problems, coverage = check(docs, keys={"story", "log"})
    assert problems == []
    assert len(coverage["story"]) >= 6 and len(coverage["log"]) >= 6


def test_pdf_questions_match_the_installed_manuals(installed_pdfs):
    problems, coverage = check(installed_pdfs, keys={"libtasn1", "mime-spec"})
    assert problems == []
    assert len(coverage["libtasn1"]) >= 6 and len(coverage["mime-spec"]) >= 6


def test_check_reports_a_wrong_location_and_a_missing_quote(docs, tmp_path):
    questions = [q for q in load_questions() if q["document"] in ("story", "log")]
    questions[0] = dict(questions[0], where=questions[0]["where"] + 7)
    questions[1] = dict(questions[1], evidence="a sentence that is in neither document")
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    problems, _ = check(docs, path, keys={"story", "log"})
    assert any(p.startswith(questions[0]["id"]) and "not line" in p for p in problems)
    assert any(p.startswith(questions[1]["id"]) and "not found" in p for p in problems)


def test_question_set_shape():
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 30
    for key in DOCUMENTS:
        assert sum(q["document"] == key for q in questions) >= 6


# Follow-up pairs and unanswerable questions (followups.jsonl, unanswerable.jsonl).


def _write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_followup_set_shape():
    pairs = load_followups()
    assert len(pairs) >= 16
    assert len({p["id"] for p in pairs}) == len(pairs)
    for key in DOCUMENTS:
        assert sum(p["document"] == key for p in pairs) >= 4
    problems, coverage = check_followups(None)  # structure only: no documents read
    assert problems == [] and coverage == {}


def test_generated_documents_match_their_followups(docs):
    problems, coverage = check_followups(docs, keys={"story", "log"})
    assert problems == []
    assert len(coverage["story"]) >= 4 and len(coverage["log"]) >= 4


def test_pdf_followups_match_the_installed_manuals(installed_pdfs):
    problems, coverage = check_followups(installed_pdfs, keys={"libtasn1", "mime-spec"})
    assert problems == []
    assert len(coverage["libtasn1"]) >= 4 and len(coverage["mime-spec"]) >= 4


def test_check_followups_reports_location_quote_and_a_leaked_answer(docs, tmp_path):
    pairs = load_followups()
    story = [i for i, p in enumerate(pairs) if p["document"] == "story"]
    pairs[story[0]] = dict(pairs[story[0]], where=pairs[story[0]]["where"] + 7)
    pairs[story[1]] = dict(pairs[story[1]], evidence="a sentence that is in neither document")
    pairs[story[2]] = dict(pairs[story[2]], followup=pairs[story[2]]["followup"] + " " + pairs[story[2]]["answers"][0])
    path = _write_jsonl(tmp_path / "followups.jsonl", pairs)
    problems, _ = check_followups(docs, path, keys={"story", "log"})
    assert any(p.startswith(pairs[story[0]]["id"]) and "not line" in p for p in problems)
    assert any(p.startswith(pairs[story[1]]["id"]) and "not found" in p for p in problems)
    assert any(p.startswith(pairs[story[2]]["id"]) and "followup question already holds" in p for p in problems)


def test_unanswerable_set_shape():
    questions = load_unanswerable()
    assert len(questions) >= 24
    problems, kinds = check_unanswerable()  # structure only: no documents read
    assert problems == []
    for key in DOCUMENTS:
        assert kinds[key]["absent"] >= 3 and kinds[key]["absent"] == kinds[key]["near-miss"]
    for q in questions:  # the terms that back each question's claim are recorded (and checked below)
        assert q.get("not_in_text") if q["kind"] == "absent" else q.get("in_text")
    answerable = {q["question"] for q in load_questions()} | {p["standalone"] for p in load_followups()}
    assert not answerable & {q["question"] for q in questions}


def test_unanswerable_terms_match_the_generated_documents(docs):
    problems, _ = check_unanswerable(docs, keys={"story", "log"})
    assert problems == []


def test_unanswerable_terms_match_the_installed_manuals(installed_pdfs):
    problems, _ = check_unanswerable(installed_pdfs, keys={"libtasn1", "mime-spec"})
    assert problems == []


def test_check_unanswerable_reports_bad_records(docs, tmp_path):
    questions = [q for q in load_unanswerable() if q["document"] == "log"]
    near = [q for q in questions if q["kind"] == "near-miss"]
    bad = [
        dict(questions[0], kind="vague"),
        dict(questions[1], id=questions[0]["id"]),
        dict(near[0], in_text=["a phrase the log never holds"]),
        dict(near[1], not_in_text=["PAY-4097"]),
        {k: v for k, v in questions[3].items() if k != "why"},
    ]
    path = _write_jsonl(tmp_path / "unanswerable.jsonl", bad + questions[4:])
    problems, kinds = check_unanswerable(docs, path, keys={"log"})
    assert any(p.startswith(questions[0]["id"]) and "kind 'vague'" in p for p in problems)
    assert any(p.startswith(questions[0]["id"]) and "duplicate id" in p for p in problems)
    assert any(p.startswith(near[0]["id"]) and "is not in" in p for p in problems)
    assert any(p.startswith(near[1]["id"]) and "occurs in" in p for p in problems)
    assert any(p.startswith(questions[3]["id"]) and "missing why" in p for p in problems)
    assert any(p.startswith("log:") and "want at least 6" in p for p in problems)
    assert any(p.startswith("story:") and "no absent or near-miss" in p for p in problems)
