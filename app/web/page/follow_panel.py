"""The Library tab's "Follow a growing log": a path on this machine, Follow and Stop, and each file's state.

Uploads are copies that never grow, so a log is followed by its path (workspace.follow_log); the page's
timer refreshes the states, and the followed document appears in the library like any other.
"""

from __future__ import annotations

import gradio as gr

from infinipot.app.web.page.handlers import settings_from_values, user_errors


def followed_table(rows: list[dict]) -> str:
    """Markdown lines, one per followed file: its state, tokens read and growth steps."""
    if not rows:
        return ""
    lines = []
    for row in rows:
        state = row["status"] if not row["error"] else f"{row['status']}: {row['error']}"
        read = f"{row['tokens']:,} tokens, {row['steps']} reads" if row["doc_id"] else "reading..."
        warning = f" ({'; '.join(row['warnings'])})" if row["warnings"] else ""
        lines.append(f"* `{row['path']}`: {state}, {read}{warning}")
    return "\n".join(lines)


class FollowPanel:
    def __init__(self, workspace) -> None:
        self.workspace = workspace

    def layout(self, c) -> None:
        with gr.Accordion("Follow a growing log", open=False):
            c.follow_path = gr.Textbox(
                label=f"Path of a text or log file on this machine (allowed: {self.workspace.follow_dirs.describe()})",
                placeholder="/var/log/app.log",
                elem_id="ip-follow-path",
            )
            with gr.Row():
                c.follow = gr.Button("Follow this file", size="sm", elem_id="ip-follow")
                c.unfollow = gr.Button("Stop following", size="sm", elem_id="ip-unfollow")
            c.followed = gr.Markdown(elem_id="ip-followed")

    def wire(self, c, settings: list) -> None:
        c.follow.click(self.follow, [c.follow_path, *settings], c.notice, api_name="follow")
        c.unfollow.click(self.unfollow, c.follow_path, c.notice, api_name="unfollow")
        c.timer.tick(self.states, None, c.followed, api_visibility="undocumented", show_progress="hidden")

    @user_errors
    def follow(self, path, *settings):
        return self.workspace.follow_log(path, settings_from_values(settings))

    @user_errors
    def unfollow(self, path):
        return self.workspace.stop_following(path)

    def states(self):
        return followed_table(self.workspace.followed_logs())
