"""The release protocol: cost -> atomic check -> noise -> charge -> record id.

A refused release computes nothing and records nothing; a non-private plan is not a release; a preview never
touches the ledger; simulations (--seed) and non-private runs (--epsilon inf, nonprivate) are never recorded;
and twenty processes racing for one budget get exactly the releases the cap allows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import NO_CAP, RELEASE, LedgerStore
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.privacy.release import Plan, preview, release
from tests.cli_run import fails, run

ROOT = Path(__file__).resolve().parents[2]
FP = "f" * 64
KM = ["km", "--data", "lung", "--mechanism", "laplace-counts", "--grid", "0:1100:20"]


class Calls:
    """A plan's compute and a noise factory that remember being called."""

    def __init__(self) -> None:
        self.computed: list[tuple[object, int]] = []
        self.noises = 0

    def compute(self, noise, trials: int) -> dict:
        self.computed.append((noise, trials))
        return {"value": 41 + trials}

    def noise(self):
        self.noises += 1
        return SimulationNoise(7)


def make_plan(calls: Calls, epsilon: float = 0.4, mechanism: str = "laplace-counts") -> Plan:
    entry = catalogue.get(catalogue.CURVES, mechanism)
    mech = entry.build(epsilon) if entry.private else entry.build()
    return Plan(entry, mech, "lung", FP, calls.compute, command="python -m dpsurv_core km --data lung --json",
                kind="echo", publish=lambda r: ({"value": r["value"]}, {"mechanism": mechanism}))




# ------------------------------------------------------------------------------------------ the protocol in-process
def test_a_release_that_fits_computes_once_charges_once_and_returns_its_record_id(ledger_path):
    store = LedgerStore(ledger_path)
    store.set_cap(FP, 1.0, "lung")
    calls = Calls()
    rel = release(make_plan(calls), store, noise=calls.noise)
    assert calls.noises == 1 and len(calls.computed) == 1 and calls.computed[0][1] == 1  # one draw, one trial
    assert rel.result == {"value": 42}
    assert rel.record_id == 2  # record 1 is the cap
    assert rel.warnings == []
    summary = rel.summary()
    assert summary["release"] is True and summary["simulation"] is False and summary["record_id"] == 2
    assert summary["epsilon_spent"] == pytest.approx(0.4) and summary["spent"] == pytest.approx(0.4)
    assert summary["cap"] == 1.0
    (rec,) = store.release_records(FP)
    assert rec.id == 2 and rec.kind == RELEASE and rec.body["released"] == {"value": 42}
    assert rec.body["derived"] == {"value": 42, "square": 1764, "mechanism": "laplace-counts"}
    assert rec.body["cost"]["epsilon"] == pytest.approx(0.4) and rec.body["dataset"] == "lung"
    assert rec.body["command"] == "python -m dpsurv_core km --data lung --json"
    assert store.ledger(FP).spent() == pytest.approx(0.4)


def test_a_refused_release_computes_nothing_draws_nothing_and_records_nothing(ledger_path):
    store = LedgerStore(ledger_path)
    store.set_cap(FP, 1.0, "lung")
    first = Calls()
    release(make_plan(first, 0.75), store, noise=first.noise)
    before = store.records()
    calls = Calls()
    with pytest.raises(BudgetExceededError) as exc:
        release(make_plan(calls, 0.5), store, noise=calls.noise)
    msg = str(exc.value)
    assert "costs epsilon 0.5" in msg and "only 0.25 of the cap 1 is left" in msg
    assert "exceed the cap by 0.25" in msg and "\n" not in msg
    assert calls.computed == [] and calls.noises == 0
    assert store.records() == before and store.ledger(FP).spent() == pytest.approx(0.75)


def test_an_exhausted_cap_refuses_even_the_smallest_release(ledger_path):
    store = LedgerStore(ledger_path)
    store.set_cap(FP, 0.5, "lung")
    release(make_plan(Calls(), 0.5), store, noise=Calls().noise)  # exactly up to the cap is allowed
    calls = Calls()
    with pytest.raises(BudgetExceededError, match=r"exceed the cap by 0\.01\b"):
        release(make_plan(calls, 0.01), store, noise=calls.noise)
    assert calls.computed == [] and calls.noises == 0
    assert len(store.release_records(FP)) == 1


