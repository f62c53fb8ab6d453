"""Builds the development set's documents in one folder: sixteen documents of eleven kinds, split in two halves.

    python -m benchmarks.devset.documents [--out bench-results/devset-docs] [--no-install]

Every document is real or generated deterministically, and none is committed:

- copied from Debian packages: two PDF manuals (libtasn1-doc, shared-mime-info), two licence texts
  (/usr/share/common-licenses, base-files), two HTML pages of the Python 3.11 documentation (python3.11-doc);
- uncompressed: bash's NEWS (release notes, bash);
- rendered: four manual pages as `man PAGE | col -b` writes them at 80 columns (tar, less, systemd);
- made from python3.11-doc's HTML (make_book.py): the Python Tutorial as an EPUB book, the Logging HOWTO as a Word
  file;
- generated (seeded): a story, an orders platform's service log, a mail relay's syslog.

When a package is missing and this runs as root, it runs `apt-get install -y` with the packages (with
--no-install, or not as root, it prints that command and exits 2). A manifest.json lists every document with its
source, kind, half and sha256.

The halves split the set by document, once, before any answer rule was changed for it (issue 53): every rule is
tuned on the "tuning" half (the four documents of the first development set, whose rules were made on them, and
four more) and reported on the "heldout" half, which no rule is tuned to.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .make_book import LOGGING_HOWTO, PYTHON_DOC, TUTORIAL, write_logging_docx, write_tutorial_epub
from .make_log import write_log
from .make_story import write_story
from .make_syslog import write_syslog

DEFAULT_DIR = Path("bench-results/devset-docs")
HALVES = ("tuning", "heldout")
# What each document's questions are measured as, in the per-kind tables (benchmarks.devset.grounded).
GENRES = (
    "pdf-manual", "story", "log", "manual-page", "licence", "api-reference", "release-notes", "config-reference",
    "word", "book",
)  # fmt: skip


def _man(page: str, section: str) -> Callable[[Path], None]:
    """Writes `man SECTION PAGE | col -b` at 80 columns, as a user pastes a manual page into a text file."""

    def write(target: Path) -> None:
        env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
        rendered = subprocess.run(["man", section, page], env=env, capture_output=True, check=True).stdout
        plain = subprocess.run(["col", "-b"], input=rendered, capture_output=True, check=True).stdout
        target.write_bytes(plain)

    return write


@dataclass(frozen=True)
class DevDocument:
    key: str  # what the question files' "document" field names
    file: str  # file name inside the documents folder
    kind: str  # where evidence is located: "pdf" (page), "epub" (chapter) or "text" (line)
    genre: str  # the kind of document, one of GENRES
    half: str  # "tuning" or "heldout" (HALVES)
    package: str | None = None  # Debian package that installs its source
    installed: str | None = None  # the installed file it is copied or made from
    make: Callable[[Path], None] | None = None  # writes it (None: a copy of `installed`)
    source: str = ""  # how it is made, for the manifest (default: `installed`)
    paraphrased: bool = False  # paraphrases.jsonl asks about it (the first four documents)
    description: str = ""


def _man_page(key: str, page: str, section: str, genre: str, half: str, package: str, description: str):
    """A manual page rendered as a user pastes it into a text file (see _man)."""
    return DevDocument(
        key, f"{page}.{section}.txt", "text", genre, half, package=package,
        installed=f"/usr/share/man/man{section}/{page}.{section}.gz", make=_man(page, section),
        source=f"man {section} {page} | col -b (MANWIDTH=80)", description=description,
    )  # fmt: skip


def _licence(key: str, name: str, half: str, description: str):
    """A licence text copied as base-files installs it."""
    return DevDocument(
        key, f"{name}.txt", "text", "licence", half, package="base-files",
        installed=f"/usr/share/common-licenses/{name}", description=description,
    )  # fmt: skip


def _python_doc(key: str, page: str, file: str, genre: str, half: str, description: str):
    """A page of the Python 3.11 documentation (`page` below its html folder) copied as python3.11-doc installs it."""
    return DevDocument(
        key, file, "text", genre, half, package="python3.11-doc", installed=str(PYTHON_DOC / page),
        description=description,
    )  # fmt: skip


def _uncompressed(key: str, file: str, genre: str, half: str, package: str, installed: str, description: str):
    """A gzipped text a Debian package installs, uncompressed."""

    def write(target: Path) -> None:
        target.write_bytes(gzip.decompress(Path(installed).read_bytes()))

    return DevDocument(
        key, file, "text", genre, half, package=package, installed=installed, make=write,
        source=f"{installed}, uncompressed", description=description,
    )  # fmt: skip


def _generated(key: str, file: str, genre: str, half: str, make: Callable[[Path], None], description: str, **more):
    """A seeded text made by one of this folder's make_*.py scripts (named by the function's module)."""
    script = make.__module__.rpartition(".")[2]
    return DevDocument(
        key, file, "text", genre, half, make=make, source=f"benchmarks/devset/{script}.py",
        description=description, **more,
    )  # fmt: skip


# fmt: off
DOCUMENTS: dict[str, DevDocument] = {
    doc.key: doc
    for doc in [
        DevDocument(
            "libtasn1", "libtasn1.pdf", "pdf", "pdf-manual", "tuning", package="libtasn1-doc",
            installed="/usr/share/doc/libtasn1-doc/libtasn1.pdf", paraphrased=True,
            description="GNU Libtasn1 4.19.0 manual (36 pages): ASN.1 library API reference and the GNU FDL",
        ),
        DevDocument(
            "mime-spec", "shared-mime-info-spec.pdf", "pdf", "pdf-manual", "tuning", package="shared-mime-info",
            installed="/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf", paraphrased=True,
            description="Shared MIME-info Database specification 0.21 (17 pages)",
        ),
        _generated(
            "story", "story.txt", "story", "tuning", write_story, paraphrased=True,
            description="'The Coast Survey', a generated 13-chapter narrative (make_story.py)",
        ),
        _generated(
            "log", "orders-platform.log", "log", "tuning", write_log, paraphrased=True,
            description="a generated 250-line service log of an orders platform (make_log.py)",
        ),
        _man_page("tar", "tar", "1", "manual-page", "tuning", "tar",
                  "GNU tar's manual page, tar(1): operations and option lists"),
        _licence("gpl3", "GPL-3", "tuning", "the GNU General Public License, version 3"),
        _python_doc("sqlite3-api", "library/sqlite3.html", "sqlite3.html", "api-reference", "tuning",
                    "the Python 3.11 library reference page of sqlite3 (HTML): functions, classes, attributes"),
        _uncompressed("bash-news", "bash-NEWS.txt", "release-notes", "tuning", "bash", "/usr/share/doc/bash/NEWS.gz",
                      "bash's NEWS: the new features of each release, bash-2.0 to bash-5.2"),
        _man_page("less", "less", "1", "manual-page", "heldout", "less",
                  "the manual page of less, less(1): commands, options, prompts, environment"),
        _man_page("journalctl", "journalctl", "1", "manual-page", "heldout", "systemd",
                  "the manual page of journalctl, journalctl(1): options, output modes, exit status"),
        _man_page("systemd-service", "systemd.service", "5", "config-reference", "heldout", "systemd",
                  "systemd.service(5): the [Service] section's settings, their values and defaults"),
        _licence("lgpl21", "LGPL-2.1", "heldout", "the GNU Lesser General Public License, version 2.1"),
        _python_doc("whatsnew311", "whatsnew/3.11.html", "whatsnew-3.11.html", "release-notes", "heldout",
                    "What's New In Python 3.11 (HTML): the release's features, changes and removals"),
        DevDocument(
            "logging-howto", "logging-howto.docx", "text", "word", "heldout", package="python3.11-doc",
            installed=str(LOGGING_HOWTO), make=write_logging_docx,
            source="benchmarks/devset/make_book.py from python3.11-doc's howto/logging.html",
            description="the Logging HOWTO of the Python 3.11 documentation as a Word file (headings, lists, tables)",
        ),
        DevDocument(
            "tutorial", "python-tutorial.epub", "epub", "book", "heldout", package="python3.11-doc",
            installed=str(TUTORIAL / "index.html"), make=write_tutorial_epub,
            source="benchmarks/devset/make_book.py from python3.11-doc's tutorial/*.html",
            description="The Python Tutorial (Python 3.11) as an EPUB book, 16 chapters",
        ),
        _generated(
            "syslog", "mail-relay.log", "log", "heldout", write_syslog,
            description="a generated syslog of a mail relay host over a day (make_syslog.py)",
        ),
    ]
}
# fmt: on


def half_keys(half: str) -> list[str]:
    """The documents of one half ("tuning" or "heldout"), in DOCUMENTS' order."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {', '.join(HALVES)}, got {half!r}")
    return [key for key, doc in DOCUMENTS.items() if doc.half == half]


