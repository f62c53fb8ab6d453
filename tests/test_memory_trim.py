"""Freed memory goes back to the system after a piece of work (app/memory_trim.py), and an answer's stream does
that once it ends, however it ends."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from infinipot.app.ask.holding_stream import HeldStream

# Many blocks below glibc's mmap threshold, all freed but the last (which pins the top of the heap, so free()
# alone cannot shrink it): the freed memory stays resident until it is trimmed.
FRAGMENTED = textwrap.dedent(
    """
    import ctypes, ctypes.util, threading
    from infinipot.app.memory_trim import return_freed_memory
    
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]

    def rss_mib():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096 / 2**20

    def work():  # in a worker thread, as the app answers: its own arena
        blocks = [libc.malloc(64 * 1024) for _ in range(4096)]
        for block in blocks:
            ctypes.memset(block, 1, 64 * 1024)
        for block in blocks[:-1]:
            libc.free(block)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    before = rss_mib()
    trimmed = return_freed_memory()
    print(before, rss_mib(), trimmed)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_freed_heap_memory_is_given_back():
    done = subprocess.run([sys.executable, "-c", FRAGMENTED], capture_output=True, text=True, check=True)
    before, after, trimmed = done.stdout.split()
    assert trimmed == "True"
    assert float(before) - float(after) > 200, done.stdout  # of the 256 MiB freed


class Hold:
    def __init__(self):
        self.released = 0

    def release(self):
        self.released += 1


def pieces():
    yield "a"
    yield "b"


@pytest.mark.parametrize("ending", ["read to the end", "closed (Stop)", "dropped unread", "failed"])
def test_an_answers_stream_releases_its_document_and_memory_once_however_it_ends(ending):
    hold, after = Hold(), []

    def failing():
        yield "a"
        raise RuntimeError("the model failed")

    stream = HeldStream(failing() if ending == "failed" else pieces(), hold, after=lambda: after.append(1))
    assert hold.released == 0 and after == []  # held from the moment the answer was asked for
    if ending == "read to the end":
        assert "".join(stream) == "ab"
    elif ending == "closed (Stop)":
        next(stream)
        stream.close()
    elif ending == "dropped unread":
        del stream
        stream = None
    else:
        with pytest.raises(RuntimeError, match="the model failed"):
            list(stream)
    del stream  # the stream's end of life ends nothing twice
    assert after == [1] and hold.released == 1
