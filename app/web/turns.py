"""A question or summary request from the moment the page shows it until it is stored, so Stop has one answer
whatever moment it comes: before the model started (the event still queued), while it writes, or after.

The page shows a question the moment it is sent (a turn is opened), then the queued event starts the turn and
finishes it once the answer is stored. Stop asks the turn to stop: one that never started is stored by Stop
itself, as asked and stopped, and never starts afterwards; one that started is stored by its own stream as far as
it got, and Stop waits for that. Either way the page then shows what the store holds, as a reload would.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

QUESTION = "question"
SUMMARY = "summary"
# Turns kept after they finished, for a Stop that comes late; older ones are forgotten.
FINISHED_KEPT = 256


@dataclass
class Turn:
    doc_id: str
    kind: str  # QUESTION or SUMMARY
    text: str  # the question, or the summary request
    conversation_id: int | None  # the conversation it adds to (None: a new one), then the one it was stored in
    started: bool = False
    stopped: bool = False
    finished: threading.Event = field(default_factory=threading.Event)


class Turns:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, Turn] = {}

    def open(self, doc_id: str, kind: str, text: str, conversation_id: int | None) -> str:
        with self._lock:
            self._forget_old()
            turn_id = uuid.uuid4().hex
            self._turns[turn_id] = Turn(doc_id, kind, text, conversation_id)
            return turn_id

    def get(self, turn_id: str | None) -> Turn | None:
        with self._lock:
            return self._turns.get(turn_id) if turn_id else None

    def start(self, turn_id: str | None) -> Turn | None:
        """The turn, now started; None when it was stopped before it started (or is unknown)."""
        with self._lock:
            turn = self._turns.get(turn_id) if turn_id else None
            if turn is None or turn.stopped:
                return None
            turn.started = True
            return turn

    def finish(self, turn_id: str | None, conversation_id: int | None) -> None:
        """The turn's answer is stored (in `conversation_id`), or it ended unstored (an error)."""
        turn = self.get(turn_id)
        if turn is None:
            return
        if conversation_id is not None:
            turn.conversation_id = conversation_id
        turn.finished.set()

    def stop(self, turn_id: str | None, record_unstarted: Callable[[Turn], int | None], wait: float) -> Turn | None:
        """Stop the turn: one not started is recorded now (`record_unstarted` returns its conversation) and will
        not start; one started is waited for, up to `wait` s, while its stream stores it. None: no such turn."""
        with self._lock:
            turn = self._turns.get(turn_id) if turn_id else None
            if turn is None:
                return None
            turn.stopped = True
            unstarted = not turn.started and not turn.finished.is_set()
        if unstarted:
            try:
                turn.conversation_id = record_unstarted(turn)
            finally:
                turn.finished.set()
        turn.finished.wait(wait)
        return turn

    def _forget_old(self) -> None:
        finished = [turn_id for turn_id, turn in self._turns.items() if turn.finished.is_set()]
        for turn_id in finished[: max(0, len(finished) - FINISHED_KEPT)]:
            del self._turns[turn_id]
