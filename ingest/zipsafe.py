"""Opening ZIP-based documents (DOCX, EPUB) defensively: unsafe paths, zip bombs, damage."""

from __future__ import annotations

import re
import zipfile
import zlib
from pathlib import Path

from .errors import IngestError

# Limits on what the archive says its members expand to. zipfile never returns more
# than a member's declared size (it fails the CRC check instead), so checking the
# declared sizes up front bounds what reading can ever produce.
MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 512 << 20
MAX_TOTAL_BYTES = 2 << 30
# Ordinary XML compresses 5-20x and deflate tops out near 1000x; members that are
# both large and this compressible are built to exhaust memory.
MAX_RATIO = 200
RATIO_CHECK_MIN_BYTES = 16 << 20

_DRIVE = re.compile(r"^[A-Za-z]:")


def is_unsafe_member_name(name: str) -> bool:
    """True for absolute paths, drive letters and '..' components."""
    normalized = name.replace("\\", "/")
    return (
        "\x00" in normalized
        or normalized.startswith("/")
        or bool(_DRIVE.match(normalized))
        or ".." in normalized.split("/")
    )


def damaged(name: str, label: str) -> IngestError:
    return IngestError(
        f"'{name}' is damaged or incomplete: it is not a readable {label} file (re-download or re-export it)"
    )


def encrypted(name: str) -> IngestError:
    # zipfile raises RuntimeError for password-protected members.
    return IngestError(f"'{name}' is password-protected; remove the password and try again")


def open_zip(path: Path, name: str, label: str) -> zipfile.ZipFile:
    """Open and vet an archive; raises IngestError for damage, unsafe names or bombs."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError):
        raise damaged(name, label) from None
    except OSError as exc:
        # Truncated archives surface as "Invalid argument" when seeking before the start.
        raise damaged(name, label) from exc
    try:
        check_members(archive, name)
    except BaseException:
        archive.close()
        raise
    return archive


def check_members(archive: zipfile.ZipFile, name: str) -> None:
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise IngestError(f"'{name}' contains {len(infos):,} files, far more than any real document; it was not opened")
    total = 0
    for info in infos:
        if is_unsafe_member_name(info.filename):
            raise IngestError(
                f"'{name}' contains a file with an unsafe path ('{info.filename}'), "
                "a sign of a malicious archive; it was not opened"
            )
        size = info.file_size
        total += size
        too_compressed = size >= RATIO_CHECK_MIN_BYTES and size > MAX_RATIO * max(1, info.compress_size)
        if size > MAX_MEMBER_BYTES or total > MAX_TOTAL_BYTES or too_compressed:
            raise IngestError(
                f"'{name}' would expand to an absurd size ('{info.filename}' unpacks to {size:,} bytes), "
                "a sign of a zip bomb; it was not opened"
            )


def read_member(archive: zipfile.ZipFile, member: str, name: str, label: str, limit: int) -> bytes:
    """Whole content of a small member (container, manifest); raises IngestError if missing or damaged."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise IngestError(f"'{name}' is not a valid {label} file: '{member}' is missing") from None
    if info.file_size > limit:
        raise IngestError(f"'{name}' is not a valid {label} file: '{member}' is implausibly large")
    try:
        with archive.open(info) as handle:
            return handle.read(limit + 1)[:limit]
    except RuntimeError:
        raise encrypted(name) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError):
        raise damaged(name, label) from None


def verify_member(archive: zipfile.ZipFile, member: str, name: str, label: str) -> None:
    """Decompress a member and check its CRC without keeping it, to catch damage up front."""
    try:
        with archive.open(member) as handle:
            while handle.read(1 << 20):
                pass
    except KeyError:
        raise IngestError(f"'{name}' is not a valid {label} file: '{member}' is missing") from None
    except RuntimeError:
        raise encrypted(name) from None
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError):
        raise damaged(name, label) from None
