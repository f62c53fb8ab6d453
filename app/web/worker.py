"""Work for the page on a thread of its own, read as a stream of updates.

A page's event streams what it yields, but a step of the work (an answer's search and checks, a summary's part)
can take seconds, during which the event could neither show a stage nor see a Stop. So the work runs on its own
thread and reports updates; the event reads them, and a tick without news lets it look again. Closing the stream
(its event cancelled, or the reader done) tells the work to stop (core.stopping ends it within a layer of the
model) and waits for it: the model serves one event at a time, and the next must not start beside this one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

# How long a stream waits for news before it yields a tick ("wait"), so its reader can look at its Stop.
TICK_SECONDS = 0.25
# How long a closed stream waits for its work to end (it ends within a layer of the model once told).
JOIN_SECONDS = 30.0

Put = Callable[[str, object], None]
_END = object()


def updates_from(work: Callable[[Put, Callable[[], bool]], None], name: str) -> Iterator[tuple[str, object]]:
    """Run `work(put, closed)` on a thread; yield each (kind, value) it puts, ("wait", None) after TICK_SECONDS
    without news, and raise what it raised. `closed()` is true once the stream is closed: the work should end."""
    updates: queue.Queue = queue.Queue()
    closed = threading.Event()

    def run() -> None:
        try:
            work(lambda kind, value: updates.put((kind, value)), closed.is_set)
        except BaseException as exc:  # handed to the reader, which raises it
            updates.put(("error", exc))
        finally:
            updates.put((_END, None))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        while True:
            try:
                kind, value = updates.get(timeout=TICK_SECONDS)
            except queue.Empty:
                yield "wait", None
                continue
            if kind is _END:
                return
            if kind == "error":
                raise value
            yield kind, value
    finally:
        closed.set()
        thread.join(JOIN_SECONDS)
