"""Seconds of `infinipot read` for the rolling-window methods (streaming, h2o) on a generated text, per code tree.

    python -m benchmarks.rolling_eviction [--tokens 24576] [--methods streaming,h2o] [--runs 2]
        [--code before=/path/to/shim --code after=] [--out results.jsonl]

Each run reads the same generated text (the bundled sample, repeated to exactly --tokens tokens of the default
model) with `infinipot read --method M --json` in a fresh process and a fresh data home (its models folder linked
to the real one), so nothing is reused. `--code NAME=PATH` puts PATH first on PYTHONPATH for that tree (a folder
whose `infinipot/` links to another checkout's core, app, ...; empty PATH: the installed package); the trees
alternate their order from run to run so that load on a shared machine falls on both alike. Writes one JSON line
per read: the read's own seconds and tokens/s, the part of them spent in compressions, the process wall time,
the torch threads of the reading process and which distill.py it ran.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Runs in the reading process: times the reader's compressions, then reports which code ran and its threads.
_RUNNER = r"""
import importlib, json, sys, time, torch
reader = importlib.import_module("infinipot.core.reader")
distill = importlib.import_module("infinipot.core.distill")
cli = importlib.import_module("infinipot.app.cli.main")
spent = [0.0]
compress = reader.ContinualReader._compress
def timed(self):
    started = time.perf_counter()
    try:
        compress(self)
    finally:
        spent[0] += time.perf_counter() - started
reader.ContinualReader._compress = timed
status = cli.main(sys.argv[1:])
info = {"code": distill.__file__, "threads": torch.get_num_threads(), "compress_seconds": spent[0], "exit": status}
print(json.dumps(info))
"""


def generated_text(tokens: int, home: Path, folder: Path) -> Path:
    """A text of exactly `tokens` tokens of the default model: the bundled sample, numbered parts, repeated."""
    from transformers import AutoTokenizer

    from infinipot.core.model import ModelSpec, resolve_model_dir

    path = folder / f"rolling-{tokens}.txt"
    if path.exists():
        return path
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_dir(ModelSpec(), home)[0])
    sample = (Path(__file__).resolve().parents[1] / "assets" / "coast-survey-sample.txt").read_text(encoding="utf-8")
    ids: list[int] = []
    part = 0
    while len(ids) < tokens:
        ids.extend(tokenizer(f"\n\n[Part {part}]\n{sample}", add_special_tokens=False)["input_ids"])
        part += 1
    path.write_text(tokenizer.decode(ids[:tokens]), encoding="utf-8")
    return path


def read_once(text: Path, method: str, python_path: str, models: Path, dtype: str = "float32") -> dict:
    """One `infinipot read` in a fresh process and data home; its JSON report plus the runner's. The dtype goes
    through INFINIPOT_DTYPE, which trees from before `--dtype` (always float32) ignore."""
    home = Path(tempfile.mkdtemp(prefix="rolling-home-"))
    try:
        (home / "models").symlink_to(models, target_is_directory=True)
        env = {**os.environ, "INFINIPOT_HOME": str(home), "INFINIPOT_DTYPE": dtype}
        if python_path:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [python_path, os.environ.get("PYTHONPATH")]))
        started = time.perf_counter()
        command = [sys.executable, "-c", _RUNNER, "read", str(text), "--method", method, "--json"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=home, check=False)
        wall = time.perf_counter() - started
    finally:
        shutil.rmtree(home, ignore_errors=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or len(lines) < 2:
        raise RuntimeError(f"read failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return {**json.loads(lines[-2]), **json.loads(lines[-1]), "wall_seconds": wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=24576)
    parser.add_argument("--methods", default="streaming,h2o")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--code", action="append", default=None, help="NAME=PYTHONPATH of a code tree (repeatable)")
    parser.add_argument("--out", type=Path, default=None, help="JSON lines file to append to")
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"), help="what the reads run in")
    args = parser.parse_args()

    from infinipot.storage.paths import data_home

    home = data_home()
    trees = [item.partition("=")[::2] for item in (args.code or ["current="])]
    text = generated_text(args.tokens, home, Path(tempfile.gettempdir()))
    for run in range(args.runs):
        order = trees if run % 2 == 0 else trees[::-1]
        for method in args.methods.split(","):
            for name, python_path in order:
                result = read_once(text, method, python_path, home / "models", args.dtype)
                row = {
                    "code": name,
                    "method": method,
                    "run": run + 1,
                    "tokens": result["tokens"],
                    "seconds": result["seconds"],
                    "tokens_per_s": round(result["tokens"] / result["seconds"], 1),
                    "compress_seconds": round(result["compress_seconds"], 2),
                    "cycles": result["cycles"],
                    "wall_seconds": round(result["wall_seconds"], 1),
                    "threads": result["threads"],
                    "load_average": round(os.getloadavg()[0], 2),
                    "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
                    "distill": result["code"],
                }
                print(json.dumps(row), flush=True)
                if args.out is not None:
                    args.out.parent.mkdir(parents=True, exist_ok=True)
                    with args.out.open("a", encoding="utf-8") as out:
                        out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