def test_a_compute_that_fails_rolls_the_charge_back(ledger_path):
    store = LedgerStore(ledger_path)

    def broken(noise, trials):
        raise RuntimeError("the data went away")

    entry = catalogue.get(catalogue.CURVES, "laplace-counts")
    plan = Plan(entry, entry.build(0.3), "lung", FP, broken)
    with pytest.raises(RuntimeError):
        release(plan, store, noise=Calls().noise)
    assert store.records() == [] and store.verify().ok


def test_a_release_with_no_cap_is_recorded_and_says_no_cap_is_set(ledger_path):
    store = LedgerStore(ledger_path)
    rel = release(make_plan(Calls(), 2.5), store, noise=Calls().noise)
    assert rel.warnings == [NO_CAP] and rel.summary()["budget"] == NO_CAP and rel.summary()["cap"] is None
    assert store.ledger(FP).spent() == pytest.approx(2.5)


@pytest.mark.parametrize("mechanism,epsilon", [("nonprivate", None), ("laplace-counts", float("inf"))])
def test_a_non_private_plan_is_not_a_release(ledger_path, mechanism, epsilon):
    store = LedgerStore(ledger_path)
    calls = Calls()
    entry = catalogue.get(catalogue.CURVES, mechanism)
    mech = entry.build(epsilon) if entry.private else entry.build()
    plan = Plan(entry, mech, "lung", FP, calls.compute)
    assert not plan.private
    with pytest.raises(ParameterError, match="not a release"):
        release(plan, store, noise=calls.noise)
    assert calls.computed == [] and calls.noises == 0 and store.records() == []


def test_preview_never_touches_the_store(ledger_path, monkeypatch):
    store = LedgerStore(ledger_path)
    store.set_cap(FP, 0.1, "lung")  # exhausted for this plan: a release would be refused
    before = store.records()

    def no_store(*args, **kwargs):
        raise AssertionError("preview opened the ledger")

    monkeypatch.setattr(LedgerStore, "transaction", no_store)
    monkeypatch.setattr(LedgerStore, "_connect", no_store)
    calls = Calls()
    assert preview(make_plan(calls, 0.5), seed=3, trials=4) == {"value": 45}
    (noise, trials), = calls.computed
    assert isinstance(noise, SimulationNoise) and trials == 4 and calls.noises == 0
    monkeypatch.undo()
    assert store.records() == before


def test_preview_is_reproducible_from_its_seed():
    entry = catalogue.get(catalogue.CURVES, "laplace-counts")
    mech = entry.build(1.0)
    plan = Plan(entry, mech, "lung", FP, lambda noise, trials: noise.laplace(1.0, (trials, 3)).tolist())
    assert preview(plan, seed=5, trials=2) == preview(plan, seed=5, trials=2)
    assert preview(plan, seed=5, trials=2) != preview(plan, seed=6, trials=2)


# ------------------------------------------------------------------------------------------ simulations on the CLI
def test_a_seeded_run_is_a_simulation_and_records_nothing(capsys, ledger_path):
    o = run(capsys, *KM, "--epsilon", "0.5", "--seed", "1", "--repeat", "3")
    assert o["simulation"] is True and o["release"] is False and o["seed"] == 1 and o["trials"] == 3
    assert "record_id" not in o and "not for publication" in o["privacy_note"]
    assert o["epsilon_spent"] == 0.5 and o["epsilon_if_all_published"] == pytest.approx(1.5)
    assert len(o["curves"]) == 3
    show = run(capsys, "budget", "show", "--data", "lung")
    assert show["releases"] == [] and show["spent"] == 0.0 and show["cap_history"] == []
    assert LedgerStore(ledger_path).records() == []


