"""A PDF page's lines as the model should read them: words broken by end-of-line hyphens made whole again, and
lines wrapped inside a sentence joined by a space, each piece still on its own line number.

pypdf gives a page as the lines the typesetter broke it into ("Distinguished Encoding Rules (DER) manip-" /
"ulation."). Read that way the model sees "manip" and "ulation" as two unrelated pieces, and quotes show
"manip- ulation". The continuation of a hyphenated word moves to the end of the line where the word starts (the
whole word is one segment, tokenized as one word, located on that line). A line that ends inside a sentence (the
next starts in lower case, or the line ends on a word such as "for" or "the") ends without its newline, and the
next line's piece starts with a space: segments are tokenized one by one, and BPE tokenizers attach the space to
the word after it. Every other word keeps its line.
"""

from __future__ import annotations

import re

# A word broken at the line's end: letters, then the hyphen (not a dash "--", not "x-" after a digit).
_BROKEN = re.compile(r"(?<![\-\d])[^\W\d_]{2,}-$")
# A line that ends inside a sentence: a letter, a digit, or , ; : last.
_OPEN_END = re.compile(r"[\w,;:]$")
_CONTINUATION = re.compile(r"\S+")
# A line ending in one of these words goes on in the next line whatever that line starts with ("a library for" /
# "Abstract Syntax Notation One"): no heading or sentence ends on them.
_LEADING_WORD = re.compile(r"\b(a|an|the|of|for|to|in|on|by|with|and|or|from|is|are|under|as|at)$")


def _continues(line: str) -> bool:
    """Whether a line starts like the rest of a sentence: a lower-case letter first."""
    return bool(line) and line[0].islower()


def joined_lines(text: str) -> list[tuple[str, int]]:
    """(piece, line number from 1) for each line of a page's text ("\\n"-separated), hyphenated words and
    mid-sentence wraps joined; a piece ends in "\\n" unless the next line continues it. A line whose only word was
    moved to the previous line gives no piece."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    pieces: list[tuple[str, int]] = []
    consumed: set[int] = set()  # lines whose only word moved up to the line before
    lead = ""  # what the current line's piece starts with: a space when the previous line wraps into it
    for index, line in enumerate(lines):
        if index in consumed:
            continue
        following = lines[index + 1] if index + 1 < len(lines) else ""
        if _BROKEN.search(line) and _continues(following):
            word = _CONTINUATION.match(following)
            line = line[:-1] + word.group(0)
            following = following[word.end() :].lstrip(" ")
            lines[index + 1] = following
            if not following:
                consumed.add(index + 1)
        wraps = bool(following) and (
            (_OPEN_END.search(line) is not None and _continues(following)) or _LEADING_WORD.search(line) is not None
        )
        text_of_line = lead + line if line else ""
        if text_of_line or not wraps:
            pieces.append((text_of_line + ("" if wraps else "\n"), index + 1))
        lead = " " if wraps else ""
    return [(piece, number) for piece, number in pieces if piece]
