"""Assemble a library folder of installed real documents for the library benchmarks (issue 34), the same way on
every Debian machine.

    PYTHONPATH=. .venv/bin/python -m benchmarks.library_folder --out bench-results/library-200 \\
        --docs bench-results/devset-docs [--long 30] [--short 158] [--damaged]

The folder holds, in this order of choosing:
* 8 licence texts of base-files (/usr/share/common-licenses);
* `--long` packages' copyright files of 5-12 KB and `--short` of 1.5-5 KB (/usr/share/doc/*/copyright), the
  packages taken in name order, a text already taken (the same bytes under another package) skipped;
* the development set's documents from `--docs` (benchmarks/devset/documents): all four, or those named with
  `--devset`;
* with `--damaged`, a damaged PDF and an empty file, which a read must refuse with one line each.

With the defaults (30 + 158 and the four development documents) it is the 200-document library of the
whole-library question (196 installed documents and the development set's 4). Prints what it wrote.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
from pathlib import Path

LICENCES = ("Apache-2.0", "Artistic", "BSD", "CC0-1.0", "GFDL-1.3", "GPL-3", "LGPL-2.1", "MPL-2.0")
LICENCE_FOLDER = Path("/usr/share/common-licenses")
DOC_FOLDER = Path("/usr/share/doc")
LONG_BYTES = (5_000, 12_000)
SHORT_BYTES = (1_500, 5_000)


def copyright_files(low: int, high: int, count: int, taken: set[str]) -> list[Path]:
    """The first `count` packages' copyright files of `low` to `high` bytes, in package-name order, skipping a
    text already in `taken` (sha256 digests, updated)."""
    chosen: list[Path] = []
    for path in sorted(DOC_FOLDER.glob("*/copyright")):
        if len(chosen) == count:
            break
        if not path.is_file() or not low <= path.stat().st_size < high:
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in taken:
            continue
        taken.add(digest)
        chosen.append(path)
    if len(chosen) < count:
        raise SystemExit(f"only {len(chosen)} copyright files of {low}-{high} bytes are installed, {count} asked")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="the folder to fill (emptied first)")
    parser.add_argument("--docs", type=Path, required=True, help="the development documents' folder")
    parser.add_argument("--devset", nargs="*", help="development document keys (default: all in the manifest)")
    parser.add_argument("--long", type=int, default=30, help="copyright files of 5-12 KB")
    parser.add_argument("--short", type=int, default=158, help="copyright files of 1.5-5 KB")
    parser.add_argument("--damaged", action="store_true", help="add a damaged PDF and an empty file")
    args = parser.parse_args(argv)

    manifest = json.loads((args.docs / "manifest.json").read_text(encoding="utf-8"))
    keys = args.devset if args.devset else list(manifest)
    unknown = sorted(set(keys) - set(manifest))
    if unknown:
        parser.error(f"--devset takes some of {', '.join(manifest)}, got {', '.join(unknown)}")
    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    taken: set[str] = set()
    written: list[str] = []

    def put(source: Path, name: str) -> None:
        shutil.copyfile(source, args.out / name)
        written.append(name)

    for name in LICENCES:
        source = LICENCE_FOLDER / name
        taken.add(hashlib.sha256(source.read_bytes()).hexdigest())
        put(source, f"licence-{name}.txt")
    for path in copyright_files(*LONG_BYTES, args.long, taken) + copyright_files(*SHORT_BYTES, args.short, taken):
        put(path, f"copyright-{path.parent.name}.txt")
    for key in keys:
        put(args.docs / manifest[key]["file"], manifest[key]["file"])
    if args.damaged:
        (args.out / "damaged.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\nthis is not a pdf body\n")
        (args.out / "empty.txt").write_bytes(b"")
        written += ["damaged.pdf", "empty.txt"]
    total = sum((args.out / name).stat().st_size for name in written)
    print(f"{len(written)} files, {total / 2**20:.1f} MB in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
