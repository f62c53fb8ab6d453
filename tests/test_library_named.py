"""A library question that several documents answer: each close document answers on its own, and the answer names
each document that states one with its place and sentence (ask/library.py); its sources in the chat say which
document they are in. On tiny random models, the check's verdict stood in for (a random model states nothing)."""

import re

import pytest
from helpers import fake_check
from test_library import write_animal_notes

from infinipot.app.ask.library import (
    DocumentAnswer,
    LibraryConfig,
    close_documents,
    named_answers,
    named_citations,
    named_line,
)
from infinipot.app.service import DocumentService
from infinipot.app.web.page import sources
from infinipot.core.answer.answer_sentences import Sentence
from infinipot.core.answer.grounded_answer import Verdict
from infinipot.core.config import PotConfig
from infinipot.storage.passages import PassageHit

AVIARY = "The keeper locked the aviary at dusk."
QUESTION = "Who locked the aviary?"


def hit(document: str, score: float) -> PassageHit:
    return PassageHit(document, 0, 10, "", score)


def test_documents_ranked_close_to_the_first_answer_on_their_own_and_far_ones_do_not():
    hits = [hit("apache", 10.0), hit("gpl2", 9.0), hit("lgpl", 8.2), hit("bsd", 3.0), hit("apache", 2.0)]
    # apache 10.2; gpl2 9.0 (0.88 of it) and lgpl 8.2 (0.80) are close, bsd 3.0 is not.
    assert close_documents(hits, LibraryConfig()) == (["apache"], ["gpl2", "lgpl"])
    assert close_documents(hits, LibraryConfig(others=1)) == (["apache"], ["gpl2"])
    assert close_documents(hits, LibraryConfig(others=0)) == (["apache"], [])
    assert close_documents(hits, LibraryConfig(others_within=0.9)) == (["apache"], [])
    assert close_documents(hits, LibraryConfig(documents=2)) == (["apache", "gpl2"], ["lgpl"])
    with pytest.raises(ValueError, match="others within"):
        LibraryConfig(others_within=0.0)


def answer(name: str, state: str, sentence: str = "", label: str = "line 3") -> DocumentAnswer:
    citations = [{"label": label, "token": 7, "document": name, "doc_id": name + "-id", "quote": sentence}]
    return DocumentAnswer(name + "-id", name, sentence or "No direct answer found.", state, sentence, citations)


def test_each_document_that_states_an_answer_is_named_with_its_place_and_sentence():
    apache = answer(
        "Apache-2.0", "stated", "(b) You must cause any modified files to carry prominent notices.", "line 98"
    )
    gpl2 = answer("GPL-2", "stated", "a) You must cause the modified files to carry prominent notices.", "line 95")
    bsd = answer("BSD", "not_found")
    assert named_answers([apache, bsd, gpl2]) == [apache, gpl2]
    apache.citations.append({**apache.citations[0], "label": "line 109", "score": 0.3})
    apache.citations[0]["score"], gpl2.citations[0]["score"] = 0.6, 0.05  # each of its own answer's shares
    assert [(c["label"], c["score"]) for c in named_citations([apache, gpl2])] == [
        ("line 98", 0.333),  # each document's own place first, the two documents an equal part each
        ("line 95", 0.5),
        ("line 109", 0.167),
    ]
    assert named_line(gpl2) == "GPL-2 (line 95): a) You must cause the modified files to carry prominent notices."
    assert named_answers([apache, bsd]) == []  # the first alone states one: its answer stands as it is
    assert named_answers([bsd, gpl2]) == []  # only beside the first: the first's "No direct answer found" stands
    assert named_answers([bsd, answer("MIT", "closest", "Closest.")]) == []
    assert apache.as_json() == {
        "document": "Apache-2.0",
        "doc_id": "Apache-2.0-id",
        "answer": apache.sentence,
        "answer_state": "stated",
        "place": "line 98",
        "token": 7,
    }


