"""The documents the learned judge's training questions are made from: this machine's own, never the development
set's nor those later hidden checks keep aside.

Kinds: manual pages (rendered as a user pastes them, `man | col -b` at 80 columns), the PDF manuals Debian's doc
packages ship, Python's library reference (python3.11-doc's HTML), licences, release notes and changelogs, and the
machine's package logs. Each is a seeded sample of what is installed, so the same machine gives the same corpus.

Kept out, always (KEPT_OUT): every development document (benchmarks.devset.documents), the manual pages ssh_config,
find, wget, rsync and curl, the Python HOWTOs (and the tutorial and What's New the development set reads), Rust's
release notes, and the PDF manuals of valgrind, nettle, bzip2 and fontconfig.
"""

from __future__ import annotations

import gzip
import os
import random
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# The Debian packages whose documents the corpus reads (benchmarks.judge.make_data installs them when missing).
PACKAGES = ("python3.11-doc", "man-db", "gnutls-doc", "libgcrypt20-doc", "libmpfr-doc", "libidn2-doc", "camlidl-doc")

# Names (a file's stem, a manual page's name, a document's folder) no training question is made from.
KEPT_OUT_PAGES = {
    # the development set's manual pages
    "tar", "less", "journalctl", "systemd.service",
    # later hidden checks
    "ssh_config", "find", "wget", "rsync", "curl",
}  # fmt: skip
KEPT_OUT_PARTS = (
    "/howto/",
    "/tutorial/",
    "/whatsnew/",
    "library/sqlite3.html",  # Python's HOWTOs, the development set's pages
    "libtasn1",
    "shared-mime-info",  # the development set's PDF manuals
    "valgrind",
    "nettle",
    "bzip2",
    "fontconfig",  # PDF manuals hidden checks read
    "rust",
    "cargo",  # Rust's release notes
    "/bash/",  # the development set's release notes (bash NEWS)
    "/less/",
    "/tar/",
    "/systemd/",  # the notes of the development set's manual pages' programs
)
KEPT_OUT_LICENCES = {"GPL", "GPL-3", "LGPL-2.1"}  # GPL is GPL-3; both are development documents


@dataclass(frozen=True)
class CorpusDocument:
    key: str  # unique, readable: "man:ls", "pdf:gnutls", "html:library/json"
    kind: str  # manual-page, pdf-manual, api-reference, licence, release-notes, log
    path: Path  # the file as ingest reads it (rendered or unpacked under the work folder when needed)


def kept_out(name: str) -> bool:
    """Whether a source path or page name is one the training data must never read."""
    lowered = name.lower()
    page = re.sub(r"\.\d\w*$", "", Path(name).name.removesuffix(".gz"))  # "systemd.service.5.gz" -> its name
    return page in KEPT_OUT_PAGES or any(part in lowered for part in KEPT_OUT_PARTS)


def _render_man(page: Path, out: Path) -> Path | None:
    """`man PAGE | col -b` at 80 columns into out; None when man fails or the page is short."""
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
    try:
        rendered = subprocess.run(["man", "-l", str(page)], env=env, capture_output=True, check=True, timeout=30).stdout
        plain = subprocess.run(["col", "-b"], input=rendered, capture_output=True, check=True, timeout=30).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    if len(plain) < 3000:  # a page of a few lines makes no question worth asking
        return None
    out.write_bytes(plain)
    return out


def _unpacked(source: Path, out: Path) -> Path:
    """The file itself, or gunzipped into out."""
    if source.suffix != ".gz":
        return source
    out.write_bytes(gzip.decompress(source.read_bytes()))
    return out


def collect(work: Path, seed: int, man_pages: int = 70, html_pages: int = 45) -> list[CorpusDocument]:
    """The corpus, in a fixed order: files rendered or unpacked into `work`. `man_pages` and `html_pages`: how
    many of the installed manual pages (sections 1, 5, 8) and library reference pages the seeded sample takes."""
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    docs: list[CorpusDocument] = []
    pages = sorted(
        p for section in ("man1", "man5", "man8") for p in Path("/usr/share/man", section).glob("*.gz")
        if not kept_out(p.name) and not p.is_symlink()
    )  # fmt: skip
    rng.shuffle(pages)
    families: set[str] = set()
    for page in pages:
        if sum(d.kind == "manual-page" for d in docs) >= man_pages:
            break
        family = page.name.split("_")[0].split("-")[0].split(".")[0]
        if family in families:  # one page a family: thousands of "gcloud_*" pages are one manual
            continue
        families.add(family)
        name = page.name.removesuffix(".gz")
        rendered = _render_man(page, work / f"man-{name}.txt")
        if rendered is not None:
            docs.append(CorpusDocument(f"man:{name}", "manual-page", rendered))
    for pdf in sorted(Path("/usr/share/doc").glob("*/*.pdf*")):
        if pdf.suffix in (".pdf", ".gz") and ".pdf" in pdf.name and not kept_out(str(pdf)) and ".db" not in pdf.name:
            name = pdf.name.removesuffix(".gz")
            docs.append(CorpusDocument(f"pdf:{name}", "pdf-manual", _unpacked(pdf, work / name)))
    html = sorted(p for p in Path("/usr/share/doc/python3.11/html/library").glob("*.html") if not kept_out(str(p)))
    rng.shuffle(html)
    big = [p for p in html if p.stat().st_size > 40_000][:html_pages]
    docs += [CorpusDocument(f"html:library/{p.stem}", "api-reference", p) for p in sorted(big)]
    for licence in sorted(Path("/usr/share/common-licenses").iterdir()):
        if licence.name not in KEPT_OUT_LICENCES and licence.is_file() and not licence.is_symlink():
            docs.append(CorpusDocument(f"licence:{licence.name}", "licence", licence))
    notes = sorted(
        p for p in Path("/usr/share/doc").glob("*/NEWS*.gz") if not kept_out(str(p)) and p.stat().st_size > 8_000
    )
    rng.shuffle(notes)
    for note in sorted(notes[:12]):
        out = work / f"news-{note.parent.name}.txt"
        docs.append(CorpusDocument(f"news:{note.parent.name}", "release-notes", _unpacked(note, out)))
    for log in (Path("/var/log/dpkg.log"), Path("/var/log/apt/history.log")):
        if log.is_file() and log.stat().st_size > 5_000:
            docs.append(CorpusDocument(f"log:{log.name}", "log", log))
    return docs
