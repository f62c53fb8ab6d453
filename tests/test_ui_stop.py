"""Stop, pressed at any moment of an answer or of a summary, in a real browser: the page never shows an error, the
stopped text is shown at once as a reload shows it, and the next question is taken (issue 33, item 1).

Five moments each, four times over: at once (the event may not have started), before the first words (the
question is in the chat, its answer is not), in the middle of the text, after the last words while the sources
(or the summary's note) are still coming, and after the end (nothing left to stop). The service is paced
(helpers.make_workspace) so that every moment lasts long enough for a loaded machine to hit it."""

from __future__ import annotations

import re
import time

import pytest
from browser_page import By, error_badges, normalized, open_page, open_tab, replace_value, visible_text, wait_for
from helpers import make_workspace, running_app, tiny_settings, wait_until, wait_until_stable
from tiny_models import save_model_folder, write_notes

pytestmark = pytest.mark.slow  # a browser and a server

ROUNDS = 2
ANSWER_MOMENTS = ("at once", "before the first words", "mid-answer", "during sources", "after the end")
SUMMARY_MOMENTS = ("at once", "during its parts", "mid-summary", "during its note", "after the end")


def chat_text(browser) -> str:
    return normalized(visible_text(browser, "#ip-chat"))


def bubbles(browser) -> list[str]:
    """The chat's messages as the page shows them, oldest first."""
    rows = "return Array.from(document.querySelectorAll('#ip-chat .message-row')).map(row => row.innerText)"
    return [normalized(text) for text in browser.execute_script(rows)]  # one call: a long chat polls fast


def press(browser, elem_id: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f"#{elem_id}").click()


def wait_for_moment(browser, service, moment: str, asked: str) -> None:
    """Return when the answer (or summary) just asked for is at `moment`."""
    if moment == "at once":
        return
    if moment == "before the first words":
        wait_for(
            lambda: "finding the answer" in bubbles(browser)[-1].lower(), "the question in the chat", 60, every=0.05
        )
    elif moment == "during its parts":
        wait_for(lambda: "Summarizing" in bubbles(browser)[-1], "a stage of the summary in its bubble", 60, every=0.05)
    elif moment in ("mid-answer", "mid-summary"):
        wait_for(
            lambda: len(chat_text(browser).rpartition(asked)[2].split()) >= 3 and not service.pieces_done.is_set(),
            "the first words",
            60,
            every=0.05,
        )
    elif moment in ("during sources", "during its note"):
        wait_until(service.pieces_done.is_set, 60, 0.02, what="the last words")
    else:  # after the end: the complete message is on the page; Stop has nothing to stop
        wait_until(service.pieces_done.is_set, 60, 0.1, what="the last words")
        wait_until_stable(lambda: chat_text(browser), settle=2.5, timeout=60, ignore=(Exception,))


def settled_chat(browser) -> list[str]:
    """The chat once Stop's effects are over: unchanged for longer than the pace between pieces."""
    return wait_until_stable(
        lambda: bubbles(browser), settle=1.5, timeout=90, what="the chat to settle", ignore=(Exception,)
    )


def document_chosen(browser) -> None:
    wait_for(
        lambda: "notes.txt" in browser.find_element(By.CSS_SELECTOR, "#ip-document input").get_attribute("value"),
        "the document chosen",
        60,
    )


def reloaded_chat(browser, url: str, at_least: int) -> list[str]:
    """The chat's bubbles after a reload of the page, once at least `at_least` are shown."""
    browser.get(url)
    document_chosen(browser)
    open_tab(browser, "Chat")
    return wait_for(lambda: (b := bubbles(browser)) and len(b) >= at_least and b, "the conversation again", 60)


