"""The command line ends its process without the interpreter's teardown (:func:`dpsurv_core.__main__.exit_now`), and
nothing a normal exit does for the user is lost: the exit status, every byte written to both streams, the exit
handlers (a release's ledger and background scan close in them), and the wait for a non-daemon thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(body: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess:
    code = "from dpsurv_core.__main__ import exit_now\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                          timeout=60)


def test_status_streams_and_exit_handlers_are_kept() -> None:
    done = _run("""
        import atexit, sys
        atexit.register(lambda: print("handler ran", flush=False))
        sys.stdout.write("x" * 200_000)
        sys.stderr.write("warned\\n")
        exit_now(3)
    """)
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "handler ran\n"
    assert done.stderr == "warned\n"


def test_a_running_non_daemon_thread_is_waited_for() -> None:
    done = _run("""
        import threading, time
        def late():
            time.sleep(0.5)
            print("thread finished", flush=False)
        threading.Thread(target=late).start()
        exit_now(0)
    """)
    assert done.returncode == 0
    assert done.stdout == "thread finished\n"


def test_a_stream_that_cannot_be_written_is_not_a_success() -> None:
    done = _run("""
        import os, sys
        os.close(1)
        sys.stdout.write("lost")
        exit_now(0)
    """)
    assert done.returncode != 0


def test_the_command_line_uses_it() -> None:
    """``python -m dpsurv_core`` and the ``dpsurv`` script (``console``) end through it: a refused command line
    still exits 2 with its one sentence, and a km run prints its whole JSON."""
    bad = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", "--data", "lung", "--epsilon", "-1", "--seed",
                          "1", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.strip()
    good = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", "--data", "lung", "--epsilon", "1", "--seed",
                           "1", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert good.returncode == 0 and good.stdout.rstrip().endswith("}")
    script = (ROOT / "pyproject.toml").read_text()
    assert 'dpsurv = "dpsurv_core.__main__:console"' in script
