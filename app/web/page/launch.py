"""Running the app: loopback by default, --auth required to listen anywhere else, an upload limit, offline."""

from __future__ import annotations

import ipaddress
import os
import threading
from importlib import resources

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_auth(text: str | None) -> tuple[str, str] | None:
    """'user:password' -> (user, password)."""
    if text is None:
        return None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise ValueError("--auth must be USER:PASSWORD, both non-empty")
    return user, password


def check_exposure(host: str, auth: tuple[str, str] | None) -> None:
    """Other machines may reach any address but loopback; then a password is required."""
    if not is_loopback(host) and auth is None:
        raise ValueError(f"--host {host} lets other machines reach the app; add --auth USER:PASSWORD")


def build_app(workspace, refresh_seconds: float = 1.0):
    """The gr.Blocks of the app, not launched."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # offline: no telemetry, no version check
    from infinipot.app.web.page.app import InfiniPotApp

    return InfiniPotApp(workspace, refresh_seconds).build()


def serve(
    workspace,
    host: str = "127.0.0.1",
    port: int = 7860,
    auth: tuple[str, str] | None = None,
    max_upload_mb: int = 1024,
    block: bool = True,
    refresh_seconds: float = 1.0,
    quiet: bool = False,
):
    """Launch the app; with block=False it runs in the background and the Blocks are returned (close() stops it)."""
    check_exposure(host, auth)
    if max_upload_mb < 1:
        raise ValueError(f"--max-upload-mb must be at least 1, got {max_upload_mb}")
    blocks = build_app(workspace, refresh_seconds)
    blocks.queue(max_size=256)
    css = resources.files("infinipot.assets").joinpath("ui.css").read_text(encoding="utf-8")
    blocks.launch(
        server_name=host,
        server_port=port,
        auth=auth,
        max_file_size=f"{max_upload_mb}mb",
        css=css,
        ssr_mode=False,
        pwa=False,
        mcp_server=False,
        prevent_thread_lock=not block,
        quiet=quiet,
        footer_links=["api"],
    )
    return blocks


def stop_serving(blocks) -> None:
    """Stop an app that serve(block=False) started. Gradio's close() sets an asyncio.Event of the server's loop from
    this thread, which races a page's heartbeat waiting on it ("deque mutated during iteration", once in CI while a
    browser was still connected): the event is set on its own loop first, so close() finds it set."""
    for app in (getattr(blocks, "app", None), getattr(blocks, "server_app", None)):  # may be one app: set once
        event = getattr(app, "stop_event", None)
        loop = getattr(event, "_loop", None)  # asyncio binds an Event to its loop when first waited on
        if loop is not None and loop.is_running() and not event.is_set():
            done = threading.Event()
            loop.call_soon_threadsafe(_set_both, event, done)
            done.wait(5)
    blocks.close()


def _set_both(event, done: threading.Event) -> None:
    event.set()
    done.set()
