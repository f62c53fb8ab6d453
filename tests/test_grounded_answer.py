"""The checked answer (core.answer.grounded_answer, core.answer.answer_confidence) on a tiny model: the judge's
best few sentences are candidates, each gets a probability of holding the answer from signals any document has, and
the likeliest is the answer in the document's own words when that probability is sure enough; far from it, the
answer says plainly that no direct answer was found and quotes it; in between, the model's own short answer (never
shown) adds the sentence it copied and whether it agrees. The judge's scores and the writer's text are set by hand,
and a writer run where it should not be fails the test."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import pytest
from helpers import checked_verdict
from tiny_models import tiny_loaded

from infinipot.core.answer import answer_sentences
from infinipot.core.answer.answer_confidence import (
    FEATURES,
    WRITER_FEATURES,
    AskedAbout,
    ConfidenceModel,
    cover,
    likeliest,
    probability,
    rare_cover,
    sentence_features,
)
from infinipot.core.answer.answer_sentences import Sentence, ranked_sentences, split_sentences
from infinipot.core.answer.answer_words import BASE_MODEL_WROTE
from infinipot.core.answer.grounded_answer import (
    CLOSEST_WORDS,
    NOT_ANSWERED,
    GroundingConfig,
    Verdict,
    answers_freely,
    checking,
    final_answer,
    free_answer,
)
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.model import LoadedModel
from infinipot.core.prompts import encode

PASSAGES = [
    "Some other page. The cover is green.",
    "Permission is granted under the GNU Free Documentation License, Version 1.3. Copies are allowed.",
]
BEST = "Permission is granted under the GNU Free Documentation License, Version 1.3."
NO_TEXT = -9.0


@pytest.fixture
def engine():
    return Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=64))


def only(weights: dict[str, float], bias: float = 0.0, **kwargs) -> ConfidenceModel:
    """A confidence model that weighs only the features named (the others 0), with or without the writer alike
    unless `writer_weights` are given; stated at 0.5 with no writer in between unless set; for any model (the tiny
    one's included) unless `fitted_on` says which."""
    settings = dict(sure=0.5, unsure=0.5, threshold=0.5, fitted_on=None) | kwargs
    writer = settings.pop("writer_weights", weights)
    return ConfidenceModel(
        weights=tuple(weights.get(name, 0.0) for name in FEATURES),
        bias=bias,
        writer_weights=tuple(writer.get(name, 0.0) for name in WRITER_FEATURES),
        writer_bias=settings.pop("writer_bias", bias),
        **settings,
    )


# Stated when it leads the next sentence by 1 or more (probability 0.5 at a lead of 1).
BY_LEAD = only({"lead": 10.0}, bias=-10.0)


def judged(engine, monkeypatch, scores: dict[str, float], written: str | None = None) -> list[tuple[str, str]]:
    """The judge gives each sentence in `scores` its score, any other -5, and no text NO_TEXT; the writer writes
    `written`, or fails the test when None. Returns the (context, question) of each call to the judge."""
    calls: list[tuple[str, str]] = []

    def answer(pot, question, decoding=None, stats=None, **kwargs):
        if written is None:
            raise AssertionError("the writer ran where the judge's signals decide alone")
        return iter([written])

    def likelihoods(judging, rows, question, context=""):
        calls.append((context, question))
        texts = [engine.tokenizer.decode(row).strip() for row in rows]
        return [NO_TEXT if not text else scores.get(text, -5.0) for text in texts]

    monkeypatch.setattr(engine, "answer", answer)
    monkeypatch.setattr(answer_sentences, "question_likelihoods", likelihoods)
    return calls


def ask(engine, question="Which license covers this manual?", config=None, passages=PASSAGES, absent=(), **kwargs):
    """(text, verdict, stats) as app.ask.pipeline makes the answer from core's steps: unchecked when nothing is
    checked, else checked, the words the document lacks (`absent`) asked only when not answerable."""
    config = config or GroundingConfig()
    stats = AnswerStats()
    ids = [encode(engine.tokenizer, text) for text in passages]
    if answers_freely(ids, config):
        text = "".join(free_answer(engine, None, question, ids, None, stats, kwargs.get("history", ())))
        return text, Verdict(reason="free"), stats
    started = time.perf_counter()
    verdict = checked_verdict(checking(engine, None, question, ids, None, stats, config, **kwargs))
    verdict, text = final_answer(engine, verdict, stats, started, () if verdict.answerable else absent)
    return text, verdict, stats


def scores(*values: float) -> dict[str, float]:
    """The four sentences of PASSAGES scored, BEST first."""
    return dict(zip([BEST, "Copies are allowed.", "Some other page.", "The cover is green."], values, strict=True))


def test_a_likely_enough_candidate_is_the_answer_in_the_documents_words(engine, monkeypatch):
    judged(engine, monkeypatch, scores(0.0, -1.5, -1.6, -1.7))
    text, verdict, stats = ask(engine, config=GroundingConfig(confidence=BY_LEAD))
    assert text == BEST and verdict.answerable and verdict.reason == "confident" and verdict.sentence.text == BEST
    assert verdict.confidence == pytest.approx(1 / (1 + math.exp(-5.0)))
    assert engine.tokenizer.decode(stats.token_ids) == BEST and stats.stopped_by == "end"


def test_below_the_threshold_no_direct_answer_is_found_and_the_likeliest_candidate_is_quoted(engine, monkeypatch):
    judged(engine, monkeypatch, scores(0.0, -0.5, -0.6, -0.7))
    text, verdict, stats = ask(engine, config=GroundingConfig(confidence=BY_LEAD))
    assert not verdict.answerable and verdict.reason == "unsure" and verdict.confidence < 0.5
    assert text == f"{NOT_ANSWERED} The closest passage: “{BEST}”"
    assert engine.tokenizer.decode(stats.token_ids) == text  # the stats describe what was shown


def test_the_likeliest_candidate_may_be_one_the_judge_ranked_below_the_first(engine, monkeypatch):
    # "How many" asks for a number: the judge's best sentence is about the pages, the second holds the number.
    passages = ["The manual is long. It has 300 pages and a green cover."]
    judged(engine, monkeypatch, {"The manual is long.": 0.0, "It has 300 pages and a green cover.": -0.4})
    by_kind = only({"kind": 4.0}, bias=-2.0)
    text, verdict, _ = ask(
        engine, "How many pages does the manual have?", GroundingConfig(confidence=by_kind), passages
    )
    assert text == "It has 300 pages and a green cover." and verdict.answerable
    # ... but only among the judge's best `candidates`.
    one = only({"kind": 4.0}, bias=-2.0, candidates=1)
    text, verdict, _ = ask(engine, "How many pages does the manual have?", GroundingConfig(confidence=one), passages)
    assert not verdict.answerable and text.endswith("“The manual is long.”")


def test_a_model_the_decision_was_not_fitted_on_is_decided_strictly_and_says_so(engine, monkeypatch):
    judged(engine, monkeypatch, scores(0.0, -1.5, -1.6, -1.7))
    likely = math.log(0.7 / 0.3)  # every candidate at probability 0.7
    fitted = only({}, bias=likely, fitted_on=engine.loaded.identity)
    text, verdict, stats = ask(engine, config=GroundingConfig(confidence=fitted))
    assert verdict.answerable and verdict.decided_by == "calibrated" and text == BEST
    other = only({}, bias=likely, fitted_on="smollm2-135m-instruct-q4_1", strict=0.8)
    text, verdict, _ = ask(engine, config=GroundingConfig(confidence=other))
    assert not verdict.answerable and verdict.decided_by == "strict" and verdict.state == "closest"
    assert ask(engine, config=GroundingConfig(confidence=replace(other, strict=0.65)))[1].answerable
    assert ConfidenceModel().for_model("smollm2-135m-instruct-q4_1") == ConfidenceModel()
    strict = ConfidenceModel().for_model("gemma-3-270m-q4_k_m-a5fd3b62230a")
    assert strict.sure == strict.unsure == strict.threshold == 0.6 and strict.fitted_on is None


def test_in_doubt_the_writer_points_at_the_sentence_it_copied_and_its_agreement_is_weighed(engine, monkeypatch):
    inn = "She took a room at an inn called The Copper Kettle, which stood beside the bridge."
    passages = [f"The road was long. The rain fell. Orlen lay below. The river was high. {inn}"]
    ranks = {"The road was long.": -1.0, "The rain fell.": -1.5, "Orlen lay below.": -2.0, "The river was high.": -2.5}
    written = "The inn in Orlen was called The Copper Kettle."
    judged(engine, monkeypatch, {**ranks, inn: -3.0}, written=written)
    # Without the writer nothing is likely (bias 0: every candidate 0.5, in doubt between 0.2 and 0.9); with it, a
    # sentence it agrees with is (the fifth, which it copied four words of: a candidate beyond the judge's three).
    doubt = only({}, bias=0.0, unsure=0.2, sure=0.9, writer_weights={"agree": 4.0}, writer_bias=-2.0)
    text, verdict, stats = ask(engine, "What was the inn in Orlen called?", GroundingConfig(confidence=doubt), passages)
    assert text == inn and verdict.reason == "confident" and verdict.written == written and not verdict.kept_written
    assert engine.tokenizer.decode(stats.token_ids) == inn  # the written answer is never shown
    # Sure or far from it, the writer does not run (judged() fails the test if it does).
    judged(engine, monkeypatch, {**ranks, inn: -3.0})
    sure = only({}, bias=3.0, unsure=0.2, sure=0.9)
    assert ask(engine, "What was the inn in Orlen called?", GroundingConfig(confidence=sure), passages)[1].answerable
    far = only({}, bias=-3.0, unsure=0.2, sure=0.9)
    _, verdict, _ = ask(engine, "What was the inn in Orlen called?", GroundingConfig(confidence=far), passages)
    assert not verdict.answerable and verdict.written == "" and verdict.reason == "unsure"
    # A written answer with a fact no candidate holds agrees with none: no direct answer.
    judged(engine, monkeypatch, {**ranks, inn: -3.0}, written="The inn in Orlen was called The Golden Goose.")
    _, verdict, _ = ask(engine, "What was the inn in Orlen called?", GroundingConfig(confidence=doubt), passages)
    assert not verdict.answerable and verdict.written.endswith("Golden Goose.")


def test_features_say_what_any_document_shows():
    ranked = [
        Sentence("The manual is long.", 0, -1.0),
        Sentence("It has 300 pages and a green cover.", 1, -1.5),
        Sentence("The cover of the manual is green.", 1, -3.0),
    ]
    question = "How many pages does the manual have?"
    first = sentence_features(ranked, 0, question, -9.0, AskedAbout(best_span=1))
    second = sentence_features(ranked, 1, question, -9.0, AskedAbout(best_span=1))
    assert first["first"] == 1.0 and first["rank"] == 0.0 and second["rank"] == pytest.approx(math.log(2))
    assert first["lead"] == pytest.approx(0.5) and second["lead"] == pytest.approx(1.5)
    assert first["margin"] == pytest.approx(8.0)
    assert first["kind"] == 0.0 and second["kind"] == 1.0  # a number added
    assert first["best_span"] == 0.0 and second["best_span"] == 1.0
    # "pages" and "manual": the first holds one of two; "pages" is held by fewer ranked sentences, so weighs more.
    assert cover(ranked[0].text, question) == 0.5 and cover(ranked[1].text, question) == 0.5
    texts = [s.text for s in ranked]
    assert rare_cover(ranked[1].text, question, texts) > rare_cover(ranked[0].text, question, texts)
    # A sentence without the rare name asked about, unless its passage names it.
    heron = Sentence("She was commanded by Captain Josiah Pell.", 0, 0.0)
    names = ["Margarethe"]
    assert (
        sentence_features([heron], 0, "Who was the captain of the Margarethe?", 0.0, AskedAbout(names=names))["names"]
        == 0.0
    )
    passages = ["The Margarethe sailed at dawn. She was commanded by Captain Josiah Pell."]
    held = sentence_features([heron], 0, "Who was the captain?", 0.0, AskedAbout(names=names, passages=passages))
    assert held["names"] == 1.0


def test_the_fitted_model_states_a_clear_answer_and_marks_a_sentence_that_adds_nothing_asked():
    model = ConfidenceModel()
    question = "What is the default port of the server?"
    answer = Sentence("Port: the default port of the server is 8080.", 2, -1.0)
    other = Sentence("The server logs every request.", 0, -3.0)
    best, p = likeliest([answer, other], question, -6.0, model, AskedAbout(best_span=2))
    assert best is answer and p >= model.threshold
    topical = Sentence("The server reads its configuration at start-up.", 2, -2.0)
    assert (
        likeliest([topical, other], "How many workers does the server start?", -2.5, model, AskedAbout(best_span=2))[1]
        < 0.48
    )
    assert 0.0 < probability(dict.fromkeys(FEATURES, 0.0), model) < 0.5


def test_a_follow_up_is_judged_after_the_earlier_question_and_must_add_to_both(engine, monkeypatch):
    by_kind = GroundingConfig(confidence=only({"kind": 4.0}, bias=-2.0))
    calls = judged(engine, monkeypatch, {BEST: 0.0})
    earlier = "Under which license is this manual distributed?"
    text, verdict, _ = ask(engine, "What version of it?", by_kind, earlier=earlier)
    assert calls and all(call == (earlier, "What version of it?") for call in calls)
    assert verdict.reason == "confident" and text == BEST  # "1.3" is what neither question says
    # A version the earlier question already gave is nothing new.
    _, verdict, _ = ask(engine, "What version of it?", by_kind, earlier="Is the License at Version 1.3?")
    assert not verdict.answerable


def test_a_follow_up_asking_a_number_or_name_also_weighs_the_sentence_answered_before(engine, monkeypatch):
    earlier = "Who kept the Gull Head light?"
    stated = "Ida Marlowe had kept the light for twenty-seven years."
    passages = ["The lamp burned oil. The tower was painted white."]
    judged(engine, monkeypatch, {stated: 0.0, "The lamp burned oil.": -1.0})
    config = GroundingConfig(confidence=only({"kind": 4.0}, bias=-2.0))
    text, verdict, _ = ask(
        engine, "For how many years had she kept it?", config, passages, earlier=earlier, carried=[stated]
    )
    assert verdict.reason == "confident" and text == stated
    # Not weighed for a question of no particular kind: any earlier sentence adds some word to it.
    _, verdict, _ = ask(engine, "And what does the lamp burn?", config, passages, earlier=earlier, carried=[stated])
    assert stated not in [s.text for s in verdict.ranked]


def test_a_follow_up_asking_a_version_takes_the_earlier_answers_fact_when_no_candidate_holds_one(engine, monkeypatch):
    earlier = "Under which license is this manual distributed?"
    stated = "Permission is granted under the terms of the GNU Free Documentation License, Version 1.3."
    passages = ["We have designed this License for manuals. It complements the GNU General Public License."]
    low = {"We have designed this License for manuals.": -1.0, "It complements the GNU General Public License.": -1.2}
    judged(engine, monkeypatch, {**low, stated: -4.0})
    never = GroundingConfig(confidence=only({}, bias=-5.0))  # no candidate is ever likely enough
    text, verdict, _ = ask(engine, "What version of it?", never, passages, earlier=earlier, carried=[stated])
    assert verdict.reason == "earlier" and verdict.answerable and text == stated
    # A question of no particular kind is not answered by the earlier sentence, nor is a follow-up with none.
    assert (
        ask(engine, "And what does it cover?", never, passages, earlier=earlier, carried=[stated])[1].reason == "unsure"
    )
    assert ask(engine, "What version of it?", never, passages, earlier=earlier)[1].reason == "unsure"


def test_a_long_closest_sentence_is_quoted_by_its_first_words_in_a_not_found_answer(engine, monkeypatch):
    table = "Header: " + " ".join(f"4 CARD32 FIELD_{index}_OFFSET" for index in range(20)) + "."
    # The judge reads a long sentence's first tokens: rank the table best by its start.
    texts = lambda rows: [engine.tokenizer.decode(row) for row in rows]  # noqa: E731

    def scores(judging, rows, question, context=""):
        return [0.0 if t.startswith("Header") else -0.1 for t in texts(rows)]

    monkeypatch.setattr(answer_sentences, "question_likelihoods", scores)
    text, verdict, _ = ask(engine, config=GroundingConfig(confidence=BY_LEAD), passages=[table, PASSAGES[0]])
    assert not verdict.answerable and verdict.sentence.text == table  # the whole sentence stays the quote shown
    quoted = text.removeprefix(f"{NOT_ANSWERED} The closest passage: “").removesuffix("”")
    assert quoted == " ".join(table.split()[:CLOSEST_WORDS]) + " …"


def test_a_sentence_met_twice_is_judged_once(engine, monkeypatch):
    # Overlapping passages hold the best sentence twice; a copy must not be the "next best" it leads.
    judged(engine, monkeypatch, scores(0.0, -1.5, -1.6, -1.7))
    text, verdict, _ = ask(engine, config=GroundingConfig(confidence=BY_LEAD), passages=[PASSAGES[1], PASSAGES[1]])
    assert [s.text for s in verdict.ranked].count(BEST) == 1
    assert verdict.reason == "confident" and text == BEST


def test_the_sentence_style_answers_with_the_sentence_and_free_with_the_written_text(engine, monkeypatch):
    judged(engine, monkeypatch, {BEST: 0.0})
    assert ask(engine, config=GroundingConfig(style="sentence"))[0] == BEST

    def answer(pot, question, decoding=None, stats=None, **kwargs):
        return iter(["It is the GPL."])

    monkeypatch.setattr(engine, "answer", answer)
    text, verdict, _ = ask(engine, config=GroundingConfig(style="free"))
    assert text == "It is the GPL." and verdict.answerable and verdict.sentence is None
    # Without passages (the pot holds the whole document) the model's answer is not checked either.
    text, verdict, _ = ask(engine, passages=[])
    assert text == "It is the GPL." and verdict.reason == "free"
    # A base model's writing says so (it continues text rather than following the request).
    monkeypatch.setattr(LoadedModel, "follows_instructions", property(lambda self: False))
    text, _, _ = ask(engine, config=GroundingConfig(style="free"))
    assert text == f"It is the GPL.\n\n{BASE_MODEL_WROTE}"


def test_grounding_settings_are_checked():
    with pytest.raises(ValueError, match="answer grounding"):
        GroundingConfig(style="guess")
    with pytest.raises(ValueError, match="sentence"):
        GroundingConfig(sentences=0)
    with pytest.raises(ValueError, match="rare name"):
        GroundingConfig(rare_name_mentions=-1)
    with pytest.raises(ValueError, match="weights"):
        ConfidenceModel(weights=(1.0,))
    with pytest.raises(ValueError, match="with the writer"):
        ConfidenceModel(writer_weights=(1.0,))
    with pytest.raises(ValueError, match="threshold"):
        ConfidenceModel(threshold=1.5)
    with pytest.raises(ValueError, match="must not exceed"):
        ConfidenceModel(unsure=0.7, sure=0.6)
    with pytest.raises(ValueError, match="candidate"):
        ConfidenceModel(candidates=0)


def test_sentences_split_at_stops_blank_lines_and_the_lines_of_long_tables():
    sentences = split_sentences("One two.  Three?\n\nA heading\nNext line.")
    assert sentences == ["One two.", "Three?", "A heading Next line."]
    titled = "At the foot of the mountain she met Dr. Nadia Fenn, e.g. a botanist. She smiled."
    assert split_sentences(titled) == [
        "At the foot of the mountain she met Dr. Nadia Fenn, e.g. a botanist.",
        "She smiled.",
    ]
    log = "\n".join(f"12:00:{i:02d} INFO service {i} ready with no stop at all here" for i in range(8))
    assert len(split_sentences(log)) == 8


def test_sentences_are_ranked_by_the_judge_and_taken_from_the_likeliest_passage_first(engine, monkeypatch):
    judged(engine, monkeypatch, {"Copies are allowed.": 0.0})
    ranked = ranked_sentences(engine, PASSAGES, "Are copies allowed?")
    assert ranked[0].text == "Copies are allowed." and ranked[0].span == 1
    assert {s.text for s in ranked} == set(split_sentences(PASSAGES[0]) + split_sentences(PASSAGES[1]))
    # At most two sentences: both from the last passage (the likeliest, read last).
    assert {s.span for s in ranked_sentences(engine, PASSAGES, "Are copies allowed?", most=2)} == {1}


def test_log_lines_dates_and_list_items_are_sentences_of_their_own_and_wrapped_numbers_are_not():
    log = "06:03Z INFO start\n2024-11-14T06:08:50Z INFO config loaded\n2024-11-14T06:16:55Z INFO pool ready"
    assert split_sentences(log) == [
        "06:03Z INFO start",
        "2024-11-14T06:08:50Z INFO config loaded",
        "2024-11-14T06:16:55Z INFO pool ready",
    ]
    assert split_sentences("Files:\n- globs\n- magic") == ["Files:", "- globs", "- magic"]
    assert split_sentences("The mountain was\n1,206 metres high. Then") == [
        "The mountain was 1,206 metres high.",
        "Then",
    ]
    # A short list item is one unit, however many sentences it has.
    assert split_sentences("w. New prompt string: PS0. Expanded by interactive shells.") == [
        "w. New prompt string: PS0. Expanded by interactive shells."
    ]


def test_a_sentence_that_only_repeats_the_question_is_no_candidate(engine, monkeypatch):
    # A table of contents' line names what is asked and nothing more.
    passages = ["- Blob.seek()\n\nSet the current access position of the blob to offset."]
    judged(engine, monkeypatch, {"- Blob.seek()": 0.0, "Set the current access position of the blob to offset.": -2.0})
    everything = GroundingConfig(confidence=only({}, bias=5.0))
    text, verdict, _ = ask(engine, "What does Blob.seek() do?", everything, passages)
    assert text == "Set the current access position of the blob to offset." and verdict.answerable
    text, verdict, _ = ask(engine, "What does Blob.seek() do?", everything, passages=["- Blob.seek()"])
    assert not verdict.answerable and verdict.confidence == 0.0 and text.endswith("“- Blob.seek()”")


def test_a_not_found_answer_names_the_questions_words_the_document_never_uses():
    from infinipot.core.answer.grounded_answer import not_answered

    closest = Sentence("Times are written as YYYYMMDDhhmmss, e.g. 1998.", 0, 0.0)
    assert not_answered(closest, ["football", "stadium"]) == (
        "No direct answer found in the document, which never mentions “football” or “stadium”. "
        "The closest passage: “Times are written as YYYYMMDDhhmmss, e.g. 1998.”"
    )
    assert not_answered(None) == NOT_ANSWERED


def test_the_words_a_document_never_uses_are_found_in_its_stored_text(tmp_path, infinipot_home, tiny_model_dir):
    from tiny_models import write_notes

    from infinipot.app.ask.evidence import absent_words
    from infinipot.app.service import DocumentService

    service = DocumentService(infinipot_home, device="cpu")
    notes = write_notes(tmp_path / "notes.txt", lines=20)
    doc_id = service.read(notes, PotConfig(pot_size=128, keep_size=48), tiny_model_dir).doc_id
    stored = service.open_pot(doc_id)
    # "jumped" is "jumps" folded; "won" and "cup" are too short to be named; the rest is never written.
    asked = "Which football player jumped over the lazy dogs and won the stadium cup?"
    assert absent_words(service.library, stored, asked) == ["football", "player", "stadium"]
    # One unused word among the question's others is a wording, not the reason: none is named.
    assert absent_words(service.library, stored, "Which brown fox jumped over the lazy sleeping dog?") == []


def test_a_word_the_quoted_passage_holds_in_any_form_is_never_said_to_be_missing():
    from infinipot.core.answer.grounded_answer import not_answered

    closest = Sentence("Written by Fabio Fiorina and Simon Josefsson; the authors wrote it in 2002.", 0, -1.0)
    said = not_answered(closest, ["Wrote", "football"])
    assert "never mentions “football”." in said and "Wrote" not in said.split("The closest passage")[0]
    assert not_answered(closest, ["writes", "Authors"]).startswith(f"{NOT_ANSWERED} The closest passage")


def test_a_document_uses_a_word_it_hyphenates_at_a_line_break_or_inside():
    from infinipot.app.ask.evidence import written_forms
    from infinipot.core.answer.grounding import holds_word, word_keys

    found = word_keys(written_forms("Send an e-mail to the main-\n   tainer of the docu\u2010\n      ment."))
    for word in ("email", "e-mail", "maintainer", "document"):
        assert holds_word(found, word), word
    assert not holds_word(found, "football")


def test_likely_but_not_sure_the_passage_that_seems_to_answer_is_shown(engine, monkeypatch):
    from infinipot.core.answer.grounded_answer import SEEMS_TO_ANSWER

    judged(engine, monkeypatch, scores(0.0, -0.95, -1.0, -1.1))  # a lead of 0.95: p = 1 / (1 + e^0.5) = 0.38
    text, verdict, _ = ask(engine, config=GroundingConfig(confidence=BY_LEAD))
    assert verdict.state == "closest" and not verdict.answerable and 0.35 <= verdict.confidence < 0.5
    assert text == f"{SEEMS_TO_ANSWER} “{BEST}”"
    judged(engine, monkeypatch, scores(0.0, -0.5, -0.6, -0.7))  # p = 0.007: nothing read answers
    _, verdict, _ = ask(engine, config=GroundingConfig(confidence=BY_LEAD))
    assert verdict.state == "not_found" and not verdict.answerable


def test_closest_above_the_threshold_is_refused():
    with pytest.raises(ValueError, match="closest"):
        ConfidenceModel(closest=0.6, threshold=0.48)


def test_a_question_about_words_the_document_never_uses_is_not_found_even_when_a_passage_seems_likely(
    engine, monkeypatch
):
    judged(engine, monkeypatch, scores(0.0, -0.95, -1.0, -1.1))  # closest, as above
    text, verdict, _ = ask(engine, config=GroundingConfig(confidence=BY_LEAD), absent=["football"])
    assert verdict.state == "not_found" and text.startswith(f"{NOT_ANSWERED[:-1]}, which never mentions “football”")
