"""Walk through the web app as a new user would, screen by screen, and take named screenshots.

The same walk runs against any checkout, so the screenshots of the old code ("before") and of the changed code
("after") can be put side by side:

    .venv/bin/python -m benchmarks.app_walk --repo /tmp/before --home /tmp/walk-home-before \\
        --out bench-results/walk/before [--screens chat,library:folder] [--port 7871]

--repo is the checkout whose app runs: `python -m infinipot.app.cli ui` with this interpreter's packages and
`infinipot` imported from ROOT (a symlink on PYTHONPATH). --home is an INFINIPOT_HOME whose documents are already
read, so the walk does not wait for reading; pass a copy, since the walk uploads, asks and deletes there through the
app (libtasn1.pdf is uploaded first where the home lacks it). The parts about an empty home (the first screen) run
first, on an empty home of their own. --screens picks screens, or single parts as SCREEN:PART; the walk keeps its
own order. Needs /usr/bin/chromium and /usr/bin/chromedriver.

Screenshots are OUT/SCREEN-WHAT.png at a 1400x1000 viewport (full-page ones are as tall as the page); OUT/walk.log
says what each one shows, with the texts the walk read on the page. A step that fails (a selector that changed, a
wait that ran out) is logged there and the walk goes on; walk.log is appended to, so a rerun of one screen adds to
it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from . import chat, kept, library, reading, settings, sources
from .browser import Log, Part, Walk, app_server, chromium, package_path
from .documents import PDF, ensure_document

# The walk's order: the library's uploads and folder before the questions (an All documents answer cites its
# licence texts); the reads after the answers, which they would slow; the kept view after the read it plots.
SCREENS: dict[str, tuple[Part, ...]] = {
    "library": library.PARTS,
    "chat": chat.PARTS,
    "sources": sources.PARTS,
    "reading": reading.PARTS,
    "kept": kept.PARTS,
    "settings": settings.PARTS,
}


def chosen_parts(spec: str | None) -> list[tuple[str, Part]]:
    """The (screen, part) pairs that `spec` names ("chat,library:folder"), in the walk's order; all without one."""
    wanted = {item.strip() for item in (spec or ",".join(SCREENS)).split(",") if item.strip()}
    known = set(SCREENS) | {f"{screen}:{part.name}" for screen, part in all_parts()}
    if unknown := sorted(wanted - known):
        raise SystemExit(f"no screen or part {unknown}; see --help for them")
    return [(screen, part) for screen, part in all_parts() if {screen, f"{screen}:{part.name}"} & wanted]


def all_parts() -> list[tuple[str, Part]]:
    return [(screen, part) for screen, parts in SCREENS.items() for part in parts]


def walk_parts(parts: list[tuple[str, Part]], url: str, out: Path, log: Log, scratch: Path, needs_pdf: bool) -> None:
    """The parts on the app at `url`, in one browser; libtasn1.pdf uploaded first where needs_pdf and it is not
    in the library."""
    with chromium(scratch / "chromium-profile") as driver:
        walk = Walk(driver, url, out, log, scratch)
        if needs_pdf:
            with walk.step(f"{PDF} in the library"):
                walk.open()
                ensure_document(walk, PDF)
        for screen, part in parts:
            with walk.step(f"{screen}:{part.name}: {part.what}"):
                walk.open()  # a fresh page: what an earlier part left does not carry over
                part.run(walk)


def screens_help() -> str:
    lines = ["screens and their parts, in the walk's order (* on an empty home of its own):"]
    for screen, parts in SCREENS.items():
        lines.append(f"  {screen}:")
        lines += [f"    {part.name}{' *' if part.empty_home else ''}: {part.what}" for part in parts]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.app_walk",
        description=__doc__,
        epilog=screens_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repo", type=Path, required=True, help="the checkout whose app runs")
    parser.add_argument("--home", type=Path, required=True, help="a copy of an INFINIPOT_HOME with documents read")
    parser.add_argument("--out", type=Path, required=True, help="folder for the screenshots and walk.log")
    parser.add_argument(
        "--screens", help=f"screens or SCREEN:PART to walk, comma-separated (default: all: {','.join(SCREENS)})"
    )
    parser.add_argument("--port", type=int, default=7871)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    parts = chosen_parts(args.screens)
    args.out.mkdir(parents=True, exist_ok=True)
    log = Log(args.out / "walk.log")
    log.line(f"app walk: repo {args.repo}, home {args.home}, {', '.join(f'{s}:{p.name}' for s, p in parts)}")
    with tempfile.TemporaryDirectory(prefix="app-walk-") as folder:
        scratch = Path(folder)
        pythonpath = package_path(args.repo, scratch / "pythonpath")
        sessions = (
            ("empty-home", [(s, p) for s, p in parts if p.empty_home], scratch / "empty-home", False),
            ("home", [(s, p) for s, p in parts if not p.empty_home], args.home, True),
        )
        for name, session_parts, home, needs_pdf in sessions:
            if session_parts:
                home.mkdir(exist_ok=True)
                session = scratch / f"session-{name}"
                session.mkdir()
                with app_server(pythonpath, home, args.port, args.out / "server.log") as url:
                    walk_parts(session_parts, url, args.out, log, session, needs_pdf)
    log.line(f"done: {len(log.failures)} failed steps" + "".join(f"\n  - {f}" for f in log.failures))
    return 1 if log.failures else 0


if __name__ == "__main__":
    sys.exit(main())
