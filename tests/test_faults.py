"""Faults a user can cause get one line and leave the data intact: a delete while another process answers, a full
disk, a read-only data folder, a special file, a follow outside the allowed folders, the resume-point interval.

After each fault the database passes SQLite's integrity and foreign-key checks.
"""

import json
import os
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys

import pytest
from helpers import make_workspace, tiny_settings, wait_until
from tiny_models import write_notes

from infinipot.app.service import DocumentNotFound, DocumentService
from infinipot.app.web.follow_dirs import FollowDirs
from infinipot.app.web.settings import ReadSettings
from infinipot.core.config import PotConfig
from infinipot.ingest import IngestError, open_document
from infinipot.storage.db import open_database
from infinipot.storage.errors import InUse, ReadOnlyHome
from infinipot.storage.store import DATABASE_NAME, Store

SMALL_POT = PotConfig(pot_size=128, keep_size=48)


def cli(home, *args, timeout=300, preexec_fn=None, wrap=()):
    """Run `infinipot` in a child process on `home`; (exit status, stdout, stderr)."""
    env = {**os.environ, "INFINIPOT_HOME": str(home)}
    done = subprocess.run(
        [*wrap, sys.executable, "-m", "infinipot.app.cli", "--device", "cpu", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=preexec_fn,
    )
    return done.returncode, done.stdout, done.stderr


def one_error_line(err: str) -> str:
    """The single `infinipot: error:` line a user fault must give (progress lines aside), with no traceback."""
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("infinipot: error:")]
    assert len(errors) == 1, err
    return errors[0]


def assert_database_intact(home) -> None:
    with sqlite3.connect(home / DATABASE_NAME) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def read_notes(tmp_path, tiny_model_dir, home, lines=30):
    service = DocumentService(home=home, device="cpu")
    report = service.read(write_notes(tmp_path / "notes.txt", lines=lines), SMALL_POT, tiny_model_dir)
    return service, report.doc_id


# -- 1. a delete from another process while an answer streams ---------------------------------------------------
@pytest.mark.slow  # child processes
def test_a_delete_from_another_process_refuses_while_an_answer_streams(tmp_path, tiny_model_dir, infinipot_home):
    service, doc_id = read_notes(tmp_path, tiny_model_dir, infinipot_home)
    pieces, stats, _ = service.ask(doc_id, "What does the fox do?", answer_from="pot", max_new_tokens=24)
    # The document is in use from the moment the answer is asked for (a queued question has no piece yet)
    # until it is recorded.
    for attempt in ("before the first piece", "while it streams"):
        code, _, err = cli(infinipot_home, "delete", doc_id)
        assert code == 2
        line = one_error_line(err)
        assert f"in use by process {os.getpid()} (answering a question)" in line, line
        assert service.store.documents.get(doc_id) is not None  # nothing was deleted
        if attempt == "before the first piece":
            first = next(pieces)

    rest = "".join(pieces)
    assert stats.conversation_id is not None and not stats.warnings  # the answer finished and was recorded
    (question, answer) = service.messages(stats.conversation_id)
    assert answer["content"] == (first + rest).strip()

    code, out, err = cli(infinipot_home, "delete", doc_id, "--json")
    assert code == 0, err
    assert json.loads(out)["deleted"] == doc_id
    assert_database_intact(infinipot_home)


def test_a_question_asked_after_its_document_was_deleted_says_so_and_an_accepted_one_holds_it(
    tmp_path, tiny_model_dir, infinipot_home
):
    service, doc_id = read_notes(tmp_path, tiny_model_dir, infinipot_home)
    other = DocumentService(home=infinipot_home, device="cpu")  # another front end
    pieces, stats, _ = service.ask(doc_id, "What does the fox do?", answer_from="pot", max_new_tokens=12)
    with pytest.raises(InUse, match=r"notes\.txt is in use by process \d+ \(answering a question\)"):
        other.delete(doc_id)  # accepted, not started: it holds the document already
    assert "".join(pieces) and stats.conversation_id is not None and not stats.warnings
    assert service.store.db.execute("SELECT count(*) FROM document_uses").fetchone()[0] == 0

    dropped, _, _ = service.ask(doc_id, "And the dog?", answer_from="pot", max_new_tokens=12)
    del dropped  # a reader that went away before the first piece: the hold goes with the stream
    closed, _, _ = service.ask(doc_id, "And the dog?", answer_from="pot", max_new_tokens=12)
    next(closed)
    closed.close()  # Stop
    assert service.store.db.execute("SELECT count(*) FROM document_uses").fetchone()[0] == 0

    other.delete(doc_id)
    with pytest.raises(DocumentNotFound, match=r"^notes\.txt was deleted$"):
        service.ask(doc_id, "What does the fox do?", answer_from="pot", max_new_tokens=12)  # its pot was loaded
    assert Store(infinipot_home).documents.get(doc_id) is None
    assert_database_intact(infinipot_home)


