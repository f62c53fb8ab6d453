"""The documents and questions several screens use, and the steps they share on them."""

from __future__ import annotations

import re
import time
from pathlib import Path

from .browser import Walk, wait_for

DOCS = Path(__file__).resolve().parents[2] / "bench-results" / "devset-docs"
PDF = "libtasn1.pdf"
OTHER_PDF = "shared-mime-info-spec.pdf"
STORY = "story.txt"
LOG = "orders-platform.log"
LICENSE_QUESTION = "Under which license is this manual distributed?"
# Small enough for its memory to hold all of it, and with words no other document has ("moorings", "harbour").
NOTE_NAME = "harbour-note.txt"
NOTE = (
    "Harbour notes, spring.\n\n"
    "The north pier was painted in March. The crew used a grey paint that dries in two hours, and the work took "
    "four days because of the rain.\n\n"
    "The ferry timetable changes on the first of May: boats leave at 7:40, 12:10 and 17:30, and the last boat on "
    "Sundays leaves at 16:00.\n\n"
    "The harbour office is open from nine to five. Questions about moorings go to the harbour master, Ines Varga.\n"
)
# The method's own terms: a user who has not read the paper does not know them, so no label should use them.
RESEARCH_WORDS = re.compile(r"\b(?:pots?|CaP(?:-Q)?|NuC|KV heads?|catalyst|entries)\b|\|[MC]\|", re.IGNORECASE)


def ensure_document(walk: Walk, name: str) -> None:
    """Upload `name` from the dev set and wait for its read, unless the home has it already."""
    if name in walk.text("#ip-library"):
        return
    walk.log.line(f"    {name} is not in the home: uploading it")
    walk.upload(DOCS / name)
    wait_for(lambda: "ready" in walk.library_row(name), f"{name} read", 1800, every=2)


def choose_all_documents(walk: Walk) -> None:
    """The Document selector on "All documents", then the Chat tab at its top."""
    walk.pick_option("#ip-document input", "All documents")
    wait_for(lambda: "All documents" in walk.find("#ip-document input").get_attribute("value"), "All documents", 15)
    time.sleep(2)
    walk.open_tab("Chat")
    walk.scroll_top()


def tab_words(walk: Walk, tab: str, shot: str) -> None:
    """The tab with libtasn1.pdf chosen, as a whole page, and each of its lines that uses the method's terms."""
    walk.choose(PDF)
    walk.open_tab(tab)
    if tab == "What the model kept":
        wait_for(lambda: walk.text("#ip-tokens").strip(), "the kept tokens", 60)
    time.sleep(1)
    walk.shot(shot, f"the {tab} tab, {PDF} chosen: the method's terms in its labels", True)
    lines = [line.strip() for line in walk.body().splitlines() if RESEARCH_WORDS.search(line)]
    counts: dict[str, int] = {}
    for line in lines:
        for word in RESEARCH_WORDS.findall(line):
            counts[word] = counts.get(word, 0) + 1
    walk.log.line(f"    {tab}: research words {counts}")
    for line in lines:
        walk.log.line(f"      > {line[:300]}")
