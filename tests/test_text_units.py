"""The units a document is written in (core.answer.text_units): terms and their descriptions, headings, list items,
words hyphenated across lines; the sentences the judge ranks carry their term, and a span read starts at its term."""

from __future__ import annotations

from tiny_models import tiny_tokenizer

from infinipot.core.answer.answer_sentences import split_sentences
from infinipot.core.answer.evidence import EvidenceConfig, Span, with_terms
from infinipot.core.answer.text_units import entries, joined_broken_words, passage_start, term_line_start

# As `man tar | col -b` writes it: terms on their own line, descriptions indented with a tab, a same-line term.
MANUAL = (
    "OPTIONS\n"
    "   Operation modifiers\n"
    "       --check-device\n"
    "\t      Check  device  numbers  when  creating incremental archives (de\u2010\n"
    "\t      fault).\n"
    "\n"
    "       --hole-detection=METHOD\n"
    "\t      Use METHOD to detect holes in sparse files.  This option implies\n"
    "\t      --sparse.\t Valid values for METHOD are seek and raw.  Default is\n"
    "\t      seek with fallback to raw when not applicable.\n"
    "\n"
    "       -o     When creating, same as --old-archive.  When extracting, same  as\n"
    "\t      --no-same-owner.\n"
)


def test_a_manual_pages_terms_lead_their_descriptions_and_hyphenated_words_are_joined():
    assert [(e.lead, " ".join(e.body.split())[:24]) for e in entries(MANUAL)] == [
        ("--check-device", "Check device numbers whe"),
        ("--hole-detection=METHOD", "Use METHOD to detect hol"),
        ("-o", "When creating, same as -"),
    ]
    assert split_sentences(MANUAL) == [
        "--check-device: Check device numbers when creating incremental archives (default).",
        "--hole-detection=METHOD: Use METHOD to detect holes in sparse files. This option implies --sparse. "
        "Valid values for METHOD are seek and raw. Default is seek with fallback to raw when not applicable.",
        "-o: When creating, same as --old-archive. When extracting, same as --no-same-owner.",
    ]


def test_a_long_description_is_cut_into_sentences_that_each_carry_the_term():
    long = " ".join(f"Sentence number {i} says one more thing about the option." for i in range(8))
    text = "       --level=NUMBER\n\t      " + long + "\n"
    units = split_sentences(text)
    assert len(units) == 8 and all(unit.startswith("--level=NUMBER: Sentence number ") for unit in units)


def test_a_heading_opens_its_first_sentence_only_and_prose_stays_as_it_was():
    text = "DESCRIPTION\n       GNU tar is an archiving program.  It saves many files.\n"
    assert split_sentences(text) == ["DESCRIPTION: GNU tar is an archiving program.", "It saves many files."]
    prose = "She left Port Caldwell on the third of March\naboard the steamer Grey Heron. It was cold."
    assert split_sentences(prose) == [
        "She left Port Caldwell on the third of March aboard the steamer Grey Heron.",
        "It was cold.",
    ]


def test_a_wrapped_list_item_is_no_term_and_its_sentence_stays_whole():
    # bash's NEWS: a hanging indent continues the sentence on a line that starts in lower case.
    text = (
        "c. Rewrote the command substitution parsing code to call the parser recursively\n"
        "   and rebuild the command string from the parsed command. This allows better\n"
        "   syntax checking.\n"
    )
    assert [e.lead for e in entries(text)] == [""]
    assert split_sentences(text)[0].startswith("c. Rewrote the command substitution parsing code to call the parser")
    code = "def f(x):\n    return x\n"
    assert [e.lead for e in entries(code)] == [""]


def test_list_items_that_name_a_parameter_lead_its_description():
    text = (
        "Parameters:\n"
        "- timeout (float) – How many seconds the connection should wait. Default five seconds.\n"
        "- factory (Connection) – A custom subclass of Connection.\n"
        "- a plain item with a dash - in prose\n"
    )
    units = split_sentences(text)
    assert "timeout (float): How many seconds the connection should wait. Default five seconds." in units
    assert "factory (Connection): A custom subclass of Connection." in units
    assert "- a plain item with a dash - in prose" in units


def test_only_typeset_hyphens_at_line_ends_join_words():
    assert joined_broken_words("incre\u2010\n\t      mental and non-\nzero") == "incremental and non-\nzero"


def test_the_term_line_above_a_passage_that_starts_inside_its_description_is_found():
    before = "       --hole-detection=METHOD\n\t      Use METHOD to detect holes in sparse files.\n"
    assert term_line_start(before, "\t      Default is seek.\n") == 0
    lead = "       --other\n\t      Other.\n\n"
    assert term_line_start(lead + before, "\t      Default is seek.\n") == len(lead)
    assert term_line_start("DESCRIPTION\n       GNU tar is an\n", "       archiving program.") is None  # a heading
    assert term_line_start("a sentence that is\n", "cut here") is None  # no indentation
    assert term_line_start("--term\n\t  Text", " more text") is None  # the passage begins mid-line


