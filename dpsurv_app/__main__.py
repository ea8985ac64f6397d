"""``dpsurv-app`` (or ``python -m dpsurv_app``): start the installed Streamlit app on http://127.0.0.1:8501.

It runs ``python -m streamlit run`` on this package's ``app.py`` (its ``pages/`` are installed next to it) with the
settings of the checkout's ``.streamlit/config.toml`` (:data:`SETTINGS`: this machine only, no built-in table export,
...) given as flags, then any arguments of its own (``dpsurv-app --server.port 8600``), which win. Another address
than the loopback one needs sign-in: the check ``make run`` and the Docker image run (:mod:`dpsurv_app.serving`) runs
first. Without Streamlit (``pip install dpsurv`` has no app extra) it says so in one sentence and exits 2.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent / "app.py"
MISSING = ("error: the app needs Streamlit, which is not installed: install the app extra: "
           "pip install 'dpsurv[app]'")

# .streamlit/config.toml's settings (tests/app/test_app_command.py keeps the two the same): Streamlit reads that file
# from the directory it starts in, which for an installed app is anywhere
SETTINGS = {
    "server.address": "127.0.0.1",
    "server.headless": "true",
    "server.fileWatcherType": "none",
    "server.maxUploadSize": "200",
    "browser.gatherUsageStats": "false",
    "client.toolbarMode": "minimal",
    "client.disableDataExport": "true",
}

USAGE = f"""usage: dpsurv-app [STREAMLIT OPTION ...]

Start dpsurv's Streamlit app ({APP}) on http://127.0.0.1:8501.
Options are those of `streamlit run` (e.g. --server.port 8600); they override the app's settings:
{chr(10).join(f"  --{k} {v}" for k, v in SETTINGS.items())}
Another address than 127.0.0.1 needs sign-in configured in .streamlit/secrets.toml (docs/deployment.md)."""


def address(args: list[str]) -> str:
    """The address the server will listen on: the last ``--server.address`` of ``args``, else the app's setting."""
    found = SETTINGS["server.address"]
    for i, arg in enumerate(args):
        if arg == "--server.address" and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("--server.address="):
            found = arg.partition("=")[2]
    return found


def command(args: list[str]) -> list[str]:
    """``python -m streamlit run APP`` with the app's settings, then ``args`` (Streamlit keeps an option's last value)."""
    flags = [part for key, value in SETTINGS.items() for part in (f"--{key}", value)]
    return [sys.executable, "-m", "streamlit", "run", str(APP), *flags, *args]


def start(argv: list[str]) -> int:
    """Become the server (exec: a stop signal, Ctrl-C or ``kill``, reaches Streamlit itself); where exec is not the
    way (Windows), run it as a child and wait."""
    if os.name == "posix":
        os.execv(argv[0], argv)
    try:
        return subprocess.call(argv)
    except KeyboardInterrupt:  # Ctrl-C reaches the server too, which stops on its own
        return 130


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if any(a in ("-h", "--help") for a in args):
        print(USAGE)
        return 0
    if importlib.util.find_spec("streamlit") is None:
        print(MISSING, file=sys.stderr)
        return 2
    from dpsurv_app import serving

    refused = serving.main([address(args)])
    if refused:
        return refused
    return start(command(args))


if __name__ == "__main__":
    raise SystemExit(main())
