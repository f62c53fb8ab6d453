"""`infinipot bench niah` and `infinipot bench speed` end to end on a tiny model folder, resume included."""

import json

import pytest
from helpers import assert_same_pot, expect_one_line_error
from tiny_models import build_model, random_ids, tiny_loaded, tiny_tokenizer

from infinipot.app.bench import niah as bench_niah
from infinipot.app.bench import speed as bench_speed
from infinipot.app.bench.haystack import haystack_ids, key_occurrences, passkey_document, passkey_key
from infinipot.app.bench.needle import found_key, needle_sentence
from infinipot.app.bench.results import length_label, parse_length
from infinipot.app.cli import build_parser, main
from infinipot.core.answer.evidence import EvidenceConfig
from infinipot.core.config import PotConfig
from infinipot.core.engine import Engine

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama-bench")
    build_model("llama").save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return str(path)


def jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_lengths_parse_like_context_sizes():
    assert [parse_length(x) for x in ("4k", "32K", "1m", "3000")] == [4096, 32768, 1048576, 3000]
    assert [length_label(n) for n in (4096, 1048576, 3000)] == ["4K", "1M", "3000"]
    with pytest.raises(ValueError):
        parse_length("lots")


def test_passkey_document_has_the_length_and_the_needle_near_the_depth():
    tokenizer = tiny_tokenizer()
    haystack = haystack_ids(tokenizer, 900)
    assert len(haystack) == 900
    key = passkey_key(0, 900, 0.5, 0)
    assert key != passkey_key(0, 900, 0.5, 1) and key == passkey_key(0, 900, 0.5, 0)
    document = passkey_document(tokenizer, haystack, 900, 0.5, key)
    assert len(document) == 900
    text = tokenizer.decode(document)
    assert needle_sentence(key).strip() in text
    assert 0.3 < text.index(key) / len(text) < 0.6
    occurrences = key_occurrences(tokenizer, document, key)
    assert len(occurrences) == 2  # "The pass key is K. Remember it. K is the pass key."
    for indices in occurrences:
        assert tokenizer.decode([document[i] for i in indices]).replace(" ", "") == key


def test_bench_niah_writes_results_and_resumes_after_an_interruption(capsys, tmp_path, tiny_model_dir, monkeypatch):
    out = tmp_path / "niah"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "250", "--depths", "0.2,0.8"]
    argv += ["--trials", "2", "--methods", "infinipot,streaming,full", "--pot-size", "192", "--keep", "96"]
    argv += ["--max-new-tokens", "3", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    log = out / "niah.jsonl"
    records = jsonl(log)[1:]
    assert len(records) == 2 * 2 * 3
    assert {r["status"] for r in records} == {"ok"}
    assert all(r["peak_entries"] <= 192 for r in records if r["method"] != "full")
    assert all(r["tokens"] == 250 for r in records)
    assert all(r["key_kept"] == 1.0 for r in records if r["method"] == "full")  # nothing is ever dropped
    streaming = {r["depth"]: r["key_kept"] for r in records if r["method"] == "streaming"}
    assert streaming == {0.2: 0.0, 0.8: 1.0}  # the window lost the early needle and holds the late one
    table = (out / "niah.md").read_text()
    assert "| infinipot |" in table and "| full |" in table and "seed" not in table.split("\n")[0]
    assert "| full | 100/100 |" in table.split("held the whole key")[1]
    found = {d: sum(r["found"] for r in records if (r["method"], r["depth"]) == ("infinipot", d)) for d in (0.2, 0.8)}
    percent = {d: 100 * n / 2 for d, n in found.items()}
    mean = (percent[0.2] + percent[0.8]) / 2
    assert f"| infinipot | {percent[0.2]:.0f}/{percent[0.8]:.0f} (mean {mean:.0f}) |" in table
    summary = json.loads((out / "niah.json").read_text())
    assert len(summary["cells"]) == 3 * 2 and all(c["trials"] == 2 for c in summary["cells"])
    for method in ("infinipot", "streaming", "full"):
        assert (out / f"niah_{method}.png").read_bytes()[:8] == PNG_MAGIC

    # an interrupted run: five trials finished, the sixth was being written
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:6]) + '\n{"method": "infini')
    calls = []
    real_run_trial = bench_niah.run_trial
    monkeypatch.setattr(bench_niah, "run_trial", lambda *a: calls.append(a) or real_run_trial(*a))
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    again = jsonl(log)
    assert len(calls) == 12 - 5
    assert again[:6] == [json.loads(line) for line in lines[:6]]
    assert len(again) == 13

    # the same folder with other settings would mix results: refused in one line
    expect_one_line_error(capsys, [*argv[:-4], "--max-new-tokens", "4", "--out", str(out)], "other settings")


