"""Which process is reading a pot, and whether it still runs (a pid alone can be reused after a crash)."""

from __future__ import annotations

import os

import psutil

# Process start times are reported with limited resolution; the same process always reports the same value.
_START_TOLERANCE = 0.05


def this_process() -> tuple[int, float]:
    return os.getpid(), psutil.Process().create_time()


def is_running(pid: int | None, started: float | None) -> bool:
    """True when process `pid` exists and is the one that started at `started` (not a reused pid)."""
    if pid is None or started is None:
        return False
    try:
        return abs(psutil.Process(pid).create_time() - started) < _START_TOLERANCE
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False
