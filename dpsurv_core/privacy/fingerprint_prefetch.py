"""The content fingerprint of a release's data file, started as the command starts.

A release on a Parquet or CSV file needs the file's content fingerprint (:func:`dpsurv_core.privacy.fingerprint.
fingerprint_file`, two parallel DuckDB scans) and, before that, imports dpsurv's analysis modules and validates the
cohort in the engine. :func:`start`, called by ``python -m dpsurv_core`` before it builds its parser, looks at the
command line alone (a release command, ``--data`` naming an existing Parquet/CSV/TSV file, no ``--seed``, no help) and
computes the fingerprint in a background thread, which runs while the main thread imports and validates (DuckDB
releases Python's lock while it scans). :func:`take` hands the result to ``fingerprint_file``, which waits for the
thread when it is still running; the value is the same as computing it there (and it is kept in the per-file cache as
usual). Any failure in the thread is dropped: ``fingerprint_file`` then computes it itself, so an error reads the same.
``DPSURV_FINGERPRINT_PREFETCH=off`` turns it off.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path

PREFETCH_ENV = "DPSURV_FINGERPRINT_PREFETCH"
COMMANDS = ("km", "logrank", "weibull", "regression")
SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".txt", ".tab")
_RUNNING: dict[str, tuple[threading.Thread, dict]] = {}


def _data_path(argv: list[str]) -> str | None:
    for i, a in enumerate(argv):
        if a == "--data" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--data="):
            return a.split("=", 1)[1]
    return None


def wanted(argv: list[str]) -> Path | None:
    """The data file whose fingerprint this command line will need, or None."""
    if os.environ.get(PREFETCH_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS or any(a in ("-h", "--help") or a == "--seed" or a.startswith("--seed=") for a in argv):
        return None
    text = _data_path(argv)
    if not text or Path(text).suffix.lower() not in SUFFIXES:
        return None
    path = Path(text)
    return path if path.is_file() else None


def start(argv: list[str]) -> None:
    """Start the fingerprint of the command line's data file in a background thread (see the module docstring)."""
    path = wanted(argv)
    if path is None:
        return
    key = str(path.resolve())
    if key in _RUNNING:
        return
    st = path.stat()
    box: dict = {"stamp": (st.st_size, st.st_mtime_ns)}  # the file as it was before it is read

    def work() -> None:
        try:
            from dpsurv_core.privacy.fingerprint import fingerprint_file

            box["value"] = fingerprint_file(path, prefetched=False)
        except BaseException:  # noqa: BLE001 - the main thread computes it again and reports any error
            box.pop("value", None)

    thread = threading.Thread(target=work, name="dpsurv-fingerprint", daemon=True)
    _RUNNING[key] = (thread, box)
    thread.start()


def take(path: Path) -> str | None:
    """The prefetched fingerprint of ``path`` (waiting for its thread), or None when there is none or the file changed
    since it was started."""
    entry = _RUNNING.pop(str(path.resolve()), None)
    if entry is None:
        return None
    thread, box = entry
    thread.join()
    if "value" not in box:
        return None
    st = path.stat()
    return box["value"] if box.get("stamp") == (st.st_size, st.st_mtime_ns) else None


@atexit.register
def _wait() -> None:
    """A command that ends before it needed the fingerprint (an error, a non-private run) interrupts the thread's
    DuckDB query and waits for it, so DuckDB is never torn down under a running query."""
    if not _RUNNING:
        return
    import sys

    sql = sys.modules.get("dpsurv_core.privacy.fingerprint_sql")
    if sql is not None:
        sql.interrupt_all()
    for thread, _ in list(_RUNNING.values()):
        thread.join()
