"""Checkpoints of the hash chain: a write walks only the records after the newest one, so its cost does not grow with
the ledger, while ``budget verify`` still walks every record and checks every checkpoint against the walk."""

from __future__ import annotations

import json
import sqlite3
import statistics
import time
from pathlib import Path

import pytest

from dpsurv_core.cli import main
from dpsurv_core.privacy import checkpoint
from dpsurv_core.privacy.chain import _SCHEMA, GENESIS, RELEASE, _canonical, record_hash
from dpsurv_core.privacy.ledger import ChainBrokenError, LedgerEntry, LedgerStore, PrivacyCost

FP, OTHER = "a" * 64, "c" * 64
TRIGGERS = ("records_no_update", "records_no_delete", "records_no_replace")
CHECKPOINT_TRIGGERS = ("checkpoints_no_update", "checkpoints_no_delete", "checkpoints_no_replace")


def entry(eps: float = 0.001) -> LedgerEntry:
    return LedgerEntry("laplace-counts", "survival curves", "lung", {"epsilon": eps}, PrivacyCost(eps))


def charge(store: LedgerStore, fp: str = FP, eps: float = 0.001) -> int:
    with store.transaction(fp) as tx:
        return tx.charge(entry(eps), {"value": 1})


def bulk(path: Path, n: int, floats: int = 400) -> None:
    """Append ``n`` release records of some 7 kB (``floats`` numbers of output) for 100 other data sets straight
    into the file, chained with the store's own :func:`record_hash` (what a ledger written for years holds)."""
    body = _canonical({**entry().to_dict(), "outputs": [i / 7 for i in range(floats)]})
    con = sqlite3.connect(path, isolation_level=None)
    last = con.execute("SELECT id, hash FROM records ORDER BY id DESC LIMIT 1").fetchone()
    rid, prev = last if last else (0, GENESIS)
    rows = []
    for _ in range(n):
        rid += 1
        stamp, fp = f"2026-01-01T00:00:00.{rid:06d}+00:00", f"k{rid % 100:063d}"
        h = record_hash(prev, rid, stamp, fp, RELEASE, body)
        rows.append((rid, stamp, fp, RELEASE, body, prev, h))
        prev = h
    con.execute("BEGIN")
    con.executemany("INSERT INTO records (id, time, fingerprint, kind, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
                    rows)
    con.execute("COMMIT")
    con.close()


def sql(path: Path, *statements: str, triggers: tuple[str, ...] = TRIGGERS) -> None:
    """What someone with the file could do: drop the append-only triggers, then run ``statements``."""
    con = sqlite3.connect(path, isolation_level=None)
    for trigger in triggers:
        con.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for s in statements:
        con.execute(s)
    con.close()


def rewrite_from(path: Path, rid: int, epsilon: float) -> None:
    """Record ``rid`` says ``epsilon`` and every hash from it on is recomputed: a chain that walks intact."""
    con = sqlite3.connect(path, isolation_level=None)
    for trigger in TRIGGERS:
        con.execute(f"DROP TRIGGER {trigger}")
    rows = con.execute("SELECT id, time, fingerprint, kind, body, prev_hash FROM records WHERE id >= ? ORDER BY id",
                       (rid,)).fetchall()
    prev = rows[0][5]
    for i, (r, stamp, fp, kind, body, _) in enumerate(rows):
        if i == 0:
            b = json.loads(body)
            b["cost"]["epsilon"] = epsilon
            body = _canonical(b)
        h = record_hash(prev, r, stamp, fp, kind, body)
        con.execute("UPDATE records SET body = ?, prev_hash = ?, hash = ? WHERE id = ?", (body, prev, h, r))
        prev = h
    con.close()


def checkpoints(path: Path) -> list[tuple[int, str]]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT record_id, hash FROM checkpoints ORDER BY record_id").fetchall()
    finally:
        con.close()


@pytest.fixture
def long(ledger_path) -> LedgerStore:
    """300 records, written through the store's transaction: one checkpoint, at record 256."""
    store = LedgerStore(ledger_path)
    body = {**entry().to_dict(), "outputs": [1, 2]}
    with store.transaction(OTHER) as tx:
        for _ in range(300):
            tx.append(RELEASE, body)
    return store


# ------------------------------------------------------------------------------------------ 1. the cost of a write
def test_a_release_on_10000_records_costs_what_it_costs_on_an_empty_ledger(tmp_path):
    empty, big = LedgerStore(tmp_path / "empty.sqlite3"), LedgerStore(tmp_path / "big.sqlite3")
    bulk(big.path, 10_000)
    charge(big)  # the one full walk of a ledger with no checkpoint yet, which then checkpoints
    assert checkpoints(big.path)[-1][0] == 10_001
    charge(empty)
    times: dict[str, list[float]] = {"empty": [], "big": []}
    for _ in range(9):  # interleaved, so that the machine's load weighs on both alike
        for name, store in (("empty", empty), ("big", big)):
            start = time.perf_counter()
            charge(store)
            times[name].append(time.perf_counter() - start)
    e, b = statistics.median(times["empty"]), statistics.median(times["big"])
    assert b - e < 0.020, f"a release took {b * 1000:.1f} ms on 10,000 records, {e * 1000:.1f} ms on an empty ledger"
    assert big.verify().ok and big.verify().records == 10_010