@pytest.mark.parametrize("argv", [
    [*KM, "--epsilon", "inf"],
    [*KM, "--mechanism", "nonprivate"],
    ["logrank", "--data", "lung", "--group", "sex", "--mechanism", "nonprivate"],
    ["weibull", "--data", "lung", "--mechanism", "mle", "--horizon", "1100"],
    ["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate", "--horizon", "1100"],
])
def test_non_private_runs_are_not_releases_and_record_nothing(capsys, ledger_path, argv):
    o = run(capsys, *argv)
    assert o["release"] is False and o["simulation"] is False and "record_id" not in o
    assert "not private" in o["privacy_note"]
    assert LedgerStore(ledger_path).records() == []


@pytest.mark.parametrize("argv", [
    [*KM, "--epsilon", "1"],
    ["logrank", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts"],
    ["weibull", "--data", "lung", "--mechanism", "lsp-tll", "--horizon", "1100"],
    ["regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--horizon", "1100"],
])
def test_repeat_without_seed_exits_2_with_one_sentence(capsys, ledger_path, argv):
    msg = fails(capsys, *argv, "--repeat", "3")
    assert "--repeat 3" in msg and "--seed" in msg and msg.endswith(".") and ". " not in msg
    assert not ledger_path.exists() or LedgerStore(ledger_path).records() == []


def test_a_cli_release_is_charged_to_the_persistent_ledger(capsys, ledger_path):
    o = run(capsys, *KM, "--epsilon", "0.3")
    assert o["release"] is True and o["simulation"] is False and o["record_id"] == 1
    assert o["ledger_path"] == str(ledger_path) and o["spent"] == pytest.approx(0.3)
    assert "--seed" not in o["reproduce"] and "--ledger" not in o["reproduce"]
    o2 = run(capsys, *KM, "--epsilon", "0.2")
    assert o2["record_id"] == 2 and o2["spent"] == pytest.approx(0.5)
    first, second = LedgerStore(ledger_path).release_records(_lung_fp())
    assert (first.id, second.id) == (1, 2)
    assert first.body["cost"]["epsilon"] == pytest.approx(0.3)
    assert first.body["derived"]["edges"][0] == 0 and first.body["derived"]["edges"][-1] == 1100


def _lung_fp() -> str:
    from dpsurv_core.data import datasets
    from dpsurv_core.privacy.fingerprint import fingerprint

    return fingerprint(datasets.load("lung"))


# ------------------------------------------------------------------------------------------ twenty processes, one cap
@pytest.mark.slow
def test_twenty_concurrent_releases_against_a_cap_of_one_get_exactly_ten(capsys, tmp_path):
    """Twenty processes, each a whole `km` release, started at once against a cap of 1 (the budget commands run
    in-process to keep the test quick; the releases are separate processes sharing only the database file)."""
    db = str(tmp_path / "race.sqlite3")
    assert run(capsys, "budget", "set", "--data", "lung", "--cap", "1", "--ledger", db)["cap"] == 1.0
    argv = [sys.executable, "-m", "dpsurv_core", *KM, "--epsilon", "0.1", "--ledger", db, "--json"]
    procs = [subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(20)]  # all started before any is waited for
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=300)  # reads the pipes while waiting (no pipe-buffer deadlock)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    ok = [(out, err) for code, out, err in results if code == 0]
    refused = [(out, err) for code, out, err in results if code == 2]
    assert len(ok) == 10 and len(refused) == 10, [(c, e[-200:]) for c, _, e in results]
    ids = sorted(json.loads(out)["record_id"] for out, _ in ok)
    assert ids == list(range(2, 12))  # record 1 is the cap; the ten releases follow without a gap
    for out, _ in ok:
        o = json.loads(out)
        assert o["release"] is True and o["epsilon_spent"] == pytest.approx(0.1) and o["cap"] == 1.0
    for out, err in refused:
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1 and lines[0].startswith("error: "), err
        assert "but only 0 of the cap 1 is left" in lines[0] and "exceed the cap by 0.1." in lines[0]
    show = run(capsys, "budget", "show", "--data", "lung", "--ledger", db)
    assert abs(show["spent"] - 1.0) <= 1e-9 and len(show["releases"]) == 10 and show["cap"] == 1.0
    assert sorted(r["id"] for r in show["releases"]) == ids
    verify = run(capsys, "budget", "verify", "--ledger", db)  # run() asserts exit 0
    assert verify["ok"] is True and verify["records"] == 11
