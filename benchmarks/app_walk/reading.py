"""A document being read: the progress line and the library table while it is read, cancelled and resumed, and
the Chat tab's buttons until it is ready."""

from __future__ import annotations

import contextlib
import time

from selenium.common.exceptions import WebDriverException

from .browser import READ_SECONDS, Part, Walk, wait_for
from .documents import DOCS, STORY

# New content (a same-content copy is not read again), about 7,500 tokens: a read of a minute or two on two cores,
# long enough to cancel in the middle. The kept view plots its memory, which only a read by the app records.
STORY_PART = "story-walk.txt"
NEW_READ = "GPL-3.txt"  # not in the walk's home, so the app reads it from the start
READ_MOMENTS = (1, 3, 10, 15, 30, 50)  # seconds after the upload, for the progress line


def cancel_resume(walk: Walk) -> None:
    """The first two fifths of story.txt read, cancelled and resumed: the progress line and its library row."""
    text = (DOCS / STORY).read_text(encoding="utf-8")
    part = text[: len(text) * 2 // 5]
    story = walk.scratch / STORY_PART
    story.write_text(part[: part.rfind("\n\n")] + "\n\n(The first chapters, for the app walk.)\n", encoding="utf-8")
    walk.upload(story)
    wait_for(lambda: "reading" in walk.text("#ip-progress"), f"{story.name} reading", 120)
    reading_shot(walk, story.name, "reading-started", "while it is read")
    time.sleep(5)
    reading_shot(walk, story.name, "reading-5s-later", "5 s later, still read")
    walk.press("Cancel reading")
    time.sleep(3)
    reading_shot(walk, story.name, "reading-cancelled", "3 s after Cancel reading")
    walk.log_text("notice", "#ip-notice")
    if "cancelled" not in walk.text("#ip-progress"):  # the read stops after its current chunk
        wait_for(lambda: "cancelled" in walk.text("#ip-progress"), f"{story.name} cancelled", 120)
        reading_shot(walk, story.name, "reading-cancelled-later", "once the cancel took effect")
    walk.press("Resume")
    try:
        wait_for(lambda: "ready" in walk.text("#ip-progress"), f"{story.name} ready", READ_SECONDS, every=1)
        outcome = "once it is read"
    except TimeoutError:
        outcome = f"still not read {READ_SECONDS} s after Resume"
        walk.log.line(f"    {story.name} {outcome}")
    reading_shot(walk, story.name, "reading-resumed", f"after Resume, {outcome}")


def reading_shot(walk: Walk, name: str, shot: str, when: str) -> None:
    """The progress line, the buttons and the library table (its row of `name` and the progress in the log)."""
    walk.scroll_to("#ip-progress")
    walk.shot(shot, f"the progress line and the library table with {name}, {when}")
    walk.log.line(f"    row: {walk.library_row(name)}")
    walk.log_text("progress", "#ip-progress")


class ProgressTimeline:
    """Each change of the progress line's text from the upload on, with the seconds since it (read with
    textContent, so also while the Library tab is hidden)."""

    def __init__(self, walk: Walk, start: float) -> None:
        self.walk, self.start, self.seen = walk, start, ""
        self.changes: list[str] = []

    def look(self) -> str:
        with contextlib.suppress(WebDriverException):
            text = self.walk.driver.execute_script(
                "const p = document.querySelector('#ip-progress'); if (!p) return '';"
                "const copy = p.cloneNode(true);"  # without Gradio's status tracker ("processing | 0.1s")
                "copy.querySelectorAll('[data-testid=status-tracker]').forEach(t => t.remove());"
                "return copy.textContent;"
            )
            text = " ".join((text or "").split())
            if text != self.seen:
                self.seen = text
                self.changes.append(f"{time.monotonic() - self.start:5.1f} s: {text}")
        return self.seen

    def wait_until(self, seconds: float) -> None:
        while (left := self.start + seconds - time.monotonic()) > 0:
            self.look()
            time.sleep(min(0.5, left))
        self.look()


def progress(walk: Walk) -> None:
    """A new read's progress line in its first 50 s, and the Chat tab's buttons while it is read.

    GPL-3.txt uploaded: the progress line at READ_MOMENTS (each of its changes in the log), and the Chat tab's
    re-read and across buttons after the second moment, and after the last if it is still read."""
    walk.upload(DOCS / NEW_READ)
    start = time.monotonic()
    timeline = ProgressTimeline(walk, start)
    try:
        for seconds in READ_MOMENTS:
            timeline.wait_until(seconds)
            with walk.step(f"the progress line {seconds} s after the upload"):
                walk.element_shot("#ip-progress", f"reading-progress-{seconds:02d}s", f"{seconds} s after the upload")
                walk.log.line(f"    at {time.monotonic() - start:.1f} s")
                walk.log_text("progress", "#ip-progress")
            if seconds == READ_MOMENTS[1]:
                with walk.step(f"the Chat tab's buttons while {NEW_READ} is read"):
                    chat_buttons(walk, "reading-chat-buttons", start, timeline)
                walk.open_tab("Library")
        with walk.step("the Chat tab's buttons, later"):
            if "reading" in timeline.look():
                chat_buttons(walk, "reading-chat-buttons-later", start, timeline)
            else:
                walk.log.line(f"    {NEW_READ} is no longer read: no later look at the buttons")
    finally:
        timeline.look()
        walk.log.line("    the progress line's changes since the upload:")
        for change in timeline.changes:
            walk.log.line(f"      {change}")


def chat_buttons(walk: Walk, shot: str, start: float, timeline: ProgressTimeline) -> None:
    walk.log.line(f"    Document: {walk.find('#ip-document input').get_attribute('value')!r}")
    walk.log.line(f"    progress: {timeline.look()}")
    walk.open_tab("Chat")
    walk.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", walk.find("#ip-reread"))
    time.sleep(0.5)
    walk.shot(shot, f"the Chat tab {time.monotonic() - start:.0f} s after {NEW_READ} was uploaded, while it is read")
    for css in ("#ip-reread", "#ip-ask-across", "#ip-ask", "#ip-summarize"):
        button = walk.find(css)
        walk.log.line(f"    {css} {button.text.strip()!r}: enabled {button.is_enabled()}")
    walk.log.line(f"    progress then ({time.monotonic() - start:.1f} s): {timeline.look()}")


# The cancelled read first: a read still going on from `progress` would queue it behind.
PARTS = (
    Part("cancel-resume", cancel_resume),
    Part("progress", progress),
)
