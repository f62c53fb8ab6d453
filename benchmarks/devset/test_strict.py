"""The strict decision's threshold sweep over recorded answers (benchmarks.devset.strict)."""

from benchmarks.devset.strict import sweep, table


def _record(set_, id_, sentence, confidence):
    return {"set": set_, "id": id_, "document": "libtasn1", "answer_sentence": sentence, "confidence": confidence}


RECORDS = [
    _record("answerable", "tasn-01", "Libtasn1 for version 4.19.0, 18 August 2022", 0.9),  # holds it, sure
    _record("answerable", "tasn-02", "The cover is green.", 0.75),  # does not hold it, fairly sure
    _record("answerable", "tasn-03", "GNU Lesser General Public License version 2.1", 0.55),  # holds it, unsure
    _record("answerable", "tasn-04", "Anything.", None),  # nothing likely: never stated
    _record("unanswerable", "unans-tasn-01", "Some sentence.", 0.65),
]


def test_each_threshold_states_what_reaches_it_and_counts_what_the_likeliest_holds():
    low, middle, high = sweep(RECORDS, [0.5, 0.7, 0.8])
    assert (low["right"], low["wrong"], low["holds"], low["marked"]) == (2, 1, 0, 0)
    assert (middle["right"], middle["wrong"], middle["holds"], middle["marked"]) == (1, 1, 1, 1)
    assert (high["right"], high["wrong"], high["holds"], high["marked"]) == (1, 0, 1, 1)
    assert low["answerable"] == 4 and low["unanswerable"] == 1
    assert "| 0.80 | 1/4 (25%) | 0 (0%) | 1 (25%) | 1/1 |" in table([high])
