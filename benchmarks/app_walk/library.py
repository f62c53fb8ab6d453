"""The Library tab: the first screen on an empty home, the document table and list, uploads the library turns
down or already holds, a delete and its notice, and a whole folder added at once."""

from __future__ import annotations

import random
import re
import shutil
import time
from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from .browser import READ_SECONDS, Part, Walk, wait_for, wait_stable
from .documents import DOCS, NOTE, NOTE_NAME, PDF, tab_words

# Real documents every Debian machine has, ten of them: enough for the library's own progress line to matter.
LICENSE_FOLDER = Path("/usr/share/common-licenses")
LICENSE_FILES = (
    "Apache-2.0",
    "Artistic",
    "BSD",
    "CC0-1.0",
    "GPL-1",
    "GPL-2",
    "LGPL-2.1",
    "LGPL-3",
    "MPL-1.1",
    "MPL-2.0",
)


def first_screen(walk: Walk) -> None:
    """The first screen on an empty home: what a new user is told to do."""
    walk.scroll_top()
    walk.shot("library-first-screen", "the page as it loads on an empty home (no documents)")
    walk.log.text("first screen text", walk.body())
    walk.log_untranslated()


def words(walk: Walk) -> None:
    """The Library tab's labels: none of the method's terms."""
    tab_words(walk, "Library", "library-words")


def table(walk: Walk) -> None:
    """The library table: its header."""
    walk.choose(PDF)
    walk.open_tab("Library")
    walk.element_shot("#ip-library", "library-table", "the library table: its header ('Pages')")
    walk.log_text("table header", "#ip-library thead")


def duplicate(walk: Walk) -> None:
    """A copy of libtasn1.pdf under another name: what the library and its notice say."""
    copy = walk.scratch / "libtasn1-copy.pdf"
    shutil.copyfile(DOCS / PDF, copy)
    walk.upload(copy)
    wait_for(lambda: copy.name in walk.text("#ip-notice"), "the upload notice", 60)
    wait_stable(lambda: walk.text("#ip-library") + walk.text("#ip-progress"), bool, "the library", 5, 60)
    walk.shot("library-duplicate", f"the Library tab after uploading a copy of {PDF} as {copy.name}", True)
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")
    log_rows(walk)


def bad_file(walk: Walk) -> None:
    """5000 random bytes named bad.pdf: the notice."""
    bad = walk.scratch / "bad.pdf"
    bad.write_bytes(random.Random(33).randbytes(5000))
    walk.upload(bad)
    wait_for(lambda: bad.name in walk.text("#ip-notice"), "the notice about bad.pdf", 60)
    time.sleep(2)
    walk.scroll_top()
    walk.shot("library-bad-pdf", "the Library tab after uploading 5000 random bytes named bad.pdf")
    walk.log_text("notice", "#ip-notice")
    walk.log_errors()


def delete(walk: Walk) -> None:
    """A small document read, then deleted: what the Document selector chooses next."""
    note = walk.scratch / NOTE_NAME
    note.write_text(NOTE, encoding="utf-8")
    walk.upload(note)
    wait_for(lambda: "ready" in walk.library_row(note.name), f"{note.name} read", READ_SECONDS, every=1)
    walk.choose(note.name)
    walk.press("Delete document")
    wait_for(lambda: walk.find("#ip-confirm-delete").is_displayed(), "the confirming button", 15)
    walk.click("#ip-confirm-delete")
    time.sleep(3)
    walk.scroll_top()
    walk.shot("library-after-delete", f"the Library tab after deleting {note.name}: the Document selector", True)
    walk.log.line(f"    Document selector: {walk.find('#ip-document input').get_attribute('value')!r}")
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")


def delete_notice(walk: Walk) -> None:
    """Delete document pressed, then "No, keep it": the notice, and the document kept."""
    walk.choose(PDF)
    walk.open_tab("Library")
    walk.press("Delete document")
    wait_for(lambda: walk.find("#ip-confirm-delete").is_displayed(), "the confirming button", 15)
    time.sleep(1)
    scroll_to_notice(walk)
    walk.shot("library-delete-notice", f"the Library tab after Delete document with {PDF} chosen: the notice")
    walk.log_text("notice", "#ip-notice")
    walk.press("No, keep it")
    time.sleep(2)
    confirm = [b for b in walk.driver.find_elements(By.CSS_SELECTOR, "#ip-confirm-delete") if b.is_displayed()]
    walk.log.line(f"    after 'No, keep it': the confirming button shown {bool(confirm)}")
    walk.log_text("notice", "#ip-notice")
    walk.log.line(f"    row: {walk.library_row(PDF)}")