def test_stop_at_any_moment_leaves_the_page_working(browser, tmp_path, infinipot_home):
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    workspace = make_workspace(infinipot_home)
    (added,) = workspace.add_files([str(write_notes(tmp_path / "notes.txt", lines=12))], tiny_settings(model_dir))
    wait_until(lambda: workspace.ready(added["doc_id"]), timeout=120, what="the read", ignore=(ValueError,))
    service = workspace.service
    service.answer_pace, service.tail_pace = 0.4, 1.5
    with running_app(workspace) as url:
        open_page(browser, url)
        document_chosen(browser)
        open_tab(browser, "Settings")
        replace_value(browser, "#ip-answer-length input[type='number']", "8")  # 8 pieces, ~3 s at this pace
        wait_for(lambda: "at most 8 tokens" in visible_text(browser, "#ip-answers-notice"), "the answer length", 60)
        open_tab(browser, "Chat")
        for round_ in range(ROUNDS):
            for moment in ANSWER_MOMENTS:
                question = f"Round {round_}, {moment}: what does the fox do?"
                browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys(question)
                service.pieces_done.clear()
                press(browser, "ip-ask")
                wait_for_moment(browser, service, moment, question)
                press(browser, "ip-stop")
                shown = settled_chat(browser)
                assert not error_badges(browser), (moment, error_badges(browser))
                # The question was taken (the next one is typed into an empty box) and is in the chat.
                assert browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").get_attribute("value") == ""
                assert any(question in bubble for bubble in shown), (moment, shown)
            for moment in SUMMARY_MOMENTS:
                service.pieces_done.clear()
                press(browser, "ip-new-summary")
                wait_for_moment(browser, service, moment, "Summarize this file")
                press(browser, "ip-stop")
                settled_chat(browser)
                assert not error_badges(browser), (moment, error_badges(browser))
        # What the page shows is what a reload shows: every stopped answer was stored as shown, marked.
        before = settled_chat(browser)
        after = reloaded_chat(browser, url, len(before))
        assert after == before
        assert sum("(stopped)" in bubble for bubble in before) >= 3 * ROUNDS


# Stop at each stage of a checked answer, of a summary and of a follow-up, then the next question this long after.
STAGE_MOMENTS = (
    "before the first evidence",
    "during scoring",
    "during writing",
    "during sources",
    "during a summary",
    "during a follow-up",
)
NEXT_AFTER = (0.5, 2.0, 5.0)
WAITING = ("…", "...")  # a bubble that still says what it waits for ends so (before its closing asterisk)


def answer_to(shown: list[str], asked: str, occurrence: int = 0) -> str | None:
    """The bubble after the `occurrence`-th bubble that holds `asked`; None when it is not (yet) there."""
    found = [i for i, bubble in enumerate(shown) if asked in bubble]
    if len(found) <= occurrence or found[occurrence] + 1 >= len(shown):
        return None
    return shown[found[occurrence] + 1]


def is_waiting(bubble: str | None) -> bool:
    return bubble is None or bubble.rstrip("*").rstrip().endswith(WAITING)


def passage_shown(bubble: str | None) -> str:
    """The passage a waiting bubble shows as looked at ("Looking at line 12: “...”"), without the stage after it;
    "" when it shows none."""
    text = bubble or ""
    if not text.startswith("Looking at "):
        return ""
    return re.split(r"\s+(?=(?:Checking|Weighing|Writing|Finding|Loading)\b)", text)[0].strip()


def ask(browser, question: str) -> None:
    browser.find_element(By.CSS_SELECTOR, "#ip-question textarea").send_keys(question)
    press(browser, "ip-ask")


def wait_for_stage(browser, asked: str, occurrence: int, words: tuple[str, ...]) -> None:
    def at_stage():
        bubble = answer_to(bubbles(browser), asked, occurrence) or ""
        return any(word in bubble for word in words)

    wait_for(at_stage, f"{words} in the answer to {asked!r}", 60, every=0.05)


