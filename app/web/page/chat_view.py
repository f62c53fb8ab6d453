"""What the chat shows while an answer is made: the stage in its bubble, and the questions waiting in line."""

from __future__ import annotations

from infinipot.app.ask.progress import AskStage
from infinipot.app.web.page import sources
from infinipot.app.web.shared_phrases import SUMMARY_REQUEST
from infinipot.app.web.turns import SUMMARY, Turn


def stage_text(stage: AskStage, looked_at: dict | None) -> str:
    """The answer's bubble while the answer is checked: the passage looked at (its page or line and its first
    words, in the document's own words) and what happens now. It reads as waiting (ends "…*")."""
    now = f"*{stage.text[:1].upper()}{stage.text[1:]}…*"
    if looked_at is None:
        return now
    return f"{looking_at_text(looked_at)}\n\n{now}"


def looking_at_text(looked_at: dict) -> str:
    """The passage looked at, as the bubble shows it while the answer is checked and after a Stop then."""
    quote = AskStage("looking", "", looked_at).quote
    return f"*Looking at {looked_at['label']}:* “{sources.markdown_text(quote)}”"


def is_waiting_text(text: str) -> bool:
    """Whether a bubble's text says what the answer waits for (a stage, PENDING_ANSWER, the passage looked at
    before a stage), not words of an answer: it starts with an asterisk and ends "…*"."""
    text = text.strip()
    return text.startswith("*") and text.endswith("…*")


def shown_when_stopped(content: str) -> str:
    """What a bubble keeps when Stop ends its answer: its words, or while it waited the passage looked at (the
    stage after it goes; nothing at all when no passage was shown)."""
    if not is_waiting_text(content):
        return content
    looking, gap, _ = content.strip().rpartition("\n\n")
    return looking if gap and looking.startswith("*Looking at ") else ""


def waiting_text(place: int) -> str:
    """A waiting question's bubble: its place in line for the model, which answers one at a time."""
    if place <= 1:
        return "*Waiting: next in line, after the answer being made…*"
    return f"*Waiting in line ({_ordinal(place)}): the model answers one question at a time…*"


def queued_messages(queued: list[tuple[Turn, int]]) -> list[dict]:
    """The questions (and summary requests) asked after the one being answered, each with its waiting bubble."""
    messages = []
    for turn, place in queued:
        asked = SUMMARY_REQUEST if turn.kind == SUMMARY else turn.text
        messages += [{"role": "user", "content": asked}, {"role": "assistant", "content": waiting_text(place)}]
    return messages


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
