"""The answer-making rules (core.grounded_answer) on a tiny model: a best sentence that stands out from the next
and holds the kind of thing asked is the answer, without the writer; otherwise, when the written answer agrees
with a sentence the judge picks (most content words it adds are in that sentence), the answer is that sentence;
otherwise the answer says plainly that no direct answer was found, quoting the closest sentence. The judge's
scores and the writer's text are set by hand, so each rule is tested on its own."""

from __future__ import annotations

import pytest
from tiny_models import tiny_loaded

from infinipot.core.answer_sentences import longest_copied_run, ranked_sentences, split_sentences, whole_sentences_end
from infinipot.core.config import PotConfig
from infinipot.core.engine import AnswerStats, Engine
from infinipot.core.grounded_answer import CLOSEST_WORDS, NOT_ANSWERED, GroundingConfig, Verdict, grounded_answer
from infinipot.core.prompts import encode

PASSAGES = [
    "Some other page. The cover is green.",
    "Permission is granted under the GNU Free Documentation License, Version 1.3. Copies are allowed.",
]


@pytest.fixture
def engine():
    return Engine(tiny_loaded("llama"), PotConfig(pot_size=256, keep_size=64))


def judged(engine, monkeypatch, written: str, best: str, lead: float = 0.5) -> list[str]:
    """The writer writes `written`; the judge finds the question likeliest after `best`, `lead` less likely after
    every other sentence (below the default standout unless given), and least likely after no text. Returns the
    questions the writer was asked, as they are asked."""
    asked: list[str] = []
    judged_after.clear()

    def answer(pot, question, decoding=None, stats=None, **kwargs):
        asked.append(question)
        if stats is not None:
            stats.ttft_seconds, stats.token_ids = 0.01, encode(engine.tokenizer, written)
        return iter([written])

    def likelihoods(rows, question, context=""):
        judged_after.append((context, question))
        texts = [engine.tokenizer.decode(row) for row in rows]
        return [0.0 if text.strip() == best else (-9.0 if not text else -lead) for text in texts]

    monkeypatch.setattr(engine, "answer", answer)
    monkeypatch.setattr(engine, "question_likelihoods", likelihoods)
    return asked


def ask(
    engine,
    question="Which license covers this manual?",
    config=None,
    passages=PASSAGES,
    earlier="",
    carried=(),
    names=(),
):
    config = config or GroundingConfig()
    verdict, stats = Verdict(), AnswerStats()
    ids = [encode(engine.tokenizer, text) for text in passages]
    answer = grounded_answer(
        engine, None, question, ids, None, stats, config, verdict, earlier=earlier, carried=carried, names=names
    )
    text = "".join(answer)
    return text, verdict, stats


# (context, question) of each call to the judge in the last ask
judged_after: list[tuple[str, str]] = []

BEST = "Permission is granted under the GNU Free Documentation License, Version 1.3."


def test_a_written_answer_that_agrees_with_the_best_sentence_is_answered_in_the_documents_words(engine, monkeypatch):
    judged(engine, monkeypatch, "The manual is under the GNU Free Documentation License.", BEST)
    text, verdict, stats = ask(engine)
    assert text == BEST and verdict.answerable and verdict.sentence.text == BEST
    assert verdict.written == "The manual is under the GNU Free Documentation License." and not verdict.kept_written
    assert engine.tokenizer.decode(stats.token_ids) == BEST


def test_agreement_needs_the_share_of_added_words_the_setting_asks(engine, monkeypatch):
    # Adds GNU, Free, Documentation and "Lisbon": three of four in the sentence.
    judged(engine, monkeypatch, "The GNU Free Documentation License of Lisbon.", BEST)
    assert ask(engine, config=GroundingConfig(agreement=0.75))[1].answerable
    assert not ask(engine, config=GroundingConfig(agreement=0.8))[1].answerable


