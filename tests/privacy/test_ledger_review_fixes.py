"""Three ledger defects a review found, and their fixes.

1. A release walks the hash chain inside its check-and-charge transaction and is refused (exit 2, nothing charged)
   when the chain is broken; ``budget show`` says the chain's status and warns.
2. ``budget show`` lists each release as run: not DP where a disclosure was not DP, label only for rrr, with its
   disclosures, consistent with ``subject_guarantee``.
3. ``--cap`` on a release only sets a missing cap: a different cap is refused before anything is recorded, and a
   refused release records nothing, not even the cap it would have set.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from dpsurv_core.cli import main
from dpsurv_core.errors import BudgetExceededError, DpsurvError, ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import CAP_SET, RELEASE, ChainBrokenError, LedgerStore
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.privacy.release import Plan, release
from tests.cli_run import fails, run

KM = ["km", "--data", "lung", "--mechanism", "laplace-counts", "--grid", "0:1100:20"]
FP = "e" * 64


def tampered_copy(path: Path, to: Path, rid: int = 2, epsilon: float | None = 0.1, delete: int | None = None) -> Path:
    """A copy of the ledger at ``path`` whose triggers were dropped, whose record ``rid`` now says ``epsilon`` (None:
    left alone) and from which record ``delete`` was deleted (None: none)."""
    src, dst = sqlite3.connect(path), sqlite3.connect(to)
    src.backup(dst)
    src.close()
    for trigger in ("records_no_update", "records_no_delete", "records_no_replace"):
        dst.execute(f"DROP TRIGGER {trigger}")
    if epsilon is not None:
        body = json.loads(dst.execute("SELECT body FROM records WHERE id = ?", (rid,)).fetchone()[0])
        body["cost"]["epsilon"] = epsilon
        dst.execute("UPDATE records SET body = ? WHERE id = ?", (json.dumps(body, sort_keys=True), rid))
    if delete is not None:
        dst.execute("DELETE FROM records WHERE id = ?", (delete,))
    dst.commit()
    dst.close()
    return to


def show(capsys, *argv: str) -> dict:
    return run(capsys, "budget", "show", "--data", "lung", *argv)


class Calls:
    def __init__(self) -> None:
        self.computed = 0

    def compute(self, noise, trials):
        self.computed += 1
        return {"value": 1}


def plan(calls: Calls, epsilon: float = 0.5, fingerprint: str = FP) -> Plan:
    entry = catalogue.get(catalogue.CURVES, "laplace-counts")
    return Plan(entry, entry.build(epsilon), "lung", fingerprint, calls.compute, kind="echo",
                publish=lambda r: ({"value": r["value"]}, {}))


# ------------------------------------------------------------------------------------------ 1. the chain
def test_a_release_on_a_tampered_ledger_is_refused_and_charges_nothing(capsys, ledger_path, tmp_path):
    run(capsys, "budget", "set", "--data", "lung", "--cap", "5")
    for _ in range(4):
        run(capsys, *KM, "--epsilon", "0.5")
    bad = tampered_copy(ledger_path, tmp_path / "tampered.sqlite3")
    before = [(r.id, r.hash) for r in LedgerStore(bad).records()]

    assert main(["budget", "verify", "--ledger", str(bad), "--json"]) == 1  # verify already named it
    assert json.loads(capsys.readouterr().out)["first_bad_record"] == 2

    msg = fails(capsys, *KM, "--epsilon", "0.5", "--ledger", str(bad))
    assert "broken at record 2" in msg and "record 2 was edited after it was written" in msg
    assert "budget verify" in msg and msg.endswith(".") and ". " not in msg  # one sentence
    assert [(r.id, r.hash) for r in LedgerStore(bad).records()] == before  # nothing charged, nothing recorded
    # --cap on a data set with no cap: refused for the chain, so no cap is set either
    fails(capsys, "km", "--data", "gehan", "--epsilon", "0.5", "--cap", "3", "--ledger", str(bad))
    assert [(r.id, r.hash) for r in LedgerStore(bad).records()] == before
    # nor is a cap raised, lowered or set on a broken chain
    for argv in (["raise", "--cap", "50", "--reason", "x"], ["lower", "--cap", "1"]):
        assert "broken at record 2" in fails(capsys, "budget", *argv, "--data", "lung", "--ledger", str(bad))
    assert [(r.id, r.hash) for r in LedgerStore(bad).records()] == before

    s = show(capsys, "--ledger", str(bad))
    assert s["chain"] == "broken at record 2" and s["chain_message"] == "record 2 was edited after it was written"
    (warning,) = s["warnings"]
    assert "broken at record 2" in warning and "budget verify" in warning and "refused" in warning

    # the intact original still releases, and show says its chain is intact
    o = run(capsys, *KM, "--epsilon", "0.5")
    assert o["record_id"] == 6 and o["spent"] == pytest.approx(2.5)
    s = show(capsys)
    assert s["chain"] == "intact" and s["warnings"] == [] and s["spent"] == pytest.approx(2.5)


def test_the_app_protocol_refuses_a_broken_chain_before_computing(ledger_path, tmp_path):
    """The app calls :func:`release` directly: the same refusal, a DpsurvError (the app shows it as one sentence)."""
    store = LedgerStore(ledger_path)
    store.set_cap(FP, 5.0, "lung")
    release(plan(Calls()), store, noise=lambda: SimulationNoise(1))
    release(plan(Calls()), store, noise=lambda: SimulationNoise(1))
    bad = LedgerStore(tampered_copy(ledger_path, tmp_path / "t.sqlite3", rid=3, epsilon=0.01))
    calls, before = Calls(), bad.records()
    with pytest.raises(ChainBrokenError, match=r"broken at record 3 \(record 3 was edited") as info:
        release(plan(calls), bad, noise=lambda: SimulationNoise(1))
    assert isinstance(info.value, DpsurvError) and info.value.verification.first_bad == 3
    assert calls.computed == 0 and bad.records() == before
    # the whole chain is walked: another data set's release on the same tampered ledger is refused too
    with pytest.raises(ChainBrokenError, match="broken at record 3"):
        release(plan(calls, fingerprint="d" * 64), bad, noise=lambda: SimulationNoise(1))
    assert calls.computed == 0 and bad.records() == before
    # the intact original still releases
    rel = release(plan(calls), store, noise=lambda: SimulationNoise(1))
    assert rel.record_id == 4 and calls.computed == 1


def test_a_deleted_record_refuses_a_release(ledger_path, tmp_path):
    store = LedgerStore(ledger_path)
    for _ in range(3):
        release(plan(Calls(), 0.25), store, noise=lambda: SimulationNoise(1))
    bad = tampered_copy(ledger_path, tmp_path / "deleted.sqlite3", epsilon=None, delete=2)
    with pytest.raises(ChainBrokenError, match="record 2 is missing"):
        release(plan(Calls()), LedgerStore(bad), noise=lambda: SimulationNoise(1))


def test_walking_the_chain_of_2000_records_is_fast(ledger_path):
    """The chain is walked in every release's transaction: on 2,000 records of about 7 kB it takes some 20 ms here;
    the bound below is loose so that a busy machine does not fail it."""
    store = LedgerStore(ledger_path)
    body = {**plan(Calls(), 0.001).ledger_entry().to_dict(), "outputs": [i / 7 for i in range(400)]}
    with store.transaction(FP) as tx:
        for _ in range(2000):
            tx.append(RELEASE, body)
    with store.transaction(FP) as tx:
        start = time.perf_counter()
        chain = tx.verify()
        elapsed = time.perf_counter() - start
    assert chain.ok and chain.records == 2000
    assert elapsed < 0.5, f"walking 2,000 records took {elapsed * 1000:.0f} ms"


# ------------------------------------------------------------------------------------------ 2. records as run
def test_show_lists_each_release_as_run_with_its_disclosures(capsys):
    run(capsys, "budget", "set", "--data", "lung", "--cap", "5")
    run(capsys, *KM, "--epsilon", "0.5")  # 2: DP
    run(capsys, "km", "--data", "lung", "--epsilon", "0.5", "--grid", "event-times", "--horizon", "1100",
        "--accept-disclosure", "grid")  # 3: grid read off the data, accepted
    run(capsys, "km", "--data", "lung", "--epsilon", "0.5", "--group", "age:median", "--horizon", "1100",
        "--accept-disclosure", "cut:age")  # 4: cut read off the data, accepted
    run(capsys, "budget", "allow-label-only", "--data", "lung", "--reason", "labels only")  # 5
    run(capsys, *KM, "--mechanism", "rrr", "--group", "sex", "--epsilon", "0.5")  # 6: label only
    s = show(capsys)
    rows = {r["id"]: r for r in s["releases"]}
    assert sorted(rows) == [2, 3, 4, 6]

    dp = rows[2]
    assert (dp["guarantee"], dp["protects"], dp["subject_protected"]) == ("exact", "the subject", True)
    assert dp["subject_unprotected_because"] is None and all(d["dp"] for d in dp["disclosures"])

    for rid, parameter in ((3, "grid"), (4, "cut:age")):
        r = rows[rid]
        assert r["guarantee"].startswith("none: not differentially private") and parameter in r["guarantee"]
        assert r["protects"].startswith("nothing formally") and r["subject_protected"] is False
        assert r["charged_to"] == "the subject" and r["epsilon"] == 0.5  # still charged
        assert r["privacy"].startswith("epsilon = 0.5, but not differentially private as run")
        assert any(d["parameter"] == parameter and d["dp"] is False for d in r["disclosures"])
        # the same reason as subject_guarantee gives for it
        assert f"release {rid}: {r['subject_unprotected_because']}" in s["subject_guarantee"]

    rrr = rows[6]
    assert rrr["guarantee"].startswith("label only") and "not the subject" in rrr["guarantee"]
    assert rrr["protects"] == "the group label only" and rrr["subject_protected"] is False
    assert f"release 6: {rrr['subject_unprotected_because']}" in s["subject_guarantee"]
    assert s["subject_guarantee"].startswith("none: ")


# ------------------------------------------------------------------------------------------ 3. --cap on a release
def test_cap_on_a_release_never_changes_an_existing_cap(capsys, ledger_path):
    gehan = ["km", "--data", "gehan", "--epsilon", "0.5", "--horizon", "35"]
    run(capsys, "budget", "set", "--data", "gehan", "--cap", "2")
    before = LedgerStore(ledger_path).records()
    msg = fails(capsys, *gehan, "--cap", "1")  # the reviewer's case: it used to record cap-lower 2 -> 1
    assert "cap is already epsilon 2" in msg and "budget lower" in msg and "records nothing" in msg
    msg = fails(capsys, *gehan, "--cap", "3")
    assert "cap is already epsilon 2" in msg and "budget raise" in msg and "--reason" in msg
    assert LedgerStore(ledger_path).records() == before  # nothing recorded by either
    o = run(capsys, *gehan, "--cap", "2")  # the same cap: proceeds, no act
    assert o["cap"] == 2.0 and o["record_id"] == 2
    assert [r.kind for r in LedgerStore(ledger_path).records()] == [CAP_SET, RELEASE]


def test_a_refused_first_release_does_not_leave_its_cap_behind(capsys, ledger_path):
    msg = fails(capsys, *KM, "--epsilon", "3", "--cap", "1")
    assert "exceed the cap by 2" in msg and "not even the cap 1" in msg
    assert LedgerStore(ledger_path).records() == []
    assert show(capsys)["cap"] is None
    o = run(capsys, *KM, "--epsilon", "0.5", "--cap", "1")  # a release that fits sets the cap with it
    assert o["cap"] == 1.0 and o["record_id"] == 2
    assert [(r.kind, r.body["cap"]) for r in LedgerStore(ledger_path).records() if r.kind == CAP_SET] == [(CAP_SET, 1.0)]


def test_cap_is_read_inside_the_release_lock(ledger_path):
    """Another process that sets a cap first: the release measures --cap against it, inside the same lock (the
    same cap proceeds, another is refused), and never records a lowering or raising."""
    store = LedgerStore(ledger_path)
    LedgerStore(ledger_path).set_cap(FP, 1.0, "lung", "the other process")
    rel = release(plan(Calls(), 0.25), store, noise=lambda: SimulationNoise(1), cap=1.0)
    assert rel.ledger.cap == 1.0 and rel.record_id == 2
    for other in (0.5, 2.0):
        calls = Calls()
        with pytest.raises(ParameterError, match="cap is already epsilon 1"):
            release(plan(calls, 0.25), store, noise=lambda: SimulationNoise(1), cap=other)
        assert calls.computed == 0
    assert [r.kind for r in store.records(FP)] == [CAP_SET, RELEASE]
    with pytest.raises(BudgetExceededError, match="exceed the cap"):
        release(plan(Calls(), 0.9), store, noise=lambda: SimulationNoise(1), cap=1.0)
    assert [r.kind for r in store.records(FP)] == [CAP_SET, RELEASE]


def test_a_record_edited_into_something_unreadable_is_still_one_sentence(capsys, ledger_path, tmp_path):
    run(capsys, *KM, "--epsilon", "0.5")
    bad = tampered_copy(ledger_path, tmp_path / "garbled.sqlite3", epsilon=None)
    con = sqlite3.connect(bad)
    con.execute("UPDATE records SET body = '{\"cost\": {}}' WHERE id = 1")
    con.commit()
    con.close()
    msg = fails(capsys, *KM, "--epsilon", "0.5", "--ledger", str(bad))
    assert "broken at record 1" in msg and "budget verify" in msg
    assert "broken at record 1" in fails(capsys, "budget", "show", "--data", "lung", "--ledger", str(bad))
