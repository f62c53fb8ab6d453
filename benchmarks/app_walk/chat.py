"""The Chat tab: asking, the waits a user sits through, Stop, follow-up questions, summaries, an answer that
found nothing, and the answer across documents."""

from __future__ import annotations

import re
import time

from selenium.webdriver.common.by import By

from .browser import ANSWER_SECONDS, ANSWERED, Part, Walk, wait_for, wait_stable
from .documents import LICENSE_QUESTION, LOG, OTHER_PDF, PDF, STORY, ensure_document, tab_words

STOP_QUESTIONS = ("What is ASN.1?", "Which function decodes a DER structure?", "What does asn1_create_element do?")
WAIT_QUESTION = "How do I parse a DER file?"
STAGE_QUESTION = "What does asn1Coding do?"
QUEUED_QUESTION = "Which license covers this manual?"
ACROSS_QUESTION = "What does each of these documents describe?"
FOLLOW_UP = "What version of it?"
HEADER_QUESTION = "What is the name of the library's header file?"
LOG_QUESTIONS = ("Which card processor timed out?", "After how many milliseconds?")
# The story says 1,206 metres in a sentence that does not name the mountain: the first is not found, and the
# follow-up must still be answered from the story.
STORY_QUESTIONS = ("How high is Mount Aster?", "Whom did Elena meet at the foot of it?")
FOOTBALL_QUESTION = "Who won the 1998 football world cup?"
DOT_LEADERS = re.compile(r"(?:\.\s?){5,}")  # an index's or contents' dot leaders: "asn1_read_value ........ 23"


def no_document(walk: Walk) -> None:
    """The Chat tab on an empty home, with no document to ask about."""
    walk.open_tab("Chat")
    walk.shot("chat-no-document", "the Chat tab with no document")
    walk.log.text("Chat tab text", walk.body())
    walk.log_untranslated()


def words(walk: Walk) -> None:
    """The Chat tab's labels: none of the method's terms."""
    tab_words(walk, "Chat", "chat-words")


def toolbar(walk: Walk) -> None:
    """The chat's toolbar over its first bubble, with an answer in the chat."""
    walk.chat_about(PDF, new=False)
    if not any(line in walk.chat() for line in ANSWERED):
        walk.ask(LICENSE_QUESTION)
        walk.wait_answer(LICENSE_QUESTION)
    walk.driver.execute_script("for (const el of document.querySelectorAll('#ip-chat, #ip-chat *')) el.scrollTop = 0;")
    time.sleep(0.5)
    walk.element_shot("#ip-chat", "chat-toolbar", "the chat with an answer: its icons over the first bubble")
    walk.log.line(f"    toolbar vs first bubble: {toolbar_overlap(walk)}")


def toolbar_overlap(walk: Walk) -> str:
    """Where the chat's icon buttons are against its first message bubble, in pixels."""
    return walk.driver.execute_script(
        """
        const chat = document.querySelector('#ip-chat');
        const bar = chat.querySelector('.top-panel, .icon-button-wrapper');
        const bubble = chat.querySelector('.message-row .message, [data-testid="user"], [data-testid="bot"]');
        if (!bar || !bubble) return `toolbar ${!!bar}, first bubble ${!!bubble}`;
        const a = bar.getBoundingClientRect(), b = bubble.getBoundingClientRect();
        const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        const px = Math.round;
        const box = r => `x ${px(r.left)}-${px(r.right)}, y ${px(r.top)}-${px(r.bottom)}`;
        return `${overlap ? 'OVERLAP' : 'no overlap'}: toolbar ${box(a)}; first bubble ${box(b)}`;
        """
    )


def across(walk: Walk) -> None:
    """Ask across documents, with two manuals: where the answer shows."""
    walk.chat_about(PDF, new=False)
    for name in (PDF, OTHER_PDF):
        walk.pick_option("#ip-across-docs input", name)
        time.sleep(0.5)
    walk.find("#ip-question textarea").send_keys(ACROSS_QUESTION)
    walk.click("#ip-ask-across")
    walk.log.text("answer across documents", across_answer(walk))
    walk.shot("chat-ask-across", f"the Chat tab after 'Ask across documents' with {PDF} and {OTHER_PDF}", True)