def test_a_span_read_inside_a_description_starts_at_its_term_within_reach():
    tokenizer = tiny_tokenizer()
    text = "       --hole-detection=METHOD\n\t      Use METHOD to detect holes.\n\t      Default is seek.\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    head = tokenizer("       --hole-detection=METHOD\n\t      Use METHOD to detect holes.\n")["input_ids"]
    start = len(head)
    assert tokenizer.decode(ids[:start]) + tokenizer.decode(ids[start:]) == text

    def fetch(a, b):
        return ids[a:b]

    span = Span(start, len(ids), tuple(ids[start:]), 1.0, start)
    (grown,) = with_terms([span], fetch, tokenizer, EvidenceConfig())
    assert (grown.start, grown.end) == (0, len(ids)) and tokenizer.decode(list(grown.ids)) == text
    # Out of reach (term_tokens), or into another span read: unchanged.
    (kept,) = with_terms([span], fetch, tokenizer, EvidenceConfig(term_tokens=3))
    assert kept == span
    other = Span(0, 4, tuple(ids[:4]), 0.5, 0)
    assert with_terms([other, span], fetch, tokenizer, EvidenceConfig())[1] == span


def test_a_long_wrapped_sentence_is_cut_at_its_clauses_and_a_table_at_its_rows():
    clause = "accompanied by a written offer, valid for at least three years and valid for as long as you offer"
    licence = (
        "b) Convey the object code in, or embodied in, a physical product (including a physical\n"
        "distribution medium), accompanied by a written offer, valid for at least three years and\n"
        "valid for as long as you offer spare parts or customer support for that product model, to\n"
        "give anyone who possesses the object code either (1) a copy of the Corresponding Source for\n"
        "all the software in the product that is covered by this License, on a durable physical\n"
        "medium customarily used for software interchange, for a price no more than your reasonable\n"
        "cost of physically performing this conveying of source.\n"
    )
    units = split_sentences(licence)
    assert len(units) > 1 and all(len(unit.split()) <= 60 for unit in units)
    assert any(clause in unit for unit in units)  # no unit is a line's fragment
    assert " ".join(units) == " ".join(licence.split())
    rows = "\n".join(f"row{i} value{i} unit{i} and a few more words in this row" for i in range(8))
    assert split_sentences(rows) == rows.split("\n")


def test_a_passage_that_begins_inside_a_hyphenated_word_starts_at_its_line():
    before = "       -v, --verbose\n\t      Verbosely list files processed.  The max\u2010\n\t      "
    assert passage_start(before, "imum verbosity level is 3.\n") == 0  # the line, and then its term
    plain = "Some text.\nThe max\u2010\n"
    assert passage_start(plain, "imum is 3.") == len("Some text.\n")
    assert passage_start("Some text.\n", "A new line.") is None


def test_a_bullet_is_no_term_and_syslog_lines_and_table_rows_are_units_of_their_own():
    bullets = (
        "       •   Type=oneshot is the implied default if neither Type= nor ExecStart= are\n           specified.\n"
    )
    assert [e.lead for e in entries(bullets)] == [""]
    assert split_sentences(bullets) == [
        "• Type=oneshot is the implied default if neither Type= nor ExecStart= are specified."
    ]
    syslog = (
        "Mar  9 10:19:04 relay-02 postfix/smtp[5102]: status=deferred (451 4.7.1 Greylisted)\n"
        "Mar  9 10:21:23 relay-02 postfix/qmgr[907]: queue size 184 messages, 41 deferred\n"
    )
    assert len(split_sentences(syslog)) == 2
    table = "Level | Numeric value\nCRITICAL | 50\nERROR | 40\nLevels can also be set by the developer."
    assert split_sentences(table) == [
        "Level | Numeric value",
        "CRITICAL | 50",
        "ERROR | 40",
        "Levels can also be set by the developer.",
    ]


def test_each_item_of_a_numbered_list_carries_its_number_and_the_lists_lead_in():
    from infinipot.core.answer.answer_sentences import split_sentences

    manual = (
        "EXIT CODES\n       There are a bunch of different error codes. At the time of this\n"
        "       writing, the exit codes are:\n\n"
        "       0      Success. The operation completed successfully according\n              to the instructions.\n\n"
        "       28     Operation timeout. The specified time-out period was\n              reached.\n\n"
        "       -p, --port PORT\n              Specifies the port number to connect on.\n"
    )
    units = split_sentences(manual)
    assert "the exit codes are: 28: Operation timeout. The specified time-out period was reached." in units
    assert "-p, --port PORT: Specifies the port number to connect on." in units  # after the list: no lead-in
    plain = split_sentences("The status codes are:\n1. Success\n2. Failure of the input\n\nThen it ends.")
    assert plain == [
        "The status codes are:", "The status codes are: 1. Success", "The status codes are: 2. Failure of the input",
        "Then it ends.",
    ]  # fmt: skip


def test_a_long_descriptions_first_unit_ends_with_the_default_a_later_sentence_states():
    from infinipot.core.answer.answer_sentences import split_sentences

    manual = (
        "       Port   Specifies the port number to connect on the remote host.  This\n"
        "              option is mostly used with servers that listen on other ports than\n"
        "              the usual one, and it may be given on the command line as well as\n"
        "              in the configuration file, where the first obtained value will be\n"
        "              used for the whole session and every later connection to that host.\n"
        "              The default is 22.\n"
    )
    units = split_sentences(manual)
    assert units[0] == "Port: Specifies the port number to connect on the remote host. The default is 22."
    assert units[-1] == "Port: The default is 22." and len(units) == 3