def test_a_use_by_a_dead_process_does_not_block_a_delete(tmp_path, tiny_model_dir, infinipot_home):
    service, doc_id = read_notes(tmp_path, tiny_model_dir, infinipot_home)
    with service.in_use(doc_id, "answering a question"):
        with pytest.raises(InUse, match="in use by process"):
            service.delete(doc_id)
        # a process that was killed while it answered: its row stays, its pid is gone
        service.store.db.execute("UPDATE document_uses SET pid = 999999999").connection.commit()
        assert service.delete(doc_id)["deleted"] == doc_id
    assert service.store.db.execute("SELECT count(*) FROM document_uses").fetchone()[0] == 0
    assert_database_intact(infinipot_home)


def test_a_delete_removes_the_apps_files_too(tmp_path, tiny_model_dir, infinipot_home, capsys):
    service, doc_id = read_notes(tmp_path, tiny_model_dir, infinipot_home)
    upload = service.upload_folder(doc_id)
    upload.mkdir(parents=True)
    (upload / "notes.txt").write_text("a copy the app kept")
    tokens = list((infinipot_home / "ui" / "tokens").glob(f"{doc_id}.*"))
    assert tokens  # the read kept the document's token ids

    from infinipot.app.cli import main

    assert main(["delete", doc_id]) == 0
    assert not upload.exists() and not any(path.exists() for path in tokens)


# -- 2. a full disk ---------------------------------------------------------------------------------------------
@pytest.mark.slow  # child processes
def test_a_full_disk_gives_one_line_and_the_read_resumes_once_there_is_space(tmp_path, tiny_model_dir, infinipot_home):
    notes = write_notes(tmp_path / "long.txt", lines=200)
    argv = ["read", str(notes), "--model", tiny_model_dir, "--pot-size", "1024", "--keep", "512"]

    def small_file_limit():  # what `ulimit -f 256` does: writes past 256 KB fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (256 * 1024, 256 * 1024))

    code, _, err = cli(infinipot_home, *argv, "--checkpoint-seconds", "0", preexec_fn=small_file_limit)
    assert code == 2
    line = one_error_line(err)
    assert "while saving the pot for long.txt" in line and line.endswith("run read again to resume"), line
    assert_database_intact(infinipot_home)
    (document,) = Store(infinipot_home).documents.all()
    (pot,) = Store(infinipot_home).pots.for_document(document.id)
    assert pot.status == "reading"  # resumable, not failed
    assert not list(infinipot_home.rglob("*.tmp"))  # no half-written file left behind

    code, out, err = cli(infinipot_home, *argv, "--json")
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["tokens"] > 0
    assert_database_intact(infinipot_home)


def test_os_errors_while_saving_are_described_for_the_user():
    from infinipot.storage.errors import describe_write_error

    doing, then = "saving the pot for a.txt", "run read again to resume"
    full = describe_write_error(OSError(28, "No space left on device"), doing, then)
    assert full == "no space left while saving the pot for a.txt; free space and run read again to resume"
    quota = describe_write_error(OSError(122, "Disk quota exceeded"), doing, then)
    assert quota.startswith("no space left (the disk quota is used up) while saving")
    denied = describe_write_error(PermissionError(13, "Permission denied", "/data/pots/1"), doing, then)
    assert denied.startswith("no permission to write while saving the pot for a.txt (/data/pots/1)")


