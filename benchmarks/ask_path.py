"""The path one `infinipot ask` follows through the project's files, traced on a tiny random-weight model.

A newcomer reads the answer's code in the order it runs; this lists that order (the app's files and the answer
stage's two entry modules, each visit once per stretch), how often the flow passes through the service, and every
call from a lower layer into a higher one (a callback up: what the pipeline's events replaced). Layers, low to
high: storage and ingest, core, core.answer, app.library and app.read, app.ask, app.service, app.web, app.cli.

    python -m benchmarks.ask_path [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = (
    ("storage/", 0),
    ("ingest/", 0),
    ("core/answer/", 2),
    ("core/", 1),
    ("app/library/", 3),
    ("app/read/", 3),
    ("app/memory_trim", 3),
    ("app/ask/", 4),
    ("app/service", 5),
    ("app/web/", 6),
    ("app/cli/", 7),
)
# The files the listed path shows: the app's (but its library of stored files) and the answer stage's entries.
SHOWN = ("app/", "core/answer/grounded_answer.py", "core/answer/evidence.py")


class AskTrace:
    """A sys.setprofile hook: the project's files in the order calls reach them, and the calls up."""

    def __init__(self, folders: dict[str, str]) -> None:
        self.folders = folders  # a package's folder on disk -> its name in the project (app, core, ...)
        self.path: list[str] = []
        self.calls_up: dict[str, int] = {}

    def project_file(self, filename: str) -> str | None:
        if not filename or filename.startswith("<"):
            return None
        resolved = str(Path(filename).resolve())
        for folder, name in self.folders.items():
            if resolved.startswith(folder + os.sep):
                return name + resolved[len(folder) :]
        return None

    def __call__(self, frame, event, arg) -> None:
        if event != "call" or frame.f_code.co_name == "<module>":  # a module imported on the way is no step
            return
        here = self.project_file(frame.f_code.co_filename)
        if here is None:
            return
        if here.startswith(SHOWN) and "/library/" not in here and (not self.path or self.path[-1] != here):
            self.path.append(here)
        caller = self._caller(frame)
        if caller is not None and _layer(caller) is not None and _layer(here) is not None:
            if _layer(here) > _layer(caller):
                key = f"{caller} -> {here}:{frame.f_code.co_name}"
                self.calls_up[key] = self.calls_up.get(key, 0) + 1

    def _caller(self, frame) -> str | None:
        back = frame.f_back
        while back is not None:
            found = self.project_file(back.f_code.co_filename)
            if found is not None:
                return found
            back = back.f_back
        return None


def _layer(path: str) -> int | None:
    return next((rank for prefix, rank in LAYERS if path.startswith(prefix)), None)


def traced_ask(work: Path) -> AskTrace:
    """Read a 120-line note with a tiny model into a 512-entry pot, then trace one `ask` of it."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import save_model_folder, write_notes

    import infinipot
    from infinipot.app.cli.main import main

    os.environ["INFINIPOT_HOME"] = str(work / "home")
    model = save_model_folder(work / "model")
    notes = write_notes(work / "notes.txt", lines=120)
    pot = ["--model", model, "--pot-size", "512", "--keep", "128"]
    if main(["read", str(notes), *pot]) != 0:
        raise SystemExit("the note could not be read")
    folders = {}
    for name in ("app", "core", "ingest", "storage"):
        package = __import__(f"infinipot.{name}", fromlist=["__path__"])
        folders[str(Path(package.__path__[0]).resolve())] = name
    del infinipot
    trace = AskTrace(folders)
    sys.setprofile(trace)
    try:
        main(["ask", str(notes), "What does the fox jump over?", *pot, "--max-new-tokens", "8"])
    finally:
        sys.setprofile(None)
    return trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the path and the calls up here")
    args = parser.parse_args(argv)
    trace = traced_ask(Path(tempfile.mkdtemp(prefix="ask-path-")))
    asked = trace.path[trace.path.index("app/service.py") - 1 :]  # from the command's call into the service
    print(" > ".join(asked))
    print(f"{len(asked) - 1} steps between files, {asked.count('app/service.py')} through app/service.py")
    print(f"calls up: {len(trace.calls_up)} places, {sum(trace.calls_up.values())} calls")
    for where, count in sorted(trace.calls_up.items(), key=lambda item: -item[1]):
        print(f"  {count:4d}  {where}")
    if args.json:
        args.json.write_text(json.dumps({"path": asked, "calls_up": trace.calls_up}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