def test_a_fact_the_sentence_does_not_hold_turns_the_answer_into_not_found_with_the_closest_sentence(
    engine, monkeypatch
):
    judged(engine, monkeypatch, "It is the GNU General Public License (GPL).", BEST)
    text, verdict, stats = ask(engine)
    assert text == f"{NOT_ANSWERED} The closest passage: “{BEST}”"
    assert not verdict.answerable and verdict.unsupported == ("General", "Public", "GPL")
    assert verdict.written == "It is the GNU General Public License (GPL)."
    assert engine.tokenizer.decode(stats.token_ids) == text  # the stats describe what was shown


def test_an_answer_that_adds_nothing_to_the_question_is_not_an_answer(engine, monkeypatch):
    judged(engine, monkeypatch, "This license covers the manual.", BEST)
    text, verdict, _ = ask(engine)
    assert not verdict.answerable and text.startswith(NOT_ANSWERED)


def test_a_best_sentence_that_stands_out_and_holds_what_is_asked_answers_without_the_writer(engine, monkeypatch):
    asked = judged(engine, monkeypatch, "It is the GNU General Public License.", BEST, lead=0.75)
    text, verdict, stats = ask(engine)
    assert text == BEST and verdict.answerable and verdict.reason == "standout" and verdict.standout == 0.75
    assert asked == [] and verdict.written == ""  # the writer never ran: its invention cannot show
    assert engine.tokenizer.decode(stats.token_ids) == BEST and stats.stopped_by == "end"
    # Just under the setting, the writer decides; its invention makes it "not found".
    judged(engine, monkeypatch, "It is the GNU General Public License.", BEST, lead=0.74)
    text, verdict, _ = ask(engine)
    assert not verdict.answerable and verdict.reason == "none" and text.startswith(NOT_ANSWERED)
    # The rule can be turned off.
    judged(engine, monkeypatch, "It is the GNU General Public License.", BEST, lead=3.0)
    assert not ask(engine, config=GroundingConfig(standout=None))[1].answerable


def test_a_best_sentence_without_the_kind_of_thing_asked_is_no_answer_however_far_it_stands_out(engine, monkeypatch):
    # "How many" asks for a number: the best sentence is about the manual's pages but holds no number.
    passages = ["The manual is long. It is printed on green paper and has many pages."]
    best = "It is printed on green paper and has many pages."
    question = "How many pages does the manual have?"
    asked = judged(engine, monkeypatch, "It has 300 pages.", best, lead=5.0)
    text, verdict, _ = ask(engine, question=question, passages=passages)
    assert not verdict.answerable and text.startswith(NOT_ANSWERED)
    # Nor could the writer's agreement make it an answer (no sentence holds a number), so the writer is not run.
    assert asked == [] and verdict.reason == "unheld" and verdict.written == ""
    assert text == f"{NOT_ANSWERED} The closest passage: “{best}”"


def test_the_writer_runs_only_when_some_judged_sentence_could_agree_with_it(engine, monkeypatch):
    passages = ["The manual is long. It has 300 pages and a green cover."]
    question = "How many pages does the manual have?"
    # One sentence holds a number, though the judge ranks it second: the writer runs and agrees with it.
    asked = judged(engine, monkeypatch, "It has 300 pages.", "The manual is long.")
    text, verdict, _ = ask(engine, question=question, passages=passages)
    assert asked == [question] and verdict.reason == "agreement" and text == "It has 300 pages and a green cover."
    # A question of no particular kind: no sentence names its topic, so nothing written could be shown.
    asked = judged(engine, monkeypatch, "The manual is long.", "The manual is long.")
    text, verdict, _ = ask(engine, question="Where were the lighthouses built?", passages=passages)
    assert asked == [] and verdict.reason == "unheld" and text.startswith(NOT_ANSWERED)
    # With on_topic off, the writer runs (and its copy agrees with the sentence it copied).
    off = GroundingConfig(on_topic=False)
    text, verdict, _ = ask(engine, question="Where were the lighthouses built?", config=off, passages=passages)
    assert verdict.reason == "agreement" and text == "The manual is long."


