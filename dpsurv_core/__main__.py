"""``python -m dpsurv_core`` and the installed ``dpsurv`` command: the same command line (:mod:`dpsurv_core.cli`)."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def main(argv: list[str] | None = None) -> int:
    """Run one command of the command line on ``argv`` (``sys.argv[1:]`` when None) and return its exit status. A
    release's data file is scanned in the background (:mod:`dpsurv_core.privacy.fingerprint_prefetch`) from before the
    command line's modules are imported, so the scan and the imports overlap."""
    from dpsurv_core.privacy.fingerprint_prefetch import start

    start(sys.argv[1:] if argv is None else argv)
    from dpsurv_core.cli import main as cli_main

    return cli_main(argv)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once a command is done. The exit handlers run and both output streams are flushed,
    as at any exit, but the interpreter's teardown is skipped: freeing every module and unloading the NumPy, DuckDB and
    OpenDP libraries took 0.1-0.15 s, a tenth of a release on a 2x10^7-row file. While another non-daemon thread runs
    (the interpreter would wait for it), or when a stream cannot be flushed (the interpreter reports it), the process
    exits the usual way."""
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        others.append(threading.main_thread())
    if others:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        os._exit(code or 120)  # what the interpreter exits with when it cannot flush at exit
    os._exit(code)


def console() -> NoReturn:
    """The ``dpsurv`` command."""
    exit_now(main())


if __name__ == "__main__":
    console()
