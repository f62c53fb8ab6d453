"""What the seeded document generators (make_story, make_log, make_syslog) share: writing the text and their CLI."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def write_text_file(path: Path, text: str) -> Path:
    """Write `text` to `path` (its folder made if missing); the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def write_lines(path: Path, lines: list[str]) -> Path:
    return write_text_file(path, "\n".join(lines) + "\n")


def generator_main(doc: str, write: Callable[..., Path], example: str, seed: int, lines: int | None = None) -> None:
    """The command line of a generator: `python -m ... OUT [--seed N] [--lines N]`, printing the path written.
    `doc` is the module's docstring (its first line describes the command); `lines` None: no --lines option."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("out", type=Path, help=f"file to write (e.g. devset-docs/{example})")
    parser.add_argument("--seed", type=int, default=seed)
    if lines is not None:
        parser.add_argument("--lines", type=int, default=lines)
    args = parser.parse_args()
    print(write(args.out, args.seed) if lines is None else write(args.out, args.seed, args.lines))


def events_by_line(events: list[tuple[float, list]], lines: int) -> dict[int, list]:
    """Where each group of distinctive entries starts in a `lines`-line log: at its fraction of the file, moved up
    where the group would run past the end."""
    return {min(int(fraction * lines), lines - len(group)): group for fraction, group in events}