def test_a_follow_up_is_judged_after_the_earlier_question_and_must_add_to_both(engine, monkeypatch):
    judged(engine, monkeypatch, "", BEST, lead=1.0)
    earlier = "Under which license is this manual distributed?"
    text, verdict, _ = ask(engine, question="What version of it?", earlier=earlier)
    assert judged_after and all(call == (earlier, "What version of it?") for call in judged_after)
    assert verdict.reason == "standout" and text == BEST  # "1.3" is what neither question says
    # A version the earlier question already gave is nothing new.
    judged(engine, monkeypatch, "", BEST, lead=1.0)
    text, verdict, _ = ask(engine, question="What version of it?", earlier="Is the License at Version 1.3?")
    assert not verdict.answerable


def test_a_follow_up_asking_a_number_or_name_also_weighs_the_sentence_answered_before(engine, monkeypatch):
    earlier = "Who kept the Gull Head light?"
    stated = "Ida Marlowe had kept the light for twenty-seven years."
    passages = ["The lamp burned oil. The tower was painted white."]
    judged(engine, monkeypatch, "", stated, lead=1.0)
    text, verdict, _ = ask(engine, "For how many years had she kept it?", None, passages, earlier, carried=[stated])
    assert verdict.reason == "standout" and text == stated
    assert stated in [s.text for s in verdict.ranked]
    # Not weighed for a question of no particular kind: any earlier sentence adds some word to it.
    judged(engine, monkeypatch, "", stated, lead=1.0)
    _, verdict, _ = ask(engine, "And what does the lamp burn?", None, passages, earlier, carried=[stated])
    assert stated not in [s.text for s in verdict.ranked]


def test_a_long_closest_sentence_is_quoted_by_its_first_words_in_a_not_found_answer(engine, monkeypatch):
    table = "Header: " + " ".join(f"4 CARD32 FIELD_{index}_OFFSET" for index in range(20)) + "."
    judged(engine, monkeypatch, "It is the GNU General Public License.", table)
    # The judge reads a long sentence's first 64 tokens: rank the table's rows best by their start.
    texts = lambda rows: [engine.tokenizer.decode(row) for row in rows]  # noqa: E731
    scores = lambda rows, question, context="": [0.0 if t.startswith("Header") else -0.1 for t in texts(rows)]  # noqa: E731
    monkeypatch.setattr(engine, "question_likelihoods", scores)
    text, verdict, _ = ask(engine, passages=[table, PASSAGES[0]])
    assert not verdict.answerable and verdict.sentence.text == table  # the whole sentence stays the quote shown
    quoted = text.removeprefix(f"{NOT_ANSWERED} The closest passage: “").removesuffix("”")
    assert quoted == " ".join(table.split()[:CLOSEST_WORDS]) + " …"


def test_a_heading_is_not_quoted_as_the_closest_passage(engine, monkeypatch):
    passages = ["Mount Aster\n\nThe highest station of the survey was the summit of Mount Aster. It was cold."]
    judged(engine, monkeypatch, "It is 2,000 metres high.", "Mount Aster")
    text, verdict, stats = ask(engine, "How high is Mount Aster?", passages=passages)
    assert verdict.ranked[0].text == "Mount Aster"  # the judge's best: a heading
    closest = "The highest station of the survey was the summit of Mount Aster."
    assert not verdict.answerable and verdict.sentence.text == closest
    assert text == f"{NOT_ANSWERED} The closest passage: “{closest}”"
    # With no sentence of 4 words, the best is quoted whatever its length.
    judged(engine, monkeypatch, "It is 2,000 metres high.", "Mount Aster")
    text, verdict, _ = ask(engine, "How high is Mount Aster?", passages=["Mount Aster\n\nIt was cold."])
    assert verdict.sentence.text == "Mount Aster" and text.endswith("“Mount Aster”")


