"""The ledger's database file: what may be opened as a ledger, how a new one is made, and SQLite's failures as
sentences.

A path that does not exist becomes a new ledger, made whole in a temporary file beside it and linked into place, so
that no process ever opens a half-made one. An existing path must be a regular file in SQLite's format that holds the
ledger's ``records`` table: ``/dev/null``, an empty file, a file of another kind or another program's SQLite database
is refused (:class:`LedgerFileError`), never taken for a fresh ledger, since a ledger started afresh forgets every
budget spent. SQLite's own failures while the ledger is read or written (a damaged page, a file locked too long)
become one sentence too (:func:`guarded`, :func:`unreadable`). :func:`verify_database` runs SQLite's integrity check
before the hash chain's walk, so a damaged file is never reported intact.
"""

from __future__ import annotations

import functools
import os
import secrets
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.chain import _CHAIN_QUERY, _SCHEMA, LEDGER_ENV, Verification, walk_chain

SQLITE_HEADER = b"SQLite format 3\x00"
RECORD_COLUMNS = {"id", "time", "fingerprint", "kind", "body", "prev_hash", "hash"}
CHOOSE = f"choose another path with --ledger or {LEDGER_ENV}"


class LedgerFileError(ParameterError):
    """The ledger path holds no usable ledger (not a ledger, damaged, or locked): one sentence, nothing recorded."""


def check_file(path: Path) -> bool:
    """True when ``path`` holds an SQLite file that may be a ledger, False when nothing is there (a new ledger will
    be made); anything else is refused with one sentence."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise LedgerFileError(f"The ledger {str(path)!r} cannot be read ({exc.strerror}): {CHOOSE}.") from None
    if not stat.S_ISREG(info.st_mode):
        raise LedgerFileError(f"The ledger path {str(path)!r} is not a regular file (a device, folder or pipe), so it "
                              f"cannot hold a ledger: {CHOOSE}.")
    if info.st_size == 0:
        raise LedgerFileError(f"The ledger {str(path)!r} is an empty file, not a dpsurv ledger, and is not taken for a "
                              "new one (a ledger started afresh forgets every budget spent): restore the ledger from a "
                              f"copy you trust, or remove the empty file or {CHOOSE} to start a new ledger.")
    try:
        with path.open("rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise LedgerFileError(f"The ledger {str(path)!r} cannot be read ({exc.strerror}): {CHOOSE}.") from None
    if head != SQLITE_HEADER:
        raise LedgerFileError(f"{str(path)!r} is not an SQLite database, so it is not a dpsurv ledger database: {CHOOSE}.")
    return True


def unreadable(path: Path, exc: sqlite3.Error) -> LedgerFileError:
    """One sentence for an SQLite failure on the ledger at ``path``."""
    text = str(exc) or type(exc).__name__
    if "locked" in text or "busy" in text:
        return LedgerFileError(f"The ledger {str(path)!r} stayed locked by another process ({text}): wait for the other "
                               "release to finish and try again.")
    return LedgerFileError(f"The ledger database {str(path)!r} could not be read ({text}): it may be damaged; run "
                           "`python -m dpsurv_core budget verify` and restore the ledger from a copy you trust.")


def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """A ledger store method (its object has ``path``) whose SQLite failures are :func:`unreadable` sentences."""
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise unreadable(self.path, exc) from None

    return wrapper


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to the existing ledger at ``path`` (autocommit; write-ahead log); never creates a file, and
    writes nothing into a file without the ledger's records table."""
    if not check_file(path):
        raise LedgerFileError(f"The ledger {str(path)!r} no longer exists (it was moved or deleted while in use): "
                              f"restore it from a copy you trust, or {CHOOSE}.")
    try:
        con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        try:
            _check_tables(con, path)  # before the first write (the journal mode is one)
        except LedgerFileError:
            con.close()
            raise
        con.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error as exc:
        raise LedgerFileError(f"{str(path)!r} is not a dpsurv ledger database ({exc}): {CHOOSE}.") from None
    return con


def _check_tables(con: sqlite3.Connection, path: Path) -> None:
    columns = {row[1] for row in con.execute("PRAGMA table_info(records)")}
    if not RECORD_COLUMNS <= columns:
        raise LedgerFileError(f"{str(path)!r} is an SQLite database without the ledger's records table, so it is not a "
                              f"dpsurv ledger database (another program's database is never written into): {CHOOSE}.")


def _make(path: Path, timeout: float) -> None:
    """A new ledger at ``path``: made in a temporary file beside it, then linked into place (a ledger another process
    made there first is kept)."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.new")
    try:
        con = sqlite3.connect(temp, timeout=timeout, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            con.executescript(_SCHEMA)
        finally:
            con.close()  # the last connection: the write-ahead log is folded into the file
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process made it meanwhile: theirs is checked like any existing ledger
        except OSError:  # a file system without hard links: make it in place
            if not path.exists():
                con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
                try:
                    con.execute("PRAGMA journal_mode=WAL")
                    con.executescript(_SCHEMA)
                finally:
                    con.close()
    except sqlite3.Error as exc:
        raise LedgerFileError(f"A new ledger could not be made at {str(path)!r} ({exc}): {CHOOSE}.") from None
    finally:
        for leftover in (temp, temp.with_name(temp.name + "-wal"), temp.with_name(temp.name + "-shm")):
            leftover.unlink(missing_ok=True)


def prepare(path: Path, timeout: float) -> None:
    """Make a new ledger where none is, or check that the file at ``path`` is one (and give a ledger written before
    data set keys its secret's table)."""
    if not check_file(path):
        _make(path, timeout)
    con = connect(path, timeout)
    try:
        con.executescript(_SCHEMA)
    except sqlite3.Error as exc:
        raise unreadable(path, exc) from None
    finally:
        con.close()


def integrity(con: sqlite3.Connection, quick: bool = False) -> str | None:
    """None when SQLite finds the database file sound (``PRAGMA integrity_check``; ``quick``: ``quick_check``, which
    skips the indexes' contents), else its first complaint. A connection with its own ``integrity_check`` (the
    PostgreSQL ledger's, which has no file to check) answers for itself."""
    own = getattr(con, "integrity_check", None)
    if own is not None:
        return own(quick)
    try:
        rows = con.execute("PRAGMA quick_check" if quick else "PRAGMA integrity_check").fetchmany(3)
    except sqlite3.Error as exc:
        return str(exc) or type(exc).__name__
    if rows and rows[0][0] == "ok":
        return None
    return "; ".join(str(r[0]) for r in rows) or "no answer"


def verify_database(con: sqlite3.Connection, quick: bool = False) -> Verification:
    """SQLite's integrity check (:func:`integrity`), then the hash chain's walk (:func:`walk_chain`)."""
    problem = integrity(con, quick)
    if problem is None:
        try:
            return walk_chain(con.execute(_CHAIN_QUERY))
        except sqlite3.Error as exc:
            problem = str(exc) or type(exc).__name__
    return Verification(False, 0, None, f"the database file fails SQLite's integrity check: {problem}")
