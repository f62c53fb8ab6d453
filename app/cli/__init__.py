"""The `infinipot` command: read, ask, summarize, list, delete, models, bench, and the web app (`ui`)."""

from infinipot.app.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
