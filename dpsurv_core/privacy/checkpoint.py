"""Checkpoints of the ledger's hash chain, so that a write does not walk the whole ledger.

Every release and cap change is checked against the hash chain inside its write lock, and walking every record
(:func:`~dpsurv_core.privacy.chain.walk_chain`) costs time in proportion to the ledger: some 0.3 s per write on a
ledger of 10,000 records of 7 kB. A checkpoint is the hash of a record the chain was verified up to, kept in the
database's ``checkpoints`` table (append-only, its triggers refuse UPDATE and DELETE as the records' do) and written
in the same transaction as the record it names, at most every :data:`EVERY` records. A write then walks only the
records after the newest checkpoint, starting from its hash, once it has checked that the checkpoint still matches
the stored hash of the record it names (:func:`verify_tail`): a record before it rewritten with its hashes
recomputed changes that stored hash and refuses the write. What a write no longer finds on its own is a record
before the checkpoint edited while its stored hash was left as it was; ``budget verify`` (:func:`verify_all`) still
walks every record from the start, and checks every checkpoint against the walk.

This is the trusted-checkpoint idea of append-only logs (Crosby and Wallach 2009; Laurie, Langley and Kasper 2013):
a verifier that has checked a prefix once keeps its head and checks only what was appended since.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from dpsurv_core.privacy.chain import _CHAIN_QUERY, Verification, walk_chain
from dpsurv_core.privacy.ledger_file import verify_database

EVERY = 256  # records between checkpoints: a write walks at most this many (some 3 ms for records of 7 kB)

_TAIL_QUERY = _CHAIN_QUERY.replace("FROM records ORDER BY id", "FROM records WHERE id > ? ORDER BY id")


@dataclass(frozen=True)
class Checkpoint:
    """A record the chain was verified up to: its id, its hash and when the checkpoint was written."""

    record_id: int
    hash: str
    time: str


def latest(con: sqlite3.Connection) -> Checkpoint | None:
    """The newest checkpoint, or None (a new ledger, a ledger shorter than :data:`EVERY` records, or one written
    before checkpoints existed, whose table is made when the ledger is opened)."""
    try:
        row = con.execute("SELECT record_id, hash, time FROM checkpoints ORDER BY record_id DESC LIMIT 1").fetchone()
    except sqlite3.OperationalError:  # no table: a file a process opened before it was given one
        return None
    return None if row is None else Checkpoint(int(row[0]), str(row[1]), str(row[2]))


def verify_tail(con: sqlite3.Connection) -> tuple[Verification, int]:
    """The chain as a write checks it, with the id of the checkpoint it started from (0: none).

    With no checkpoint: SQLite's quick check of the file and the walk of every record
    (:func:`~dpsurv_core.privacy.ledger_file.verify_database`). With one: the record it names must still hold its
    hash, then only the records after it are walked, from that hash. A checkpoint that no longer matches is
    reported after a full walk (which names the first broken record when it finds one)."""
    mark = latest(con)
    if mark is None:
        return verify_database(con, quick=True), 0
    row = con.execute("SELECT hash FROM records WHERE id = ?", (mark.record_id,)).fetchone()
    if row is None or row[0] != mark.hash:
        full = verify_database(con, quick=True)
        if not full.ok:
            return full, mark.record_id
        return _mismatch(mark, row, full.records), mark.record_id
    return walk_chain(con.execute(_TAIL_QUERY, (mark.record_id,)), mark.record_id, mark.hash), mark.record_id


def after_append(con: sqlite3.Connection, rid: int, hash_: str, time: str, last: int) -> int:
    """Write a checkpoint at record ``rid`` (just appended on a verified chain, with hash ``hash_``) when it is
    :data:`EVERY` records past the last one (``last``); returns the newest checkpoint's id. A ledger with none
    checkpoints at its first write, after the one full walk."""
    if rid < EVERY or 0 < last and rid - last < EVERY:
        return last
    try:
        con.execute("INSERT INTO checkpoints (record_id, hash, time) VALUES (?,?,?)", (rid, hash_, time))
    except sqlite3.OperationalError:  # no table in this file (made by an older process): walk everything, as before
        return last
    return rid


def verify_all(con: sqlite3.Connection) -> Verification:
    """``budget verify``: SQLite's integrity check and the walk of every record from the start
    (:func:`~dpsurv_core.privacy.ledger_file.verify_database`), then every checkpoint against the walk: each must
    name a record the ledger holds, with that record's hash (the walk has just recomputed every stored hash)."""
    chain = verify_database(con)
    if not chain.ok:
        return chain
    try:
        rows = con.execute("SELECT c.record_id, c.hash, c.time, r.hash FROM checkpoints c LEFT JOIN records r "
                           "ON r.id = c.record_id ORDER BY c.record_id").fetchall()
    except sqlite3.OperationalError:  # no table: nothing to check
        return chain
    for rid, hash_, time, stored in rows:
        if stored != hash_:
            return _mismatch(Checkpoint(int(rid), str(hash_), str(time)), None if stored is None else (stored,),
                             chain.records)
    return chain


def _mismatch(mark: Checkpoint, row: tuple | None, records: int) -> Verification:
    if row is None:
        return Verification(False, records, mark.record_id,
                            f"the checkpoint written at {mark.time} names record {mark.record_id}, which the ledger no "
                            "longer holds (records were deleted)")
    return Verification(False, records, mark.record_id,
                        f"record {mark.record_id} no longer has the hash checkpointed at {mark.time} (it or a record "
                        "before it was rewritten)")
