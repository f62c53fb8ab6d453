"""benchmarks/results keeps what the docs cite: every folder there is cited, and every results path cited is there.

A doc is any Markdown or Python file of the repository outside benchmarks/results. It cites a path when it writes
`benchmarks/results/<path>` (in a link, in backticks or in prose, `{a,b}` for several), links to it relatively, or
names a folder of benchmarks/results by itself in backticks (`niah-32k-modes`). A folder counts as cited when a doc
names it or anything inside it; its files need no citation of their own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
NOT_DOCS = {".git", ".venv", "bench-results", "node_modules", "__pycache__"}

# A results path as written; a `{a,b}` group names several, `*` and `<name>` stand for any.
PATH = re.compile(r"benchmarks/results/((?:[\w.*<>/-]|\{[\w.,-]+\})*)")
LINK = re.compile(r"\]\(([^)\s#]+)")
BARE = re.compile(r"`([\w.-]+)/?`")


def _docs():
    for folder, subfolders, files in os.walk(ROOT):
        here = Path(folder)
        subfolders[:] = [
            name
            for name in subfolders
            if name not in NOT_DOCS
            and not name.startswith(".")
            and not name.endswith(".egg-info")
            and here / name != RESULTS
        ]
        docs = (here / name for name in files if name.endswith((".md", ".py")))
        yield from (doc for doc in docs if doc != Path(__file__).resolve())  # this file's examples cite nothing


def _expand(path: str) -> list[str]:
    """`a/{b,c}/d` as `a/b/d` and `a/c/d`."""
    group = re.search(r"\{([^{}]*)\}", path)
    if not group:
        return [path]
    return [p for part in group[1].split(",") for p in _expand(path[: group.start()] + part + path[group.end() :])]


def _cited_in(doc: Path, text: str) -> set[str]:
    """The results paths `text` cites, relative to benchmarks/results."""
    cited = {p for m in PATH.finditer(text) for p in _expand(m[1].rstrip("./,"))}
    if doc.suffix == ".md":
        for m in LINK.finditer(text):
            target = Path(os.path.normpath(doc.parent / m[1]))
            if target.is_relative_to(RESULTS):
                cited.add(target.relative_to(RESULTS).as_posix())
        cited |= {m[1] for m in BARE.finditer(text) if "/" not in m[1] and (RESULTS / m[1]).is_dir()}
    return {p.strip("/") for p in cited if p.strip("/") not in ("", ".")}


def cited_paths() -> dict[str, set[str]]:
    """Each results path the docs cite, with the docs citing it."""
    cited: dict[str, set[str]] = {}
    for doc in _docs():
        for path in _cited_in(doc, doc.read_text(encoding="utf-8", errors="replace")):
            cited.setdefault(path, set()).add(doc.relative_to(ROOT).as_posix())
    return cited


def _matches(pattern: str) -> list[Path]:
    """The results paths a cited path names: itself, or what its `*` and `<name>` parts match."""
    pattern = re.sub(r"<[^<>]*>", "*", pattern)
    if "*" in pattern:
        return list(RESULTS.glob(pattern))
    return [RESULTS / pattern] if (RESULTS / pattern).exists() else []


def test_every_folder_under_results_is_cited_by_a_doc():
    named = [path for pattern in cited_paths() if "<" not in pattern for path in _matches(pattern)]
    cited = {folder for path in named for folder in (path, *path.parents)}
    folders = sorted(p for p in RESULTS.rglob("*") if p.is_dir())
    uncited = [p.relative_to(RESULTS).as_posix() for p in folders if p not in cited]
    assert not uncited, f"cited by no doc (cite them, or `git rm -r` them: git keeps them): {uncited}"


def test_every_cited_results_path_is_there():
    missing = {path: sorted(docs) for path, docs in cited_paths().items() if not _matches(path)}
    assert not missing, f"cited but not in benchmarks/results: {missing}"


def test_citations_are_read_from_links_backticks_and_brace_groups():
    doc = RESULTS.parent.parent / "docs" / "example.md"
    text = (
        "[report](../benchmarks/results/devset/grounded/report.md), `benchmarks/results/app-walk-x/{before,after}`, "
        "in prose benchmarks/results/niah-32k. `speed-cpu`, `not-a-results-folder`"
    )
    assert _cited_in(doc, text) == {
        "devset/grounded/report.md",
        "app-walk-x/before",
        "app-walk-x/after",
        "niah-32k",
        "speed-cpu",
    }
