"""A whole library: reading folders (here), the FTS5 word index kept in step with reads and deletes, and
questions to every document at once, on tiny random models."""

import json
import re

import pytest
from helpers import expect_one_line_error, fake_check, run_json
from tiny_models import write_notes

from infinipot.app.cli import main
from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig
from infinipot.ingest import file_fingerprint
from infinipot.storage.passages import match_query
from infinipot.storage.store import Store

POT = ["--pot-size", "128", "--keep", "48"]


def write_animal_notes(path, animal: str, lines: int = 24):
    text = "\n".join(f"Entry {i}: the keeper fed the {animal} at {i} o'clock near gate {i * 3}." for i in range(lines))
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path):
    """Three readable notes (one in a subfolder), a hidden file, a damaged PDF and an empty file."""
    root = tmp_path / "library"
    (root / "more").mkdir(parents=True)
    write_animal_notes(root / "zebra.txt", "zebra")
    write_animal_notes(root / "walrus.txt", "walrus")
    write_animal_notes(root / "more" / "otter.txt", "otter")
    (root / ".hidden.txt").write_text("never read", encoding="utf-8")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf" * 10)
    (root / "empty.txt").write_bytes(b"")
    return root


def read_folder_json(capsys, folder, tiny_model_dir, *extra) -> tuple[list[dict], dict]:
    code = main(["--device", "cpu", "read", str(folder), "--model", tiny_model_dir, *POT, "--json", *extra])
    out, err = capsys.readouterr()
    lines = [json.loads(line) for line in out.strip().splitlines()]
    assert "Traceback" not in err
    return lines[:-1], {**lines[-1], "code": code}


def test_a_folder_is_read_whole_bad_files_get_their_line_and_a_rerun_reuses_every_document(
    capsys, folder, tiny_model_dir, infinipot_home
):
    documents, totals = read_folder_json(capsys, folder, tiny_model_dir)
    assert totals == {**totals, "documents": 5, "read": 3, "reused": 0, "failed": 2, "code": 0}
    by_name = {path_name(d["path"]): d for d in documents}
    assert set(by_name) == {"zebra.txt", "walrus.txt", "otter.txt", "broken.pdf", "empty.txt"}  # not the hidden one
    assert "incomplete" in by_name["broken.pdf"]["error"] and "empty" in by_name["empty.txt"]["error"]
    assert all(by_name[n]["tokens"] > 128 and not by_name[n]["reused"] for n in ("zebra.txt", "otter.txt"))
    store = Store(infinipot_home)
    assert {d.name for d in store.documents.all()} == {"zebra.txt", "walrus.txt", "otter.txt"}
    assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    again, totals = read_folder_json(capsys, folder, tiny_model_dir)
    assert totals["read"] == 0 and totals["reused"] == 3 and totals["failed"] == 2
    assert {d["doc_id"] for d in again if "doc_id" in d} == {d["doc_id"] for d in documents if "doc_id" in d}


def path_name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def test_several_paths_and_a_glob_are_read_once_each(capsys, folder, tiny_model_dir):
    paths = [str(folder / "zebra.txt"), str(folder / "*.txt"), str(folder / "zebra.txt")]
    code = main(["--device", "cpu", "read", *paths, "--model", tiny_model_dir, *POT, "--json"])
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    documents, totals = lines[:-1], lines[-1]
    assert code == 0
    assert sorted(path_name(d["path"]) for d in documents) == ["empty.txt", "walrus.txt", "zebra.txt"]
    assert totals["documents"] == 3


def test_a_read_that_names_nothing_readable_is_one_line(capsys, tmp_path, tiny_model_dir):
    (tmp_path / "nothing").mkdir()
    expect_one_line_error(capsys, ["read", str(tmp_path / "nothing"), "--model", tiny_model_dir], "holds no files")


