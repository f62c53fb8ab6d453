"""Faults while a library is read, each followed by `PRAGMA integrity_check`:

1. the driver (`infinipot read DIR`) killed with SIGKILL mid-library: the rerun reuses every finished document and
   resumes the one under way from its checkpoint;
2. a Ray worker killed with SIGKILL mid-document (`--workers 2`): the document still completes;
3. a file changed while the library is read: one appended to while it is being read, one before its turn.

    PYTHONPATH=. .venv/bin/python -m benchmarks.library_faults --folder bench-results/library-faults \\
        --out bench-results/library-faults-run

The folder should hold a handful of documents of a few thousand tokens (each fault reads it whole once or twice).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from benchmarks.library_read import _kill_a_reader, integrity


def start(folder: Path, home: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    command = [sys.executable, "-m", "infinipot.app.cli", "--device", "cpu", "read", str(folder), "--json", *extra]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def lines_of(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def driver_killed(folder: Path, home: Path) -> dict:
    """Kill the driver once two documents are done and a third has a checkpoint; run it again."""
    shutil.rmtree(home, ignore_errors=True)
    process = start(folder, home, "--checkpoint-seconds", "5")
    done: list[dict] = []
    for line in process.stdout:
        if line.startswith("{"):
            done.append(json.loads(line))
        if len(done) >= 2:
            time.sleep(12)  # the third document well under way, past a checkpoint
            break
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    check_after_kill = integrity(home)
    again = start(folder, home)
    out, err = again.communicate()
    lines = lines_of(out)
    return {
        "finished_before_kill": [d.get("name") for d in done if "doc_id" in d],
        "integrity_after_kill": check_after_kill,
        "rerun": [{k: d.get(k) for k in ("name", "reused", "resumed_from", "tokens", "error")} for d in lines[:-1]],
        "rerun_totals": lines[-1] if lines else None,
        "integrity": integrity(home),
        "rerun_code": again.returncode,
    }


def worker_killed(folder: Path, home: Path, after: float) -> dict:
    shutil.rmtree(home, ignore_errors=True)
    killed: list[int] = []
    threading.Thread(target=_kill_a_reader, args=(after, killed), daemon=True).start()
    process = start(folder, home, "--workers", "2")
    out, err = process.communicate()
    lines = lines_of(out)
    return {
        "killed_pids": killed,
        "documents": [{k: d.get(k) for k in ("name", "tokens", "error")} for d in lines[:-1]],
        "totals": lines[-1] if lines else None,
        "integrity": integrity(home),
        "code": process.returncode,
    }


def file_changed(folder: Path, home: Path, work: Path) -> dict:
    """Append to the first document while it is read, and to the last one before its turn."""
    shutil.rmtree(home, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(folder, work)
    files = sorted(p for p in work.rglob("*") if p.is_file())
    first, last = files[0], files[-1]
    process = start(work, home)
    time.sleep(8)  # the first document is being read
    with first.open("a", encoding="utf-8") as handle:
        handle.write("\nA line appended while this file was being read: the otter's name is Pemberton.\n")
    with last.open("a", encoding="utf-8") as handle:
        handle.write("\nA line appended before this file's turn: the walrus's name is Augustus.\n")
    out, err = process.communicate()
    lines = lines_of(out)
    again = start(work, home)
    out2, _ = again.communicate()
    return {
        "first": first.name,
        "last": last.name,
        "documents": [{k: d.get(k) for k in ("name", "tokens", "error", "warnings")} for d in lines[:-1]],
        "rerun": [{k: d.get(k) for k in ("name", "reused", "tokens", "error")} for d in lines_of(out2)[:-1]],
        "stderr": err[-1500:],
        "integrity": integrity(home),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--faults", default="driver,worker,changed")
    parser.add_argument("--kill-worker-after", type=float, default=25.0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    results = {}
    for fault in args.faults.split(","):
        if fault == "driver":
            results[fault] = driver_killed(args.folder, args.out / "driver")
        elif fault == "worker":
            results[fault] = worker_killed(args.folder, args.out / "worker", args.kill_worker_after)
        elif fault == "changed":
            results[fault] = file_changed(args.folder, args.out / "changed", args.out / "changed-files")
        print(fault, json.dumps(results[fault]), flush=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
