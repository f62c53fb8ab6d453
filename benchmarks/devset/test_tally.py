"""Counting answers per half and per kind of document (benchmarks.devset.tally)."""

from benchmarks.devset.tally import half_row, kind_row, tally

QUESTIONS = {
    "a-1": {"answers": ["22"], "evidence": "The default is 22."},
    "a-2": {"answers": ["seek"], "evidence": "Default is seek."},
    "b-1": {"answers": ["1.3"], "evidence": "Version 1.3"},
}
UNANSWERABLE = {"u-1": {}, "u-2": {}}
FOLLOWUPS = {"f-1": {"answers": ["3"]}}


def _asked(id_, document, answer, answerable, snippets=(), ttft=1.0):
    return {
        "set": "answerable",
        "id": id_,
        "document": document,
        "answer": answer,
        "answerable": answerable,
        "snippets": list(snippets),
        "ttft_seconds": ttft,
    }


RECORDS = [
    _asked("a-1", "a", "Port: The default is 22.", True, ["Port The default is 22."], 1.0),
    _asked("a-2", "a", 'No direct answer found in the document. The closest passage: "Default is seek."', False),
    _asked("b-1", "b", "Version 2 of the licence.", True, [], 3.0),
    {"set": "unanswerable", "id": "u-1", "document": "a", "answer": "No direct answer", "answerable": False},
    {"set": "unanswerable", "id": "u-2", "document": "b", "answer": "It is 7.", "answerable": True},
    {
        "set": "followups",
        "id": "f-1",
        "document": "a",
        "followup": {"answer": "The default is 3.", "answerable": True},
        "standalone": {"answer": "No direct answer found.", "answerable": False},
    },
]


def test_answers_are_stated_right_stated_wrong_or_not_found_with_or_without_the_answer_in_the_quote():
    t = tally(RECORDS, QUESTIONS, UNANSWERABLE, FOLLOWUPS)
    assert (t.answerable, t.stated_right, t.stated_wrong, t.quote_holds, t.not_found) == (3, 1, 1, 1, 0)
    assert t.in_passages == 1 and t.median_ttft == 1.0  # the median of 1.0, 1.0 and 3.0
    assert (t.unanswerable, t.unanswerable_marked) == (2, 1)
    assert (t.followups, t.followups_right, t.followups_stated, t.alone_right) == (1, 1, 1, 0)


def test_a_tally_counts_only_the_documents_asked_for():
    t = tally(RECORDS, QUESTIONS, UNANSWERABLE, FOLLOWUPS, keys={"b"})
    assert (t.answerable, t.stated_wrong, t.unanswerable, t.unanswerable_marked, t.followups) == (1, 1, 1, 0, 0)
    row = half_row("run", "heldout", t)
    assert row.startswith("| run | heldout | 1 | 0/1 (0%) | 1/1 (100%) |")
    assert kind_row("run", "licence", "heldout", t) == "| run | licence | heldout | 1 | 0 | 1 | 0 (0) | 0 | 0/1 | 0/0 |"