def document_path(docs_dir: Path, key: str) -> Path:
    return Path(docs_dir) / DOCUMENTS[key].file


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def apt_command(docs=None) -> str:
    packages = sorted({doc.package for doc in (docs or DOCUMENTS.values()) if doc.package})
    return "apt-get install -y " + " ".join(packages)


def _missing(docs) -> list[DevDocument]:
    missing = [doc for doc in docs if doc.installed and not Path(doc.installed).is_file()]
    if any(doc.make is not None and doc.installed and doc.installed.startswith("/usr/share/man/") for doc in docs):
        if shutil.which("man") is None:
            missing.append(DevDocument("man", "", "text", "manual-page", "tuning", package="man-db"))
    return missing


def install_sources(allow_install: bool, docs=None) -> None:
    """Make sure every Debian package the documents come from is installed (apt-get as root, else exit 2)."""
    missing = _missing(list(docs or DOCUMENTS.values()))
    if not missing:
        return
    command = apt_command(missing)
    if allow_install and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"installing: {command}", file=sys.stderr)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(command.split(), env=env).returncode != 0:
            subprocess.run(["apt-get", "update", "-qq"], env=env, check=False)
            subprocess.run(command.split(), env=env, check=False)
        missing = _missing(missing)
        if not missing:
            return
    names = ", ".join(f"{doc.installed or 'man'} ({doc.package})" for doc in missing)
    print(f"missing {names}; install them with: sudo {apt_command(missing)}", file=sys.stderr)
    sys.exit(2)


def write_document(doc: DevDocument, out: Path) -> Path:
    """Write one document into `out` (copy, render, make or generate it); its path."""
    target = Path(out) / doc.file
    if doc.make is not None:
        doc.make(target)
    else:
        shutil.copyfile(doc.installed, target)
    return target


def build(out: Path, allow_install: bool = True, keys=None) -> dict:
    """Write the documents (all, or those of `keys`) into `out`; return the manifest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    docs = [DOCUMENTS[key] for key in (keys or DOCUMENTS)]
    install_sources(allow_install, docs)
    manifest = {}
    for doc in docs:
        target = write_document(doc, out)
        manifest[doc.key] = {
            "file": doc.file,
            "kind": doc.kind,
            "genre": doc.genre,
            "half": doc.half,
            "package": doc.package,
            "source": doc.source or doc.installed,
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
        print(f"{key:16} {entry['half']:8} {entry['genre']:17} {args.out / entry['file']}  ({entry['source']})")


if __name__ == "__main__":
    main()
