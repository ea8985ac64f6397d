"""One budget for the subject: label-only releases under a subject-level cap need a recorded allowance."""

from __future__ import annotations

import json

import pytest

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.ledger import GROUP_LABEL, LedgerEntry, LedgerStore, PrivacyCost
from tests.cli_run import completed


def _rrr(eps: float = 2.0) -> LedgerEntry:
    return LedgerEntry("rrr", "survival curves", "lung", {}, PrivacyCost(eps, protects=GROUP_LABEL,
                                                                          neighbouring="change one label"))


def _lap(eps: float = 2.0) -> LedgerEntry:
    return LedgerEntry("laplace-counts", "survival curves", "lung", {}, PrivacyCost(eps))


def test_label_only_release_refused_under_a_cap_until_allowed(tmp_path):
    store = LedgerStore(tmp_path / "l.db")
    store.set_cap("fp", 2.0)
    with store.transaction("fp") as tx:
        tx.charge(_lap(2.0))
    with pytest.raises(BudgetExceededError, match="allow-label-only"), store.transaction("fp") as tx:
        tx.charge(_rrr(2.0))
    assert len(store.release_records("fp")) == 1
    with pytest.raises(ParameterError, match="reason"):
        store.allow_label_only("fp", "  ")
    store.allow_label_only("fp", "the board accepts label-only releases for this teaching data set")
    with store.transaction("fp") as tx:
        tx.charge(_rrr(2.0))
    ledger = store.ledger("fp")
    assert ledger.label_only_allowed and len(ledger.entries) == 2
    assert ledger.subject_guarantee().startswith("none:")  # the ledger says the subject is unprotected
    assert store.verify().ok


def test_without_a_cap_label_only_is_recorded_and_voids_the_guarantee(tmp_path):
    store = LedgerStore(tmp_path / "l.db")
    with store.transaction("fp") as tx:
        tx.charge(_rrr(1.0))
    assert "group label only" in store.ledger("fp").subject_guarantee()


def test_cli_refuses_rrr_under_a_cap_and_allows_it_after_the_recorded_act(tmp_path):
    db = str(tmp_path / "l.db")

    def run(*args):
        return completed(*args, "--ledger", db, "--json")

    assert run("budget", "set", "--data", "lung", "--cap", "2").returncode == 0
    r = run("km", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "2", "--horizon", "1100")
    assert r.returncode == 2 and r.stdout == "" and "allow-label-only" in r.stderr
    assert run("budget", "allow-label-only", "--data", "lung").returncode == 2  # a reason is required
    allowed = run("budget", "allow-label-only", "--data", "lung", "--reason", "labels only, board minute 12")
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["label_only_allowed"] is True
    r = run("km", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "2", "--horizon", "1100")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["protects"] == GROUP_LABEL
