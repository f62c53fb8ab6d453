"""What a question asks for (core.answer.question_kind), and whether a sentence adds one the question does not name."""

from __future__ import annotations

import pytest

from infinipot.core.answer.question_kind import holds_kind, question_kind


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many steps does the Gull Head lighthouse have?", "number"),
        ("Within how many days must a violation be cured?", "number"),
        ("How often does the light flash?", "number"),
        ("What is the numeric value of ASN1_MAX_NAME_SIZE?", "number"),
        ("What value was retry_backoff_ms changed to?", "number"),
        ("Which version of Libtasn1 does this manual describe?", "version"),
        ("Since which version of libtasn1 does asn1_perror exist?", "version"),
        ("When does the TLS certificate expire?", "date"),
        ("Who wrote the Shared MIME-info Database specification?", "person"),
        ("To whom was the map delivered?", "person"),
        ("Which license covers this manual?", "other"),
        ("What does asn1_create_element do?", "other"),
    ],
)
def test_the_kind_of_a_question_comes_from_its_wording(question, kind):
    assert question_kind(question) == kind


def test_a_number_must_be_one_the_question_does_not_give():
    question = "How many steps does the Gull Head lighthouse have?"
    assert not holds_kind("Above the village, on the headland called Gull Head, stood the lighthouse.", question)
    assert holds_kind("The lighthouse has 112 steps.", question)
    assert holds_kind("She climbed the hundred and twelve steps.", question)
    assert not holds_kind("How many steps? 3 steps.", "How many of the 3 steps?")  # 3 is the question's own


def test_versions_dates_and_people():
    assert holds_kind("This manual is for GNU Libtasn1 (version 4.19.0).", "Which version does this manual describe?")
    assert not holds_kind("This manual is for GNU Libtasn1.", "Which version does this manual describe?")
    assert holds_kind("The certificate expires in March.", "When does the certificate expire?")
    assert not holds_kind("The certificate is renewed by the team.", "When does the certificate expire?")
    who = "Who wrote the specification?"
    assert holds_kind("The specification was written by Thomas Leonard.", who)
    assert holds_kind("Write to tal197 at users.sf.net about the specification.", who)
    assert not holds_kind("The specification was written carefully.", who)
    # A capitalised first word or a month is no name.
    assert not holds_kind("Version 0.21 of the specification, last updated 2 October 2018.", who)


def test_a_section_number_is_no_version_and_a_number_is_no_date():
    since = "Since which version of libtasn1 does asn1_perror exist?"
    assert not holds_kind("4.4 Error handling functions asn1_perror prints the error.", since)
    assert holds_kind("Since: 1.6 asn1_perror prints the error.", since)
    assert not holds_kind("2.9. The mime.cache files hold the globs.", "How many globs do the files hold?")
    when = "When was version 0.20 of the specification released?"
    assert not holds_kind("55:text/x-diff:*.patch 50:text/x-diff:*.diff", when)
    assert holds_kind("Version 0.20 of the specification was released in 2014.", when)
    assert holds_kind("2024-11-14T13:37:47.557Z ERROR upstream card processor timeout", "When did it time out?")


def test_a_timestamp_is_no_number_or_version_and_a_version_is_written_as_one():
    version = "Which version of orders-platform was started?"
    config_line = (
        "2024-11-14T06:08:50.738Z INFO [config] shop-prod-03 req-db5b5fab config loaded from /etc/orders/platform.toml:"
        " max_connections=250 pool_timeout=30s region=eu-west-2"
    )
    assert not holds_kind(config_line, version)  # a timestamp and a setting's value, no version
    assert holds_kind("2024-11-14T06:03:57.217Z INFO [supervisor] starting orders-platform v3.14.2", version)
    assert holds_kind("Copying is allowed under the GNU General Public License version 3.", "Which version of it?")
    assert holds_kind("It has been in the library since 2.", "Since which release does it exist?")
    assert not holds_kind("The file lists 250 globs.", version)
    many = "How many SKUs did the catalog cache hit?"
    assert not holds_kind(
        "2024-11-14T07:20:53.636Z DEBUG [catalog-cache] shop-prod-03 req-c4ff64de hit SKU-13665", many
    )
    assert holds_kind("2024-11-14T07:20:53.636Z DEBUG [catalog-cache] 42 SKUs hit", many)
    assert not holds_kind("The job ran at 06:03 and then stopped.", "How often does the job run?")
    # Dates keep their timestamps.
    assert holds_kind("2024-11-14T13:37:47.557Z ERROR upstream card processor timeout", "When did it time out?")


def test_any_other_question_needs_a_content_word_of_the_sentence_own():
    question = "Which license covers this manual?"
    assert holds_kind("The GNU Free Documentation License covers this manual.", question)
    assert not holds_kind("This manual: which license covers it?", question)
