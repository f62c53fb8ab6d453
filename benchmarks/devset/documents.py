"""Builds the development set's four documents in one folder: two Debian PDF manuals, a story and a log.

    python -m benchmarks.devset.documents [--out bench-results/devset-docs] [--no-install]

The PDFs come from Debian packages (they are not committed): libtasn1-doc installs the GNU Libtasn1 manual,
shared-mime-info installs the Shared MIME-info Database specification. When one is missing and this runs as
root, it runs `apt-get install -y libtasn1-doc shared-mime-info` (with --no-install, or not as root, it prints
that command and exits 2). The PDFs are copied into the folder so that it is self-contained; the story and the
log are generated there deterministically. A manifest.json lists every document with its source and sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .make_log import write_log
from .make_story import write_story

DEFAULT_DIR = Path("bench-results/devset-docs")
APT_COMMAND = "apt-get install -y libtasn1-doc shared-mime-info"


@dataclass(frozen=True)
class DevDocument:
    key: str  # what questions.jsonl's "document" field names
    file: str  # file name inside the documents folder
    kind: str  # "pdf" (evidence located by page) or "text" (by line)
    package: str | None = None  # Debian package that installs the PDF
    installed: str | None = None  # where the package puts it
    description: str = ""


DOCUMENTS: dict[str, DevDocument] = {
    doc.key: doc
    for doc in [
        DevDocument(
            "libtasn1",
            "libtasn1.pdf",
            "pdf",
            package="libtasn1-doc",
            installed="/usr/share/doc/libtasn1-doc/libtasn1.pdf",
            description="GNU Libtasn1 4.19.0 manual (36 pages): ASN.1 library API reference and the GNU FDL",
        ),
        DevDocument(
            "mime-spec",
            "shared-mime-info-spec.pdf",
            "pdf",
            package="shared-mime-info",
            installed="/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
            description="Shared MIME-info Database specification 0.21 (17 pages)",
        ),
        DevDocument(
            "story",
            "story.txt",
            "text",
            description="'The Coast Survey', a generated 13-chapter narrative (make_story.py)",
        ),
        DevDocument(
            "log",
            "orders-platform.log",
            "text",
            description="a generated 250-line service log of an orders platform (make_log.py)",
        ),
    ]
}


def document_path(docs_dir: Path, key: str) -> Path:
    return Path(docs_dir) / DOCUMENTS[key].file


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _install_pdfs(allow_install: bool) -> None:
    missing = [doc for doc in DOCUMENTS.values() if doc.installed and not Path(doc.installed).is_file()]
    if not missing:
        return
    names = ", ".join(f"{doc.installed} ({doc.package})" for doc in missing)
    if allow_install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"installing: {APT_COMMAND}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(APT_COMMAND.split(), env=env).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
            subprocess.run(APT_COMMAND.split(), env=env, check=False)
        missing = [doc for doc in missing if not Path(doc.installed).is_file()]
        if not missing:
            return
        names = ", ".join(f"{doc.installed} ({doc.package})" for doc in missing)
    sys.exit(f"missing {names}; install them with: sudo {APT_COMMAND}")


def build(out: Path, allow_install: bool = True) -> dict:
    """Write all four documents into `out`; return the manifest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _install_pdfs(allow_install)
    manifest = {}
    for doc in DOCUMENTS.values():
        target = out / doc.file
        if doc.installed:
            shutil.copyfile(doc.installed, target)
        elif doc.key == "story":
            write_story(target)
        elif doc.key == "log":
            write_log(target)
        manifest[doc.key] = {
            "file": doc.file,
            "kind": doc.kind,
            "package": doc.package,
            "source": doc.installed or f"benchmarks/devset/{'make_story' if doc.key == 'story' else 'make_log'}.py",
            "sha256": _sha256(target),
            "description": doc.description,
        }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, help=f"folder to write (default {DEFAULT_DIR})")
    parser.add_argument("--no-install", action="store_true", help="never run apt-get; print the command instead")
    args = parser.parse_args()
    manifest = build(args.out, allow_install=not args.no_install)
    for key, entry in manifest.items():
        print(f"{key:10} {args.out / entry['file']}  ({entry['source']})")


if __name__ == "__main__":
    main()
