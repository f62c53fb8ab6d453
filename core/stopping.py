"""Stopping an answer's work between two layers of the model, from another thread (the app's Stop).

An answer's slow steps (the pot's attention, the reranker's and the judge's batched passes, the writer's prefill)
are single forward passes of seconds each on a CPU; a check between pieces of the answer would let them all run
to their end. So the check runs before every decoder layer (hf_adapter.stop_between_layers), on the thread that
does the work, while a `stopping_when` block is open on that thread: a Stop is seen within one layer's time.
Threads without such a block (reading, other users of the model) are never stopped by it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .errors import AnswerStopped

_current = threading.local()


@contextmanager
def stopping_when(stopped: Callable[[], bool] | None) -> Iterator[None]:
    """Within the block, on this thread, the model's next layer raises AnswerStopped once `stopped()` is true
    (None: never). Blocks nest; the outer check is back in force after an inner one."""
    outer = getattr(_current, "stopped", None)
    _current.stopped = stopped
    try:
        yield
    finally:
        _current.stopped = outer


def check_stop() -> None:
    """AnswerStopped when this thread's open `stopping_when` block says the work is stopped."""
    stopped = getattr(_current, "stopped", None)
    if stopped is not None and stopped():
        raise AnswerStopped("the answer was stopped")