def document_list(walk: Walk) -> None:
    """The Document selector's list opened: how each document is named."""
    walk.scroll_top()
    walk.find("#ip-document input").click()
    options = lambda: [o for o in walk.driver.find_elements(By.CSS_SELECTOR, "[role='option']") if o.is_displayed()]  # noqa: E731
    wait_for(options, "the Document list's options", 15)
    time.sleep(1)
    walk.shot("library-document-list", "the Document selector's list opened: how each document is named")
    walk.log.line(f"    Document selector value: {walk.find('#ip-document input').get_attribute('value')!r}")
    walk.log.line(f"    options: {[o.text.strip() for o in options()]}")
    walk.find("#ip-document input").send_keys(Keys.ESCAPE)


def same_file(walk: Walk) -> None:
    """libtasn1.pdf uploaded again under its own name: the notice and the progress line."""
    folder = walk.scratch / "same"
    folder.mkdir(exist_ok=True)
    again = folder / PDF
    shutil.copyfile(DOCS / PDF, again)
    walk.upload(again)
    wait_for(lambda: PDF in walk.text("#ip-notice"), "the upload notice", 60)
    wait_stable(
        lambda: walk.text("#ip-progress"),
        lambda text: PDF in text and "ready" in text,
        "the progress line",
        settle=3,
        timeout=120,
    )
    scroll_to_notice(walk)
    walk.shot("library-same-file", f"the Library tab after uploading {PDF} again under its name: notice, progress")
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")
    walk.log.line(f"    Document: {walk.find('#ip-document input').get_attribute('value')!r}")
    log_rows(walk)


def folder(walk: Walk) -> None:
    """A folder of 10 files added at once ("Add a whole folder"): the library's progress line while they are read."""
    licenses = walk.scratch / "licenses"
    licenses.mkdir(exist_ok=True)
    for name in LICENSE_FILES:
        shutil.copyfile(LICENSE_FOLDER / name, licenses / f"{name}.txt")
    walk.open_tab("Library")
    # The folder button's file input is Gradio's, beside the button: the one input that takes folders.
    walk.find("input[type='file'][webkitdirectory]").send_keys(str(licenses))
    wait_for(lambda: "Library:" in walk.text("#ip-progress"), "the library's progress line", 120)
    walk.shot("library-folder-queued", "the Library tab just after a folder of 10 licence texts was added", True)
    walk.log_text("notice", "#ip-notice")
    walk.log_text("progress", "#ip-progress")
    wait_for(lambda: re.search(r"Library: [3-9] of 10", walk.text("#ip-progress")), "three documents done", 1800, 5)
    walk.shot("library-folder-reading", "the library's progress line with some of the 10 documents read", True)
    walk.log_text("progress", "#ip-progress")
    wait_for(lambda: "Library: 10 of 10" in walk.text("#ip-progress"), "all ten read", 3600, 5)
    walk.shot("library-folder-done", "the library once the 10 documents are read", True)
    walk.log_text("progress", "#ip-progress")


def scroll_to_notice(walk: Walk) -> None:
    """The notice with the buttons above it in view."""
    walk.scroll_to("#ip-notice")
    walk.driver.execute_script("window.scrollBy(0, -120)")
    time.sleep(0.5)


def log_rows(walk: Walk) -> None:
    for row in walk.library_rows():
        walk.log.line(f"    row: {row}")


# The delete and the uploads come before the list, so that it shows how documents of one name are told apart; the
# folder last, since its read is the longest.
PARTS = (
    Part("first-screen", first_screen, empty_home=True),
    Part("words", words),
    Part("table", table),
    Part("duplicate", duplicate),
    Part("bad-file", bad_file),
    Part("delete", delete),
    Part("delete-notice", delete_notice),
    Part("same-file", same_file),
    Part("document-list", document_list),
    Part("folder", folder),
)
