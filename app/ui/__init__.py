"""The Gradio app: build_app(workspace) makes the page; serve() runs it (see app/ui/launch.py for the checks)."""

from .launch import build_app, check_exposure, parse_auth, serve

__all__ = ["build_app", "check_exposure", "parse_auth", "serve"]