def test_bench_niah_records_full_as_refused_beyond_the_model_context(capsys, tmp_path, tiny_model_dir):
    out = tmp_path / "niah"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "5000", "--depths", "0.5"]
    argv += ["--trials", "1", "--methods", "full", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    (record,) = jsonl(out / "niah.jsonl")[1:]
    assert record["status"] == "refused" and "context" in record["reason"]
    assert "refused" in (out / "niah.md").read_text()


@pytest.mark.slow  # a subprocess per measurement
def test_bench_speed_measures_each_method_in_a_fresh_process_and_resumes(capsys, tmp_path, tiny_model_dir, monkeypatch):
    out = tmp_path / "speed"
    argv = ["--device", "cpu", "bench", "speed", "--model", tiny_model_dir, "--lengths", "300"]
    argv += ["--methods", "streaming", "--pot-size", "128", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    records = jsonl(out / "speed.jsonl")[1:]
    assert [r["method"] for r in records] == ["plain", "streaming"]
    for r in records:
        assert r["status"] == "ok" and r["tokens_per_s"] > 0 and r["peak_rss_mib"] > r["rss_before_mib"] > 0
        assert r["peak_entries"] <= 128
    table = (out / "speed.md").read_text()
    assert "| streaming | 300 |" in table and "| plain | 300 |" in table
    assert (out / "speed.png").read_bytes()[:8] == PNG_MAGIC

    def no_more_runs(*_args):
        raise AssertionError("a finished run was measured again")

    monkeypatch.setattr(bench_speed, "_measure_in_child", no_more_runs)
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize("method", ["infinipot", "h2o", "truncate"])
def test_documents_that_open_alike_share_one_read_of_the_opening_and_get_their_own_pots(method):
    engine = Engine(tiny_loaded("llama"), PotConfig(pot_size=128, keep_size=48, forward_tokens=40, method=method))
    documents = [random_ids(300, seed=5) for _ in range(3)]
    for i, document in enumerate(documents[1:], start=1):
        document[150:] = random_ids(150, seed=i)  # alike up to token 150, like passkey trials up to the needle
    reading = bench_niah.SharedOpeningReader(engine, documents, chunk_tokens=64)
    assert reading.shared_tokens == 128  # the two whole chunks before the documents part
    for document in reversed(documents):
        pot, seconds = reading.read(document)
        assert seconds > 0
        assert_same_pot(pot, engine.read(bench_niah.document_chunks(document, 64)))
    with pytest.raises(ValueError, match="shared"):
        reading.read(random_ids(300, seed=9))


def scripted_focused_answers(monkeypatch, answers):
    """Focused answers (engine.answer with focus=) read as answers(trial_key, trial_number) instead of the model's.

    The model's focused answer is still generated, so its statistics (entries answered from) are the real ones.
    """
    keys: list[str] = []
    real_run_trial, real_answer = bench_niah.run_trial, Engine.answer

    def run_trial(engine, reading, trial, settings, heads=None):
        keys.append(trial.key)
        return real_run_trial(engine, reading, trial, settings, heads)

    def answer(self, *args, **kwargs):
        pieces = real_answer(self, *args, **kwargs)
        if kwargs.get("focus") is None:
            return pieces
        "".join(pieces)
        return iter([answers(keys[-1], len(keys))])

    monkeypatch.setattr(bench_niah, "run_trial", run_trial)
    monkeypatch.setattr(Engine, "answer", answer)


def test_bench_niah_answers_again_from_a_focused_copy_and_reports_it(capsys, tmp_path, tiny_model_dir, monkeypatch):
    monkeypatch.setattr(bench_niah, "_CHUNK_TOKENS", 64)  # tiny documents in several chunks, so trials share some
    # the first and third focused answers give the key; the second gives a longer number that only contains it
    scripted_focused_answers(monkeypatch, lambda key, n: f"The pass key is {key}." if n != 2 else f"It is {key}7.")
    out = tmp_path / "niah"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "300", "--depths", "0.8"]
    argv += ["--trials", "3", "--methods", "infinipot", "--pot-size", "192", "--keep", "96", "--focus", "80"]
    argv += ["--nuc-unit", "token"]
    argv += ["--max-new-tokens", "3", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    records = jsonl(out / "niah.jsonl")[1:]
    assert len(records) == 3
    assert [r["focus_found"] for r in records] == [True, False, True]
    assert records[1]["focus_answer"] == f"It is {records[1]['key']}7."
    for r in records:
        assert r["focus_entries"] == 80
        assert r["shared_tokens"] == 192  # the needle near 0.8 of 300 tokens lies in the fourth chunk of 64
    settings = jsonl(out / "niah.jsonl")[0]["settings"]
    assert settings["focus"] == 80 and settings["nuc_unit"] == "token"
    parsed = bench_niah.settings_from_args(build_parser().parse_args(argv[2:]))
    assert parsed.pot_config("infinipot").nuc_unit == "token"
    table = (out / "niah.md").read_text()
    assert "| infinipot |" in table and "| infinipot+focus80 |" in table
    summary = json.loads((out / "niah.json").read_text())
    focused = [c for c in summary["cells"] if c["method"] == "infinipot+focus80"]
    assert (focused[0]["trials"], focused[0]["found"]) == (3, 2)
    assert (out / "niah_infinipot+focus80.png").read_bytes()[:8] == PNG_MAGIC
    capsys.readouterr()
    expect_one_line_error(capsys, [*argv[:-6], "--focus", "192", "--out", str(tmp_path / "x")], "focus")


def test_bench_niah_reads_with_the_ablation_settings_and_records_them(capsys, tmp_path, tiny_model_dir):
    out = tmp_path / "niah"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "300", "--depths", "0.5"]
    argv += ["--trials", "1", "--methods", "infinipot", "--pot-size", "128", "--keep", "64", "--max-new-tokens", "2"]
    argv += ["--out", str(out)]
    ablation = ["--nuc-ratio", "0.25", "--sinks", "8", "--no-cr-rope", "--seed", "3"]
    config = bench_niah.settings_from_args(build_parser().parse_args([*argv[2:], *ablation])).pot_config("infinipot")
    assert (config.nuc_ratio, config.min_sink_tokens, config.cr_rope, config.keep_size) == (0.25, 8, False, 64)
    assert main([*argv, *ablation]) == 0, capsys.readouterr().err
    settings = jsonl(out / "niah.jsonl")[0]["settings"]
    assert (settings["nuc_ratio"], settings["sinks"], settings["cr_rope"]) == (0.25, 8, False)
    assert (
        "|C| = 64, alpha = 0.25, NuC per sentence, 8 sinks, CR-RoPE off, 1 trial(s) per cell, keys from seed 3"
        in (out / "niah.md").read_text()
    )
    capsys.readouterr()
    expect_one_line_error(capsys, argv, "other settings")  # the defaults would mix results in this folder
    assert "nuc_ratio" not in bench_niah.settings_from_args(build_parser().parse_args(argv[2:])).identity()


def test_unknown_bench_method_is_a_clear_error(capsys, tmp_path):
    argv = ["bench", "niah", "--methods", "infinipot,magic", "--out", str(tmp_path / "x")]
    expect_one_line_error(capsys, argv, "unknown method")


@pytest.mark.parametrize(
    ("answer", "found"),
    [("The pass key is 91644.", True), ("91,644", True), ("The pass key is 916444.", False), ("1916440", False)],
)
def test_a_key_is_found_only_as_a_whole_number(answer, found):
    from infinipot.app.bench.needle import found_key

    assert found_key(answer, "91644") is found


def test_bench_niah_answers_from_evidence_after_each_choice_of_context_and_reports_each(
    capsys, tmp_path, tiny_model_dir
):
    out = tmp_path / "niah"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "600", "--depths", "0.5"]
    argv += ["--trials", "2", "--methods", "infinipot", "--pot-size", "256", "--keep", "64", "--max-new-tokens", "3"]
    argv += ["--evidence-pot", "0,all", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    header, *records = jsonl(out / "niah.jsonl")
    assert header["settings"]["evidence_pots"] == [0, None]
    assert header["settings"]["evidence_read_spans"] == EvidenceConfig().read_spans
    assert len(records) == 2  # two trials of one length, depth and method
    for record in records:
        for key in ("evidence_alone", "evidence"):  # the passages alone; after the whole pot
            # Found means the answer states the trial's key as a number of its own, whatever the tiny model wrote.
            assert record[f"{key}_found"] == found_key(record[f"{key}_answer"], record["key"])
            assert 0 < record[f"{key}_tokens"] and isinstance(record[f"{key}_holds_key"], bool)
    table = (out / "niah.md").read_text()
    assert "| infinipot+evidence |" in table and "| infinipot+evidence+pot |" in table
    assert "read verbatim after the chat template's opening alone" in table
    capsys.readouterr()
    # `--evidence` alone is the default context only: other results than this folder holds
    expect_one_line_error(capsys, [*argv[:-4], "--evidence", "--out", str(out)], "other settings")
    expect_one_line_error(capsys, [*argv[:-4], "--evidence-pot", "half", "--out", str(out)], "--evidence-pot")


def test_bench_niah_finds_the_passages_by_the_pots_retrieval_heads_alone(
    capsys, tmp_path, tiny_model_dir, infinipot_home
):
    out = tmp_path / "niah"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "600", "--depths", "0.5"]
    argv += ["--trials", "1", "--methods", "infinipot", "--pot-size", "256", "--keep", "64", "--max-new-tokens", "3"]
    argv += ["--evidence", "--evidence-ranking", "attention", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    header, record = jsonl(out / "niah.jsonl")
    assert header["settings"]["evidence_ranking"] == "attention"
    assert header["settings"]["evidence_pointer"] == EvidenceConfig().pointer
    assert isinstance(record["evidence_alone_found"], bool) and record["evidence_alone_tokens"] > 0
    assert "| infinipot+evidence-attention |" in (out / "niah.md").read_text()
    (calibration,) = (infinipot_home / "models" / "retrieval-heads").glob("*.json")  # calibrated once, kept
    assert json.loads(calibration.read_text())["heads"]
    capsys.readouterr()
    expect_one_line_error(capsys, [*argv[:-4], "--evidence", "--out", str(out)], "other settings")
