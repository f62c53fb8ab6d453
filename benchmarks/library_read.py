"""A folder read three ways, each from an empty data folder: here (one process, today's path), on `--workers 2`
Ray workers (one thread each), and on a 2-node Ray cluster simulated on this machine (ray.cluster_utils).
Tokens per second for each, and every pot compared with the one read here.

    PYTHONPATH=. .venv/bin/python -m benchmarks.library_read --folder bench-results/library-40 \\
        --out bench-results/library-read [--ways here,workers,cluster] [--kill-worker-after 20]

Each way runs `infinipot read FOLDER --json` as a user would (a subprocess); tokens per second are the documents'
tokens over the command's wall time, Ray's start included. `--kill-worker-after S` kills (SIGKILL) one worker that
is reading a document S seconds into the `workers` way: the document must still complete.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import torch


def run_read(folder: Path, home: Path, extra: list[str], kill_after: float | None = None) -> dict:
    """Run `infinipot read FOLDER --json` into an empty `home`; its per-document lines and totals, wall time."""
    shutil.rmtree(home, ignore_errors=True)
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    command = [sys.executable, "-m", "infinipot.app.cli", "--device", "cpu", "read", str(folder), "--json", *extra]
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed: list[int] = []
    if kill_after is not None:
        threading.Thread(target=_kill_a_reader, args=(kill_after, killed), daemon=True).start()
    out, err = process.communicate()
    seconds = time.perf_counter() - started
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if process.returncode != 0 or not lines:
        raise SystemExit(f"read failed ({process.returncode}): {err[-2000:]}")
    return {"documents": lines[:-1], "totals": lines[-1], "wall_seconds": seconds, "killed": killed, "stderr": err}


def _kill_a_reader(after: float, killed: list[int]) -> None:
    time.sleep(after)
    for _ in range(600):
        for process in psutil.process_iter(["cmdline"]):
            if any("PotReader.read" in part for part in process.info["cmdline"] or []):
                os.kill(process.pid, signal.SIGKILL)
                killed.append(process.pid)
                return
        time.sleep(0.1)


def integrity(home: Path) -> str:
    with sqlite3.connect(home / "infinipot.db") as db:
        return db.execute("PRAGMA integrity_check").fetchone()[0]


def compare_pots(here: Path, there: Path) -> dict:
    """Every complete pot of `there` against `here`'s of the same document: counters, integer tensors (positions
    kept) equal, and the largest difference of the float tensors (zero when bit for bit)."""
    from infinipot.storage.store import Store

    ours, theirs = Store(here), Store(there)
    same_counters = same_kept = 0
    worst = 0.0
    compared = 0
    for document in ours.documents.all():
        mine = [p for p in ours.pots.for_document(document.id) if p.status == "complete"]
        other = [p for p in theirs.pots.for_document(document.id) if p.status == "complete"]
        if not mine or not other:
            continue
        compared += 1
        a, b = ours.load_pot(mine[-1]), theirs.load_pot(other[-1])
        same_counters += mine[-1].counters == other[-1].counters
        kept = a.keys() == b.keys()
        for name in a:
            if a[name].shape != b[name].shape:
                kept = False
            elif a[name].dtype.is_floating_point:
                worst = max(worst, (a[name].float() - b[name].float()).abs().max().item())
            elif not torch.equal(a[name], b[name]):
                kept = False
        same_kept += kept
    return {"compared": compared, "same_counters": same_counters, "same_kept_positions": same_kept, "max_abs": worst}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="a folder for the three data homes and results")
    parser.add_argument("--ways", default="here,workers,cluster")
    parser.add_argument("--kill-worker-after", type=float, default=None)
    parser.add_argument("--extra", default="", help="more `read` options, e.g. '--pot-size 4096'")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    extra = args.extra.split()
    results = {}
    for way in args.ways.split(","):
        home = args.out / way
        if way == "here":
            result = run_read(args.folder, home, extra)
        elif way == "workers":
            result = run_read(args.folder, home, [*extra, "--workers", "2"], args.kill_worker_after)
        elif way == "cluster":
            from ray.cluster_utils import Cluster

            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            cluster.add_node(num_cpus=1)
            try:
                result = run_read(args.folder, home, [*extra, "--cluster", cluster.address])
            finally:
                cluster.shutdown()
        else:
            raise SystemExit(f"unknown way {way!r}")
        totals = result["totals"]
        result["tokens_per_second"] = totals["tokens"] / result["wall_seconds"]
        result["integrity"] = integrity(home)
        if way != "here" and (args.out / "here").is_dir():
            result["pots"] = compare_pots(args.out / "here", home)
        results[way] = result
        summary = {k: v for k, v in result.items() if k not in ("documents", "stderr")}
        print(way, json.dumps(summary), flush=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print("\n| way | documents (read / failed) | tokens | wall s | tokens/s | pots as read here | integrity |")
    print("|---|---:|---:|---:|---:|---|---|")
    for way, result in results.items():
        totals, pots = result["totals"], result.get("pots")
        same = (
            "(reference)"
            if pots is None
            else (f"{pots['same_kept_positions']}/{pots['compared']} same kept tokens, max diff {pots['max_abs']:.1e}")
        )
        print(
            f"| {way} | {totals['documents']} ({totals['read']} / {totals['failed']}) | {totals['tokens']:,} "
            f"| {result['wall_seconds']:.0f} | {result['tokens_per_second']:.0f} | {same} | {result['integrity']} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
