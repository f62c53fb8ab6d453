"""Write-then-rename so a killed process never leaves a half-written file behind."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(target: Path, write: Callable[[Path], None]) -> None:
    """Call write(temp_path), fsync it, rename it over `target`, then fsync the folder.

    The folder fsync makes the rename itself durable: without it a power cut right after a commit could
    leave the database pointing at a file whose directory entry never reached the disk.
    """
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
    fsync_folder(target.parent)


def write_bytes_atomically(target: Path, data: bytes) -> None:
    write_atomically(target, lambda path: path.write_bytes(data))


def fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # some platforms cannot open folders; the rename is still atomic there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
