"""The persistent ledger: append-only triggers, the hash chain and what `budget verify` says when it is broken."""

from __future__ import annotations

import json
import sqlite3

import pytest

from dpsurv_core.cli import main
from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.ledger import (
    CAP_LOWER,
    CAP_RAISE,
    CAP_SET,
    GENESIS,
    RELEASE,
    SUBJECT,
    Ledger,
    LedgerEntry,
    LedgerStore,
    PrivacyCost,
    record_hash,
)

FP_A, FP_B = "a" * 64, "b" * 64


def entry(eps: float, dataset: str = "lung") -> LedgerEntry:
    return LedgerEntry("laplace-counts", "survival curves", dataset, {"epsilon": eps}, PrivacyCost(eps))


def charge(store: LedgerStore, fp: str, eps: float, outputs=None) -> int:
    with store.transaction(fp) as tx:
        return tx.charge(entry(eps), outputs)


@pytest.fixture
def filled(ledger_path) -> LedgerStore:
    """Five records over two data sets: cap A, release A 0.25, release B 0.5, release A 0.125, raise A."""
    store = LedgerStore(ledger_path)
    store.set_cap(FP_A, 1.0, "lung")
    charge(store, FP_A, 0.25, {"n": [1, 2]})
    charge(store, FP_B, 0.5)
    charge(store, FP_A, 0.125)
    store.raise_cap(FP_A, 2.0, "second study approved", "lung")
    return store


