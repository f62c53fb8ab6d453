"""The learned judge's training questions (benchmarks.judge): made from units as documents write them, kept only
when the unit holds the answer and the question does not give it away, with hard negatives that do not answer,
and never from the documents the development set and the hidden checks keep aside."""

from __future__ import annotations

import random

from benchmarks.judge.corpus import kept_out
from benchmarks.judge.questions import (
    Made,
    copies_answer,
    model_question_ok,
    passages_of,
    pattern_questions,
    units_of,
    with_negatives,
)

MANUAL = """\
OPTIONS
       -j, --jobs=N
              Run N jobs at once. The default is 4.

       --follow
              Keep reading the file as it grows.

       -q, --quiet
              Print nothing but errors.

EXIT STATUS
       The exit status codes are:
       0      Success.
       2      The configuration file could not be read.
"""


def made_from(text: str) -> list[Made]:
    passages = [units_of(p) for p in passages_of(text)]
    return list(pattern_questions(passages, is_log=False))


def test_a_term_its_default_and_a_users_wording_make_questions_whose_unit_holds_the_answer():
    made = {m.question: m for m in made_from(MANUAL)}
    assert made["What is the default for --jobs?"].answer == "4"
    assert "The default is 4" in made["What is the default for --jobs?"].unit
    assert made["What does --follow do?"].answer == "Keep reading the file as it grows."
    users = made["Which option prints nothing but errors?"]
    assert users.answer == "--quiet" and users.how == "option-in-users-words"
    assert made["What does exit status 2 mean?"].answer == "The configuration file could not be read."
    for m in made.values():
        assert " ".join(m.answer.lower().split()) in " ".join(m.unit.lower().split())
        assert not copies_answer(m.question, m.answer, m.unit)


def test_a_question_that_gives_its_answer_away_is_not_kept():
    unit = "--color: Use colours in the output. The default is never."
    assert copies_answer("What is the default colour, never?", "never", unit)
    assert copies_answer("Why use colours in the output the default is never?", "", unit)
    assert not copies_answer("What is the default for --color?", "never", unit)


def test_the_models_questions_must_be_one_question_about_the_unit_in_other_words():
    unit = "The timeout value is in seconds and defaults to 30 when not given."
    assert model_question_ok("How long is the timeout?", unit)
    assert not model_question_ok("What is the answer to this question?", unit)  # about the task
    assert not model_question_ok("What is the colour of the sky?", unit)  # about something else
    assert not model_question_ok("The timeout is in seconds", unit)  # no question
    assert not model_question_ok("Is the timeout value in seconds and defaults to 30 when not given?", unit)


def test_hard_negatives_come_from_the_same_passage_and_near_misses_and_never_hold_the_answer():
    passages = [
        ["--jobs: Run N jobs at once. The default is 4.", "--quiet: Print nothing.", "--follow: Keep reading."],
        ["--retries: How often to retry jobs. The default is 4.", "--verbose: Print more."],
        ["Jobs are run in order of arrival.", "Nothing else here."],
    ]
    made = Made("What is the default for --jobs?", passages[0][0], "4", "default", 0)
    with_negatives(made, passages, random.Random(0))
    assert "--quiet: Print nothing." in made.negatives and "--follow: Keep reading." in made.negatives
    assert "Jobs are run in order of arrival." in made.negatives  # shares "jobs"
    assert all("The default is 4" not in negative for negative in made.negatives)  # might answer: dropped
    assert made.unit not in made.negatives


def test_the_documents_kept_aside_are_never_read():
    for name in ("/usr/share/man/man5/ssh_config.5.gz", "find.1.gz", "wget.1.gz", "rsync.1.gz", "curl.1.gz",
                 "tar.1.gz", "less.1.gz", "journalctl.1.gz", "systemd.service.5.gz",
                 "/usr/share/doc/python3.11/html/howto/logging.html",
                 "/usr/share/doc/python3.11/html/library/sqlite3.html",
                 "/usr/share/doc/valgrind/valgrind_manual.pdf.gz", "/usr/share/doc/nettle-dev/nettle.pdf.gz",
                 "/usr/share/doc/bzip2-doc/manual.pdf.gz", "/usr/share/doc/fontconfig/fontconfig-user.pdf.gz",
                 "/usr/share/doc/libtasn1-doc/libtasn1.pdf"):  # fmt: skip
        assert kept_out(name), name
    assert not kept_out("/usr/share/man/man1/ls.1.gz")
    assert not kept_out("/usr/share/doc/python3.11/html/library/json.html")