def test_a_sentence_met_twice_is_judged_once(engine, monkeypatch):
    # Overlapping passages hold the best sentence twice; a copy must not be the "next best" it stands out from.
    judged(engine, monkeypatch, "Something else.", BEST, lead=1.0)
    text, verdict, _ = ask(engine, passages=[PASSAGES[1], PASSAGES[1], PASSAGES[0]])
    assert [s.text for s in verdict.ranked].count(BEST) == 1
    assert verdict.reason == "standout" and text == BEST


def test_the_sentence_style_answers_with_the_sentence_and_free_with_the_written_text(engine, monkeypatch):
    judged(engine, monkeypatch, "It is the GPL.", BEST)
    assert ask(engine, config=GroundingConfig(style="sentence"))[0] == BEST
    text, verdict, _ = ask(engine, config=GroundingConfig(style="free"))
    assert text == "It is the GPL." and verdict.answerable and verdict.sentence is None


def test_a_margin_marks_answers_whose_best_sentence_hardly_raises_the_question(engine, monkeypatch):
    judged(engine, monkeypatch, "The manual is under the GNU Free Documentation License.", BEST)
    # The best sentence scores 0.0 and no text -9.0: a margin of 9.
    assert ask(engine, config=GroundingConfig(answerable_margin=8.0))[1].answerable
    assert not ask(engine, config=GroundingConfig(answerable_margin=10.0))[1].answerable


def test_without_passages_the_written_answer_is_not_checked(engine, monkeypatch):
    judged(engine, monkeypatch, "It is the GPL.", BEST)
    text, verdict, _ = ask(engine, passages=[])
    assert text == "It is the GPL." and verdict.answerable


def test_grounding_settings_are_checked():
    with pytest.raises(ValueError, match="answer grounding"):
        GroundingConfig(style="guess")
    with pytest.raises(ValueError, match="sentence"):
        GroundingConfig(sentences=0)
    with pytest.raises(ValueError, match="agreement"):
        GroundingConfig(agreement=0.0)
    with pytest.raises(ValueError, match="standout"):
        GroundingConfig(standout=-0.1)


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
    judged(engine, monkeypatch, "", "Copies are allowed.")
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


def writer_reads(engine, monkeypatch, written: str) -> list[list[str]]:
    """judged(), and the texts the writer is handed at each ask, in order."""
    read: list[list[str]] = []
    judged(engine, monkeypatch, written, BEST)
    writer = engine.answer

    def answer(pot, question, decoding=None, stats=None, **kwargs):
        read.append([engine.tokenizer.decode(list(ids)) for ids in kwargs["evidence"]])
        return writer(pot, question, decoding, stats, **kwargs)

    monkeypatch.setattr(engine, "answer", answer)
    return read


def test_the_writer_reads_the_judges_best_sentences_best_last_when_set(engine, monkeypatch):
    read = writer_reads(engine, monkeypatch, "The manual is under the GNU Free Documentation License.")
    ask(engine, config=GroundingConfig(writer_sentences=2))
    assert len(read[0]) == 2 and read[0][-1] == BEST  # the likeliest sentence nearest the question
    ask(engine)
    assert read[1] == PASSAGES  # by default the writer reads the passages as read
    with pytest.raises(ValueError, match="at least 1 sentence"):
        GroundingConfig(writer_sentences=0)
    with pytest.raises(ValueError, match="rare name"):
        GroundingConfig(rare_name_mentions=-1)


