"""Write-then-rename so a killed process never leaves a half-written file behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """Call write(temp_path), fsync it, then rename it over `target`."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    temp_path = Path(temp)
    try:
        write(temp_path)
        with open(temp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(temp_path, target)
    except BaseException:
        temp_path.unlink(missing_ok=True)
        raise
