"""The question set matches its documents: python -m pytest benchmarks/devset/test_questions.py

The story and the logs are generated into a temp folder; the documents made from Debian's files are checked
where Debian installed them (python -m benchmarks.devset.documents prints the apt-get command), skipped otherwise
and required in CI.
"""

import json
from pathlib import Path

import pytest

from benchmarks.devset.check import (
    QUESTIONS,
    check,
    check_followups,
    check_unanswerable,
    load_followups,
    load_questions,
    load_unanswerable,
)
from benchmarks.devset.conftest import GENERATED
from benchmarks.devset.documents import DOCUMENTS, HALVES, half_keys
from benchmarks.devset.make_log import log_lines
from benchmarks.devset.make_story import story_text
from benchmarks.devset.make_syslog import syslog_lines

INSTALLED = set(DOCUMENTS) - GENERATED


def test_generators_are_deterministic_and_sized():
    assert story_text() == story_text()
    assert log_lines() == log_lines()
    assert story_text(seed=8) != story_text()
    assert 60_000 < len(story_text()) < 120_000  # about 19K tokens
    assert len(log_lines()) == 250
    assert "SIGTERM" in log_lines()[-3]  # the shutdown closes the log
    assert syslog_lines() == syslog_lines() and syslog_lines(seed=5) != syslog_lines()
    assert len(syslog_lines()) == 420 and "reboot" in syslog_lines()[-1]


def test_the_set_is_wide_and_split_by_document_into_two_halves():
    assert len(DOCUMENTS) >= 14 and len({doc.genre for doc in DOCUMENTS.values()}) >= 7
    tuning, heldout = (set(half_keys(half)) for half in HALVES)
    assert tuning | heldout == set(DOCUMENTS) and not tuning & heldout
    # The first development set's documents, on which the answer rules were made, are all in the tuning half.
    assert {key for key, doc in DOCUMENTS.items() if doc.paraphrased} <= tuning
    asked = load_questions() + load_unanswerable() + load_followups()
    assert len(asked) >= 160
    for half in (tuning, heldout):
        mine = [q for q in asked if q["document"] in half]
        assert len(mine) >= 100
        assert len({DOCUMENTS[q["document"]].genre for q in mine}) >= 5
    assert {DOCUMENTS[key].genre for key in heldout} >= {"manual-page", "licence", "log"}


# Each set's checker, and the fewest records each document must have whose place and quote it checks (0: the
# unanswerable set, whose checker counts kinds instead).
CHECKERS = {"questions": (check, 6), "followups": (check_followups, 3), "unanswerable": (check_unanswerable, 0)}


def assert_matches(checker, docs_dir: Path, keys: set[str], least: int) -> None:
    problems, coverage = checker(docs_dir, keys=keys)
    assert problems == []
    assert all(len(coverage[key]) >= least for key in keys)


@pytest.mark.parametrize("name", CHECKERS)
def test_every_set_matches_the_generated_documents(docs, name):
    checker, least = CHECKERS[name]
    assert_matches(checker, docs, GENERATED, least)


@pytest.mark.parametrize("name", CHECKERS)
def test_every_set_matches_the_installed_documents(installed_documents, name):
    checker, least = CHECKERS[name]
    assert_matches(checker, installed_documents, INSTALLED, least)


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
        assert sum(p["document"] == key for p in pairs) >= 3
    problems, coverage = check_followups(None)  # structure only: no documents read
    assert problems == [] and coverage == {}


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
        assert kinds[key]["absent"] >= 1 and kinds[key]["near-miss"] >= 1
    for q in questions:  # the terms that back each question's claim are recorded (and checked below)
        assert q.get("not_in_text") if q["kind"] == "absent" else q.get("in_text")
    answerable = {q["question"] for q in load_questions()} | {p["standalone"] for p in load_followups()}
    assert not answerable & {q["question"] for q in questions}


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
    assert any(p.startswith("story:") and "want at least 3" in p for p in problems)
    assert any(p.startswith("story:") and "no absent or near-miss" in p for p in problems)
