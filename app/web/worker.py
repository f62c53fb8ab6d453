"""Work for the page on a thread of its own, read as a stream of updates.

A page's event streams what it yields, but a step of the work (an answer's search and checks, a summary's part)
can take seconds, during which the event could neither show a stage nor see a Stop. So the work runs on its own
thread and reports updates; the event reads them, and a tick without news lets it look again. Closing the stream
(its event cancelled, or the reader done) tells the work to stop (core.stopping ends it within a layer of the
model) and waits for it: the model serves one event at a time, and the next must not start beside this one.
All such work runs on one long-lived thread, in the order it comes.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

# How long a stream waits for news before it yields a tick ("wait"), so its reader can look at its Stop.
TICK_SECONDS = 0.25
# How long a closed stream waits for its work to end (it ends within a layer of the model once told).
JOIN_SECONDS = 30.0

Put = Callable[[str, object], None]
_END = object()


def updates_from(work: Callable[[Put, Callable[[], bool]], None]) -> Iterator[tuple[str, object]]:
    """Run `work(put, closed)` on the model's thread; yield each (kind, value) it puts, ("wait", None) after
    TICK_SECONDS without news, and raise what it raised. `closed()` is true once the stream is closed: the work
    should end."""
    updates: queue.Queue = queue.Queue()
    closed = threading.Event()

    def run() -> None:
        try:
            work(lambda kind, value: updates.put((kind, value)), closed.is_set)
        except BaseException as exc:  # handed to the reader, which raises it
            updates.put(("error", exc))
        finally:
            updates.put((_END, None))

    done = _model_thread().submit(run)
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
        with contextlib.suppress(TimeoutError):
            done.result(JOIN_SECONDS)


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def _model_thread() -> ThreadPoolExecutor:
    """The one thread the page's model work runs on, made at its first use. One long-lived thread, not one per
    answer: a thread's first products on a CPU set up the math library's per-thread state (AMX tiles, oneDNN
    scratch), which cost a fresh thread 1.2 s more to the first token (measured on 2 AMX cores)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="infinipot-model")
        return _executor