def test_a_checkpoint_every_256_records_in_the_same_transaction(long, ledger_path):
    assert checkpoints(ledger_path) == [(256, long.records()[255].hash)]
    with long.transaction(FP) as tx:
        chain = tx.verify()
        assert chain.ok and chain.records == 300 and tx._mark == 256
    with pytest.raises(RuntimeError), long.transaction(FP) as tx:  # a write rolled back takes its checkpoint along
        for _ in range(300):
            tx.append(RELEASE, {"n": 1})
        assert [c[0] for c in checkpoints(ledger_path)] == [256]  # another connection sees nothing yet
        raise RuntimeError
    assert [c[0] for c in checkpoints(ledger_path)] == [256] and len(long.records()) == 300


@pytest.mark.parametrize("statement", ["UPDATE checkpoints SET hash = 'x'", "DELETE FROM checkpoints",
                                       "INSERT OR REPLACE INTO checkpoints VALUES (256, 'x', 'now')",
                                       "INSERT INTO checkpoints VALUES (3, 'x', 'now')"])
def test_the_triggers_refuse_changes_to_checkpoints(long, ledger_path, statement):
    con = sqlite3.connect(ledger_path)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute(statement)
    con.close()
    assert checkpoints(ledger_path)[0][0] == 256 and long.verify().ok


# ------------------------------------------------------------------------------------------ 2. before the checkpoint
def test_an_edited_record_before_the_checkpoint_is_caught_by_verify(long, ledger_path, capsys):
    sql(ledger_path, "UPDATE records SET body = replace(body, '0.001', '0.0001') WHERE id = 5")
    v = long.verify()  # budget verify walks every record from the start
    assert not v.ok and v.first_bad == 5 and "record 5 was edited" in v.message
    assert main(["budget", "verify", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["first_bad_record"] == 5
    charge(long)  # a write walks from the checkpoint, whose record still holds its hash: not seen by the write
    sql(ledger_path, "DELETE FROM checkpoints", triggers=CHECKPOINT_TRIGGERS)  # without checkpoints: the full walk
    with pytest.raises(ChainBrokenError, match="broken at record 5"):
        charge(long)


def test_a_rewrite_before_the_checkpoint_refuses_a_release_and_fails_verify(long, ledger_path):
    rewrite_from(ledger_path, 5, 0.0001)  # the chain itself walks intact ...
    before = long.records()
    with pytest.raises(ChainBrokenError, match="broken at record 256 .*no longer has the hash checkpointed"):
        charge(long)
    assert long.records() == before  # nothing charged
    v = long.verify()  # ... but not the checkpoint
    assert not v.ok and v.first_bad == 256 and "checkpointed" in v.message


def test_a_rewritten_checkpoint_or_a_truncated_ledger_is_refused(long, ledger_path, tmp_path):
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes(ledger_path.read_bytes())
    # a changed first digit (a hash that already began with f was left as it was: the test passed 15 times in 16)
    sql(ledger_path, "UPDATE checkpoints SET hash = CASE WHEN hash LIKE 'f%' THEN 'e' ELSE 'f' END || substr(hash, 2)",
        triggers=CHECKPOINT_TRIGGERS)
    with pytest.raises(ChainBrokenError, match="record 256 no longer has the hash"):
        charge(long)
    assert long.verify().first_bad == 256
    sql(copy, "DELETE FROM records WHERE id > 100")  # truncated: the chain that is left walks intact
    truncated = LedgerStore(copy)
    with pytest.raises(ChainBrokenError, match="names record 256, which the ledger no longer holds"):
        charge(truncated)
    assert truncated.verify().first_bad == 256


# ------------------------------------------------------------------------------------------ 3. after the checkpoint
def test_a_chain_broken_after_the_checkpoint_refuses_the_next_release(long, ledger_path):
    sql(ledger_path, "UPDATE records SET body = replace(body, '0.001', '0.0001') WHERE id = 280")
    before = long.records()
    with pytest.raises(ChainBrokenError, match=r"broken at record 280 \(record 280 was edited"):
        charge(long)
    assert long.records() == before
    sql(ledger_path, "DELETE FROM records WHERE id = 290")
    with pytest.raises(ChainBrokenError, match="broken at record 280"):
        long.set_cap(FP, 1.0)
    assert long.verify().first_bad == 280


# ------------------------------------------------------------------------------------------ 4. old ledgers
def test_a_ledger_written_before_checkpoints_walks_once_then_checkpoints(tmp_path):
    path = tmp_path / "old.sqlite3"
    con = sqlite3.connect(path, isolation_level=None)
    con.executescript(_SCHEMA.split("-- checkpoints")[0])  # the schema as it was
    con.close()
    bulk(path, 300, floats=4)
    store = LedgerStore(path)  # opening it makes the table
    assert checkpoints(path) == []
    assert store.verify().ok and charge(store) == 301
    assert [c[0] for c in checkpoints(path)] == [301] and store.verify().ok
    with store.transaction(FP) as tx:
        assert tx.verify().ok and tx._mark == 301
    assert charge(store) == 302 and store.ledger(FP).spent() == pytest.approx(0.002)


def test_a_file_that_lost_its_table_while_open_still_releases(long, ledger_path):
    sql(ledger_path, "DROP TABLE checkpoints", triggers=())
    assert charge(long) == 301 and long.verify().ok  # the whole chain walked, as before checkpoints
    assert checkpoint.latest(sqlite3.connect(ledger_path)) is None
