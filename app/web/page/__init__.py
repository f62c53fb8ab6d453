"""The Gradio app: build_app(workspace) makes the page; serve() runs it (see launch.py for the checks)."""

from infinipot.app.web.page.launch import build_app, check_exposure, parse_auth, serve

__all__ = ["build_app", "check_exposure", "parse_auth", "serve"]
