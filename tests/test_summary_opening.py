"""A summary's opening and its parts' sentences: the document's own words, never its title page, running heads,
notices or side remarks (core/summary_opening.py, core.summary.central_sentences)."""

from infinipot.core.summary import central_sentences, is_point
from infinipot.core.summary_opening import (
    is_furniture,
    is_whole,
    leans_on_context,
    opening_sentences,
    prose_paragraphs,
)

# The start of a PDF manual as pypdf gives it: a title page, a notice, a table of contents, the introduction.
MANUAL_START = """Libtasn1
Abstract Syntax Notation One (ASN.1) library for the GNU system for version 4.19.0, 18 August 2022
Fabio Fiorina
Nikos Mavrogiannopoulos (help-libtasn1@gnu.org)
This manual is for GNU Libtasn1 (version 4.19.0, 18 August 2022), which is a library for Abstract Syntax
Notation One (ASN.1) and Distinguished Encoding Rules (DER) manipulation.
Copyright c 2001-2022 Free Software Foundation, Inc.
Permission is granted to copy, distribute and/or modify this document under the terms of the GNU Free
Documentation License, Version 1.3 or any later version.
i
Table of Contents
1 Introduction . . . . . . . . . . . . . . . . . 1
2 ASN.1 structure handling . . . . . . . . . . . 2
1
1 Introduction
This document describes the Libtasn1 library that provides Abstract Syntax Notation One
(ASN.1) parsing and structures management.
"""

SPEC_START = """Shared MIME-info Database
Thomas Leonard
1.1. Version
This is version 0.21 of the Shared MIME-info Database specification, last updated 2 October 2018.
1.2. What is this spec?
Many programs and desktops use the MIME system[MIME] to represent the types of files.
This specification attempts to unify the MIME database systems currently in use by GNOME[GNOME],
KDE[KDE] and ROX[ROX], and provide room for future extensibility.
"""

LICENCE_START = """GNU GENERAL PUBLIC LICENSE
Version 3, 29 June 2007

Copyright (C) 2007 Free Software Foundation, Inc.
Everyone is permitted to copy and distribute verbatim copies of this license document, but changing it is not
allowed.

Preamble

The GNU General Public License is a free, copyleft license for software and other kinds of works.

The licenses for most software and other practical works are designed to take away your freedom to share and
change the works.
"""


def test_the_opening_is_the_sentence_that_says_what_the_document_is_never_its_title_page_or_notices():
    opening = opening_sentences(MANUAL_START, is_point)
    assert opening[0].startswith("This manual is for GNU Libtasn1 (version 4.19.0, 18 August 2022), which is a")
    assert not any("Fiorina" in s or "Copyright" in s or "Permission" in s for s in opening)
    assert len(opening) <= 3


def test_a_version_line_is_followed_by_the_sentence_that_says_what_the_document_is_for():
    assert opening_sentences(SPEC_START, is_point) == [
        "This is version 0.21 of the Shared MIME-info Database specification, last updated 2 October 2018.",
        "This specification attempts to unify the MIME database systems currently in use by GNOME, KDE and ROX, and "
        "provide room for future extensibility.",
    ]


def test_a_licence_opens_with_its_definition_and_the_preamble_after_it_not_its_copying_notice():
    assert opening_sentences(LICENCE_START, is_point) == [
        "The GNU General Public License is a free, copyleft license for software and other kinds of works.",
        "The licenses for most software and other practical works are designed to take away your freedom to share "
        "and change the works.",
    ]


def test_a_text_that_never_names_itself_opens_with_its_first_statements():
    story = "The Grey Heron\n\nElena Varga was thirty-one years old when the Office sent her north.\nShe left the port "
    story += "on the third of March aboard the steamer Grey Heron.\n"
    assert opening_sentences(story, is_point) == [
        "Elena Varga was thirty-one years old when the Office sent her north.",
        "She left the port on the third of March aboard the steamer Grey Heron.",
    ]


def test_furniture_lines_break_paragraphs_and_wrapped_lines_join():
    furniture = ["Chapter 4: Function reference 10", "27", "xii", "Fabio Fiorina", "2.1 ASN.1 syntax", "1 Intro . . 1"]
    for line in furniture:
        assert is_furniture(line), line
    assert not is_furniture("This document describes the Libtasn1 library that provides Abstract Syntax Notation One")
    assert not is_furniture("and decoding functions.")
    text = "A long first line of prose that wraps onto the next line\nand ends here.\nChapter 4: Functions 10\nNext."
    assert [p.text for p in prose_paragraphs(text)] == [
        "A long first line of prose that wraps onto the next line and ends here.",
        "Next.",
    ]


def test_code_cut_sentences_and_side_remarks_are_not_a_parts_sentence():
    assert not is_whole('Using "pkix.asn"\\: result=asn1 write value(cert, "x", 1);')
    assert not is_whole("ERROR:root:And non-ASCII stuff, too, like Oresund and Malmo.")
    assert not is_whole("An event is described by a message which can contain variable data (i.")
    assert is_whole("Pass this flag value to the detect_types parameter of connect() to look up a converter.")
    assert leans_on_context("Secondarily, this License preserves for the author a way to get credit for their work.")
    assert leans_on_context("For example, the comments begin with two dashes and end at the line's end.")
    part = (
        "The purpose of this License is to make a manual free in the sense of freedom for every reader.\n"
        "Secondarily, this License preserves for the author and publisher a way to get credit for their work.\n"
    )
    other = "Chapter two tells of the parser and its many rules for naming the elements of a structure.\n"
    assert central_sentences([part, other], set())[0].startswith("The purpose of this License is to make a manual")


def test_a_parts_title_words_pick_the_sentence_about_it():
    parts = [
        "Walking is slow and the road was long today. The naming of elements follows dotted paths like Group.id "
        "in every definition.\n",
        "The weather was cold and the road was long and the walking was slow all day.\n",
    ]
    chosen = central_sentences(parts, set(), ["2.2 Naming", "3 Weather"])
    assert chosen[0].startswith("The naming of elements follows dotted paths")
