"""The layering, read from the source's imports (the AST, imports inside functions included).

core, ingest and storage import none of each other (storage never imports core) and never import app;
the app's subpackages import only downward (errors < library < read < ask < service < web, bench < cli); the
engine and the core modules under it never reach the answer stage (core.answer); and no module takes part in an
import circle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"core": "core", "ingest": "ingest", "storage": "storage", "app": "app"}

# The summary's modules: the only ones in core outside core.answer that import it.
SUMMARY = ("infinipot.core.summary", "infinipot.core.summary_opening")

# Rank of each part of app/: a module may import its own part or a lower rank, never a higher or an equal other.
APP_RANKS = {
    "errors": 0,
    "memory_trim": 0,
    "library": 1,
    "read": 2,
    "ask": 3,
    "service": 4,
    "web": 5,
    "bench": 5,
    "cli": 6,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return "infinipot." + ".".join(parts)


def all_modules() -> dict[str, Path]:
    found = {}
    for folder in PACKAGES.values():
        for path in sorted((ROOT / folder).rglob("*.py")):
            found[module_name(path)] = path
    return found


def named_imports(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """The modules the file's imports name, anywhere in it, as written (relative ones made absolute)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            # `from package import submodule` depends on the submodule; `from module import name` on the module
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                targets.add(submodule if submodule in known else module)
    return targets


def imported_modules(path: Path, name: str, known: dict[str, Path]) -> set[str]:
    """Project modules imported anywhere in the file, each resolved to the most specific known module."""
    resolved = set()
    for target in named_imports(path, name, known):
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = all_modules()
    return {name: imported_modules(path, name, known) for name, path in known.items()}


def part(module: str) -> str:
    """'core', 'ingest', 'storage', or 'app.<part>' for the app's parts."""
    pieces = module.split(".")
    if pieces[1] != "app":
        return pieces[1]
    return "app." + (pieces[2] if len(pieces) > 2 else "")


def violations(graph: dict[str, set[str]], allowed) -> list[str]:
    return sorted(f"{src} imports {dst}" for src, dsts in graph.items() for dst in dsts if not allowed(src, dst))


def test_the_graph_sees_imports_inside_functions(graph):
    # cli imports the web app only when `infinipot ui` runs: a function-level import the test must still see.
    assert "infinipot.app.web.workspace" in graph["infinipot.app.cli.main"]
    assert "infinipot.core.config" in graph["infinipot.app.web.settings"]


def test_every_import_names_a_module_that_is_there():
    # A module moved without its importers updated would otherwise count as an import of its package.
    known = all_modules()
    missing = sorted(
        f"{name} imports {target}"
        for name, path in known.items()
        for target in named_imports(path, name, known)
        if target.startswith("infinipot.") and target not in known
    )
    assert not missing, missing


def test_the_answer_stage_sits_on_the_engine(graph):
    # core.answer (evidence, judge, decision, writer) builds on the engine; below it only the summary (summary.py
    # and its opening, summary_opening.py), which cuts units as the answer stage does, imports it.
    def allowed(src: str, dst: str) -> bool:
        below = src.startswith("infinipot.core.") and not src.startswith("infinipot.core.answer")
        return not (below and dst.startswith("infinipot.core.answer")) or src in SUMMARY

    assert "infinipot.core.answer.evidence" in graph["infinipot.app.ask.evidence"]
    bad = violations(graph, allowed)
    assert not bad, bad


def test_the_engine_reads_and_generates_without_the_answer_stage(graph):
    # The answer stage is whole in core.answer (rerank, word_match, grounding, citations included), and the engine
    # with the reading and generating modules under it reaches none of it, not even through another module.
    stage = [name for name in graph if name.startswith("infinipot.core.answer.")]
    assert {"infinipot.core.answer." + name for name in ("rerank", "word_match", "grounding", "citations")} <= set(
        stage
    )
    below = [
        name
        for name in graph
        if name.startswith("infinipot.core.") and not name.startswith("infinipot.core.answer") and name not in SUMMARY
    ]
    assert "infinipot.core.engine" in below and "infinipot.core.reader" in below
    bad = sorted(f"{name} reaches {found}" for name in below for found in reached(graph, name) if found in stage)
    assert not bad, bad


def reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every module `start` imports, directly or through others."""
    seen: set[str] = set()
    waiting = [start]
    while waiting:
        for nxt in graph.get(waiting.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                waiting.append(nxt)
    return seen


@pytest.mark.parametrize("layer", ["storage", "core", "ingest"])
def test_a_lower_layer_imports_only_itself(graph, layer):
    bad = violations(graph, lambda s, d: part(s) != layer or part(d) == layer)
    assert not bad, bad


def test_app_parts_import_only_downward(graph):
    def allowed(src: str, dst: str) -> bool:
        if not part(src).startswith("app.") or not part(dst).startswith("app."):
            return True
        source, target = part(src)[4:], part(dst)[4:]
        if source == target or target == "":  # own part, or the app package itself (a docstring only)
            return True
        return APP_RANKS[target] < APP_RANKS[source]

    assert set(APP_RANKS) >= {part(m)[4:] for m in graph if part(m).startswith("app.") and part(m) != "app."}
    bad = violations(graph, allowed)
    assert not bad, bad


def test_no_import_circles(graph):
    cycles = strongly_connected(graph)
    assert not cycles, cycles


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: the groups of two or more modules that import each other, directly or not."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_cycle_finder_finds_a_circle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


# The modules an answer passes through, from the service's start to its last event.
ASK_PATH = ("app/ask/pipeline.py", "app/ask/evidence.py", "app/ask/conversation.py", "core/answer/grounded_answer.py")
# What makes an answer: the CLI and the page render its events and never reach these.
ANSWER_MAKING = ("pipeline", "evidence", "conversation", "citing", "library_answer")


def callbacks_up(path: Path) -> list[str]:
    """The parameters of `path`'s functions that hand a callee a way to report back: named on_* or typed as a
    Callable that returns None (a predicate the callee asks, such as `stopped`, returns an answer instead)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        for argument in arguments:
            typed = ast.unparse(argument.annotation) if argument.annotation is not None else ""
            if argument.arg.startswith("on_") or (typed.startswith("Callable") and typed.endswith("None]")):
                found.append(f"{path.name}:{node.lineno} {node.name}({argument.arg}: {typed})")
    return found


def test_an_answer_reports_by_events_with_no_callbacks_up():
    assert [found for path in ASK_PATH for found in callbacks_up(ROOT / path)] == []


def test_the_callback_finder_finds_one(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def f(x, stopped: Callable[[], bool], on_stage=None, tell: Callable[[str], None] = print):\n    pass\n"
    )
    assert [line.split(" ", 1)[1] for line in callbacks_up(planted)] == [
        "f(on_stage: )",
        "f(tell: Callable[[str], None])",
    ]


def test_the_service_starts_the_pipeline_and_the_cli_and_the_page_render_its_events(graph):
    assert sorted(m for m in graph["infinipot.app.service"] if m.startswith("infinipot.core.answer")) == []
    renderers = [m for m in graph if m.startswith(("infinipot.app.cli", "infinipot.app.web.page"))]
    making = {f"infinipot.app.ask.{name}" for name in ANSWER_MAKING}
    reached_making = sorted(f"{m} -> {i}" for m in renderers for i in graph[m] if i in making)
    assert reached_making == []
    cli = [m for m in graph if m.startswith("infinipot.app.cli")]
    assert sorted(f"{m} -> {i}" for m in cli for i in graph[m] if i == "infinipot.app.ask.quoting") == []
    # The events themselves are light: the page renders them without importing torch.
    shown = "infinipot.app.ask.events", "infinipot.app.web.page.handlers"
    check = "import sys, importlib; [importlib.import_module(m) for m in sys.argv[1:]]; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", check, *shown], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