def test_every_question_asked_after_a_stop_is_kept_and_answered(browser, tmp_path, infinipot_home):
    """Issue 55: Stop at six moments (before the first evidence, while the passages are scored, while the hidden
    writer writes, during the sources, during a summary, during a follow-up), each followed by a question 0.5, 2 and
    5 s later: every question is in the chat once and answered, also after a reload; each stopped answer stays as it
    was when it stopped (marked stopped, never completed later). Issue 66: one stopped before its words keeps the
    passage that was on screen as looked at, and gets no sources after."""
    model_dir = save_model_folder(tmp_path / "tiny-llama")
    workspace = make_workspace(infinipot_home)
    notes = write_notes(tmp_path / "notes.txt", lines=120)  # longer than the pot: answers search for passages
    (added,) = workspace.add_files([str(notes)], tiny_settings(model_dir, pot_size=512, keep_size=128))
    wait_until(lambda: workspace.ready(added["doc_id"]), timeout=120, what="the read", ignore=(ValueError,))
    service = workspace.service
    service.stage_pace, service.answer_pace, service.tail_pace, service.always_write = 0.6, 0.2, 1.0, True
    stopped: dict[tuple[str, int], str] = {}  # (question, occurrence) -> its answer's bubble once it stopped
    answered: list[str] = []  # the questions asked after a Stop
    summaries = 0
    with running_app(workspace) as url:
        open_page(browser, url)
        document_chosen(browser)
        open_tab(browser, "Chat")
        ask(browser, "What does the fox jump over?")  # the conversation the follow-ups lean on
        wait_for(lambda: not is_waiting(answer_to(bubbles(browser), "What does the fox jump over?")), "an answer", 60)
        settled_chat(browser)
        for moment in STAGE_MOMENTS:
            for delay in NEXT_AFTER:
                service.pieces_done.clear()
                occurrence = 0
                if moment == "during a summary":
                    asked, occurrence = "Summarize this file", summaries
                    summaries += 1
                    press(browser, "ip-new-summary")
                    wait_for_stage(browser, asked, occurrence, ("Summarizing",))
                else:
                    asked = f"{moment} then {delay} s: " + ("and the dog?" if "follow-up" in moment else "what jumps?")
                    ask(browser, asked)
                    if moment == "before the first evidence":
                        wait_for_stage(browser, asked, 0, ("Finding the answer", "Loading the model"))
                    elif moment in ("during scoring", "during a follow-up"):
                        wait_for_stage(browser, asked, 0, ("Checking", "Weighing"))
                    elif moment == "during writing":
                        wait_for_stage(browser, asked, 0, ("Writing a short answer",))
                    else:
                        wait_until(service.pieces_done.is_set, 60, 0.02, what="the last words")
                on_screen = [answer_to(bubbles(browser), asked, occurrence)]
                press(browser, "ip-stop")
                on_screen.append(answer_to(bubbles(browser), asked, occurrence))  # a stage may have come meanwhile
                time.sleep(delay)
                following = f"Next after {moment}, {delay} s: who is lazy?"
                ask(browser, following)
                answered.append(following)
                wait_for(
                    lambda q=following: not is_waiting(answer_to(bubbles(browser), q)), f"the answer to {following}", 90
                )
                shown = settled_chat(browser)
                assert not error_badges(browser), (moment, delay, error_badges(browser))
                bubble = answer_to(shown, asked, occurrence)
                assert bubble is not None, (moment, delay, shown)  # the stopped question is kept
                if moment != "during sources":  # the answer was complete when Stop came
                    assert "(stopped)" in bubble, (moment, delay, bubble)
                if moment not in ("during sources", "during a summary"):  # stopped before any words
                    # Exactly what was on screen stays: the passage looked at (its stage line goes), no sources.
                    kept = bubble.replace("(stopped)", "").strip()
                    seen = [(b or "").replace("(stopped)", "").strip() for b in on_screen]  # Stop may show already
                    words = [b for b in seen if b and not is_waiting(b) and not b.startswith("Looking at ")]
                    if words:  # its words had begun: they stay, as far as they came before Stop took effect
                        assert kept[:40] == words[-1][:40], (moment, delay, kept, on_screen)
                    else:
                        assert kept in {passage_shown(b) for b in seen}, (moment, delay, kept, on_screen)
                    assert "Sources" not in bubble and "Closest passages" not in bubble, (moment, bubble)
                stopped[(asked, occurrence)] = bubble
        before = settled_chat(browser)
        after = reloaded_chat(browser, url, len(before))
    assert after == before
    for following in answered:  # each in the chat once, answered (not stopped, not waiting, not refused)
        assert sum(following in bubble for bubble in before) == 1, following
        reply = answer_to(before, following)
        assert reply and not is_waiting(reply) and "(stopped)" not in reply and "Not answered" not in reply, reply
    for (asked, occurrence), bubble in stopped.items():  # unchanged since it stopped: never completed later
        assert answer_to(before, asked, occurrence) == bubble, (asked, bubble)
