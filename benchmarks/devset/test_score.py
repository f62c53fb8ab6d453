"""Unit tests of the development set's scorer: python -m pytest benchmarks/devset/test_score.py"""

from benchmarks.devset.score import (
    evidence_holds,
    format_table,
    is_correct,
    loops,
    normalize,
    score_answer,
    summarize,
)


def test_normalize_drops_case_punctuation_and_whitespace():
    assert normalize("  The  BASELINE,\nwas 4,318 yards!  ") == "the baseline was 4318 yards"
    assert normalize("asn1_create_element()") == "asn1 create element"
    assert normalize("Élena’s map") == "elena s map"


def test_normalize_keeps_what_a_number_means():
    assert normalize("version 2.7.1.") == "version 2.7.1"
    assert normalize("returns -1 on error") == "returns -1 on error"
    assert normalize("PAY-4097") == "pay 4097"  # a hyphen inside a word is not a minus sign


def test_is_correct_by_normalised_containment_of_any_accepted_answer():
    assert is_correct("The lifeboat was called the Constance.", ["Constance"])
    assert is_correct("It was the COPPER-KETTLE inn", ["Copper Kettle"])
    assert is_correct("4318 yards long", ["4,318 yards"])
    assert is_correct("Hollis and Sons made it", ["Hollis & Sons", "Hollis and Sons"])
    assert is_correct("It is x", "x")  # a single accepted string is fine
    assert not is_correct("The lifeboat was the Grey Heron.", ["Constance"])
    assert not is_correct("", ["Constance"])


def test_numbers_match_as_written_and_on_word_boundaries():
    assert not is_correct("There were 140 men", ["14"])
    assert not is_correct("In 2014 it sank", ["14"])
    assert not is_correct("nine seconds", ["9 seconds"])
    assert not is_correct("it returns 1", ["-1"])
    assert is_correct("it returns -1.", ["-1"])
    assert not is_correct("version 2.7", ["2.7.1"])


def test_evidence_holds_when_a_snippet_contains_an_answer_or_the_quote():
    snippets = ["The Kessring lifeboat, the\nConstance, went out three times", "unrelated text"]
    assert evidence_holds(snippets, ["Constance"])
    assert evidence_holds(snippets, ["nope", "the kessring lifeboat the constance"])
    assert evidence_holds("one snippet as a string: PAY-4097", "pay 4097")
    assert not evidence_holds(snippets, ["Grey Heron"])
    assert not evidence_holds([], ["Constance"])
    assert not evidence_holds(None, ["Constance"])


def test_loops_needs_a_word_4gram_three_times():
    assert loops("the light is on. the light is on. the light is on.")
    assert loops("It is a map and it is a map and it is a map and more")
    assert not loops("the light is on. the light is on.")  # twice only
    assert not loops("a b c a b c a b c")  # a 3-word cycle: each 4-gram occurs only twice
    assert loops("a b c d a b c d a b c d")
    assert not loops("Ida Marlowe kept the light for twenty-seven years.")
    assert not loops("")


def test_score_answer_and_summary_table():
    question = {"answers": ["Constance"], "evidence": "The Kessring lifeboat, the Constance"}
    good = score_answer("The Constance.", question, ["the lifeboat, the Constance, went out"])
    bad = score_answer("the boat the boat the boat the boat the boat the boat", question, ["no answer here"])
    uncited = score_answer("Constance", question)
    assert good == {"correct": True, "evidence": True, "looped": False}
    assert bad == {"correct": False, "evidence": False, "looped": True}
    assert uncited["evidence"] is None
    records = [
        {"mode": "a", **good, "ttft_seconds": 1.0},
        {"mode": "a", **bad, "ttft_seconds": 3.0},
        {"mode": "a", **uncited, "ttft_seconds": 2.0},
        {"mode": "b", **uncited, "ttft_seconds": None},
    ]
    rows = summarize(records)
    assert [r["mode"] for r in rows] == ["a", "b"]
    a, b = rows
    assert a == {"mode": "a", "n": 3, "evidence_recall": 50.0, "correct": 66.7, "looping": 1, "median_ttft": 2.0}
    assert b["evidence_recall"] is None and b["median_ttft"] is None and b["correct"] == 100.0
    table = format_table(rows)
    assert "| a | 3 | 50.0% | 66.7% | 1 | 2.0 |" in table
    assert "| b | 1 | n/a | 100.0% | 0 | n/a |" in table


def test_citations_point_at_the_evidence_page_or_line():
    from benchmarks.devset.score import cites_location

    assert cites_location([{"page": 9, "line": None}, {"page": 4, "line": None}], 4)
    assert not cites_location([{"page": 5, "line": None}], 4)
    assert cites_location([{"page": None, "line": 565}], 564)  # the quote runs on to the next line
    assert not cites_location([{"page": None, "line": 563}], 564)
    assert not cites_location([], 4) and not cites_location(None, 4)


def test_score_records_joins_answers_with_questions():
    from benchmarks.devset.score import score_records

    questions = [{"id": "q1", "document": "story", "answers": ["Pepper"], "evidence": "a dog named Pepper", "where": 9}]
    records = [
        {"id": "q1", "mode": "pot", "answer": "Pepper", "citations": [{"page": None, "line": 9}]},
        {"id": "q1", "mode": "evidence", "answer": "Rex", "snippets": ["a small brown dog named Pepper"]},
        {"id": "q1", "mode": "bare", "answer": "pepper!"},
    ]
    pot, evidence, bare = score_records(records, questions)
    assert (pot["correct"], pot["evidence"], pot["document"]) == (True, True, "story")
    assert (evidence["correct"], evidence["evidence"]) == (False, True)
    assert (bare["correct"], bare["evidence"]) == (True, None)
