"""A question or summary request from the moment the page shows it until it is stored, so that every question
asked is answered and kept, whatever moment Stop comes and however fast the next question follows.

The page shows a question the moment it is sent (a turn is opened) and queues an event that answers it; the model
answers one event at a time. An event does not take its turn from the page's state, which a later question may
have changed by the time the event runs: it takes the first turn of its kind that waits in its browser session
(events of a session run in the order they were sent, one per turn). A chat's turns are chained (each knows the
turn shown before it), since a question can be asked before the conversation of the one before it exists: it is
then kept in the conversation the turn before it was stored in.

Stop asks the session's earliest turn not yet done to stop: one that never started is stored by Stop itself, as
asked and stopped (after the turn before it), and never starts; one that started is stored by its own work as far
as it got, within a layer of the model (core.stopping), and Stop waits for that. A turn waiting for the model
shows its place in line.
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
    session: str | None = None  # the browser session that asked it (None: a direct call)
    previous: str | None = None  # the turn the same chat showed before it
    earlier: list = field(default_factory=list)  # the chat as shown before it (a question to All documents)
    started: bool = False
    stopped: bool = False
    finished: threading.Event = field(default_factory=threading.Event)

    @property
    def waiting(self) -> bool:
        """Asked and neither started nor stopped: in line for the model."""
        return not (self.started or self.stopped or self.finished.is_set())

    @property
    def done(self) -> bool:
        return self.stopped or self.finished.is_set()


class Turns:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, Turn] = {}  # in the order opened

    def open(
        self,
        doc_id: str,
        kind: str,
        text: str,
        conversation_id: int | None,
        previous: str | None = None,
        session: str | None = None,
        earlier: list | None = None,
    ) -> str:
        """A new turn of `session`; `previous`: the turn the same chat showed before it, whose conversation this
        one adds to when `conversation_id` is None."""
        with self._lock:
            self._forget_old()
            turn_id = uuid.uuid4().hex
            before = self._turns.get(previous) if previous else None
            chained = previous if before is not None and before.doc_id == doc_id else None
            self._turns[turn_id] = Turn(doc_id, kind, text, conversation_id, session, chained, list(earlier or []))
            return turn_id

    def get(self, turn_id: str | None) -> Turn | None:
        with self._lock:
            return self._turns.get(turn_id) if turn_id else None

    def start_next(self, session: str | None, kind: str) -> tuple[str, Turn] | tuple[None, None]:
        """The session's first turn of `kind` that waits, now started in the conversation of the turns before
        it; (None, None) when none waits (it was stopped before it started)."""
        with self._lock:
            for turn_id, turn in self._turns.items():
                if turn.session == session and turn.kind == kind and turn.waiting:
                    turn.started = True
                    turn.conversation_id = self._conversation_of(turn)
                    return turn_id, turn
            return None, None

    def conversation_of(self, turn_id: str | None) -> int | None:
        """The conversation the turn adds to: its own, else the one the turns before it were stored in, once
        they are."""
        with self._lock:
            return self._conversation_of(self._turns.get(turn_id) if turn_id else None)

    def _conversation_of(self, turn: Turn | None) -> int | None:
        seen: set[str] = set()
        while turn is not None and turn.conversation_id is None and turn.previous and turn.previous not in seen:
            seen.add(turn.previous)
            turn = self._turns.get(turn.previous)
        return None if turn is None else turn.conversation_id

    def queued_after(self, turn_id: str | None) -> list[tuple[Turn, int]]:
        """The turns of the same session and document opened after `turn_id` that wait for the model, in the
        order asked, each with its place in line (1: next), counting every session's turns not yet done."""
        with self._lock:
            turn = self._turns.get(turn_id) if turn_id else None
            if turn is None:
                return []
            found, after = [], False
            for other_id, other in self._turns.items():
                if other_id == turn_id:
                    after = True
                elif after and other.waiting and other.session == turn.session and other.doc_id == turn.doc_id:
                    found.append((other, self._place(other_id)))
            return found

    def place(self, turn_id: str) -> int:
        """How many turns not yet done were opened before this one (0: it is the model's next)."""
        with self._lock:
            return self._place(turn_id)

    def _place(self, turn_id: str) -> int:
        place = 0
        for other_id, turn in self._turns.items():
            if other_id == turn_id:
                return place
            place += not turn.done
        return place

    def to_stop(self, session: str | None) -> str | None:
        """The turn a Stop of `session` stops: its earliest not yet done (the one answered, else the next in
        line); None when all are done."""
        with self._lock:
            return next((t for t, turn in self._turns.items() if turn.session == session and not turn.done), None)

    def finish(self, turn_id: str | None, conversation_id: int | None) -> None:
        """The turn's answer is stored (in `conversation_id`), or it ended unstored (an error)."""
        turn = self.get(turn_id)
        if turn is None:
            return
        if conversation_id is not None:
            turn.conversation_id = conversation_id
        turn.finished.set()

    def stop(self, turn_id: str | None, record_unstarted: Callable[[Turn], int | None], wait: float) -> Turn | None:
        """Stop the turn: one not started is recorded now, after the turn before it (`record_unstarted` returns
        its conversation), and will not start; one started is waited for, up to `wait` s, while its work stores
        it. None: no such turn."""
        with self._lock:
            turn = self._turns.get(turn_id) if turn_id else None
            if turn is None:
                return None
            turn.stopped = True
            unstarted = not turn.started and not turn.finished.is_set()
            before = self._earlier_of_session(turn_id)
        if unstarted:
            for earlier in before:  # kept after the turns asked before it (one stopped may still be ending)
                earlier.finished.wait(wait)
            try:
                turn.conversation_id = self.conversation_of(turn_id)
                turn.conversation_id = record_unstarted(turn)
            finally:
                turn.finished.set()
        turn.finished.wait(wait)
        return turn

    def _earlier_of_session(self, turn_id: str) -> list[Turn]:
        """The turns of `turn_id`'s session opened before it and not finished."""
        turn, earlier = self._turns[turn_id], []
        for other_id, other in self._turns.items():
            if other_id == turn_id:
                return earlier
            if other.session == turn.session and not other.finished.is_set():
                earlier.append(other)
        return earlier

    def _forget_old(self) -> None:
        finished = [turn_id for turn_id, turn in self._turns.items() if turn.finished.is_set()]
        for turn_id in finished[: max(0, len(finished) - FINISHED_KEPT)]:
            del self._turns[turn_id]
