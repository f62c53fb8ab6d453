"""PDF lines joined as the model should read them (ingest.pdf_lines), locations kept."""

from __future__ import annotations

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