# -- 3. a read-only data folder ---------------------------------------------------------------------------------
def without_write_permission() -> tuple[str, ...]:
    """A command prefix under which the folder's permission bits hold: root must drop CAP_DAC_OVERRIDE."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    assert setpriv, "running as root, the read-only test needs util-linux's setpriv to drop CAP_DAC_OVERRIDE"
    return (setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--inh-caps=-all")


def set_writable(home, writable: bool) -> None:
    for path in [home, *home.rglob("*")]:
        mode = path.stat().st_mode
        path.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.mark.slow  # child processes
def test_a_read_only_data_folder_still_lists_and_answers_and_refuses_writes_in_one_line(
    tmp_path, tiny_model_dir, infinipot_home
):
    service, doc_id = read_notes(tmp_path, tiny_model_dir, infinipot_home)
    service.store.close()
    wrap = without_write_permission()
    set_writable(infinipot_home, False)
    try:
        code, out, err = cli(infinipot_home, "list", "--json", wrap=wrap)
        assert code == 0, err
        assert [d["doc_id"] for d in json.loads(out)["documents"]] == [doc_id]

        code, out, err = cli(
            infinipot_home, "ask", doc_id, "What does the fox do?", "--max-new-tokens", "12", "--json", wrap=wrap
        )
        assert code == 0, err
        answer = json.loads(out.strip().splitlines()[-1])
        assert answer["answer"] and answer["conversation_id"] is None
        assert f"the data folder {infinipot_home} is read-only, so this answer is not saved" in err

        for argv, doing in (
            (["read", str(tmp_path / "notes.txt"), "--model", tiny_model_dir], "reading notes.txt"),
            (["delete", doc_id], "deleting notes.txt"),
        ):
            code, _, err = cli(infinipot_home, *argv, wrap=wrap)
            assert code == 2
            line = one_error_line(err)
            assert f"is read-only, and {doing} must write there" in line, line
    finally:
        set_writable(infinipot_home, True)
    assert_database_intact(infinipot_home)
    assert Store(infinipot_home).conversations.for_document(doc_id) == []  # nothing was written meanwhile


def test_a_read_only_connection_reads_and_refuses_writes(tmp_path):
    store = Store(tmp_path)
    document = store.documents.record("ab" * 32, "a.txt", "/a.txt", 3, 1, "text", None)
    store.close()
    db = open_database(tmp_path / DATABASE_NAME, read_only=True)
    assert [row["id"] for row in db["documents"].rows] == [document.id]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.execute("DELETE FROM documents")
    db.close()
    empty = open_database(tmp_path / "missing" / DATABASE_NAME, read_only=True)  # an empty library, in memory
    assert list(empty["documents"].rows) == [] and not (tmp_path / "missing").exists()


def test_a_read_only_store_refuses_what_must_write(tmp_path, monkeypatch):
    store = Store(tmp_path)
    monkeypatch.setattr(Store, "read_only", property(lambda self: True))
    with pytest.raises(ReadOnlyHome, match="is read-only, and reading a.txt must write there"):
        store.require_writable("reading a.txt")


# -- 4. special files -------------------------------------------------------------------------------------------
@pytest.mark.slow  # a child process
def test_a_fifo_is_refused_without_blocking(tmp_path, tiny_model_dir, infinipot_home):
    fifo = tmp_path / "f.txt"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match=r"'f.txt' is a named pipe \(FIFO\), not a regular file"):
        open_document(fifo)
    code, _, err = cli(infinipot_home, "read", str(fifo), "--model", tiny_model_dir, timeout=120)
    assert code == 2
    assert "is a named pipe (FIFO), not a regular file" in one_error_line(err)
    assert not (infinipot_home / DATABASE_NAME).exists() or Store(infinipot_home).documents.all() == []


# -- 5. following files on the server ---------------------------------------------------------------------------
def test_follows_are_allowed_only_under_the_named_folders(tmp_path, tiny_model_dir, infinipot_home):
    allowed, outside = tmp_path / "logs", tmp_path / "private"
    allowed.mkdir()
    outside.mkdir()
    secret = outside / "secret.log"
    secret.write_text("root:x:0:0\n")
    (allowed / "escape.log").symlink_to(secret)  # a link out of the folder is checked where it points
    log = write_notes(allowed / "app.log", lines=5)

    workspace = make_workspace(infinipot_home)
    workspace.follow_dirs = FollowDirs.for_server([str(allowed)], loopback=False)
    settings = tiny_settings(tiny_model_dir)
    try:
        for path in (secret, allowed / "escape.log", allowed / ".." / "private" / "secret.log"):
            with pytest.raises(ValueError, match=f"is outside the folders the app may follow \\({allowed}\\)"):
                workspace.follow_log(str(path), settings)
        assert workspace.follow_log(str(log), settings).startswith(f"Following {log}")
        assert workspace.followed_logs()[0]["path"] == str(log)
    finally:
        workspace.close()


def test_off_loopback_no_file_may_be_followed_unless_folders_are_named(tmp_path):
    with pytest.raises(ValueError, match="following files on the server is off; start the app with --follow-dir"):
        FollowDirs.for_server(None, loopback=False).check(str(tmp_path / "app.log"))
    assert FollowDirs.for_server(None, loopback=True).check(str(tmp_path / "app.log")) == tmp_path / "app.log"
    with pytest.raises(ValueError, match="--follow-dir /no/such/folder: no such folder"):
        FollowDirs.for_server(["/no/such/folder"], loopback=True)
    assert FollowDirs.for_server(None, loopback=False).describe() == "none: the app was started without --follow-dir"


# -- 6. the resume-point interval -------------------------------------------------------------------------------
def test_the_resume_point_interval_is_a_validated_read_setting():
    assert ReadSettings().checkpoint_interval() == 60.0
    assert ReadSettings(checkpoint_seconds=0).checkpoint_interval() == 0.0
    assert "a resume point every 15 s of reading" in ReadSettings(checkpoint_seconds=15).describe()
    for bad, message in ((-1, "must be 0 .after every piece. or more seconds"), ("soon", "must be a number")):
        with pytest.raises(ValueError, match=message):
            ReadSettings(checkpoint_seconds=bad).checkpoint_interval()


@pytest.mark.parametrize("seconds, saves_while_reading", [(0, True), (3600, False)])
def test_the_apps_reads_save_resume_points_at_the_chosen_interval(
    tmp_path, tiny_model_dir, infinipot_home, seconds, saves_while_reading
):
    workspace = make_workspace(infinipot_home, pace=0.05)
    notes = write_notes(tmp_path / "long.txt", lines=120)
    settings = {**tiny_settings(tiny_model_dir), "checkpoint_seconds": seconds}
    try:
        (result,) = workspace.add_files([str(notes)], settings)
        assert result["ok"], result
        store = workspace.service.store

        def pot_reading_past_1000_tokens():
            job = workspace.reads.latest(result["doc_id"])
            pots = store.pots.for_document(result["doc_id"]) if store.documents.get(result["doc_id"]) else []
            return pots and job.tokens_read >= 1000 and pots[0]

        pot = wait_until(pot_reading_past_1000_tokens, timeout=300, every=0.05, what="1,000 tokens read")
        latest = store.checkpoints.latest(pot.id)
        assert (latest is not None and latest.document_tokens > 0) == saves_while_reading
        workspace.reads.cancel(result["doc_id"])
    finally:
        workspace.close()
    assert_database_intact(infinipot_home)


def test_an_answer_stopped_by_its_reader_is_stored_as_far_as_it_got(tmp_path, tiny_model_dir, infinipot_home):
    service, doc_id = read_notes(tmp_path, tiny_model_dir, infinipot_home)
    pieces, stats, _ = service.ask(doc_id, "What does the fox do?", answer_from="pot", max_new_tokens=24)
    first = next(pieces)
    pieces.close()  # what the app's Stop does to the stream
    (conversation,) = service.conversations(doc_id)
    question, answer = service.messages(conversation["id"])
    assert question["content"] == "What does the fox do?"
    assert answer["content"] == first.strip() and answer["meta"]["stopped"] is True
    assert service.store.db.execute("SELECT count(*) FROM document_uses").fetchone()[0] == 0  # the use ended
