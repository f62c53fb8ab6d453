"""Questions on a document outside the development set, asked with the default settings: the GPL-3 text that
Debian's base-files installs. A check that the answer rules chosen on the development questions do not state
wrong facts elsewhere; the answers are printed, not scored (read them).

    PYTHONPATH=. python -m benchmarks.devset.outside [--home /tmp/ip-lib] [--file /usr/share/common-licenses/GPL-3]

The file is read into the home first when it is not there yet (a few minutes on a CPU).
"""

from __future__ import annotations

import argparse
from pathlib import Path

QUESTIONS = (
    # answered in the text
    "When was version 3 of the GNU General Public License published?",
    "Who is the copyright holder of the license text?",
    "Within how many days must a violation be cured to have the license restored?",
    "What is the corresponding source of a work?",
    # not in the text
    "How much does a copy of the program cost?",
    "Who wrote the first version of the GPL?",
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, default=Path("/tmp/ip-lib"))
    parser.add_argument("--file", type=Path, default=Path("/usr/share/common-licenses/GPL-3"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from infinipot.app.ask.modes import AnswerSettings
    from infinipot.app.service import DocumentService
    from infinipot.core.config import PotConfig

    service = DocumentService(args.home, device="cpu")
    doc_id = service.read(args.file, PotConfig()).doc_id
    for question in QUESTIONS:
        pieces, stats, _ = service.ask(doc_id, question, AnswerSettings(), record=False)
        answer = "".join(pieces)
        print(f"Q: {question}")
        print(f"   [{stats.answered_by}, answerable={stats.answerable}, {stats.first_token_seconds:.1f} s] {answer}\n")


if __name__ == "__main__":
    main()
