"""`infinipot read --follow`: one line per growth step (one JSON line with --json) until Ctrl-C."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from infinipot.app.read.follow import FollowSettings, StopRequest, follow
from infinipot.app.read.report import ReadReport
from infinipot.app.service import DocumentService
from infinipot.core.config import PotConfig


def run_follow(
    service: DocumentService, args: argparse.Namespace, config: PotConfig, warn: Callable[[list[str]], None]
) -> int:
    settings = FollowSettings(poll_seconds=args.poll_seconds, max_polls=args.max_polls)
    stop = StopRequest()
    stop.install()  # Ctrl-C lets the step in progress store its pot, then following ends with status 0

    def show(report: ReadReport) -> None:
        warn(report.warnings)
        if args.json:
            print(json.dumps(report.as_json()), flush=True)
            return
        if report.reused:
            how = "stored pot is up to date"
        elif report.resumed_from:
            how = f"+{report.tokens - report.resumed_from:,} tokens appended"
        else:
            how = "read from the start"
        print(
            f"{report.name}: {report.tokens:,} tokens, {report.cycles} compressions, pot {report.pot_entries} "
            f"entries; {how} ({report.seconds:.1f} s). following, Ctrl-C stops",
            flush=True,
        )

    def mark_in_use(doc_id: str):
        return service.in_use(doc_id, "followed by `read --follow`; stop it first")

    follow(service.read, Path(args.path), config, args.model, settings, show, stop.event, mark_in_use=mark_in_use)
    print("infinipot: stopped following; the pot is stored", file=sys.stderr)
    return 0
