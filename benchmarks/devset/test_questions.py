"""The question set matches its documents: python -m pytest benchmarks/devset/test_questions.py

The story and the log are generated into a temp folder; the PDFs are checked where Debian installed them
(apt-get install libtasn1-doc shared-mime-info), and skipped otherwise.
"""

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.devset.check import QUESTIONS, check, load_questions
from benchmarks.devset.documents import DOCUMENTS
from benchmarks.devset.make_log import log_lines, write_log
from benchmarks.devset.make_story import story_text, write_story


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("devset-docs")
    write_story(folder / DOCUMENTS["story"].file)
    write_log(folder / DOCUMENTS["log"].file)
    return folder


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


def test_pdf_questions_match_the_installed_manuals(tmp_path):
    missing = [d.installed for d in DOCUMENTS.values() if d.installed and not Path(d.installed).is_file()]
    if missing:
        pytest.skip(f"not installed: {missing}")
    for doc in DOCUMENTS.values():
        if doc.installed:
            shutil.copyfile(doc.installed, tmp_path / doc.file)
    problems, coverage = check(tmp_path, keys={"libtasn1", "mime-spec"})
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
