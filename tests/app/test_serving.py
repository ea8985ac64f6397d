"""Safe by default: the app listens on this machine only; on any other address it needs sign-in or it stops."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dpsurv_app.serving import is_loopback, refusal, sign_in_configured

ROOT = Path(__file__).resolve().parents[2]
AUTH = {"auth": {"redirect_uri": "http://h/oauth2callback", "cookie_secret": "s", "client_id": "dpsurv",
                 "client_secret": "x", "server_metadata_url": "http://idp/.well-known/openid-configuration"}}


@pytest.mark.parametrize("address, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                               ("[::1]", True), ("localhost", True), ("0.0.0.0", False), ("", False),
                                               (None, False), ("::", False), ("10.0.0.5", False),
                                               ("example.org", False)])
def test_only_loopback_counts_as_this_machine(address, loopback):
    assert is_loopback(address) is loopback
    assert (refusal(address, False) is None) is loopback
    assert refusal(address, True) is None  # sign-in configured: any address


def test_the_sentence_says_how_to_serve_it():
    sentence = refusal("0.0.0.0", False)
    assert sentence is not None and "127.0.0.1" in sentence and "[auth]" in sentence


def test_sign_in_needs_a_provider():
    assert sign_in_configured(AUTH)
    assert sign_in_configured({"auth": {"redirect_uri": "r", "cookie_secret": "s",
                                        "hospital": {"client_id": "c", "server_metadata_url": "u"}}})
    assert not sign_in_configured({}) and not sign_in_configured({"auth": {"redirect_uri": "r"}})


def test_the_project_config_listens_on_loopback():
    import tomllib

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert is_loopback(config["server"]["address"])


def _launcher(cwd: Path, address: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpsurv_app.serving", address], cwd=cwd, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}, timeout=60)


def test_the_launcher_refuses_every_interface_without_sign_in(tmp_path):
    out = _launcher(tmp_path, "0.0.0.0")
    assert out.returncode == 2 and out.stderr.startswith("error: dpsurv will not listen") and "Traceback" not in out.stderr
    assert _launcher(tmp_path, "127.0.0.1").returncode == 0
    (tmp_path / ".streamlit").mkdir()
    lines = ["[auth]"] + [f'{k} = "{v}"' for k, v in AUTH["auth"].items()]
    (tmp_path / ".streamlit" / "secrets.toml").write_text("\n".join(lines) + "\n")
    assert _launcher(tmp_path, "0.0.0.0").returncode == 0


def test_the_app_stops_when_served_on_every_interface_without_sign_in():
    code = ("from streamlit import config\n"
            "config.set_option('server.address', '0.0.0.0')\n"
            "from streamlit.testing.v1 import AppTest\n"
            f"AppTest.from_file({str(ROOT / 'dpsurv_app' / 'app.py')!r}, default_timeout=60).run()\n"
            "print('served')\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "served" not in out.stdout
    assert "dpsurv will not listen on address '0.0.0.0' without sign-in" in out.stderr


def test_make_run_and_the_image_go_through_the_check():
    assert "dpsurv_app.serving" in (ROOT / "Dockerfile").read_text()
    assert "127.0.0.1" in (ROOT / "Makefile").read_text()
