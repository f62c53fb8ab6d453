"""The Gradio app: build_app(workspace) makes the page; serve() runs it, stop_serving() stops one run in the background
(see launch.py for the checks)."""

from infinipot.app.web.page.launch import build_app, check_exposure, parse_auth, serve, stop_serving

__all__ = ["build_app", "check_exposure", "parse_auth", "serve", "stop_serving"]
