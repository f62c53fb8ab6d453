"""PDF lines joined as the model should read them (ingest.pdf_lines), locations kept."""

from __future__ import annotations

import re

from infinipot.ingest.pdf_lines import joined_lines


def text_of(pieces):
    return "".join(piece for piece, _ in pieces)


def test_a_hyphenated_word_is_made_whole_on_the_line_where_it_starts():
    pieces = joined_lines("Encoding Rules (DER) manip-\nulation. It has a header\nfile.\n")
    assert pieces[0] == ("Encoding Rules (DER) manipulation.\n", 1)
    assert pieces[1] == ("It has a header", 2)  # wraps into the next line
    assert pieces[2] == (" file.\n", 3)


def test_a_line_whose_only_word_moved_up_leaves_no_blank_line():
    assert joined_lines("the library manip-\nulation\nNext.\n") == [("the library manipulation\n", 1), ("Next.\n", 3)]


def test_real_hyphens_sentence_ends_headings_and_blank_lines_are_kept():
    text = "Numbers are big-\nEndian here.\nVersion x-\n2 follows.\nA sentence.\nlower start\n\nHeading\nBody text\n"
    assert text_of(joined_lines(text)) == (
        "Numbers are big-\nEndian here.\nVersion x-\n2 follows.\nA sentence.\nlower start\n\nHeading\nBody text\n"
    )


def test_mid_sentence_wraps_become_spaces_with_the_space_on_the_next_line():
    pieces = joined_lines("Permission is granted to copy,\ndistribute and modify\nthis document.\n")
    assert pieces == [("Permission is granted to copy,", 1), (" distribute and modify", 2), (" this document.\n", 3)]
    assert text_of(pieces) == "Permission is granted to copy, distribute and modify this document.\n"


def test_a_pdf_reads_joined_with_every_piece_on_its_page_and_line(tmp_path, builders):
    from infinipot.ingest import open_document

    path = tmp_path / "joined.pdf"
    lines = ["Distinguished Encoding Rules manip-", "ulation is done here.", "The next sentence is", "wrapped once."]
    path.write_bytes(builders.pdf_bytes([["A first page."], lines]))
    segments = [s for s in open_document(path).segments() if s.location.page == 2]
    assert "".join(s.text for s in segments) == (
        "Distinguished Encoding Rules manipulation is done here.\nThe next sentence is wrapped once.\n"
    )
    located = {s.text: (s.location.page, s.location.line) for s in segments}
    assert located["Distinguished Encoding Rules manipulation"] == (2, 1)
    assert located[" is done here.\n"] == (2, 2)
    assert located["The next sentence is"] == (2, 3) and located[" wrapped once.\n"] == (2, 4)


def test_a_line_ending_on_a_word_no_sentence_ends_on_goes_on_into_a_capitalised_line():
    assert text_of(joined_lines("which is a library for\nAbstract Syntax Notation One.\n")) == (
        "which is a library for Abstract Syntax Notation One.\n"
    )


PROSE = "A line of body text that the typesetter filled up to the right margin"
PAGE = f"{PROSE}.\n" * 4  # most of a page is body text: it sets the page's text width


def test_code_headings_and_short_lines_are_not_joined():
    text = f"{PAGE}3.1 Invoking asn1Parser\nasn1Parser reads a file\nx INTEGER,\ny CHOICE\n"
    assert text_of(joined_lines(text)) == text


def test_mixed_case_fragments_and_compounds_keep_their_hyphen():
    text = f"{PROSE} or \"YYMMDDhhmm-\nhh'mm'\" here and the Dss-Sig-\nvalue\n"
    assert text_of(joined_lines(text)) == text


def test_page_numbers_contents_leaders_and_list_labels_are_not_joined_to_the_line_before():
    assert text_of(joined_lines(f"{PROSE} and\n2\n")) == f"{PROSE} and\n2\n"
    leaders = "asn1_copy_node . . . . . . . . . . . . . . . . . . . . . . . . . . . 11\nasn1_create_element . . . 10\n"
    assert text_of(joined_lines(leaders)) == leaders
    labels = f"{PROSE} and the ASN.1 declarations\ndefinitions: return the pointer\n"
    assert text_of(joined_lines(labels)) == labels


def test_a_line_after_a_moved_up_word_still_wraps_into_the_next():
    pieces = joined_lines(f"{PROSE} of manip-\nulation\nof the tree.\n")
    assert pieces == [(f"{PROSE} of manipulation", 1), (" of the tree.\n", 3)]


def test_every_token_keeps_the_page_and_line_of_its_word(tmp_path, builders, tokenizer):
    from infinipot.ingest import open_document

    path = tmp_path / "joined.pdf"
    lines = [
        "Distinguished Encoding Rules (DER) manip-",
        "ulation is done here, and the",
        "clocks were striking.",
        "Last.",
    ]
    path.write_bytes(builders.pdf_bytes([["A first page."], lines]))
    doc = open_document(path)
    stream = doc.token_stream(tokenizer, chunk_tokens=16)
    tokens = [token for chunk in stream for token in chunk]
    text = "".join(segment.text for segment in doc.segments())
    assert "(DER) manipulation is done here, and the clocks were striking.\nLast.\n" in text
    # Tokenized segment by segment, the joined text gives the tokens it gives read whole ("manipulation" one word).
    encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    assert tokens == encoded["input_ids"]
    # Each word's first token is located on the page and line where the word starts in the PDF.
    expected = {"A": (1, 1), "first": (1, 1), "Distinguished": (2, 1), "(DER)": (2, 1), "manipulation": (2, 1)}
    expected |= {"is": (2, 2), "done": (2, 2), "here,": (2, 2), "the": (2, 2), "clocks": (2, 3), "striking.": (2, 3)}
    expected |= {"Last.": (2, 4)}
    words = {}
    for match in re.finditer(r"\S+", text):
        index = next(i for i, (start, end) in enumerate(encoded["offset_mapping"]) if start <= match.start() < end)
        location = stream.location_map.location(index)
        words.setdefault(match.group(0), (location.page, location.line))
    assert {word: words[word] for word in expected} == expected
