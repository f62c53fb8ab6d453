"""A document's token ids on disk (uint32, 4 bytes a token), so the kept-token view and the evidence of an answer
can read any window of a long document without tokenizing it again; written by one pass that also counts them."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from infinipot.ingest import Progress, open_document


def token_file(folder: Path, doc_id: str, model_identity: str, content_hash: str) -> Path:
    """Token ids depend on the tokenizer and the bytes, so the file is keyed by document, model and content
    (a log that grew keeps its doc_id but not its content)."""
    model_key = hashlib.sha256(model_identity.encode()).hexdigest()[:10]
    return folder / f"{doc_id}.{model_key}.{content_hash[:12]}.u32"


def write_token_ids(path: Path, source: Path, tokenizer, progress: Callable[[Progress], object] | None = None) -> int:
    """Tokenize `source` exactly as reading does (same chunks concatenated) into `path`; returns the count.

    Memory stays bounded by a chunk; the file appears only when complete. An exception raised by `progress`
    (a cancel) stops the pass and leaves no file.
    """
    stream = open_document(source).token_stream(tokenizer, chunk_tokens=4096, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    count = 0
    try:
        with os.fdopen(fd, "wb") as handle:
            for ids in stream:
                handle.write(np.asarray(ids, dtype=np.uint32).tobytes())
                count += len(ids)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return count


def token_count(path: Path) -> int:
    return path.stat().st_size // 4


def read_window(path: Path, start: int, end: int) -> list[int]:
    """Token ids [start, end) of the document (clipped to its length), read without loading the whole file."""
    total = token_count(path)
    start, end = max(0, start), min(end, total)
    if end <= start:
        return []
    ids = np.memmap(path, dtype=np.uint32, mode="r", shape=(total,))
    return ids[start:end].astype(np.int64).tolist()
