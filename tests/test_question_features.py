"""Question-aware re-read (CaP-Q pot per question) and questions across documents, through the service and the
CLI, on a tiny random-weight model folder."""

import json

import pytest
from helpers import expect_one_line_error, run_json
from tiny_models import save_model_folder, write_notes

from infinipot.app.ask import across
from infinipot.app.cli import build_parser, main
from infinipot.app.service import DocumentNotFound, DocumentService
from infinipot.core.config import PotConfig
from infinipot.core.merge import IncompatiblePots

POT = PotConfig(pot_size=128, keep_size=48)  # 47 tokens read per compression beside the 33-token catalyst
QUESTION = "What does the fox do?"


@pytest.fixture
def service(infinipot_home):
    return DocumentService(infinipot_home, device="cpu")


@pytest.fixture
def two_documents(tmp_path):
    return write_notes(tmp_path / "first.txt", lines=40), write_notes(tmp_path / "second.txt", lines=30, tag="b")


def answer(pieces) -> str:
    return "".join(pieces)


def refuse_reading(monkeypatch, service):
    def read(*_args, **_kwargs):
        raise AssertionError("the document was read again")

    monkeypatch.setattr(service, "read", read)


# -- question-aware re-read ----------------------------------------------------------------------------
def test_reread_stores_one_pot_per_question_with_the_general_settings_and_reuses_it(
    monkeypatch, service, tiny_model_dir, document
):
    doc_id = service.read(document, POT, tiny_model_dir).doc_id
    general = service.store.pots.for_document(doc_id)[0]

    pieces, stats, reused = service.reread_for_question(doc_id, QUESTION, max_new_tokens=6)
    first = answer(pieces)
    assert reused is False and stats.new_tokens > 0
    pots = service.store.pots.for_document(doc_id)
    assert len(pots) == 2
    question_pot = pots[1]
    assert question_pot.status == "complete"
    assert question_pot.config == {**general.config, "cap_mode": "question", "question": QUESTION}
    assert question_pot.model_identity == general.model_identity

    refuse_reading(monkeypatch, service)
    pieces, _, reused = service.reread_for_question(doc_id, f"  {QUESTION} ", max_new_tokens=6)
    assert reused is True
    assert answer(pieces) == first  # the same stored pot answers the same way
    assert len(service.store.pots.for_document(doc_id)) == 2


def test_another_question_gets_its_own_pot_and_keeps_other_entries(service, tiny_model_dir, document):
    doc_id = service.read(document, POT, tiny_model_dir).doc_id
    for question in (QUESTION, "Which number comes first?"):
        answer(service.reread_for_question(doc_id, question, max_new_tokens=4)[0])
    pots = service.store.pots.for_document(doc_id)
    assert [pot.config["question"] for pot in pots] == [None, QUESTION, "Which number comes first?"]
    origins = [service.store.load_pot(pot)["origin"] for pot in pots]
    assert not origins[0].equal(origins[1])  # the question in the catalyst changed what was kept


def test_general_ask_is_unaffected_by_question_pots(service, tiny_model_dir, document):
    doc_id = service.read(document, POT, tiny_model_dir).doc_id
    general_id = service.store.pots.for_document(doc_id)[0].id
    before = answer(service.ask(doc_id, QUESTION, max_new_tokens=8)[0])
    answer(service.reread_for_question(doc_id, QUESTION, max_new_tokens=4)[0])

    stored, reused = service.open_pot_reused(doc_id)
    assert stored.record.id == general_id and reused is True
    assert stored.engine.config.cap_mode == "general"
    assert answer(service.ask(doc_id, QUESTION, max_new_tokens=8)[0]) == before
    assert service.document(doc_id)["pots"][-1]["config"]["cap_mode"] == "question"  # the newest pot is not used


def test_a_document_read_only_question_aware_answers_from_that_pot(monkeypatch, service, tiny_model_dir, document):
    config = PotConfig(pot_size=128, keep_size=48, cap_mode="question", question=QUESTION)
    doc_id = service.read(document, config, tiny_model_dir).doc_id
    refuse_reading(monkeypatch, service)
    stored, reused = service.open_pot_reused(doc_id)
    assert reused is True and stored.engine.config.question == QUESTION


def test_reread_of_a_document_whose_file_is_gone_changes_nothing(service, tiny_model_dir, document):
    doc_id = service.read(document, POT, tiny_model_dir).doc_id
    document.unlink()
    with pytest.raises(DocumentNotFound, match="gone or changed"):
        service.reread_for_question(doc_id, QUESTION)
    assert len(service.store.pots.for_document(doc_id)) == 1
    answer(service.ask(doc_id, QUESTION, max_new_tokens=3)[0])  # the general pot still answers


# -- questions across documents ------------------------------------------------------------------------
def test_ask_across_merges_within_the_bound_answers_and_names_both_documents(
    monkeypatch, service, tiny_model_dir, two_documents
):
    doc_ids = [service.read(path, POT, tiny_model_dir).doc_id for path in two_documents]
    pieces, stats = service.ask_across(doc_ids, QUESTION, max_new_tokens=6)
    answer(pieces)
    assert stats.new_tokens > 0 and stats.reused_merge is False
    assert [doc["doc_id"] for doc in stats.documents] == doc_ids
    assert all(doc["entries"] > 0 for doc in stats.documents)
    assert sum(doc["entries"] for doc in stats.documents) == stats.merged_entries
    assert stats.merge_peak_entries <= POT.pot_size and stats.merge_compressions >= 1
    assert stats.merged_entries < POT.pot_size

    def merge_again(*_args):
        raise AssertionError("merged again")

    monkeypatch.setattr(across, "merge_pots", merge_again)
    pieces, again = service.ask_across(list(reversed(doc_ids)), QUESTION, max_new_tokens=6)
    answer(pieces)
    assert again.reused_merge is True and [doc["doc_id"] for doc in again.documents] == doc_ids

    key = tuple((pot.id, pot.tensor_checksum) for doc_id in doc_ids for pot in service.store.pots.for_document(doc_id))
    assert service.merged_pots.get(key) is not None
    service.delete(doc_ids[1])  # a deleted document's merged pots go with it
    assert service.merged_pots.get(key) is None