def test_without_ray_workers_say_how_to_install_it(capsys, folder, tiny_model_dir, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("no ray here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    expect_one_line_error(capsys, ["read", str(folder), "--workers", "2", "--model", tiny_model_dir], "infinipot[ray]")


def test_the_word_index_follows_reads_and_deletes(folder, tiny_model_dir, infinipot_home):
    service = DocumentService(infinipot_home, device="cpu")
    config = PotConfig(pot_size=128, keep_size=48)
    zebra = service.read(folder / "zebra.txt", config, tiny_model_dir)
    walrus = service.read(folder / "walrus.txt", config, tiny_model_dir)
    store = service.store
    identity = service.model(tiny_model_dir).identity
    assert store.passages.count(zebra.doc_id) > 1 and store.passages.count(walrus.doc_id) > 1
    hits = store.passages.search("Where was the walrus fed?", identity)
    assert hits and {hit.document_id for hit in hits[:3]} == {walrus.doc_id}
    assert "walrus" in hits[0].text
    service.delete(walrus.doc_id)
    assert store.passages.count(walrus.doc_id) == 0
    assert store.passages.search("walrus", identity) == []
    assert store.passages.count(zebra.doc_id) > 1


def test_a_question_syntax_never_reaches_fts5():
    assert match_query('NEAR(a b) "x" OR -y AND z*') == '"near" OR "a" OR "b" OR "x" OR "or" OR "y" OR "and" OR "z"'
    assert match_query("?!") == ""


def test_a_document_matching_a_rare_word_once_outranks_one_matching_common_words_often():
    from infinipot.app.ask.library import ranked_documents, search_words
    from infinipot.storage.passages import PassageHit

    def hit(document, score):
        return PassageHit(document, 0, 10, "", score)

    # The log holds "max_connections" once; the story holds "set" in many passages, each a weaker match.
    hits = [hit("log", 8.5), hit("story", 7.0), hit("story", 6.9), hit("story", 6.8), hit("log", 1.0)]
    assert ranked_documents(hits) == ["log", "story"]  # 8.5 + 0.1 * 1.0 against 7.0 + 0.1 * 13.7
    # Near ties between best passages are broken by the next two.
    assert ranked_documents([hit("a", 5.0), hit("b", 5.1), hit("a", 4.0), hit("a", 4.0)]) == ["a", "b"]
    # Function words are not searched for; a question of function words alone is searched as it is.
    assert search_words("What is max_connections set to?") == "max_connections set"
    assert search_words("What is it?") == "What is it?"


def test_a_library_question_cites_the_document_that_holds_its_words(
    folder, tiny_model_dir, infinipot_home, monkeypatch
):
    service = DocumentService(infinipot_home, device="cpu")
    config = PotConfig(pot_size=2048, keep_size=512)  # room for the passages beside the question
    for name in ("zebra.txt", "walrus.txt", "more/otter.txt"):
        service.read(folder / name, config, tiny_model_dir)
    # The library asks with the default model; here the tiny one stands in for it.
    real_get = service.library.models.get
    monkeypatch.setattr(service.library.models, "get", lambda name, dtype=None: real_get(tiny_model_dir, dtype))
    pieces, stats = service.ask_library("When was the otter fed?", max_new_tokens=8)
    answer = "".join(pieces)
    otter = service.find_document(str(folder / "more" / "otter.txt")).id
    # The tiny model states nothing, so the answer quotes its closest passage: a sentence of the otter's notes.
    quoted = re.search(r"“(.+)”", answer)
    assert quoted and "otter" in quoted.group(1), answer
    assert quoted.group(1) in (folder / "more" / "otter.txt").read_text(), answer
    assert stats.documents_asked == 3 and stats.documents_pointed == [otter]
    assert stats.citations and stats.citations[0]["document"] == "otter.txt" and stats.citations[0]["doc_id"] == otter
    assert all(c["document"] in {"zebra.txt", "walrus.txt", "otter.txt"} for c in stats.citations)
    assert Store(infinipot_home).conversations.for_document(otter) == []  # a library answer belongs to none

    zebra = service.find_document(str(folder / "zebra.txt")).id
    pieces, stats = service.ask_library("When was the otter fed?", docs=[zebra, "walrus.txt"], max_new_tokens=8)
    "".join(pieces)
    assert stats.documents_asked == 2 and otter not in {c["doc_id"] for c in stats.citations}

    pieces, stats = service.ask_library("xylophone quasar", max_new_tokens=8)
    assert "None of the 3 documents" in "".join(pieces) and stats.answerable is False


def test_ask_all_on_an_empty_library_and_a_misplaced_question_are_one_line(capsys):
    expect_one_line_error(capsys, ["ask", "--all", "What is it?"], "no document has been read")
    expect_one_line_error(capsys, ["ask", "--all", "one", "two"], "give the question alone")


def test_documents_read_before_the_index_are_indexed_when_the_library_is_asked(
    folder, tiny_model_dir, infinipot_home, monkeypatch
):
    service = DocumentService(infinipot_home, device="cpu")
    config = PotConfig(pot_size=2048, keep_size=512)
    report = service.read(folder / "walrus.txt", config, tiny_model_dir)
    service.store.db.execute("DELETE FROM passages")
    service.store.db.execute("DELETE FROM passage_sets")
    service.store.db.conn.commit()
    real_get = service.library.models.get
    monkeypatch.setattr(service.library.models, "get", lambda name, dtype=None: real_get(tiny_model_dir, dtype))
    pieces, stats = service.ask_library("Where was the walrus fed?", max_new_tokens=4)
    "".join(pieces)
    assert service.store.passages.count(report.doc_id) > 1
    assert stats.citations and stats.citations[0]["doc_id"] == report.doc_id


def test_run_json_reads_one_file_as_before(capsys, tiny_model_dir, tmp_path):
    path = write_notes(tmp_path / "one.txt", lines=20)
    result = run_json(capsys, ["read", str(path), "--model", tiny_model_dir, *POT, "--json"])
    assert "path" not in result and result["tokens"] > 0  # one file keeps the one-document contract


def test_a_file_changed_while_it_is_read_is_read_again_as_it_is_now(folder, tiny_model_dir, infinipot_home):
    service = DocumentService(infinipot_home, device="cpu")
    zebra = folder / "zebra.txt"
    appended = []

    def append_once(progress) -> None:
        if not appended and progress.current.get("zebra.txt"):
            with zebra.open("a", encoding="utf-8") as handle:
                handle.write("\nEntry 99: the zebra was renamed Stripes while this file was read.\n")
            appended.append(True)

    config = PotConfig(pot_size=128, keep_size=48)
    progress, _, done = service.read_library([str(zebra)], config, tiny_model_dir, on_progress=append_once)
    (item,) = list(done)
    assert appended and item.error is None
    assert any("changed while it was read" in warning for warning in item.report.warnings)
    (document,) = service.store.documents.all()  # one document, holding the file as it is now
    assert document.content_hash == file_fingerprint(zebra) and document.tokens == item.report.tokens
    hits = service.store.passages.search("Stripes", service.model(tiny_model_dir).identity)
    assert hits and hits[0].document_id == document.id


def test_a_library_answer_must_hold_the_names_its_documents_hardly_mention(
    folder, tiny_model_dir, infinipot_home, monkeypatch
):
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.core.answer.grounded_answer import GroundingConfig, Verdict

    names_seen: list[list[str]] = []

    def decide(engine, question, passages, **kwargs):
        names_seen.append(list(kwargs.get("names", ())))
        return Verdict(), "an answer"

    fake_check(monkeypatch, decide)
    service = DocumentService(infinipot_home, device="cpu")
    config = PotConfig(pot_size=2048, keep_size=512)
    for name in ("zebra.txt", "walrus.txt", "more/otter.txt"):
        service.read(folder / name, config, tiny_model_dir)
    real_get = service.library.models.get
    monkeypatch.setattr(service.library.models, "get", lambda name, dtype=None: real_get(tiny_model_dir, dtype))
    # "Pell" is in none of the notes: the answer's sentence must hold it, as when one document is asked.
    "".join(service.ask_library("When did Captain Pell feed the otter?", max_new_tokens=8)[0])
    assert "Pell" in names_seen[-1]
    off = AnswerSettings(grounding=GroundingConfig(rare_name_mentions=None))
    "".join(service.ask_library("When did Captain Pell feed the otter?", settings=off, max_new_tokens=8)[0])
    assert names_seen[-1] == []