def test_a_sentence_without_the_rare_name_asked_about_is_no_answer(engine, monkeypatch):
    passages = ["The steamer Grey Heron was commanded by Captain Josiah Pell. The sea was calm."]
    heron = "The steamer Grey Heron was commanded by Captain Josiah Pell."
    question = "Who was the captain of the Margarethe?"
    # It stands out and holds a name, but not the ship asked about.
    judged(engine, monkeypatch, "", heron, lead=1.0)
    text, verdict, _ = ask(engine, question, passages=passages)
    assert verdict.reason == "standout"  # without the rule
    judged(engine, monkeypatch, "", heron, lead=1.0)
    text, verdict, _ = ask(engine, question, passages=passages, names=["Margarethe"])
    assert not verdict.answerable and text.startswith(NOT_ANSWERED)
    # The written answer agrees with it on every word the question does not give: still no answer.
    judged(engine, monkeypatch, "The captain of the Margarethe was Captain Josiah Pell.", heron)
    _, verdict, _ = ask(engine, question, passages=passages, names=["Margarethe"])
    assert not verdict.answerable and verdict.reason == "unheld"  # no sentence names it: the writer is not run
    # A sentence whose passage names it may say "she": the passage is about the ship asked about.
    she = "She was commanded by Captain Wim Jansen."
    judged(engine, monkeypatch, "", she, lead=1.0)
    text, verdict, _ = ask(engine, question, passages=[f"The Margarethe sailed at dawn. {she}"], names=["Margarethe"])
    assert verdict.answerable and text == she
    # A sentence that names it answers.
    named = "The Margarethe was commanded by Captain Wim Jansen."
    judged(engine, monkeypatch, "", named, lead=1.0)
    text, verdict, _ = ask(engine, question, passages=[named + " The sea was calm."], names=["Margarethe"])
    assert verdict.answerable and text == named


def scored(engine, monkeypatch, written: str, scores: dict[str, float]) -> None:
    """The writer writes `written`; the judge gives each sentence in `scores` its score, any other -5."""

    def answer(pot, question, decoding=None, stats=None, **kwargs):
        if stats is not None:
            stats.ttft_seconds, stats.token_ids = 0.01, encode(engine.tokenizer, written)
        return iter([written])

    def likelihoods(rows, question, context=""):
        return [scores.get(engine.tokenizer.decode(row).strip(), -5.0) for row in rows]

    monkeypatch.setattr(engine, "answer", answer)
    monkeypatch.setattr(engine, "question_likelihoods", likelihoods)


def test_a_passage_ends_for_the_writer_at_its_last_whole_sentence():
    toc = "A copy is included in the section entitled “GNU Free Documentation License”."
    assert whole_sentences_end(f"Permission is granted. {toc}\ni\nTable of Contents\n1 Introduction . . . . .") == len(
        f"Permission is granted. {toc}"
    )
    # Kept whole: no stop at all, a tail of log lines, a tail as long as what it follows, a passage that ends well.
    for text in (
        "1 Introduction . . . . . 1\n2 Using . . . . . 3",
        "Reload done.\n2024-11-14T06:03:11Z INFO retry_backoff_ms 200 -> 850\n2024-11-14T06:03:12Z WARN slow",
        "Short one. And then a long heading line that goes on and on without any stop at all",
        f"Permission is granted. {toc}",
    ):
        assert whole_sentences_end(text) == len(text)


def test_the_writer_reads_the_passages_without_a_trailing_table_of_contents(engine, monkeypatch):
    read = writer_reads(engine, monkeypatch, "It is the GNU Free Documentation License.")
    passages = [PASSAGES[0], f"{PASSAGES[1]}\ni\nTable of Contents\n1 Introduction . . . . . . ."]
    ask(engine, passages=passages)
    assert read[0] == PASSAGES
    ask(engine, passages=passages, config=GroundingConfig(whole_sentences=False))
    assert read[1] == passages


def test_the_sentence_the_written_answer_copies_from_may_agree_wherever_the_judge_ranked_it(engine, monkeypatch):
    inn = "She took a room at an inn called The Copper Kettle, which stood beside the bridge."
    passages = [f"The road was long. The rain fell. Orlen lay below. The river was high. {inn}"]
    scores = {"The road was long.": -1.0, "The rain fell.": -1.5, "Orlen lay below.": -2.0, "The river was high.": -2.5}
    question = "What was the inn in Orlen called?"
    # The inn's sentence is ranked fifth, beyond the shortlist of three; the answer copies four of its words.
    scored(engine, monkeypatch, "The inn in Orlen was called The Copper Kettle.", scores)
    text, verdict, _ = ask(engine, question, passages=passages)
    assert verdict.reason == "agreement" and text == inn
    assert not ask(engine, question, passages=passages, config=GroundingConfig(copied_words=None))[1].answerable
    # Three words copied in a row ("The Copper Kettle") are not enough to say which sentence it came from.
    scored(engine, monkeypatch, "Copper Kettle was the inn's name.", scores)
    assert not ask(engine, question, passages=passages, config=GroundingConfig(copied_words=3))[1].answerable
    assert longest_copied_run("The inn in Orlen was called The Copper Kettle.", inn) == 4
    assert longest_copied_run("", inn) == 0
    with pytest.raises(ValueError, match="copied words"):
        GroundingConfig(copied_words=0)


