"""The development set's records: one JSON object per line, appended as each question is answered, so an
interrupted run continues where it stopped; a finished run is kept compressed (`.jsonl.gz`)."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    """The records of `path`, plain or gzip (`.gz`) ([] when it does not exist); a line that is not JSON (an
    interrupted write) is skipped with a note on stderr."""
    if not path.is_file():
        return []
    records = []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                print(f"{path}:{number}: skipping a line that is not JSON (an interrupted write?)", file=sys.stderr)
    return records


def append_jsonl(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()


def write_jsonl_gz(path: Path, records: list[dict]) -> None:
    """`records` as gzip JSON lines, the same bytes for the same records (no time in the header); written beside
    and renamed, so an interrupted write leaves the file as it was."""
    lines = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    partial = path.with_name(path.name + ".partial")
    partial.write_bytes(gzip.compress(lines.encode("utf-8"), compresslevel=9, mtime=0))
    os.replace(partial, path)
