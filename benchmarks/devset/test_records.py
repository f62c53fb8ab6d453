"""A run's answers in a compressed file of its own (benchmarks.devset.grounded), read back with the earlier one file."""

import json
import re

from benchmarks.devset.grounded import finish_run, read_runs, run_file
from benchmarks.devset.records import append_jsonl, read_jsonl, write_jsonl_gz


def _record(run, id_):
    return {"run": run, "set": "answerable", "id": id_, "document": "libtasn1", "answer": "4.19.0 ✓"}


def test_a_run_is_appended_while_it_goes_compressed_when_it_ends_and_found_again_by_its_label(tmp_path):
    label = "checked, issue 67: the answer stage whole"
    kept = run_file(tmp_path, label)
    name = r"answers-\d{4}-\d\d-\d\d-\d{4}-checked-issue-67-the-answer-stage-whole-[0-9a-f]{6}\.jsonl\.gz"
    assert re.fullmatch(name, kept.name)
    append_jsonl(kept.with_suffix(""), _record(label, "tasn-01"))
    assert run_file(tmp_path, label) == kept  # an interrupted run goes on in the same file
    finish_run(kept)
    assert not kept.with_suffix("").exists() and read_jsonl(kept) == [_record(label, "tasn-01")]
    append_jsonl(kept.with_suffix(""), _record(label, "tasn-02"))  # the same run asked more
    finish_run(kept)
    assert [r["id"] for r in read_jsonl(kept)] == ["tasn-01", "tasn-02"]
    assert run_file(tmp_path, label) == kept and run_file(tmp_path, label + " (tried)") != kept


def test_the_report_reads_the_one_file_of_earlier_runs_then_each_run_in_the_order_they_started(tmp_path):
    (tmp_path / "answers.jsonl").write_text(json.dumps(_record("earliest", "a")) + "\n{not json\n", encoding="utf-8")
    write_jsonl_gz(tmp_path / "answers-2026-12-07-1514-later-000000.jsonl.gz", [_record("later", "c")])
    write_jsonl_gz(tmp_path / "answers-2026-11-29-1221-earlier-000000.jsonl.gz", [_record("earlier", "b")])
    append_jsonl(tmp_path / "answers-2026-12-08-0900-under-way-000000.jsonl", _record("under way", "d"))
    assert [r["id"] for r in read_runs(tmp_path)] == ["a", "b", "c", "d"]
    assert read_runs(tmp_path)[-2]["answer"] == "4.19.0 ✓"
