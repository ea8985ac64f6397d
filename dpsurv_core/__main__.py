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
    """End the process with ``code`` once a command is done. The exit handlers run (they close the ledger's and
    DuckDB's connections: DuckDB then removes what it spilled to disk) and both output streams are flushed, as at any
    exit, but the interpreter's teardown is skipped: freeing every module and unloading the NumPy, DuckDB and OpenDP
    libraries took 0.1-0.15 s of every command, a tenth of a release on a 2x10^7-row file. While another non-daemon
    thread runs, the process exits the usual way (the interpreter waits for it). Output that cannot be written (a
    full disk) is said in one sentence on standard error and exits 120 when the command had succeeded, as the
    interpreter does."""
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)
    failed = _flush()
    atexit._run_exitfuncs()
    failed = _flush() or failed
    if failed:
        try:  # through the stream's own descriptor: with standard error closed, 2 may be a file the command opened
            if sys.stderr is not None:
                os.write(sys.stderr.fileno(), f"error: the output could not be written ({failed}).\n".encode())
        except (OSError, ValueError):
            pass
        os._exit(code or 120)
    os._exit(code)


def _flush() -> str | None:
    """Flush standard output and standard error (either may be closed: None); the first failure, as text."""
    failed = None
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except (OSError, ValueError) as exc:
            failed = failed or str(exc) or type(exc).__name__
    return failed


def console() -> NoReturn:
    """The ``dpsurv`` command."""
    exit_now(main())


if __name__ == "__main__":
    console()
