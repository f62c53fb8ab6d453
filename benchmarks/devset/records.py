"""The development set's records: one JSON object per line, appended as each question is answered, so an
interrupted run continues where it stopped."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def read_jsonl(path: Path) -> list[dict]:
    """The records of `path` ([] when it does not exist); a line that is not JSON (an interrupted write) is
    skipped with a note on stderr."""
    if not path.is_file():
        return []
    records = []
    with open(path, encoding="utf-8") as handle:
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
