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


def _gunzip(source: str) -> Callable[[Path], None]:
    def write(target: Path) -> None:
        target.write_bytes(gzip.decompress(Path(source).read_bytes()))

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


DOCUMENTS: dict[str, DevDocument] = {
    doc.key: doc
    for doc in [
        DevDocument(
            "libtasn1",
            "libtasn1.pdf",
            "pdf",
            "pdf-manual",
            "tuning",
            package="libtasn1-doc",
            installed="/usr/share/doc/libtasn1-doc/libtasn1.pdf",
            paraphrased=True,
            description="GNU Libtasn1 4.19.0 manual (36 pages): ASN.1 library API reference and the GNU FDL",
        ),
        DevDocument(
            "mime-spec",
            "shared-mime-info-spec.pdf",
            "pdf",
            "pdf-manual",
            "tuning",
            package="shared-mime-info",
            installed="/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
            paraphrased=True,
            description="Shared MIME-info Database specification 0.21 (17 pages)",
        ),
        DevDocument(
            "story",
            "story.txt",
            "text",
            "story",
            "tuning",
            make=write_story,
            source="benchmarks/devset/make_story.py",
            paraphrased=True,
            description="'The Coast Survey', a generated 13-chapter narrative (make_story.py)",
        ),
        DevDocument(
            "log",
            "orders-platform.log",
            "text",
            "log",
            "tuning",
            make=write_log,
            source="benchmarks/devset/make_log.py",
            paraphrased=True,
            description="a generated 250-line service log of an orders platform (make_log.py)",
        ),
        DevDocument(
            "tar",
            "tar.1.txt",
            "text",
            "manual-page",
            "tuning",
            package="tar",
            installed="/usr/share/man/man1/tar.1.gz",
            make=_man("tar", "1"),
            source="man 1 tar | col -b (MANWIDTH=80)",
            description="GNU tar's manual page, tar(1): operations and option lists",
        ),
        DevDocument(
            "gpl3",
            "GPL-3.txt",
            "text",
            "licence",
            "tuning",
            package="base-files",
            installed="/usr/share/common-licenses/GPL-3",
            description="the GNU General Public License, version 3",
        ),
        DevDocument(
            "sqlite3-api",
            "sqlite3.html",
            "text",
            "api-reference",
            "tuning",
            package="python3.11-doc",
            installed=str(PYTHON_DOC / "library" / "sqlite3.html"),
            description="the Python 3.11 library reference page of sqlite3 (HTML): functions, classes, attributes",
        ),
        DevDocument(
            "bash-news",
            "bash-NEWS.txt",
            "text",
            "release-notes",
            "tuning",
            package="bash",
            installed="/usr/share/doc/bash/NEWS.gz",
            make=_gunzip("/usr/share/doc/bash/NEWS.gz"),
            source="/usr/share/doc/bash/NEWS.gz, uncompressed",
            description="bash's NEWS: the new features of each release, bash-2.0 to bash-5.2",
        ),
        DevDocument(
            "less",
            "less.1.txt",
            "text",
            "manual-page",
            "heldout",
            package="less",
            installed="/usr/share/man/man1/less.1.gz",
            make=_man("less", "1"),
            source="man 1 less | col -b (MANWIDTH=80)",
            description="the manual page of less, less(1): commands, options, prompts, environment",
        ),
        DevDocument(
            "journalctl",
            "journalctl.1.txt",
            "text",
            "manual-page",
            "heldout",
            package="systemd",
            installed="/usr/share/man/man1/journalctl.1.gz",
            make=_man("journalctl", "1"),
            source="man 1 journalctl | col -b (MANWIDTH=80)",
            description="the manual page of journalctl, journalctl(1): options, output modes, exit status",
        ),
        DevDocument(
            "systemd-service",
            "systemd.service.5.txt",
            "text",
            "config-reference",
            "heldout",
            package="systemd",
            installed="/usr/share/man/man5/systemd.service.5.gz",
            make=_man("systemd.service", "5"),
            source="man 5 systemd.service | col -b (MANWIDTH=80)",
            description="systemd.service(5): the [Service] section's settings, their values and defaults",
        ),
        DevDocument(
            "lgpl21",
            "LGPL-2.1.txt",
            "text",
            "licence",
            "heldout",
            package="base-files",
            installed="/usr/share/common-licenses/LGPL-2.1",
            description="the GNU Lesser General Public License, version 2.1",
        ),
        DevDocument(
            "whatsnew311",
            "whatsnew-3.11.html",
            "text",
            "release-notes",
            "heldout",
            package="python3.11-doc",
            installed=str(PYTHON_DOC / "whatsnew" / "3.11.html"),
            description="What's New In Python 3.11 (HTML): the release's features, changes and removals",
        ),
        DevDocument(
            "logging-howto",
            "logging-howto.docx",
            "text",
            "word",
            "heldout",
            package="python3.11-doc",
            installed=str(LOGGING_HOWTO),
            make=write_logging_docx,
            source="benchmarks/devset/make_book.py from python3.11-doc's howto/logging.html",
            description="the Logging HOWTO of the Python 3.11 documentation as a Word file (headings, lists, tables)",
        ),
        DevDocument(
            "tutorial",
            "python-tutorial.epub",
            "epub",
            "book",
            "heldout",
            package="python3.11-doc",
            installed=str(TUTORIAL / "index.html"),
            make=write_tutorial_epub,
            source="benchmarks/devset/make_book.py from python3.11-doc's tutorial/*.html",
            description="The Python Tutorial (Python 3.11) as an EPUB book, 16 chapters",
        ),
        DevDocument(
            "syslog",
            "mail-relay.log",
            "text",
            "log",
            "heldout",
            make=write_syslog,
            source="benchmarks/devset/make_syslog.py",
            description="a generated syslog of a mail relay host over a day (make_syslog.py)",
        ),
    ]
}


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
