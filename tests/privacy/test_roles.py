"""Roles are enforced by the ledger itself: an analyst releases but cannot change a cap or allow a kind of release,
a reviewer does neither, and every record names who made it."""

from __future__ import annotations

import pytest

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import LedgerEntry, LedgerStore, PrivacyCost
from dpsurv_core.privacy.roles import (
    ANALYST,
    CUSTODIAN,
    REVIEWER,
    Actor,
    NotAllowedError,
    load_roles,
    local_actor,
    parse_roles,
)

FP = "ab" * 32


def entry(eps: float = 0.25) -> LedgerEntry:
    return LedgerEntry("laplace-counts", "survival curves", "lung", {}, PrivacyCost(eps))


def test_each_role_may_do_its_acts_and_no_other(tmp_path):
    path = tmp_path / "l.sqlite3"
    custodian = LedgerStore(path, actor=Actor("alice", CUSTODIAN, True))
    analyst = LedgerStore(path, actor=Actor("bob", ANALYST, True))
    reviewer = LedgerStore(path, actor=Actor("carol", REVIEWER, True))
    custodian.set_cap(FP, 1.0, "lung")
    for act in (lambda s: s.raise_cap(FP, 2.0, "why"), lambda s: s.lower_cap(FP, 0.5),
                lambda s: s.allow_label_only(FP, "why"), lambda s: s.allow_disclosure_control(FP, "why")):
        for store in (analyst, reviewer):
            with pytest.raises(NotAllowedError, match=f"{store.actor.name} \\({store.actor.role}\\) may not"):
                act(store)
    with analyst.transaction(FP) as tx:
        tx.charge(entry())
    with pytest.raises(NotAllowedError, match="carol \\(reviewer\\) may not release"):
        with reviewer.transaction(FP) as tx:
            tx.charge(entry())
    records = custodian.records(FP)
    assert [(r.kind, r.body["by"]) for r in records] == [("cap-set", "alice"), ("release", "bob")]
    assert custodian.ledger(FP).spent() == pytest.approx(0.25) and custodian.verify().ok


def test_an_analysts_release_with_a_cap_option_cannot_set_the_cap(tmp_path):
    analyst = LedgerStore(tmp_path / "l.sqlite3", actor=Actor("bob", ANALYST, True))
    with pytest.raises(NotAllowedError, match="may not change the cap"):
        with analyst.transaction(FP) as tx:
            tx.use_cap(1.0, "lung")
    assert analyst.records() == []


def test_the_local_user_holds_every_role(tmp_path):
    me = local_actor()
    assert me.role == CUSTODIAN and not me.signed_in and me.name.endswith("(local)")
    store = LedgerStore(tmp_path / "l.sqlite3")
    store.set_cap(FP, 1.0, "lung")
    assert store.records()[0].body["by"] == me.name


def test_a_roles_file_maps_users_and_groups(tmp_path):
    path = tmp_path / "roles.toml"
    path.write_text('[users]\n"Alice@Hospital.example" = "custodian"\n[groups]\n"dp-analysts" = "analyst"\n'
                    '"ethics" = "reviewer"\n')
    roles = load_roles(path)
    assert roles.role_of(["alice@hospital.example"]) == CUSTODIAN  # e-mail compared without case
    assert roles.role_of(["x@y"], ["ethics", "dp-analysts"]) == ANALYST  # the most powerful group
    assert roles.role_of(["x@y"], ["ethics"]) == REVIEWER and roles.role_of(["x@y"], ["other"]) is None
    assert load_roles(tmp_path / "missing.toml").role_of(["alice@hospital.example"]) is None


@pytest.mark.parametrize("data, match", [({"users": {"a": "admin"}}, "role 'admin'"),
                                         ({"people": {}}, "unknown section"), ({"users": ["a"]}, "must map")])
def test_a_bad_roles_file_is_refused_with_a_sentence(data, match):
    with pytest.raises(ParameterError, match=match):
        parse_roles(data)
