"""The installed app's command (``dpsurv-app``, :mod:`dpsurv_app.__main__`): it runs ``streamlit run`` on the installed
app.py with the project's settings, checks the address before any server starts, and without Streamlit says which extra
to install in one sentence. No server is started here (tests/packaging/test_wheel.py runs the installed command)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dpsurv_app import __main__ as command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def started(monkeypatch) -> list[list[str]]:
    """The commands main would have run, none run."""
    calls: list[list[str]] = []
    monkeypatch.setattr(command, "start", lambda argv: calls.append(argv) or 0)
    return calls


def test_the_app_and_its_nine_pages_sit_together():
    assert command.APP == ROOT / "dpsurv_app" / "app.py" and command.APP.is_file()
    assert len(list((command.APP.parent / "pages").glob("[0-9]_*.py"))) == 9


def test_the_settings_are_the_checkouts_config(started):
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    flat = {f"{section}.{key}": str(value).lower() for section, keys in config.items() for key, value in keys.items()}
    assert command.SETTINGS == flat


def test_it_runs_streamlit_on_the_installed_app_and_the_callers_options_come_last(started, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .streamlit/secrets.toml here
    assert command.main(["--server.port", "8600"]) == 0
    (argv,) = started
    assert argv[:5] == [sys.executable, "-m", "streamlit", "run", str(command.APP)]
    assert argv[-2:] == ["--server.port", "8600"]
    assert argv[argv.index("--server.address") + 1] == "127.0.0.1"
    assert argv[argv.index("--client.disableDataExport") + 1] == "true"


def test_another_address_without_sign_in_stops_before_streamlit(started, monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    assert command.address(["--server.address=0.0.0.0"]) == "0.0.0.0"
    assert command.address(["--server.address", "10.0.0.5", "--server.address", "localhost"]) == "localhost"
    assert command.main(["--server.address", "0.0.0.0"]) == 2
    assert started == [] and "without sign-in" in capsys.readouterr().err


def test_without_streamlit_one_sentence_and_exit_2(started, monkeypatch, capsys):
    real = command.importlib.util.find_spec
    monkeypatch.setattr(command.importlib.util, "find_spec", lambda name: None if name == "streamlit" else real(name))
    assert command.main([]) == 2
    out = capsys.readouterr()
    assert started == [] and out.out == ""
    assert out.err.strip() == ("error: the app needs Streamlit, which is not installed: install the app extra: "
                               "pip install 'dpsurv[app]'")


def test_help_needs_no_streamlit_and_starts_nothing():
    proc = subprocess.run([sys.executable, "-m", "dpsurv_app", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: dpsurv-app") and str(ROOT / "dpsurv_app" / "app.py") in proc.stdout