def test_a_follow_up_asking_a_version_takes_the_earlier_answers_fact_when_no_best_sentence_holds_one(
    engine, monkeypatch
):
    earlier = "Under which license is this manual distributed?"
    stated = "Permission is granted under the terms of the GNU Free Documentation License, Version 1.3."
    passages = ["We have designed this License for manuals. It complements the GNU General Public License."]
    low = {"We have designed this License for manuals.": -1.0, "It complements the GNU General Public License.": -1.2}
    scored(engine, monkeypatch, "It is version 2.0.", {**low, stated: -4.0})
    text, verdict, _ = ask(engine, "What version of it?", None, passages, earlier, carried=[stated])
    assert verdict.reason == "earlier" and verdict.answerable and text == stated
    # A best sentence that holds a version leaves the follow-up to the usual rules.
    versioned = ["We have designed this License for manuals. Version 1.2 complements the GNU General Public License."]
    scored(engine, monkeypatch, "It is version 2.0.", {"Version 1.2 complements the GNU General Public License.": -1.0})
    _, verdict, _ = ask(engine, "What version of it?", None, versioned, earlier, carried=[stated])
    assert verdict.reason != "earlier"
    # A question of no particular kind is not answered by the earlier sentence, nor is a follow-up with none.
    scored(engine, monkeypatch, "It is version 2.0.", {**low, stated: -4.0})
    assert ask(engine, "And what does it cover?", None, passages, earlier, carried=[stated])[1].reason != "earlier"
    assert ask(engine, "What version of it?", None, passages, earlier)[1].reason == "unheld"


def test_a_question_of_no_particular_kind_is_answered_only_by_a_sentence_on_its_topic(engine, monkeypatch):
    passages = ["The cache header holds two version fields. Files are written to a temporary name, then moved."]
    header = "The cache header holds two version fields."
    # The writer copies the header sentence, which shares no word with what is asked.
    judged(engine, monkeypatch, header, header)
    text, verdict, _ = ask(engine, "How must it be saved to disk?", passages=passages)
    assert not verdict.answerable and verdict.reason == "unheld" and text.startswith(NOT_ANSWERED)
    # Off, the copy agrees with the sentence it copied.
    assert ask(engine, "How must it be saved to disk?", GroundingConfig(on_topic=False), passages)[0] == header
    # A sentence holding one of the question's words (an inflection folded) answers it.
    assert ask(engine, "Which header fields does the cache hold?", passages=passages)[0] == header
    # A question asking a number is judged by the kind of thing it asks, not its topic.
    judged(engine, monkeypatch, "It holds two version fields.", header)
    text, verdict, _ = ask(engine, "How many does it have?", passages=passages)
    assert verdict.answerable and text == header


def test_whether_a_sentence_is_on_a_questions_topic():
    from infinipot.core.answer_sentences import Sentence
    from infinipot.core.grounded_answer import on_topic

    sentence = Sentence("Cache files have to be written atomically.", 0, 0.0)
    assert on_topic(sentence, "How must it be written to disk?")
    assert not on_topic(sentence, "And which program does the reverse?")
    assert on_topic(sentence, "Why?")  # names nothing: no topic to check
    assert on_topic(sentence, "Who wrote the program?")  # a person is asked: the kind decides
