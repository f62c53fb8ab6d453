"""Tensor files: safetensors (never pickle), half precision on request, atomic writes, sha256 checksums."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load as load_safetensors
from safetensors.torch import save as save_safetensors

from .atomic import write_bytes_atomically
from .errors import DamagedFile

# Largest finite float16; an fp32 tensor with larger magnitudes is stored as bf16 instead of overflowing.
_FP16_MAX = 65504.0
_DTYPES_KEY = "infinipot.dtypes"
_META_KEY = "infinipot.meta"


@dataclass(frozen=True)
class TensorFile:
    """What the database records about a written tensor file."""

    path: Path
    checksum: str  # sha256 hex of the file's bytes
    nbytes: int

    def __post_init__(self) -> None:
        if len(self.checksum) != 64:
            raise ValueError(f"checksum must be a sha256 hex digest, got {self.checksum!r}")
        if self.nbytes <= 0:
            raise ValueError(f"a tensor file has at least a header, got {self.nbytes} bytes")


def compact(tensor: torch.Tensor) -> torch.Tensor:
    """fp32/fp64 -> fp16 (bf16 when values exceed fp16's range); fp16, bf16 and integer tensors unchanged."""
    if tensor.dtype not in (torch.float32, torch.float64):
        return tensor
    if tensor.numel() and float(tensor.abs().max()) > _FP16_MAX:
        return tensor.to(torch.bfloat16)
    return tensor.to(torch.float16)


def encode(tensors: dict[str, torch.Tensor], halve: frozenset[str] = frozenset(), meta: dict | None = None) -> bytes:
    """The safetensors bytes of `tensors`, with the names in `halve` compacted; original dtypes kept in the header."""
    prepared, dtypes = {}, {}
    seen_storage: set[int] = set()
    for name, tensor in tensors.items():
        t = tensor.detach().to("cpu")
        dtypes[name] = str(t.dtype).removeprefix("torch.")
        t = compact(t) if name in halve else t
        t = t.contiguous()
        # safetensors refuses tensors that share memory (views of one buffer); copy those.
        pointer = t.untyped_storage().data_ptr()
        if pointer in seen_storage and t.numel():
            t = t.clone()
        seen_storage.add(t.untyped_storage().data_ptr())
        prepared[name] = t
    header = {_DTYPES_KEY: json.dumps(dtypes), _META_KEY: json.dumps(meta or {})}
    return save_safetensors(prepared, metadata=header)


def write_tensor_file(
    path: Path, tensors: dict[str, torch.Tensor], halve: frozenset[str] = frozenset(), meta: dict | None = None
) -> TensorFile:
    """Write atomically (temp file, fsync, rename); returns the checksum the database keeps."""
    data = encode(tensors, halve, meta)
    write_bytes_atomically(path, data)
    return TensorFile(path=path, checksum=hashlib.sha256(data).hexdigest(), nbytes=len(data))


class VerifiedFiles:
    """Files whose bytes matched their recorded checksum, by the file's identity and times when they did.

    The app opens the same stored pot for every question about a document; hashing its ~75 MB again each time
    cost ~0.07 s of the answer's wait. A file changed since (rewritten, truncated, replaced, even with its
    mtime set back) changes its inode, size or ctime and is hashed again; nothing but a path and a few numbers
    is kept per file.
    """

    def __init__(self) -> None:
        self._matched: dict[Path, tuple[tuple[int, ...], str]] = {}

    def holds(self, path: Path, signature: tuple[int, ...], checksum: str) -> bool:
        return self._matched.get(path) == (signature, checksum)

    def remember(self, path: Path, signature: tuple[int, ...], checksum: str) -> None:
        self._matched[path] = (signature, checksum)

    def forget(self, path: Path) -> None:
        self._matched.pop(path, None)


def read_tensor_file(
    path: Path, checksum: str, nbytes: int, verified: VerifiedFiles | None = None
) -> tuple[dict[str, torch.Tensor], dict]:
    """Tensors (in their original dtypes) and the metadata of a file, after checking its size and checksum.

    Raises DamagedFile when the file is missing, truncated, fails its checksum or cannot be parsed.
    """
    return decode(checked_bytes(path, checksum, nbytes, verified), path)


def checked_bytes(path: Path, checksum: str, nbytes: int, verified: VerifiedFiles | None = None) -> bytes:
    """The file's bytes once their size and sha256 match what was recorded; else DamagedFile.

    With `verified`, a file unchanged since its bytes last matched this checksum is not hashed again.
    """
    try:
        with path.open("rb") as file:
            # Taken from the open file, so the signature is that of the bytes read (files are replaced by rename).
            status = os.fstat(file.fileno())
            data = file.read()
    except FileNotFoundError:
        raise DamagedFile(path, "file missing") from None
    except OSError as exc:
        raise DamagedFile(path, f"unreadable: {exc.strerror or exc}") from None
    if len(data) < nbytes:
        raise DamagedFile(path, f"truncated: {len(data):,} of {nbytes:,} bytes")
    signature = (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)
    if len(data) == nbytes and verified is not None and verified.holds(path, signature, checksum):
        return data
    if len(data) != nbytes or hashlib.sha256(data).hexdigest() != checksum:
        if verified is not None:
            verified.forget(path)
        raise DamagedFile(path, "checksum mismatch")
    if verified is not None:
        verified.remember(path, signature, checksum)
    return data


def decode(data: bytes, path: Path | str = "<bytes>") -> tuple[dict[str, torch.Tensor], dict]:
    try:
        tensors = load_safetensors(data)
        header = _header(data)
        dtypes = json.loads(header.get(_DTYPES_KEY, "{}"))
        meta = json.loads(header.get(_META_KEY, "{}"))
    except (SafetensorError, ValueError, json.JSONDecodeError) as exc:
        raise DamagedFile(path, f"not a valid tensor file ({exc})") from None
    for name, dtype in dtypes.items():
        if name in tensors:
            tensors[name] = tensors[name].to(getattr(torch, dtype))
    return tensors, meta


def _header(data: bytes) -> dict:
    """The safetensors header's __metadata__ (8-byte little-endian length, then JSON)."""
    length = int.from_bytes(data[:8], "little")
    return json.loads(data[8 : 8 + length]).get("__metadata__", {})