def test_an_answer_naming_several_documents_quotes_each_under_its_document_and_place():
    first, second = "(b) You must cause any modified files to carry notices.", "a) You must cause modified files to."
    citations = [
        {"label": "line 98", "token": 5, "score": 0.5, "snippet": first, "quote": first, "document": "Apache-2.0"},
        # A passage that starts inside the answer's sentence quotes only its end: still that sentence's place.
        {"label": "line 95", "token": 9, "score": 0.4, "snippet": second, "quote": second[3:], "document": "GPL-2"},
    ]
    other = "The licence must be given with every copy."  # a place of Apache-2.0 no answer line is from
    citations.append({"label": "line 7", "token": 2, "score": 0.9, "snippet": other, "document": "Apache-2.0"})
    citations = [{**c, "doc_id": c["document"] + "-id"} for c in citations]
    text = f"Apache-2.0 (line 98): {first}\nGPL-2 (line 95): {second}"
    message = sources.chat_message("assistant", text, sources.library_citations(citations))
    content = message["content"]
    assert f"> **Apache-2.0, line 98** “{sources.markdown_text(first)}”" in content
    assert f"> **GPL-2, line 95** “{sources.markdown_text(second)}”" in content
    assert content.count("“") == 2  # no other quote under them as if it were the answer
    # Each source's button says which document it opens; the named places come first, in the answer's order.
    documents = [sources.source_document(option["value"]) for option in message["options"]]
    assert documents == ["Apache-2.0-id", "GPL-2-id", "Apache-2.0-id"]
    labels = [option["label"] for option in message["options"]]
    assert labels == ["Apache-2.0, line 98 (50%)", "GPL-2, line 95 (40%)", "Apache-2.0, line 7 (90%)"]
    # An answer whose lines are not the sources' sentences is shown as written, with its quotes under it.
    assert (
        "Apache-2.0 (line 98): something else"
        in sources.chat_message(
            "assistant",
            "Apache-2.0 (line 98): something else\nGPL-2 (line 95): other",
            sources.library_citations(citations),
        )["content"]
    )


def stating_the_aviary(engine, question, passages, **kwargs) -> tuple[Verdict, str]:
    """The check's verdict as a real model gives it for a passage holding the answer: its sentence, stated; none
    found elsewhere."""
    text = " ".join(engine.tokenizer.decode(ids) for ids in passages)
    found = re.search(r"The keeper locked the aviary at dusk\.", text)
    if found is None:
        return Verdict(answerable=False, state="not_found", reason="unsure"), "No direct answer found."
    return Verdict(sentence=Sentence(found.group(0), 0, 0.0), state="stated", reason="confident"), found.group(0)


def read_aviary_library(folder, tiny_model_dir, home, monkeypatch, service=None) -> DocumentService:
    """zebra.txt and walrus.txt both say who locked the aviary, otter.txt does not; read with the tiny model, which
    also stands in for the default one that the library asks with (into `service`, a new one when None)."""
    folder.mkdir()
    for animal in ("zebra", "walrus", "otter"):
        path = write_animal_notes(folder / f"{animal}.txt", animal, lines=12)
        if animal != "otter":
            path.write_text(path.read_text(encoding="utf-8") + f"\n{AVIARY}\n", encoding="utf-8")
    service = service or DocumentService(home, device="cpu")
    for animal in ("zebra", "walrus", "otter"):
        service.read(folder / f"{animal}.txt", PotConfig(pot_size=2048, keep_size=512), tiny_model_dir)
    real_get = service.library.models.get
    monkeypatch.setattr(service.library.models, "get", lambda name, dtype=None: real_get(tiny_model_dir, dtype))
    fake_check(monkeypatch, stating_the_aviary)
    return service


def test_a_question_two_documents_answer_names_both_with_their_sentences(
    tmp_path, tiny_model_dir, infinipot_home, monkeypatch
):
    service = read_aviary_library(tmp_path / "library", tiny_model_dir, infinipot_home, monkeypatch)
    pieces, stats = service.ask_library(QUESTION, max_new_tokens=8)
    text = "".join(pieces)
    lines = text.splitlines()
    assert sorted(line.split(" (")[0] for line in lines) == ["walrus.txt", "zebra.txt"], text
    assert all(re.fullmatch(rf"\S+ \(line \d+\): {re.escape(AVIARY)}", line) for line in lines), text
    assert stats.answerable and stats.answer_state == "stated"
    named = {answer["document"]: answer for answer in stats.answers}
    assert {named[n]["answer_state"] for n in ("zebra.txt", "walrus.txt")} == {"stated"}
    # Each named document's own place is cited first, in the answer's order, each naming its document.
    assert [c["document"] for c in stats.citations[:2]] == [line.split(" (")[0] for line in lines]
    assert all(c["quote"] == AVIARY for c in stats.citations[:2])
    assert [f"({c['label']})" for c in stats.citations[:2]] == [re.search(r"\(line \d+\)", ln)[0] for ln in lines]

    # One document alone holding it: answered as before, its sentence without a name before it.
    pieces, stats = service.ask_library(QUESTION, docs=["zebra.txt", "otter.txt"], max_new_tokens=8)
    assert "".join(pieces) == AVIARY and stats.citations[0]["document"] == "zebra.txt"
    assert [a["answer_state"] for a in stats.answers] in ([], ["stated", "not_found"])
