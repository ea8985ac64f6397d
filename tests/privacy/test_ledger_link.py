"""The link from a data set's version-1 content fingerprint to its version-2 one, held by the ledger itself: an
append-only ``fingerprint-link`` record in the hash chain (SQLite and PostgreSQL alike), so the old records count on
every machine that reads the ledger, with no per-machine cache."""

from __future__ import annotations

import json

import pytest

from dpsurv_core.errors import BudgetExceededError
from dpsurv_core.privacy.ledger import FINGERPRINT_LINK, RELEASE, LedgerStore
from dpsurv_core.privacy.roles import Actor, NotAllowedError
from tests.privacy import test_ledger_postgres as pg
from tests.privacy.test_ledger_postgres import charge

backend = pg.backend  # the fixture: each test runs on an SQLite file and on a PostgreSQL database

OLD, NEW, OTHER = "1" * 64, "2" * 64, "3" * 64  # version-1 and version-2 fingerprints of one data set; another one


def test_a_link_record_carries_the_old_spending_and_cap_on_any_machine(backend):
    store = LedgerStore(backend.location)
    store.set_cap(OLD, 1.0, "lung")
    charge(store, OLD, 0.75)
    charge(store, OTHER, 0.5)
    assert store.ledger(NEW).cap is None  # not linked: a fresh budget
    rid = store.link_fingerprint(NEW, OLD, "lung")
    assert rid == 4
    # a second process, another machine: a fresh store, no fingerprint cache at all
    other = LedgerStore(backend.location)
    view = other.ledger(NEW)
    assert view.cap == 1.0 and view.spent() == pytest.approx(0.75) and len(view.entries) == 1
    with pytest.raises(BudgetExceededError, match="exceed the cap"):
        charge(other, NEW, 0.5)
    assert charge(other, NEW, 0.25) == 5  # what is left of the cap
    assert other.ledger(NEW).spent() == pytest.approx(1.0)
    assert other.ledger(OTHER).spent() == pytest.approx(0.5)  # another data set is not pulled in
    # the link is a record of the hash chain, under the new key, naming the old key and not the raw fingerprint
    rows = backend.rows()
    assert [r[3] for r in rows] == ["cap-set", RELEASE, RELEASE, FINGERPRINT_LINK, RELEASE]
    link = rows[3]
    assert link[2] == other.key(NEW) and json.loads(link[4])["linked"] == [other.key(OLD)]
    assert OLD not in link[4] and NEW not in link[4]
    assert other.verify().ok and other.verify().records == 5
    # linking again appends nothing
    assert other.link_fingerprint(NEW, OLD, "lung") is None and len(backend.rows()) == 5


def test_an_edited_link_breaks_the_chain(backend):
    store = LedgerStore(backend.location)
    store.set_cap(OLD, 1.0, "lung")
    charge(store, OLD, 0.75)
    store.link_fingerprint(NEW, OLD, "lung")
    backend.tamper(f"UPDATE records SET body = replace(body, '{store.key(OLD)}', '{'0' * 64}') WHERE id = 3")
    chain = LedgerStore(backend.location).verify()
    assert not chain.ok and chain.first_bad == 3


def test_nothing_to_link_appends_nothing(backend):
    store = LedgerStore(backend.location)
    charge(store, NEW, 0.25)
    assert store.link_fingerprint(NEW, OLD) is None  # no records under the old fingerprint
    assert store.link_fingerprint(NEW, NEW) is None  # the same data set
    assert len(store.records()) == 1


def test_records_from_before_keys_are_linked_by_the_raw_value_they_carry(tmp_path):
    store = LedgerStore(tmp_path / "ledger.sqlite3")
    with store.transaction(OLD) as tx:  # a record written before ledgers kept keys: the raw fingerprint
        tx.fingerprint = OLD
        tx.use_cap(1.0, "lung")
    charge(store, OLD, 0.5)  # and one under the key
    store.link_fingerprint(NEW, OLD, "lung")
    link = [r for r in store.records() if r.kind == FINGERPRINT_LINK][0]
    assert link.body["linked"] == [store.key(OLD), OLD]  # the raw value was in the ledger already
    view = LedgerStore(tmp_path / "ledger.sqlite3").ledger(NEW)
    assert view.cap == 1.0 and view.spent() == pytest.approx(0.5)


def test_a_reviewer_may_not_append_a_link(tmp_path):
    path = tmp_path / "ledger.sqlite3"
    store = LedgerStore(path)
    charge(store, OLD, 0.5)
    with pytest.raises(NotAllowedError):
        LedgerStore(path, actor=Actor("rita", "reviewer")).link_fingerprint(NEW, OLD)
    assert len(store.records()) == 1
