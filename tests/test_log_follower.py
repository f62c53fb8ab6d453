"""The app's "Follow a growing log": a followed file's appended lines continue its stored pot; clear refusals."""

from __future__ import annotations

import gzip

import pytest
from helpers import make_workspace, tiny_settings, wait_until
from tiny_models import write_notes

from infinipot.app.read.follow import FOLLOWING, STOPPED
from infinipot.app.web.page.follow_panel import FollowPanel, followed_table


@pytest.fixture
def workspace(infinipot_home):
    workspace = make_workspace(infinipot_home)
    workspace.follower.poll_seconds = 0.1
    yield workspace
    workspace.close()


def test_a_followed_log_continues_its_pot_with_appended_lines_only(workspace, tiny_model_dir, tmp_path):
    log = write_notes(tmp_path / "app.log", lines=30)
    read_steps: list[int] = []
    service_read = workspace.follower.read

    def counting_read(path, config, model, on_progress=None, follow=False):
        report = service_read(path, config, model, on_progress, follow)
        read_steps.append(report.resumed_from)
        return report

    workspace.follower.read = counting_read
    message = workspace.follow_log(str(log), tiny_settings(tiny_model_dir))
    assert message.startswith("Following")
    first = wait_until(
        lambda: next((r for r in workspace.followed_logs() if r["doc_id"]), None), every=0.1, what="the first read"
    )
    assert first["status"] == FOLLOWING and first["steps"] == 1 and first["tokens"] > 0

    with log.open("a", encoding="utf-8") as handle:
        handle.write("Line 31: the storeroom safe opens with 4417.\nLine 32: appended later.\n")
    grown = wait_until(
        lambda: next((r for r in workspace.followed_logs() if r["steps"] == 2), None), every=0.1, what="a 2nd step"
    )
    assert grown["doc_id"] == first["doc_id"] and grown["tokens"] > first["tokens"]
    assert read_steps[0] == 0 and first["tokens"] in read_steps  # the second read started after the first's tokens
    assert any(row["doc_id"] == first["doc_id"] for row in workspace.library())

    stopped = workspace.stop_following(str(log))
    assert stopped.startswith("Stopped following")
    assert workspace.followed_logs()[0]["status"] == STOPPED


def test_follow_refuses_what_it_cannot_follow_in_one_line(workspace, tiny_model_dir, tmp_path):
    settings = tiny_settings(tiny_model_dir)
    with pytest.raises(ValueError, match="type the path"):
        workspace.follow_log("  ", settings)
    with pytest.raises(ValueError, match="no file at"):
        workspace.follow_log(str(tmp_path / "missing.log"), settings)
    packed = tmp_path / "old.log.gz"
    packed.write_bytes(gzip.compress(b"line one\nline two\n"))
    with pytest.raises(ValueError, match="uncompressed text"):
        workspace.follow_log(str(packed), settings)
    log = write_notes(tmp_path / "app.log", lines=5)
    workspace.follow_log(str(log), settings)
    with pytest.raises(ValueError, match="already being followed"):
        workspace.follow_log(str(log), settings)
    with pytest.raises(ValueError, match="is not being followed"):
        workspace.stop_following(str(tmp_path / "other.log"))


def test_the_panel_shows_each_followed_file(workspace, tiny_model_dir, tmp_path):
    panel = FollowPanel(workspace)
    log = write_notes(tmp_path / "app.log", lines=10)
    assert panel.states() == ""
    assert panel.follow(str(log), *tiny_settings(tiny_model_dir).values()).startswith("Following")
    shown = wait_until(lambda: "tokens" in panel.states() and panel.states(), every=0.1, what="a read in the panel")
    assert str(log) in shown and "following" in shown
    assert followed_table([]) == ""
