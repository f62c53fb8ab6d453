"""The writer's short answer as a pointer (core.answer.written_answer): the passage it reads ends with a whole sentence,
the sentence it copies from, and whether it agrees with a sentence."""

from __future__ import annotations

from infinipot.core.answer.answer_sentences import Sentence
from infinipot.core.answer.written_answer import agrees, copied_index, longest_copied_run, whole_sentences_end


def test_a_passage_ends_for_the_writer_at_its_last_whole_sentence():
    toc = "A copy is included in the section entitled “GNU Free Documentation License”."
    text = f"Permission is granted. {toc}\ni\nTable of Contents\n1 Introduction . . . . ."
    assert whole_sentences_end(text) == len(f"Permission is granted. {toc}")
    # Kept whole: no stop at all, a tail of log lines, a tail as long as what it follows, a passage that ends well.
    for text in (
        "1 Introduction . . . . . 1\n2 Using . . . . . 3",
        "Reload done.\n2024-11-14T06:03:11Z INFO retry_backoff_ms 200 -> 850\n2024-11-14T06:03:12Z WARN slow",
        "Short one. And then a long heading line that goes on and on without any stop at all",
        f"Permission is granted. {toc}",
    ):
        assert whole_sentences_end(text) == len(text)


def test_the_sentence_a_written_answer_copies_from_is_the_longest_run_of_four_words_or_more():
    inn = "She took a room at an inn called The Copper Kettle, which stood beside the bridge."
    ranked = [Sentence("The road was long.", 0, -1.0), Sentence(inn, 0, -3.0)]
    assert longest_copied_run("The inn in Orlen was called The Copper Kettle.", inn) == 4
    assert longest_copied_run("", inn) == 0
    assert copied_index("The inn in Orlen was called The Copper Kettle.", ranked) == 1
    assert copied_index("Copper Kettle was the inn's name.", ranked) is None  # two words in a row: no source
    assert copied_index("", ranked) is None


def test_a_written_answer_agrees_when_the_sentence_holds_most_of_what_it_adds_and_every_number():
    sentence = "Permission is granted under the GNU Free Documentation License, Version 1.3."
    question = "Which license covers this manual?"
    assert agrees("The manual is under the GNU Free Documentation License.", sentence, question)
    assert not agrees("The GNU Free Documentation License of Lisbon and Porto.", sentence, question)  # 3 of 5
    assert not agrees("It is the GNU Free Documentation License, version 2.", sentence, question)  # a number it lacks
    assert not agrees("This license covers the manual.", sentence, question)  # adds nothing to the question
    assert not agrees("", sentence, question)
