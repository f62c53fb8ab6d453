"""Following a growing log: one report per growth step, bounded polls, Ctrl-C stops with the pot stored."""

import json
import os
import signal
import subprocess
import sys

import pytest
from helpers import LOG_CHUNK, LOG_CONFIG, line_tokens, log_lines

from infinipot.app.cli import main
from infinipot.app.read.follow import FollowSettings, follow
from infinipot.app.service import DocumentService


def test_follow_reads_each_growth_step_once(tmp_path, tiny_model_dir):
    path = tmp_path / "app.log"
    path.write_text("".join(log_lines(LOG_CHUNK, 0)) + "00999 unfinished", encoding="utf-8")
    appends = iter(["".join(log_lines(LOG_CHUNK, 100)), "", "line\n"])

    def grow(_seconds):  # stands for the time between two looks: the log gets longer (or not)
        with path.open("a", encoding="utf-8") as handle:
            handle.write(next(appends))

    reports = []
    service = DocumentService(tmp_path / "home", device="cpu")
    settings = FollowSettings(0, max_polls=4)
    steps = follow(service.read, path, LOG_CONFIG, tiny_model_dir, settings, reports.append, sleep=grow)
    # the unfinished line waited for the next append to complete it; the empty append read nothing
    assert steps == 3 and reports[0].tokens == LOG_CHUNK
    assert [r.resumed_from for r in reports] == [0, LOG_CHUNK, reports[1].tokens]
    assert reports[2].tokens - reports[1].tokens == line_tokens("line\n")
    assert len({r.doc_id for r in reports}) == 1


def test_follow_refuses_files_that_cannot_grow(tmp_path, tiny_model_dir, capsys):
    import gzip

    path = tmp_path / "app.log.gz"
    path.write_bytes(gzip.compress(b"a line\n"))
    code = main(["--device", "cpu", "read", str(path), "--model", tiny_model_dir, "--follow", "--max-polls", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--follow reads uncompressed text" in err[0]


def test_cli_follow_with_bounded_polls_prints_one_json_line_per_step(tmp_path, tiny_model_dir, capsys):
    path = tmp_path / "app.log"
    path.write_text("".join(log_lines(LOG_CHUNK, 0)), encoding="utf-8")
    args = ["--device", "cpu", "read", str(path), "--model", tiny_model_dir, "--pot-size", "128", "--keep", "48"]
    code = main([*args, "--follow", "--poll-seconds", "0", "--max-polls", "2", "--json"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert code == 0 and len(lines) == 1  # the file did not change between the two looks
    report = json.loads(lines[-1])
    assert {"doc_id", "tokens", "cycles", "pot_entries", "peak_entries", "seconds", "reused"} <= set(report)
    assert report["tokens"] == LOG_CHUNK and report["resumed_from"] == 0
    pots = DocumentService(device="cpu").documents()[0]["pots"]
    assert [pot["status"] for pot in pots] == ["complete"]


@pytest.mark.slow  # a subprocess
@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_stops_following_with_the_pot_stored(tmp_path, tiny_model_dir, infinipot_home):
    path = tmp_path / "app.log"
    path.write_text("".join(log_lines(LOG_CHUNK, 0)), encoding="utf-8")
    command = [sys.executable, "-m", "infinipot.app.cli", "--device", "cpu", "read", str(path)]
    command += ["--model", tiny_model_dir, "--pot-size", "128", "--keep", "48", "--follow", "--poll-seconds", "0.2"]
    command += ["--json"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
    first = child.stdout.readline()  # the first step is stored before its line is printed
    assert first, f"the follower ended without a report: {child.communicate(timeout=120)[1]}"
    with path.open("a", encoding="utf-8") as handle:
        handle.write("".join(log_lines(LOG_CHUNK, 100)))
    grown = child.stdout.readline()  # it is following: the append is read and reported
    assert grown, f"the follower ended without reporting the append: {child.communicate(timeout=120)[1]}"
    child.send_signal(signal.SIGINT)  # the handler is installed before the first line is printed
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert json.loads(first)["tokens"] == LOG_CHUNK
    assert (json.loads(grown)["tokens"], json.loads(grown)["resumed_from"]) == (2 * LOG_CHUNK, LOG_CHUNK), err
    assert "stopped following; the pot is stored" in err and "Traceback" not in err
    pots = DocumentService(infinipot_home, device="cpu").documents()[0]["pots"]
    assert [pot["status"] for pot in pots] == ["complete"]
