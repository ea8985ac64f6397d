"""The ledger database's lowest layer: its schema, the hash chain and the data set keys.

Records are append-only and hash-chained (:func:`record_hash`, :func:`walk_chain`). A data set's budget is kept
under its *key*, not its content fingerprint: the fingerprint (:mod:`dpsurv_core.privacy.fingerprint`) is a public
function of every cell, so anyone who knows all rows but one could test candidate values against it. The key is
HMAC-SHA256 of the fingerprint under a 256-bit secret drawn from the operating system when the ledger database is
created and kept inside it (:func:`dataset_key`); records, exports and screens show only the key, which without the
secret says nothing about the data (Bellare, Canetti and Krawczyk 1996). Records written before keys existed hold the
raw fingerprint; they are found by it and shown under the key.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpsurv_core.errors import DpsurvError

LEDGER_ENV = "DPSURV_LEDGER"
GENESIS = "0" * 64
CAP_SET, CAP_RAISE, CAP_LOWER, RELEASE = "cap-set", "cap-raise", "cap-lower", "release"
ALLOW_LABEL_ONLY = "allow-label-only"
ALLOW_DISCLOSURE_CONTROL = "allow-disclosure-control"
# a data set's link from its version-1 content fingerprint to version 2 (``budget verify --refingerprint``): its body
# lists the stored values (keys, or raw fingerprints already in the ledger) whose records belong to the data set
FINGERPRINT_LINK = "fingerprint-link"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY,
    time TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_fingerprint ON records (fingerprint);
CREATE TABLE IF NOT EXISTS ledger_secret (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS ledger_secret_no_update BEFORE UPDATE ON ledger_secret
    BEGIN SELECT RAISE(ABORT, 'the ledger secret is kept for the life of the ledger'); END;
CREATE TRIGGER IF NOT EXISTS ledger_secret_no_delete BEFORE DELETE ON ledger_secret
    BEGIN SELECT RAISE(ABORT, 'the ledger secret is kept for the life of the ledger'); END;
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
-- INSERT OR REPLACE removes the row it collides with without firing the delete trigger: refuse any id that is
-- not past the newest record
CREATE TRIGGER IF NOT EXISTS records_no_replace BEFORE INSERT ON records
    WHEN NEW.id <= (SELECT COALESCE(MAX(id), 0) FROM records)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
-- checkpoints of the verified chain head (dpsurv_core.privacy.checkpoint): append-only like the records
CREATE TABLE IF NOT EXISTS checkpoints (
    record_id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS checkpoints_no_update BEFORE UPDATE ON checkpoints
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS checkpoints_no_delete BEFORE DELETE ON checkpoints
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS checkpoints_no_replace BEFORE INSERT ON checkpoints
    WHEN NEW.record_id <= (SELECT COALESCE(MAX(record_id), 0) FROM checkpoints)
    BEGIN SELECT RAISE(ABORT, 'the ledger is append-only'); END;
"""


_SCHEMA_READY: set[str] = set()


def default_path() -> Path:
    """``$DPSURV_LEDGER`` if set to a path, else ``$XDG_DATA_HOME/dpsurv/ledger.sqlite3`` (``~/.local/share`` by
    default). A ``postgresql://`` URL in ``$DPSURV_LEDGER`` is opened by :class:`LedgerStore` itself; this path is
    then only the folder other local files (the cell-key secret) are kept beside."""
    env = os.environ.get(LEDGER_ENV)
    if env and not is_ledger_url(env):
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "dpsurv" / "ledger.sqlite3"


def is_ledger_url(value: str) -> bool:
    """Whether a ledger location is a PostgreSQL URL (``postgresql://`` or ``postgres://``) rather than a file."""
    return value.startswith(("postgresql://", "postgres://"))


def record_hash(prev_hash: str, rid: int, time: str, fingerprint: str, kind: str, body: str) -> str:
    """SHA-256 over the previous record's hash and this record's fields."""
    h = hashlib.sha256()
    for part in (prev_hash, str(rid), time, fingerprint, kind, body):
        h.update(part.encode())
        h.update(b"\x1f")
    return h.hexdigest()


def _canonical(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), default=_json_default, allow_nan=True)


@dataclass(frozen=True)
class Record:
    """One row of the ledger database."""

    id: int
    time: str
    fingerprint: str
    kind: str
    body: dict[str, Any]
    hash: str


