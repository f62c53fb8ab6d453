"""`infinipot ui`: loopback by default, a password required elsewhere, and a UI module that never imports torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

from infinipot.app.cli import build_parser, main
from infinipot.app.service import LOADED_POTS_KEPT
from infinipot.app.web.page.launch import check_exposure, is_loopback, parse_auth


def test_ui_has_help_with_its_options(capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["ui", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert all(option in out for option in ("--host", "--port", "--auth", "--max-upload-mb", "--loaded-pots"))
    args = build_parser().parse_args(["ui"])
    assert (args.host, args.port, args.auth, args.loaded_pots) == ("127.0.0.1", 7860, None, LOADED_POTS_KEPT)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["ui", "--host", "0.0.0.0"], "--host 0.0.0.0 lets other machines reach the app; add --auth USER:PASSWORD"),
        (["ui", "--host", "192.168.1.5", "--auth", "admin"], "--auth must be USER:PASSWORD, both non-empty"),
        (["ui", "--max-upload-mb", "0"], "--max-upload-mb must be at least 1, got 0"),
        (["ui", "--loaded-pots", "0"], "--loaded-pots must be at least 1, got 0"),
    ],
)
def test_unsafe_or_invalid_ui_options_are_one_line_errors(capsys, argv, fragment, monkeypatch):
    monkeypatch.setattr("infinipot.app.web.workspace.open_workspace", lambda **kwargs: pytest.fail("app was started"))
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [f"infinipot: error: {fragment}"]


def test_loopback_needs_no_password_and_other_hosts_do():
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        assert is_loopback(host)
        check_exposure(host, None)
    for host in ("0.0.0.0", "192.168.1.5", "example.org"):
        assert not is_loopback(host)
        with pytest.raises(ValueError, match="add --auth"):
            check_exposure(host, None)
        check_exposure(host, ("user", "secret"))
    assert parse_auth("user:pa:ss") == ("user", "pa:ss")


@pytest.mark.slow  # a subprocess
def test_the_ui_modules_do_not_import_torch():
    code = (
        "import sys; import infinipot.app.web.page, infinipot.app.web.page.app, infinipot.app.web.page.handlers, "
        "infinipot.app.web.page.render; assert 'torch' not in sys.modules, 'torch imported'"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
