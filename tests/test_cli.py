"""The `infinipot` command in-process on a tiny model folder: the --json contract and clear errors."""

import json

import pytest

from infinipot.app.cli import build_parser, main


def run_json(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_read_ask_summarize_json_contract(capsys, tiny_model_dir, document):
    read_args = ["read", str(document), "--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    first = run_json(capsys, read_args)
    assert {"doc_id", "tokens", "cycles", "pot_entries", "peak_entries", "seconds", "reused"} <= first.keys()
    assert first["reused"] is False
    assert first["cycles"] > 0 and first["tokens"] > 128
    assert first["peak_entries"] <= 128

    again = run_json(capsys, read_args)
    assert again["reused"] is True
    assert again["doc_id"] == first["doc_id"] and again["pot_entries"] == first["pot_entries"]

    answer = run_json(capsys, ["ask", first["doc_id"][:8], "What does the fox do?", "--max-new-tokens", "5", "--json"])
    assert {"answer", "seconds", "ttft_seconds", "reused_pot"} <= answer.keys()
    assert answer["reused_pot"] is True
    assert answer["ttft_seconds"] <= answer["seconds"]

    question = ["ask", first["doc_id"], "What does the fox do?", "--max-new-tokens", "5"]
    focused = run_json(capsys, question + ["--focus", "40", "--json"])
    assert focused["answer_entries"] == 40 and answer["answer_entries"] == first["pot_entries"]
    expect_one_line_error(capsys, question + ["--focus", "2"], "focus")

    summary = run_json(capsys, ["summarize", first["doc_id"], "--max-new-tokens", "5", "--json"])
    assert {"summary", "seconds"} <= summary.keys()


def test_other_settings_read_again_instead_of_reusing(capsys, tiny_model_dir, document):
    base = ["read", str(document), "--model", tiny_model_dir, "--pot-size", "96", "--json"]
    assert run_json(capsys, base + ["--keep", "48"])["reused"] is False
    assert run_json(capsys, base + ["--keep", "40"])["reused"] is False


def expect_one_line_error(capsys, argv, fragment):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("infinipot: error:"), err
    assert fragment in lines[0].lower()
    assert "Traceback" not in err


def test_empty_file_is_a_clear_error(capsys, tmp_path, tiny_model_dir):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    expect_one_line_error(capsys, ["read", str(empty), "--model", tiny_model_dir], "empty")


def test_missing_path_is_a_clear_error(capsys, tmp_path, tiny_model_dir):
    expect_one_line_error(capsys, ["read", str(tmp_path / "nope.pdf"), "--model", tiny_model_dir], "nope.pdf")


def test_binary_bytes_are_a_clear_error(capsys, tmp_path, tiny_model_dir):
    binary = tmp_path / "data.txt"
    binary.write_bytes(bytes(range(256)) * 64)
    expect_one_line_error(capsys, ["read", str(binary), "--model", tiny_model_dir], "data.txt")


def test_impossible_settings_are_a_clear_error(capsys, document, tiny_model_dir):
    argv = ["read", str(document), "--model", tiny_model_dir, "--pot-size", "96", "--keep", "200"]
    expect_one_line_error(capsys, argv, "kept size")


def test_unknown_model_is_a_clear_error(capsys, document, tmp_path):
    folder = tmp_path / "not-a-model"
    folder.mkdir()
    expect_one_line_error(capsys, ["read", str(document), "--model", str(folder)], "not a hugging face model")


def test_unknown_document_id_is_a_clear_error(capsys):
    expect_one_line_error(capsys, ["ask", "deadbeef", "Anything?"], "no document")


@pytest.mark.parametrize("command", ["read", "ask", "summarize", "list", "delete"])
def test_every_command_has_help(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args([command, "--help"])
    assert exit_info.value.code == 0
    assert command in capsys.readouterr().out