def across_answer(walk: Walk) -> str:
    """The complete answer across documents, in its own box (#ip-across-answer) or, where the app writes it
    there, in the chat."""
    if walk.driver.find_elements(By.CSS_SELECTOR, "#ip-across-answer"):
        box, read = "#ip-across-answer", lambda: walk.text("#ip-across-answer")
    else:
        box, read = "#ip-chat", lambda: walk.answer_to(ACROSS_QUESTION)
    done = lambda text: bool(text) and not walk.busy(box)  # noqa: E731
    return wait_stable(read, done, "the answer across documents", settle=2, timeout=ANSWER_SECONDS)


def waits(walk: Walk) -> None:
    """What a user sees while a New summary is written (3 s, 20 s) and 1 s after asking."""
    with walk.step("a New summary, 3 s and 20 s in"):
        walk.chat_about(PDF)
        start = walk.click("#ip-new-summary")
        for seconds in (3, 20):
            time.sleep(max(0.0, start + seconds - time.monotonic()))
            walk.shot(f"chat-summary-{seconds}s", f"{seconds} s after pressing New summary: what is in view")
            walk.log_view("#ip-summary-status", "#ip-chat", "#ip-question")
            walk.log_text("summary status", "#ip-summary-status")
            walk.log.text("chat's end", walk.chat()[-300:])
        walk.click("#ip-stop")  # the rest of the summary shows nothing new; `stop` looks at what Stop leaves
        walk.settle_chat()
    with walk.step("a question, 1 s in"):
        walk.chat_about(PDF)
        start = walk.ask(WAIT_QUESTION)
        time.sleep(max(0.0, start + 1 - time.monotonic()))
        walk.shot("chat-ask-1s", "1 s after pressing Ask: what is in view")
        walk.log_view("#ip-chat", "#ip-question")
        walk.log.text("chat", walk.chat()[-300:])
        walk.wait_answer(WAIT_QUESTION)


def stop(walk: Walk) -> None:
    """Stop pressed at three moments of an answer and 5 s into a New summary."""
    moments = (
        ("0.3s", "0.3 s after Ask", lambda question: time.sleep(0.3)),
        ("first-words", "once the first words show", lambda question: first_words(walk, question)),
        ("sources", "as the Sources line shows", lambda question: sources_shown(walk, question)),
    )
    for (name, when, moment), question in zip(moments, STOP_QUESTIONS, strict=True):
        with walk.step(f"Stop {when}"):
            walk.open()  # a Stop's leftovers (an error over the question box) would block the next question
            walk.chat_about(PDF)
            walk.ask(question)
            moment(question)
            stop_and_shoot(walk, f"chat-stop-{name}", f"3 s after Stop pressed {when} ({question!r})")
    with walk.step("Stop 5 s into a New summary"):
        walk.open()
        walk.chat_about(PDF)
        start = walk.click("#ip-new-summary")
        time.sleep(max(0.0, start + 5 - time.monotonic()))
        stop_and_shoot(walk, "chat-stop-summary", "3 s after Stop pressed 5 s into a New summary")


def first_words(walk: Walk, question: str) -> None:
    wait_for(lambda: walk.answer_to(question), "the answer's first words", ANSWER_SECONDS, every=0.1)


def sources_shown(walk: Walk, question: str) -> None:
    answer = lambda: walk.answer_to(question)  # noqa: E731
    wait_for(lambda: any(line in answer() for line in ANSWERED), "the Sources line", ANSWER_SECONDS, every=0.1)


def stop_and_shoot(walk: Walk, name: str, what: str) -> None:
    walk.click("#ip-stop")
    time.sleep(3)
    walk.shot(name, f"{what}: the chat and the question box")
    walk.log_errors()
    walk.log.text("chat's end", walk.chat()[-400:])
    walk.settle_chat()


def stop_queued(walk: Walk) -> None:
    """A second question waiting in line, Stop on the first, both kept after a reload.

    The first shows the passage it looks at within a second of Ask; the log says how soon."""
    walk.chat_about(PDF)
    asked = walk.ask(STAGE_QUESTION)
    looking = wait_for(lambda: "Looking at" in walk.answer_to(STAGE_QUESTION), "the passage looked at", 60, every=0.05)
    walk.log.line(f"    'Looking at' shown {time.monotonic() - asked:.2f} s after Ask: {looking}")
    walk.log.text("the bubble", walk.answer_to(STAGE_QUESTION), limit=600)
    walk.ask(QUEUED_QUESTION)
    wait_for(lambda: "Waiting" in walk.answer_to(QUEUED_QUESTION), "the second question waiting", 30, every=0.05)
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "chat-looking-and-waiting", "the passage looked at, a question in line")
    walk.find("#ip-stop").click()
    walk.log.line("    Stop pressed on the first question")
    second = walk.wait_answer(QUEUED_QUESTION)
    walk.log.text("the second answer", second, limit=600)
    walk.log.text("the first after Stop", walk.answer_to(STAGE_QUESTION).split(QUEUED_QUESTION)[0], limit=600)
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "chat-stop-first-of-two", "the first stopped, the second answered")
    walk.driver.refresh()
    time.sleep(3)
    walk.chat_about(PDF, new=False)
    wait_for(lambda: QUEUED_QUESTION in walk.chat(), "the conversation after a reload", 60)
    time.sleep(2)
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "chat-stop-kept", "the same two turns after a reload")


