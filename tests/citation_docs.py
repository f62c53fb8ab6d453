"""Small PDFs with a needle on a known page, for the citation tests (built with the ingest fixtures' PDF writer)."""

from __future__ import annotations

import functools
import importlib.util
import random
import re
from pathlib import Path

_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "ingest" / "make_fixtures.py"


@functools.cache
def _fixture_builders():
    spec = importlib.util.spec_from_file_location("ingest_make_fixtures", _FIXTURES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_pdf(path: Path, pages: list[list[str]]) -> Path:
    """A PDF whose page i shows the lines pages[i]."""
    path.write_bytes(_fixture_builders().pdf_bytes(pages))
    return path


def wrap(words: list[str], per_line: int = 12) -> list[str]:
    return [" ".join(words[i : i + per_line]) for i in range(0, len(words), per_line)]


def filler_pages(text: str, pages: int, words_per_page: int) -> list[list[str]]:
    """`pages` pages of consecutive words of `text` (repeated when short), as ASCII lines (Helvetica, cp1252)."""
    words = re.sub(r"[^\x20-\x7e]", " ", text).split()
    needed = pages * words_per_page
    words = (words * (needed // max(1, len(words)) + 1))[:needed]
    return [wrap(words[i * words_per_page : (i + 1) * words_per_page]) for i in range(pages)]


def plant_needle(pages: list[list[str]], page: int, sentence: str, seed: int = 0) -> list[list[str]]:
    """The pages with `sentence` as its own line between two lines of 1-based `page`."""
    planted = [list(lines) for lines in pages]
    lines = planted[page - 1]
    lines.insert(random.Random(seed).randint(1, max(1, len(lines) - 1)), sentence)
    return planted
