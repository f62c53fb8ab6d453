"""The `infinipot` command in-process on a tiny model folder: the --json contract and clear errors."""

import argparse
import re

import pytest
from helpers import expect_one_line_error, run_json

from infinipot.app.cli import build_parser, main


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
    assert list(answer) == [  # docs/cli.md's fields, in its order
        "answer", "seconds", "ttft_seconds", "first_evidence_seconds", "reused_pot", "conversation_id", "answerable",
        "answer_state", "citations", "answer_entries", "answer_from", "evidence_tokens", "stopped_by", "decided_by",
    ]  # fmt: skip
    assert answer["answer_state"] in ("stated", "closest", "not_found")
    assert answer["answerable"] is (answer["answer_state"] == "stated")
    assert answer["reused_pot"] is True
    assert answer["ttft_seconds"] <= answer["seconds"]

    question = ["ask", first["doc_id"], "What does the fox do?", "--max-new-tokens", "5"]
    focused = run_json(capsys, question + ["--focus", "40", "--json"])
    assert focused["answer_entries"] == 40 and answer["answer_entries"] == first["pot_entries"]
    expect_one_line_error(capsys, question + ["--focus", "2"], "focus")

    summary = run_json(capsys, ["summarize", first["doc_id"], "--max-new-tokens", "5", "--json"])
    assert {"summary", "seconds", "parts"} <= summary.keys()
    assert summary["parts"] and all({"title", "line", "points"} <= part.keys() for part in summary["parts"])


def test_a_copy_under_another_name_keeps_the_librarys_name_and_says_so(capsys, tiny_model_dir, document):
    read_args = ["--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--json"]
    first = run_json(capsys, ["read", str(document), *read_args])
    copy = document.with_name("notes-copy.txt")
    copy.write_bytes(document.read_bytes())
    again = run_json(capsys, ["read", str(copy), *read_args])
    assert again["doc_id"] == first["doc_id"] and again["reused"] is True and again["name"] == "notes.txt"
    assert again["warnings"] == ["notes-copy.txt has the same content as notes.txt, already in the library"]
    (listed,) = run_json(capsys, ["list", "--json"])["documents"]
    assert listed["name"] == "notes.txt"  # not renamed to the copy's name


def test_other_settings_read_again_instead_of_reusing(capsys, tiny_model_dir, document):
    base = ["read", str(document), "--model", tiny_model_dir, "--pot-size", "128", "--json"]
    assert run_json(capsys, base + ["--keep", "48"])["reused"] is False
    assert run_json(capsys, base + ["--keep", "64"])["reused"] is False
    assert run_json(capsys, base + ["--keep", "48"])["reused"] is True


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


# -- help: every command and option, found in the parser itself, so a new one is covered without listing it ----
def subparsers(parser: argparse.ArgumentParser) -> list[argparse._SubParsersAction]:
    return [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser) of every command and nested command: ("read",), ..., ("bench", "niah"), ..."""
    for group in subparsers(parser):
        for name, command in group.choices.items():
            yield (*path, name), command
            yield from commands(command, (*path, name))


PARSERS = {(): build_parser(), **dict(commands(build_parser()))}  # () is `infinipot` itself


def command_name(path: tuple[str, ...]) -> str:
    return " ".join(("infinipot", *path))


def help_text(capsys, argv) -> str:
    """The --help output of `infinipot ARGV`, whitespace collapsed (argparse wraps lines to the terminal)."""
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--help"])
    assert exit_info.value.code == 0
    return re.sub(r"\s+", " ", capsys.readouterr().out)


def test_the_commands_of_the_design_are_all_there():
    documented = [*"read ask ask-across summarize list delete ui bench".split(), "bench niah", "bench speed"]
    assert {" ".join(path) for path in PARSERS} >= set(documented)


@pytest.mark.parametrize("path", list(PARSERS), ids=command_name)
def test_every_command_has_help_with_a_description_and_every_option(capsys, path):
    parser = PARSERS[path]
    text = help_text(capsys, list(path))
    assert text.startswith(f"usage: {command_name(path)} ")
    assert parser.description and parser.description.strip(), f"`{command_name(path)} --help` has no description"
    assert re.sub(r"\s+", " ", parser.description.strip()) in text
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue  # hidden test options; subcommands are checked below
        for name in action.option_strings or [action.metavar or action.dest]:
            assert name in text, f"`{command_name(path)} --help` does not show {name}"


@pytest.mark.parametrize("path", [path for path, parser in PARSERS.items() if subparsers(parser)], ids=command_name)
def test_help_lists_every_subcommand_with_its_summary(capsys, path):
    text = help_text(capsys, list(path))
    for group in subparsers(PARSERS[path]):
        for choice in group._choices_actions:
            assert choice.help, f"`{command_name(path)} {choice.dest}` has no summary line"
            assert choice.dest in text and re.sub(r"\s+", " ", choice.help) in text, choice.dest


def test_the_decoding_flags_of_ask_and_summarize_become_the_decoding_config():
    from infinipot.app.cli.options import decoding_config
    from infinipot.core.decoding import DecodingConfig

    flags = ["--max-new-tokens", "40", "--temperature", "0.7", "--top-p", "0.9", "--seed", "3"]
    flags += ["--no-repeat-ngram", "0", "--allow-repeats", "--copy-draft", "4", "--contrast", "0.5"]
    expected = DecodingConfig(
        40, temperature=0.7, top_p=0.9, seed=3, no_repeat_ngram=0, stop_on_repeat=False, copy_draft=4
    )
    for command in (["ask", "doc", "Why?"], ["ask-across", "a", "b", "--question", "Why?"], ["summarize", "doc"]):
        questions = command[0] != "summarize"  # a summary answers no question: nothing to contrast
        args = build_parser().parse_args([*command, *(flags if questions else flags[:-2])])
        assert decoding_config(args) == (
            DecodingConfig(**{**expected.__dict__, "contrast": 0.5}) if questions else expected
        )
        assert decoding_config(build_parser().parse_args(command)) == DecodingConfig()


def test_an_impossible_contrast_is_one_line(capsys, document, tiny_model_dir):
    read = run_json(capsys, ["read", str(document), "--model", tiny_model_dir, "--pot-size", "128", "--json"])
    expect_one_line_error(capsys, ["ask", read["doc_id"], "Why?", "--contrast", "-1"], "contrast")
    expect_one_line_error(capsys, ["ask", read["doc_id"], "Why?", "--copy-draft", "-1"], "copy draft")


def test_an_answer_with_copy_drafts_is_the_answer_without(capsys, document, tiny_model_dir):
    read = run_json(capsys, ["read", str(document), "--model", tiny_model_dir, "--pot-size", "128", "--json"])
    asked = ["ask", read["doc_id"], "What is in the text?", "--max-new-tokens", "24", "--json"]
    without = run_json(capsys, [*asked, "--copy-draft", "0"])
    drafted = run_json(capsys, [*asked, "--copy-draft", "8"])
    assert drafted["answer"] == without["answer"] and drafted["answer"]