def test_documents_of_different_models_cannot_be_asked_together(service, tiny_model_dir, two_documents, tmp_path):
    other_model = save_model_folder(tmp_path / "other-model")
    first = service.read(two_documents[0], POT, tiny_model_dir).doc_id
    second = service.read(two_documents[1], POT, other_model).doc_id
    with pytest.raises(IncompatiblePots, match="same model"):
        service.ask_across([first, second], QUESTION)
    with pytest.raises(ValueError, match="at least two different documents"):
        service.ask_across([first, first[:8]], QUESTION)


# -- the CLI -------------------------------------------------------------------------------------------
CLI_POT = ["--pot-size", "128", "--keep", "48"]


def test_cli_ask_reread_puts_both_answers_side_by_side(capsys, tiny_model_dir, document):
    read = run_json(capsys, ["read", str(document), "--model", tiny_model_dir, *CLI_POT, "--json"])
    argv = ["ask", read["doc_id"], QUESTION, "--reread", "--max-new-tokens", "5", "--json"]
    first = run_json(capsys, argv)
    assert {"answer", "seconds", "ttft_seconds", "reused_pot", "question_aware"} <= first.keys()
    assert first["reused_pot"] is True
    assert {"answer", "seconds", "ttft_seconds", "reused_pot"} <= first["question_aware"].keys()
    assert first["question_aware"]["reused_pot"] is False
    second = run_json(capsys, argv)
    assert second["question_aware"]["reused_pot"] is True
    assert second["question_aware"]["answer"] == first["question_aware"]["answer"]


def test_cli_ask_across_json_and_errors(capsys, tiny_model_dir, two_documents, tmp_path):
    ids = [
        run_json(capsys, ["read", str(path), "--model", tiny_model_dir, *CLI_POT, "--json"])["doc_id"]
        for path in two_documents
    ]
    result = run_json(capsys, ["ask-across", *ids, "--question", QUESTION, "--max-new-tokens", "5", "--json"])
    assert [doc["doc_id"] for doc in result["documents"]] == ids
    assert {"name", "pot_id", "entries"} <= result["documents"][0].keys()
    assert result["peak_entries"] <= result["pot_size"] == 128
    assert result["pot_entries"] <= 128 and result["reused_pot"] is False
    expect_one_line_error(capsys, ["ask-across", ids[0], "--question", QUESTION], "at least two")
    expect_one_line_error(capsys, ["ask-across", ids[0], "deadbeef", "--question", QUESTION], "no document")

    other = write_notes(tmp_path / "third.txt", lines=20, tag="c")
    other_model = save_model_folder(tmp_path / "other-model")
    third = run_json(capsys, ["read", str(other), "--model", other_model, *CLI_POT, "--json"])["doc_id"]
    expect_one_line_error(capsys, ["ask-across", ids[0], third, "--question", QUESTION], "same model")


def test_cli_reread_of_an_unknown_document_is_a_clear_error(capsys):
    expect_one_line_error(capsys, ["ask", "deadbeef", QUESTION, "--reread"], "no document")


def test_ask_across_takes_several_documents_and_needs_the_question(capsys):
    args = build_parser().parse_args(["ask-across", "first", "second", "third", "--question", QUESTION])
    assert (args.docs, args.question, args.max_new_tokens) == (["first", "second", "third"], QUESTION, 256)
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["ask-across", "first", "second"])
    assert exit_info.value.code == 2
    assert "the following arguments are required: --question" in capsys.readouterr().err


# -- bench niah with the question-aware catalyst -------------------------------------------------------
def test_bench_niah_cap_question_reads_each_trial_with_its_question(capsys, tmp_path, tiny_model_dir, monkeypatch):
    from infinipot.app.bench import niah as bench_niah
    from infinipot.app.bench.needle import QUESTION as NIAH_QUESTION

    configs = []
    real_run_trial = bench_niah.run_trial
    monkeypatch.setattr(
        bench_niah, "run_trial", lambda engine, *a: configs.append(engine.config) or real_run_trial(engine, *a)
    )
    out = tmp_path / "niah-capq"
    argv = ["--device", "cpu", "bench", "niah", "--model", tiny_model_dir, "--lengths", "250", "--depths", "0.5"]
    argv += ["--trials", "2", "--methods", "infinipot", "--pot-size", "192", "--keep", "96", "--max-new-tokens", "3"]
    assert main([*argv, "--cap", "question", "--out", str(out)]) == 0, capsys.readouterr().err
    assert [(c.cap_mode, c.question) for c in configs] == [("question", NIAH_QUESTION)] * 2
    assert "CaP-Q" in (out / "niah.md").read_text()
    records = [json.loads(line) for line in (out / "niah.jsonl").read_text().splitlines()]
    assert len(records) == 3 and all(r["peak_entries"] <= 192 for r in records[1:])
    capsys.readouterr()
    # the same folder read with the general catalyst would mix results: refused in one line
    expect_one_line_error(capsys, [*argv, "--out", str(out)], "other settings")
