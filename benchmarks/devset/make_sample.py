"""Writes the document `make run` reads first: long enough that the memory is compressed several times.

    python -m benchmarks.devset.make_sample [OUT_FILE]   (default assets/coast-survey-sample.txt)

Chapters of "The Coast Survey" (make_story.py, generated here, so free of any copyright) with the Gannet Rock
keeper's log (assets/sample.txt) as the chapter where the surveyor reads it, so the demo question ("What is the
combination of the storeroom safe?") has its answer, 7419, in the middle of about 12K tokens: read through the
default 4,096-entry pot it takes several compressions, and the answer must come back from evidence the pot points to.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from .make_story import story_text

ASSETS = Path(__file__).resolve().parents[2] / "assets"
DEFAULT_OUT = ASSETS / "coast-survey-sample.txt"
# Story chapters before and after the keeper's log (about 12K tokens with the default model's tokenizer).
CHAPTERS_BEFORE, CHAPTERS_AFTER = 4, 4
LOG_INTRO = (
    "Chapter {number}. The Keeper's Log\n\n"
    "At Gannet Rock the head keeper, Mara Ellison, let Elena read the log she had kept through the autumn, and "
    "Elena copied it into the back of her notebook, word for word."
)


def sample_text() -> str:
    story = story_text()
    head, *chapters = re.split(r"\n\n(?=Chapter \d+\. )", story)
    chosen = chapters[: CHAPTERS_BEFORE + CHAPTERS_AFTER]
    renumbered = [re.sub(r"^Chapter \d+\.", f"Chapter {i}.", c) for i, c in enumerate(chosen, start=1)]
    before, after = renumbered[:CHAPTERS_BEFORE], renumbered[CHAPTERS_BEFORE:]
    after = [re.sub(r"^Chapter (\d+)\.", lambda m: f"Chapter {int(m.group(1)) + 1}.", c) for c in after]
    log = LOG_INTRO.format(number=CHAPTERS_BEFORE + 1) + "\n\n" + (ASSETS / "sample.txt").read_text(encoding="utf-8")
    title = f"{head.splitlines()[0]}\n\nA story in {len(chosen) + 1} chapters (an excerpt, made for the demo)."
    return "\n\n".join([title, *before, log.strip(), *after]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, nargs="?", default=DEFAULT_OUT)
    args = parser.parse_args()
    args.out.write_text(sample_text(), encoding="utf-8")
    print(args.out)


if __name__ == "__main__":
    main()