def tamper(path, *sql: str) -> None:
    """What someone with the file could do: drop the append-only triggers, then change the records."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("DROP TRIGGER records_no_update")
    con.execute("DROP TRIGGER records_no_delete")
    con.execute("DROP TRIGGER records_no_replace")
    for s in sql:
        con.execute(s)
    con.close()


def verify_cli(capsys) -> tuple[int, dict]:
    code = main(["budget", "verify", "--json"])
    out, err = capsys.readouterr()
    assert err == ""
    return code, json.loads(out)


def test_records_chain_from_genesis_and_each_hash_recomputes(filled, ledger_path):
    con = sqlite3.connect(ledger_path)
    rows = con.execute("SELECT id, time, fingerprint, kind, body, prev_hash, hash FROM records ORDER BY id").fetchall()
    con.close()
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5]
    assert [r[3] for r in rows] == [CAP_SET, RELEASE, RELEASE, RELEASE, CAP_RAISE]
    prev = GENESIS
    for rid, time, fp, kind, body, prev_hash, h in rows:
        assert prev_hash == prev and h == record_hash(prev_hash, rid, time, fp, kind, body)
        prev = h
    assert filled.head() == prev
    v = filled.verify()
    assert v.ok and v.records == 5 and v.first_bad is None and "chain intact" in v.message


def test_the_view_of_one_data_set_composes_only_its_own_releases(filled):
    a, b = filled.ledger(FP_A), filled.ledger(FP_B)
    assert a.cap == 2.0 and a.spent(SUBJECT) == pytest.approx(0.375) and [e.record_id for e in a.entries] == [2, 4]
    assert b.cap is None and b.spent(SUBJECT) == pytest.approx(0.5) and [e.record_id for e in b.entries] == [3]
    assert filled.release_records(FP_A)[0].body["outputs"] == {"n": [1, 2]}
    assert filled.datasets() == {filled.key(FP_A): ["lung"], filled.key(FP_B): ["lung"]}


def test_an_intact_ledger_verifies_with_exit_0(filled, capsys):
    code, o = verify_cli(capsys)
    assert code == 0 and o["ok"] is True and o["records"] == 5 and o["first_bad_record"] is None
    assert o["head"] == filled.head()


def test_an_empty_ledger_verifies(capsys):
    code, o = verify_cli(capsys)
    assert code == 0 and o["ok"] is True and o["records"] == 0 and o["head"] == GENESIS


@pytest.mark.parametrize("sql", [
    "UPDATE records SET body = '{}' WHERE id = 2",
    "DELETE FROM records WHERE id = 3",
    "INSERT OR REPLACE INTO records SELECT * FROM records WHERE id = 1",  # REPLACE fires no delete trigger
    "REPLACE INTO records (id, time, fingerprint, kind, body, prev_hash, hash) SELECT id, time, fingerprint, kind, "
    "'{}', prev_hash, hash FROM records WHERE id = 4",
    "DELETE FROM records",
])
def test_the_triggers_refuse_changes_to_an_untampered_ledger(filled, ledger_path, sql):
    con = sqlite3.connect(ledger_path, isolation_level=None)
    with pytest.raises(sqlite3.DatabaseError, match="append-only"):
        con.execute(sql)
    con.close()
    assert filled.verify().ok and len(filled.records()) == 5


def test_an_edited_epsilon_is_found_and_named(filled, ledger_path, capsys):
    body = filled.records()[3].body  # record 4: release A, epsilon 0.125
    assert body["cost"]["epsilon"] == 0.125
    body["cost"]["epsilon"] = 0.0125
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    tamper(ledger_path, f"UPDATE records SET body = '{text}' WHERE id = 4")
    assert filled.ledger(FP_A).spent() == pytest.approx(0.2625)  # the edit is visible in the view ...
    v = filled.verify()  # ... and the chain names it
    assert not v.ok and v.first_bad == 4 and "record 4 was edited" in v.message
    code, o = verify_cli(capsys)
    assert code == 1 and o["ok"] is False and o["first_bad_record"] == 4 and "record 4" in o["message"]


def test_an_edited_record_with_a_recomputed_hash_breaks_the_next_link(filled, ledger_path):
    rec = filled.records()[1]  # record 2
    con = sqlite3.connect(ledger_path)
    prev = con.execute("SELECT prev_hash FROM records WHERE id = 2").fetchone()[0]
    con.close()
    body = json.dumps({**rec.body, "dataset": "someone else"}, sort_keys=True, separators=(",", ":"))
    h = record_hash(prev, 2, rec.time, rec.fingerprint, rec.kind, body)
    tamper(ledger_path, f"UPDATE records SET body = '{body}', hash = '{h}' WHERE id = 2")
    v = filled.verify()
    assert not v.ok and v.first_bad == 3 and "record 3 does not follow record 2" in v.message


def test_a_deleted_middle_record_is_found_and_named(filled, ledger_path, capsys):
    tamper(ledger_path, "DELETE FROM records WHERE id = 3")
    assert len(filled.records()) == 4
    code, o = verify_cli(capsys)
    assert code == 1 and o["ok"] is False and o["first_bad_record"] == 3 and "record 3 is missing" in o["message"]


def test_an_edited_kind_or_fingerprint_is_found(filled, ledger_path):
    tamper(ledger_path, f"UPDATE records SET fingerprint = '{FP_B}' WHERE id = 2")
    v = filled.verify()
    assert not v.ok and v.first_bad == 2


def test_a_truncated_ledger_shows_in_its_head(filled, ledger_path):
    head = filled.head()
    tamper(ledger_path, "DELETE FROM records WHERE id = 5")
    assert filled.verify().ok  # the chain that is left is intact ...
    assert filled.head() != head  # ... but the head noted down before no longer matches


def test_the_ledger_file_must_be_a_database(tmp_path):
    bad = tmp_path / "notes.sqlite3"
    bad.write_text("not a database " * 100)
    with pytest.raises(ParameterError, match="not a dpsurv ledger database"):
        LedgerStore(bad)


# ------------------------------------------------------------------------------------------ cap rules in the store
def test_cap_rules(ledger_path):
    store = LedgerStore(ledger_path)
    with pytest.raises(ParameterError, match="no cap yet"):
        store.raise_cap(FP_A, 2.0, "more")
    store.set_cap(FP_A, 1.0, "lung")
    with pytest.raises(BudgetExceededError, match="budget raise"):
        store.set_cap(FP_A, 3.0, "lung")
    with pytest.raises(ParameterError, match="needs a reason"):
        store.raise_cap(FP_A, 2.0, "   ")
    with pytest.raises(ParameterError, match="not above the current cap"):
        store.raise_cap(FP_A, 0.5, "less")
    with pytest.raises(ParameterError, match="budget raise"):
        store.lower_cap(FP_A, 1.5)
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ParameterError, match="positive, finite epsilon"):
            store.set_cap(FP_B, bad)
    charge(store, FP_A, 0.75)
    store.lower_cap(FP_A, 0.5)  # lowering is always allowed, even below what is spent
    ledger = store.ledger(FP_A)
    assert ledger.cap == 0.5 and ledger.remaining() == 0.0
    with pytest.raises(BudgetExceededError, match="exceed the cap by 0.26"):
        charge(store, FP_A, 0.01)
    store.raise_cap(FP_A, 2.0, "ethics board approval 7")
    assert [r.kind for r in store.records(FP_A)] == [CAP_SET, RELEASE, CAP_LOWER, CAP_RAISE]
    assert store.records(FP_A)[-1].body == {"cap": 2.0, "previous": 0.5, "reason": "ethics board approval 7",
                                            "dataset": "", "by": store.actor.name}
    assert store.ledger(FP_A).remaining() == pytest.approx(1.25)
    store.lower_cap(FP_B, 0.3)  # lowering a data set with no cap sets it
    assert store.records(FP_B)[0].kind == CAP_SET and store.ledger(FP_B).cap == 0.3
    assert store.verify().ok


def test_costs_compose_as_values_in_sequence_and_in_parallel():
    from dpsurv_core.errors import ParameterError
    from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, GROUP_LABEL, NO_FORMAL

    a, b = PrivacyCost(0.5), PrivacyCost(0.25, delta=1e-6, guarantee=APPROXIMATE_MCMC)
    both = a + b
    assert (both.epsilon, both.delta, both.guarantee) == (0.75, 1e-6, APPROXIMATE_MCMC)
    assert a.parallel(PrivacyCost(0.75)).epsilon == 0.75 and (a + a + a).epsilon == 1.5
    with pytest.raises(ParameterError):
        a + PrivacyCost(1.0, protects=GROUP_LABEL)
    with pytest.raises(ParameterError):
        a + PrivacyCost(None, guarantee=NO_FORMAL)
    ledger = Ledger()
    for eps, key in ((0.5, None), (0.25, "g"), (0.75, "g"), (0.125, None)):
        ledger.entries.append(LedgerEntry("laplace-counts", "survival curves", "lung", {}, PrivacyCost(eps), key))
    assert Ledger.composed(ledger.entries).epsilon == 0.5 + 0.75 + 0.125 == ledger.spent()
