"""A data set's budget is kept under a key, HMAC of its content fingerprint under the ledger's secret: the
fingerprint (a public function of every cell) never leaves, so knowing every row but one cannot test candidate values
against an export."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from datetime import UTC, datetime

import pytest

from dpsurv_core.cli import main
from dpsurv_core.data import datasets
from dpsurv_core.privacy.chain import GENESIS, RELEASE, _canonical, record_hash
from dpsurv_core.privacy.fingerprint import fingerprint
from dpsurv_core.privacy.ledger import LedgerStore, PrivacyCost

KM = ["km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "0.25", "--grid", "0:1100:20", "--json"]


def test_nothing_that_leaves_holds_the_content_fingerprint(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = fingerprint(datasets.load("lung"))
    assert main(KM) == 0
    release = capsys.readouterr().out
    assert main(["budget", "show", "--data", "lung", "--json"]) == 0
    shown = capsys.readouterr().out
    assert main(["report", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "0.25", "--grid",
                 "0:1100:20", "--out", str(tmp_path / "r.html"), "--bundle", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    store = LedgerStore()
    (record,) = [r for r in store.records() if r.kind == RELEASE][:1]
    key = json.loads(shown)["fingerprint"]
    assert key == record.fingerprint == store.key(raw) and key.startswith("k") and len(key) == 64
    exported = [release, shown, (tmp_path / "r.html").read_text(), (tmp_path / "b.json").read_text(),
                (tmp_path / "b.csv").read_text(), store.path.read_bytes().decode("latin-1")]
    for text in exported:
        assert raw not in text


def test_one_ledger_keeps_one_key_per_data_set_and_another_ledger_another(tmp_path):
    raw = fingerprint(datasets.load("lung"))
    a, b = LedgerStore(tmp_path / "a.sqlite3"), LedgerStore(tmp_path / "b.sqlite3")
    assert a.key(raw) == LedgerStore(tmp_path / "a.sqlite3").key(raw)  # reopened: the budget follows the data
    assert a.key(raw) != b.key(raw)  # the secret is the ledger's: keys from two ledgers cannot be matched
    assert a.key(a.key(raw)) == a.key(raw) and a.key("") == ""


def test_knowing_every_row_but_one_does_not_identify_the_data_set(tmp_path):
    """The hostile test that found the leak: with all rows but one known, the fingerprint of each candidate table
    named the hidden subject. Against the key, no candidate matches."""
    frame = datasets.load("lung")
    store = LedgerStore(tmp_path / "l.sqlite3")
    store.set_cap(fingerprint(frame), 1.0, "lung")
    (record,) = store.records()
    candidates = [frame, frame.iloc[:-1]]
    for t in (5.0, 11.0, float(frame.iloc[-1, 0])):
        other = frame.copy()
        other.iloc[-1, 0] = t
        candidates.append(other)
    assert all(fingerprint(c) != record.fingerprint for c in candidates)
    assert record.fingerprint == store.key(fingerprint(frame))


def test_the_secret_cannot_be_changed_or_removed(tmp_path):
    store = LedgerStore(tmp_path / "l.sqlite3")
    store.key("ab" * 32)
    con = sqlite3.connect(store.path)
    for sql in ("UPDATE ledger_secret SET value = '00'", "DELETE FROM ledger_secret"):
        with pytest.raises(sqlite3.DatabaseError, match="kept for the life of the ledger"):
            con.execute(sql)
    con.close()


def test_records_written_before_keys_still_count_against_the_budget(tmp_path):
    """A ledger from before keys holds raw fingerprints: its records are found by the fingerprint, shown under the
    key, and a release is checked against them."""
    raw = "cd" * 32
    path = tmp_path / "old.sqlite3"
    store = LedgerStore(path)
    body = _canonical({"cost": asdict(PrivacyCost(0.75)), "mechanism": "laplace-counts", "analysis": "survival curves", "parameters": {},
                       "dataset": "old"})
    time = datetime.now(UTC).isoformat(timespec="microseconds")
    with sqlite3.connect(path) as con:
        con.execute("INSERT INTO records VALUES (1, ?, ?, ?, ?, ?, ?)",
                    (time, raw, RELEASE, body, GENESIS, record_hash(GENESIS, 1, time, raw, RELEASE, body)))
    assert store.verify().ok
    assert store.ledger(raw).spent() == pytest.approx(0.75)
    assert [r.fingerprint for r in store.records(raw)] == [store.key(raw)]
    store.set_cap(raw, 1.0, "old")
    assert store.ledger(raw).cap == 1.0 and store.ledger(raw).remaining() == pytest.approx(0.25)
    assert store.verify().ok