def follow_up(walk: Walk) -> None:
    """Three questions on libtasn1.pdf, the second a follow-up, then Summarize this file after them.

    The license, "What version of it?", the header file's name: each answer with its first quote."""
    chat_in_turns(
        walk, PDF, (LICENSE_QUESTION, FOLLOW_UP, HEADER_QUESTION), "chat-follow-up",
        "the three answers in one conversation, each with its quote",
    )  # fmt: skip
    walk.press("Summarize this file")
    summary = wait_stable(
        walk.chat,
        lambda text: "Outline" in text and not walk.busy("#ip-chat"),
        "the summary",
        settle=5,
        timeout=ANSWER_SECONDS,
    )
    walk.log.text("summary", summary.rsplit(HEADER_QUESTION, 1)[-1], limit=4000)
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "chat-summary-after-answers", "the summary after the answers")


def follow_up_log(walk: Walk) -> None:
    """A follow-up on a log, each answer a whole log line with its quote.

    Which processor timed out, then "After how many milliseconds?"; a log line quoted from its timestamp."""
    chat_in_turns(walk, LOG, LOG_QUESTIONS, "chat-follow-up-log", "the log question and its follow-up, each quoted")


def follow_up_not_found(walk: Walk) -> None:
    """A follow-up after an answer that found nothing, answered from the story with its quote."""
    caption = "a not-found answer and the follow-up answered after it"
    chat_in_turns(walk, STORY, STORY_QUESTIONS, "chat-follow-up-not-found", caption)


def chat_in_turns(walk: Walk, name: str, questions: tuple[str, ...], shot: str, caption: str) -> None:
    """Ask `questions` in turn in one chat about `name` (uploaded first if the home lacks it), log each answer and
    take one screenshot of the conversation."""
    ensure_document(walk, name)
    walk.chat_about(name)
    for number, question in enumerate(questions, start=1):
        walk.ask(question)
        answer = walk.wait_answer(question)
        walk.log.text(f"answer {number}", answer, limit=4000)
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", shot, caption)


def summaries(walk: Walk) -> None:
    """Summarize this file on libtasn1.pdf and on a log, each with its outline."""
    ensure_document(walk, LOG)
    for name, shot in ((PDF, "chat-summary-pdf"), (LOG, "chat-summary-log")):
        walk.chat_about(name)
        walk.press("Summarize this file")
        summary = wait_stable(
            walk.chat,
            lambda text: ("Outline" in text or "Errors and warnings" in text) and not walk.busy("#ip-chat"),
            "the summary",
            settle=3,
            timeout=ANSWER_SECONDS,
        )
        walk.log.text(f"summary of {name}", summary, limit=6000)
        with walk.expanded_chat():
            walk.element_shot("#ip-chat", shot, f"the summary of {name} with its outline to click")


def not_found(walk: Walk) -> None:
    """A question the manual cannot answer: the closest passages shown instead, without an index's dot leaders."""
    walk.chat_about(PDF)
    walk.ask(FOOTBALL_QUESTION)
    answer = walk.wait_answer(FOOTBALL_QUESTION)
    walk.log.text("answer", answer, limit=4000)
    leaders = DOT_LEADERS.findall(answer)
    walk.log.line(f"    dot leaders in the answer: {len(leaders)} {[leader[:20] for leader in leaders[:5]]}")
    with walk.expanded_chat():
        walk.element_shot("#ip-chat", "chat-not-found", "the not-found answer with its closest passages")


PARTS = (
    Part("no-document", no_document, empty_home=True),
    Part("words", words),
    Part("toolbar", toolbar),
    Part("across", across),
    Part("waits", waits),
    Part("stop", stop),
    Part("stop-queued", stop_queued),
    Part("follow-up", follow_up),
    Part("follow-up-log", follow_up_log),
    Part("follow-up-not-found", follow_up_not_found),
    Part("summaries", summaries),
    Part("not-found", not_found),
)
