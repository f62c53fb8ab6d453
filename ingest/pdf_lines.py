"""A PDF page's lines as the model should read them: words broken by end-of-line hyphens made whole again, and
lines wrapped inside a sentence joined by a space, each piece still on its own line number.

pypdf gives a page as the lines the typesetter broke it into ("Distinguished Encoding Rules (DER) manip-" /
"ulation."). Read that way the model sees "manip" and "ulation" as two unrelated pieces, and quotes show
"manip- ulation". The continuation of a hyphenated word moves to the end of the line where the word starts (the
whole word is one segment, tokenized as one word, located on that line). A line that ends inside a sentence (the
next starts in lower case, or the line ends on a word such as "for" or "the") ends without its newline, and the
next line's piece starts with a space: segments are tokenized one by one, and BPE tokenizers attach the space to
the word after it. Every other word keeps its line.

Only a line the typesetter filled is joined to the next one: a line much shorter than the page's text width ends
where its author ended it (a heading, a running header, a code or table line, a paragraph's last line).
"""

from __future__ import annotations

import re

# A word broken at the line's end: letters (lower case after the first), then the hyphen; not a dash "--", not
# "x-" after a digit, not the last part of a compound ("Dss-Sig-"), not a code-like "YYMMDDhhmm-".
_BROKEN = re.compile(r"(?<![\w\-])[^\W\d_][^\W\d_A-Z]+-$")
# A line that ends inside a sentence: a letter, a digit, or , ; : last.
_OPEN_END = re.compile(r"[\w,;:]$")
_CONTINUATION = re.compile(r"\S+")
# A line ending in one of these words goes on in the next line whatever that line starts with ("a library for" /
# "Abstract Syntax Notation One"): no heading or sentence ends on them.
_LEADING_WORD = re.compile(r"\b(a|an|the|of|for|to|in|on|by|with|and|or|from|is|are|under|as|at)$")
# A page number (a running footer or header; front matter has lower-case roman ones) is never part of the
# sentence before it.
_NUMBER = r"(?:\d+|(?=[ivxl])(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3}))"
_PAGE_NUMBER = re.compile(_NUMBER)
# A contents or index entry: a dot leader, then the page number ("asn1_copy_node . . . . 11").
_LEADER = re.compile(rf"\.(?: ?\.){{3,}} *{_NUMBER}$")
# An item of a definition list starts with its label ("definitions: return the pointer...", "der len: Length").
_LABEL = re.compile(r"(?:\w+ )?\w+: ")
# A line shorter than this share of the page's text width was not filled by the typesetter.
_FULL_SHARE = 0.6


def _text_width(lines: list[str]) -> int:
    """The page's text width in characters: the length that nine lines in ten of the page's text lines reach at
    most (a long URL, code line or table of contents leader does not raise it)."""
    lengths = sorted(len(line) for line in lines if line)
    return lengths[(len(lengths) - 1) * 9 // 10] if lengths else 0


def _continues(line: str) -> bool:
    """Whether a line starts like the rest of a sentence: a lower-case letter first."""
    return bool(line) and line[0].islower() and not _PAGE_NUMBER.fullmatch(line)


def _goes_on_after_word(line: str) -> bool:
    """Whether a line can carry on a sentence whose previous line ended on "the", "for"...: a word or a quote."""
    return bool(line) and (line[0].isalnum() or line[0] in "\"'“‘’(") and not _PAGE_NUMBER.fullmatch(line)


def joined_lines(text: str) -> list[tuple[str, int]]:
    """(piece, line number from 1) for each line of a page's text ("\\n"-separated), hyphenated words and
    mid-sentence wraps joined; a piece ends in "\\n" unless the next line continues it. A line whose only word was
    moved to the previous line gives no piece."""
    lines: list[str | None] = list(text.split("\n"))  # None: a line whose only word moved up to the line before
    if lines and lines[-1] == "":
        lines.pop()
    width = _text_width(lines)
    full = [len(line) >= _FULL_SHARE * width for line in lines]  # as the typesetter set them, before words move
    for index in range(len(lines) - 1):
        line, following = lines[index], lines[index + 1]
        if full[index] and line and following and _BROKEN.search(line) and _continues(following):
            word = _CONTINUATION.match(following)
            lines[index] = line[:-1] + word.group(0)
            lines[index + 1] = following[word.end() :].lstrip(" ") or None
    kept = [index for index, line in enumerate(lines) if line is not None]
    pieces: list[tuple[str, int]] = []
    lead = ""  # what the current line's piece starts with: a space when the previous line wraps into it
    for position, index in enumerate(kept):
        line = lines[index]
        following = lines[kept[position + 1]] if position + 1 < len(kept) else ""
        wraps = (
            full[index]
            and bool(line)
            and not _LEADER.search(line)
            and not _LABEL.match(following)
            and (
                (_OPEN_END.search(line) is not None and _continues(following))
                or (_LEADING_WORD.search(line) is not None and _goes_on_after_word(following))
            )
        )
        pieces.append(((lead + line if line else "") + ("" if wraps else "\n"), index + 1))
        lead = " " if wraps else ""
    return pieces
