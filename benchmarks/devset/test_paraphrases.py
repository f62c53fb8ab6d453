"""The paraphrase set and its rule: python -m pytest benchmarks/devset/test_paraphrases.py

The story and the log are generated into a temp folder; the PDFs are checked where Debian installed them
(apt-get install libtasn1-doc shared-mime-info), and skipped otherwise (conftest.py, as for the other sets).
"""

import json

from benchmarks.devset.check import (
    check_paraphrases,
    content_words,
    fold,
    load_paraphrases,
    load_questions,
    shared_content_words,
)
from benchmarks.devset.documents import DOCUMENTS

# The rule: a question shares no content word with its answering sentence.


def test_fold_gives_inflected_forms_one_form():
    assert {fold(w) for w in ("fail", "fails", "failed", "failing", "failure", "failures", "Failing")} == {"fail"}
    assert fold("order") == fold("orders") == fold("ordered")
    assert fold("run") == fold("running") == fold("ran")  # irregular forms too
    assert fold("supply") == fold("supplies") == fold("supplier")
    assert fold("harbour") == fold("harbor")
    assert fold("fail") != fold("file") and fold("use") != fold("user")
    assert fold("v3.14.2") == "v3.14.2" and fold("4318") == "4318"  # numbers are kept as written


def test_content_words_drop_function_words():
    assert content_words("What is the name of it, and where was it?") == {fold("name"): "name"}
    assert content_words("asn1_node's type") == {"asn1": "asn1", fold("node"): "node", fold("type"): "type"}


def test_a_shared_word_is_reported():
    assert shared_content_words("Why are payments failing?", "payments are failing upstream") == [
        "payments",
        "failing",
    ]


def test_an_inflected_shared_word_is_reported_with_both_spellings():
    assert shared_content_words("What is failing at checkout?", "the card processor fails") == ["failing/fails"]
    assert shared_content_words("What was failing?", "a failure upstream") == ["failing/failure"]
    assert shared_content_words("Which processor?", "while processing it") == ["processor/processing"]
    # folded words that begin one another (at least four letters) count as one: data / database, prod / products
    assert shared_content_words("Where is the data stored?", "the database") == ["data/database"]
    assert shared_content_words("How many products?", "shop-prod-03 loaded") == ["products/prod"]


def test_function_words_are_not_shared_words():
    assert shared_content_words("What went wrong at checkout?", "payments are failing") == []
    assert shared_content_words("Which of these is it, and when was it there?", "It was there, in these.") == []


# The committed set.


def test_paraphrase_set_shape():
    paraphrases = load_paraphrases()
    problems, counts = check_paraphrases(None)  # structure and the rule: no documents read
    assert problems == []
    assert len(paraphrases) >= 40 and len({p["id"] for p in paraphrases}) == len(paraphrases)
    rewrites = [p for p in paraphrases if "rewrites" in p]
    assert len(rewrites) >= 20 and len(paraphrases) - len(rewrites) >= 20
    assert {p["rewrites"] for p in rewrites} <= {q["id"] for q in load_questions()}
    for key in (key for key, doc in DOCUMENTS.items() if doc.paraphrased):
        assert counts[key]["rewrite"] >= 4 and counts[key]["new"] >= 4


def test_generated_documents_hold_their_paraphrase_sentences(docs):
    problems, _ = check_paraphrases(docs, keys={"story", "log"})
    assert problems == []


def test_pdf_paraphrase_sentences_are_in_the_manuals(installed_documents):
    problems, _ = check_paraphrases(installed_documents, keys={"libtasn1", "mime-spec"})
    assert problems == []


def test_check_paraphrases_reports_bad_records(docs, tmp_path):
    paraphrases = [p for p in load_paraphrases() if p["document"] == "log"]
    first, second = paraphrases[0], paraphrases[1]
    bad = [
        dict(first, question=first["question"] + " Was the connection pool ready?"),  # shares connection, pool
        dict(second, where=second["where"] + 7),
        dict(paraphrases[2], sentence="a line the log never holds"),
        dict(paraphrases[3], answers=["a value not in the line"]),
        dict(paraphrases[4], rewrites="log-99"),
        dict(paraphrases[5], id=first["id"]),
        dict(paraphrases[6], question=paraphrases[6]["question"] + " " + paraphrases[6]["answers"][0]),
    ]
    path = tmp_path / "paraphrases.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in bad + paraphrases[7:]), encoding="utf-8")
    problems, counts = check_paraphrases(docs, path, keys={"log"})
    assert any(p.startswith(first["id"]) and "shares content words" in p and "connection" in p for p in problems)
    assert any(p.startswith(second["id"]) and "not line" in p for p in problems)
    assert any(p.startswith(paraphrases[2]["id"]) and "sentence not found" in p for p in problems)
    assert any(p.startswith(paraphrases[3]["id"]) and "is not in the sentence" in p for p in problems)
    assert any(p.startswith(paraphrases[4]["id"]) and "not a questions.jsonl id" in p for p in problems)
    assert any(p.startswith(first["id"]) and "duplicate id" in p for p in problems)
    assert any(p.startswith(paraphrases[6]["id"]) and "already holds an accepted answer" in p for p in problems)
    assert any(p.startswith("story:") and "want at least 8" in p for p in problems)
    assert any(p.startswith("paraphrases:") and "want at least 40" in p for p in problems)
    assert counts["log"]["rewrite"] + counts["log"]["new"] == len(paraphrases)