@dataclass(frozen=True)
class Verification:
    ok: bool
    records: int
    first_bad: int | None = None
    message: str = ""

    @property
    def status(self) -> str:
        """"intact", "broken at record N", or "damaged" (the file fails SQLite's integrity check: no record is named)."""
        if self.ok:
            return "intact"
        return "damaged" if self.first_bad is None else f"broken at record {self.first_bad}"

    @property
    def subject(self) -> str:
        """What is broken, for a sentence: the hash chain, or the database file itself."""
        return "The ledger database" if self.first_bad is None and not self.ok else "The ledger's hash chain"

    def warning(self) -> str | None:
        """One sentence for a reader of the ledger when the chain is broken (None when it is intact)."""
        if self.ok:
            return None
        return (f"{self.subject} is {self.status} ({self.message}), so the cap, totals and releases read from "
                "it may have been altered and every release is refused: run `python -m dpsurv_core budget verify` and "
                "restore the ledger from a copy you trust.")


class ChainBrokenError(DpsurvError):
    """The ledger's hash chain is broken: a release is refused before anything is computed or charged."""

    def __init__(self, verification: Verification) -> None:
        super().__init__(
            f"{verification.subject} is {verification.status} ({verification.message}), so its totals cannot be "
            "trusted and no release is made: run `python -m dpsurv_core budget verify` and restore the ledger from a "
            "copy you trust.")
        self.verification = verification


def walk_chain(rows: Iterable[tuple], after: int = 0, head: str = GENESIS) -> Verification:
    """Walk rows ``(id, time, fingerprint, kind, body, prev_hash, hash)`` in id order: ids contiguous from 1, each
    ``prev_hash`` the hash before, each ``hash`` recomputed (about 10 ms per 1,000 records of 7 kB each).

    ``after`` and ``head``: the rows start after record ``after``, whose hash is ``head`` (a checkpoint, trusted by
    the caller); the count returned is still every record up to the newest."""
    prev, n, bad = head, after, None
    for expected, (rid, time, fp, kind, body, prev_hash, h) in enumerate(rows, start=after + 1):
        n = expected
        if bad is not None:
            continue  # count the rest, report the first
        if rid != expected:
            bad = (expected, f"record {expected} is missing (deleted)")
        elif prev_hash != prev:
            bad = (rid, f"record {rid} does not follow record {rid - 1} (a record before it was edited or deleted)")
        elif record_hash(prev_hash, rid, time, fp, kind, body) != h:
            bad = (rid, f"record {rid} was edited after it was written")
        prev = h
    if bad is not None:
        return Verification(False, n, bad[0], bad[1])
    return Verification(True, n, None, f"{n} record(s), chain intact, head {prev[:16]}")


_CHAIN_QUERY = "SELECT id, time, fingerprint, kind, body, prev_hash, hash FROM records ORDER BY id"




def _json_default(obj: Any) -> Any:
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(obj)


KEY_PREFIX = "k"  # a key is "k" + 63 hex digits; a raw fingerprint (records before keys) is 64 hex digits


def is_key(value: str) -> bool:
    return value.startswith(KEY_PREFIX)


def ledger_secret(con: sqlite3.Connection) -> bytes:
    """The ledger's 256-bit secret, drawn with :func:`secrets.token_hex` the first time it is asked for and kept in
    the database (its triggers refuse any change)."""
    query = "SELECT value FROM ledger_secret WHERE name = 'dataset-key'"
    row = con.execute(query).fetchone()
    if row is None:  # a ledger written before keys existed, or a new one
        con.execute("INSERT OR IGNORE INTO ledger_secret (name, value) VALUES ('dataset-key', ?)",
                    (secrets.token_hex(32),))
        row = con.execute(query).fetchone()
    return bytes.fromhex(row[0])


def dataset_key(secret: bytes, fingerprint: str) -> str:
    """The key a data set's budget is kept under: HMAC-SHA256(secret, fingerprint), shown as "k" + 63 hex digits.
    A key (or the empty string: no data set) is returned as it is."""
    if not fingerprint or is_key(fingerprint):
        return fingerprint
    return KEY_PREFIX + hmac.new(secret, fingerprint.encode(), hashlib.sha256).hexdigest()[:63]
