"""The Settings tab."""

from __future__ import annotations

from .browser import Part, Walk
from .documents import tab_words


def words(walk: Walk) -> None:
    """The Settings tab's labels: none of the method's terms (those belong in Advanced)."""
    tab_words(walk, "Settings", "settings-words")


PARTS = (Part("words", words),)
