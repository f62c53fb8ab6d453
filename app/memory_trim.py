"""Give the C heap's freed memory back to the system once a piece of work is over.

An answer, a summary or a read allocates and frees hundreds of MB of tensors. glibc keeps freed memory in the
arena of the thread that freed it, and the app answers from whichever of its worker threads is free, so over a
long session every arena grows to the largest answer it has served and stays there: a soak of 5 sessions grew
the app's RSS from 1,988 to 2,340 MiB in five minutes, and one malloc_trim(0) brought it to 1,563 MiB. Trimming
after each piece of work keeps the resident memory at what is in use (benchmarks/soak.py).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
from collections.abc import Callable, Iterator
from typing import TypeVar

T = TypeVar("T")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim; None on a C library without it (musl, macOS, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def return_freed_memory() -> bool:
    """Release the heap's free pages in every arena; whether the C library could (False: nothing to do here)."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


def then_freed(items: Iterator[T]) -> Iterator[T]:
    """The items, then the memory their work needed given back, however the stream ends."""
    try:
        yield from items
    finally:
        return_freed_memory()
