"""Where an answer comes from: its Sources line and quotes, what a cited place opens, the shares of each place in
an answer of All documents, and what a part of a summary's outline opens."""

from __future__ import annotations

import re

from selenium.webdriver.common.by import By

from .browser import ANSWER_SECONDS, ANSWERED, READ_SECONDS, Part, Walk, wait_for
from .documents import LICENSE_QUESTION, NOTE, NOTE_NAME, PDF, choose_all_documents

LIBRARY_QUESTION = "Which version of the Mozilla Public License is this?"  # the library's licence texts answer it
CODING_QUESTION = "What does asn1Coding do?"
LOG_ONLY_QUESTION = "Which card processor timed out?"  # words only the log holds
# Words the note's alone: one place cited, then several. A note this small is answered from its passages by
# words, whose index scores once showed as shares over 100%.
NOTE_QUESTIONS = ("Who takes questions about moorings?", "When do the boats leave, and who is the harbour master?")
PLACE = re.compile(r"(page|line|section|part)\s*\d+.*", re.IGNORECASE)  # a source button: 'page 2 (41%)', 'line 12'


def cited(walk: Walk) -> None:
    """A complete answer with its Sources line and quotes, then what its first source opens."""
    walk.chat_about(PDF)
    walk.ask(LICENSE_QUESTION)
    answer = walk.wait_answer(LICENSE_QUESTION)
    walk.log.text("answer", answer, limit=4000)
    walk.element_shot("#ip-chat", "sources-answer", "the complete answer as the chat box shows it")
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "sources-answer-whole", "the whole conversation: answer, Sources line, quotes")
    walk.open_from_chat(
        lambda text: bool(PLACE.fullmatch(text.strip())),
        "the first source",
        "sources-opened",
        "what clicking the answer's first source opens",
    )
    walk.log.text("opened at", walk.driver.find_element(By.XPATH, "//*[contains(text(), 'starts at')]").text)


def all_documents(walk: Walk) -> None:
    """A question to All documents, answered with the document of each source, and what its source opens."""
    choose_all_documents(walk)
    walk.ask(LIBRARY_QUESTION)
    answer = walk.wait_answer(LIBRARY_QUESTION)
    walk.log.text("answer", answer, limit=4000)
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "sources-all-documents", "the answer of All documents, its sources named")
    walk.open_from_chat(
        lambda text: ", " in text,
        "a source button naming its document",
        "sources-all-documents-opened",
        "what the source of an All documents answer opens",
    )


def shares(walk: Walk) -> None:
    """The shares of each place in All documents answers: the manual's, the log's, then a small note's."""
    ask_all_documents(walk, (CODING_QUESTION, LOG_ONLY_QUESTION))
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "sources-shares", "both All documents answers: their Sources lines and shares")
    with walk.step(f"{NOTE_NAME} added, a question only it answers"):
        note = walk.scratch / NOTE_NAME
        note.write_text(NOTE, encoding="utf-8")
        walk.upload(note)
        wait_for(lambda: "ready" in walk.library_row(NOTE_NAME), f"{NOTE_NAME} read", READ_SECONDS, every=1)
        walk.log.line(f"    row: {walk.library_row(NOTE_NAME)}")
        walk.open()
        ask_all_documents(walk, NOTE_QUESTIONS)
        with walk.expanded_chat():
            walk.element_shot("#ip-chat", "sources-shares-note", f"All documents answers from {NOTE_NAME}")


def ask_all_documents(walk: Walk, questions: tuple[str, ...]) -> None:
    choose_all_documents(walk)
    for question in questions:
        walk.ask(question)
        answer = walk.wait_answer(question)
        walk.log.text(f"answer to {question!r}", answer, limit=4000)
        log_shares(walk, answer)


def log_shares(walk: Walk, answer: str) -> None:
    """The answer's Sources line, its shares (the % of each place), their sum and whether they fall after the
    first."""
    line = next((line.strip() for line in answer.splitlines() if line.strip().startswith(ANSWERED)), "")
    walk.log.text("Sources line", line or "(no Sources line)")
    places = line.split("(%:")[0].split(":", 1)[-1].split(" · ")
    found = [int(share) for place in places for share in re.findall(r"\((\d+)%\)", place)]
    after_first = found[1:]
    falling = all(a >= b for a, b in zip(after_first, after_first[1:], strict=False))
    walk.log.line(
        f"    shares: {found}, sum {sum(found)}%, any over 100%: {any(s > 100 for s in found)}, "
        f"falling after the first: {falling}"
    )


def outline(walk: Walk) -> None:
    """A part of libtasn1.pdf's summary outline clicked: the document opened at its place."""
    walk.chat_about(PDF)
    walk.press("Summarize this file")  # the stored summary shows at once; a first one is written here
    walk.open_from_chat(
        lambda text: "Utilities" in text,
        "the outline's part 3 Utilities",
        "sources-outline-part-opened",
        "what a part of the outline opens: the document at its place",
        timeout=ANSWER_SECONDS,
    )


PARTS = (
    Part("cited", cited),
    Part("all-documents", all_documents),
    Part("shares", shares),
    Part("outline", outline),
)
