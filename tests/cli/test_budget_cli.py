"""``python -m dpsurv_core budget set|raise|lower|show|verify`` and the --cap / --ledger options of a release."""

from __future__ import annotations

import pytest

from dpsurv_core.privacy.ledger import CAP_LOWER, CAP_RAISE, CAP_SET, NO_CAP, LedgerStore
from tests.cli_run import fails, run

KM = ["km", "--data", "lung", "--mechanism", "laplace-counts", "--grid", "0:1100:20"]




def budget(capsys, action: str, *argv: str) -> dict:
    return run(capsys, "budget", action, "--data", "lung", *argv)


def test_show_on_a_fresh_ledger(capsys, ledger_path):
    o = budget(capsys, "show")
    assert o["cap"] is None and o["spent"] == 0.0 and o["remaining"] is None and o["releases"] == []
    assert o["cap_history"] == [] and o["budget"] == NO_CAP and o["ledger_path"] == str(ledger_path)
    assert len(o["fingerprint"]) == 64 and o["dataset"] == "lung"


def test_set_twice_exits_2_and_says_to_use_raise(capsys):
    o = budget(capsys, "set", "--cap", "1.5")
    assert o["cap"] == 1.5 and o["remaining"] == 1.5 and o["budget"].startswith("cap epsilon 1.5")
    msg = fails(capsys, "budget", "set", "--data", "lung", "--cap", "3")
    assert "already has a cap" in msg and "budget raise" in msg
    assert budget(capsys, "show")["cap"] == 1.5


def test_raise_needs_a_reason_and_a_higher_cap(capsys):
    budget(capsys, "set", "--cap", "1")
    assert "reason" in fails(capsys, "budget", "raise", "--data", "lung", "--cap", "2")
    assert "reason" in fails(capsys, "budget", "raise", "--data", "lung", "--cap", "2", "--reason", "  ")
    msg = fails(capsys, "budget", "raise", "--data", "lung", "--cap", "0.5", "--reason", "typo")
    assert "not above the current cap" in msg and "budget lower" in msg
    o = budget(capsys, "raise", "--cap", "2", "--reason", "second analysis approved by the board")
    assert o["cap"] == 2.0


def test_raise_without_a_cap_and_set_or_raise_without_cap_value(capsys):
    assert "no cap yet" in fails(capsys, "budget", "raise", "--data", "lung", "--cap", "2", "--reason", "r")
    assert "--cap" in fails(capsys, "budget", "set", "--data", "lung")
    assert "--data" in fails(capsys, "budget", "show")
    assert "--cap" in fails(capsys, "budget", "lower", "--data", "lung", "--cap", "-1")


def test_lower_is_always_allowed_and_the_cap_history_is_shown(capsys):
    budget(capsys, "lower", "--cap", "3")  # no cap yet: lowering sets one
    run(capsys, *KM, "--epsilon", "0.75")
    budget(capsys, "lower", "--cap", "0.5", "--reason", "tighter policy")  # below what is spent: allowed
    o = budget(capsys, "lower", "--cap", "0.5")  # to the same value: allowed
    assert o["cap"] == 0.5 and o["spent"] == pytest.approx(0.75) and o["remaining"] == 0.0
    assert "exceed the cap by 0.35" in fails(capsys, *KM, "--epsilon", "0.1")
    o = budget(capsys, "raise", "--cap", "2", "--reason", "new protocol")
    hist = [(h["id"], h["kind"], h["cap"], h["previous"], h["reason"]) for h in o["cap_history"]]
    assert hist == [(1, CAP_SET, 3.0, None, ""), (3, CAP_LOWER, 0.5, 3.0, "tighter policy"),
                    (4, CAP_LOWER, 0.5, 0.5, ""), (5, CAP_RAISE, 2.0, 0.5, "new protocol")]
    assert [r["id"] for r in o["releases"]] == [2] and o["remaining"] == pytest.approx(1.25)
    assert all(h["time"] for h in o["cap_history"])


def test_the_first_release_with_cap_sets_the_cap(capsys, ledger_path):
    o = run(capsys, *KM, "--epsilon", "0.25", "--cap", "1")
    assert o["record_id"] == 2 and o["cap"] == 1.0 and o["spent"] == pytest.approx(0.25)
    assert o["budget"] == "cap epsilon 1, spent 0.25, left 0.75" and o["ledger_warnings"] == []
    assert "--cap" not in o["reproduce"]
    o = run(capsys, *KM, "--epsilon", "0.25", "--cap", "1")  # the same cap again is no act
    assert o["record_id"] == 3
    msg = fails(capsys, *KM, "--epsilon", "0.25", "--cap", "2")  # raising is a separate, reasoned act
    assert "budget raise" in msg and "--reason" in msg
    s = budget(capsys, "show")
    assert [(h["kind"], h["cap"], h["reason"]) for h in s["cap_history"]] == [(CAP_SET, 1.0, "set with the first release")]
    assert [r["id"] for r in s["releases"]] == [2, 3] and s["spent"] == pytest.approx(0.5)
    msg = fails(capsys, *KM, "--epsilon", "0.25", "--cap", "0.8")  # nor does a release lower it: `budget lower`
    assert "budget lower" in msg and "records nothing" in msg
    assert budget(capsys, "show")["cap"] == 1.0 and len(LedgerStore(ledger_path).records()) == 3
    assert LedgerStore(ledger_path).verify().ok


def test_a_release_with_no_cap_says_no_cap_is_set(capsys):
    o = run(capsys, *KM, "--epsilon", "0.5")
    assert o["cap"] is None and "no cap set" in o["budget"] and o["budget"] == NO_CAP
    assert o["ledger_warnings"] == [NO_CAP] and "budget set" in o["ledger_warnings"][0]
    s = budget(capsys, "show")
    assert s["cap"] is None and "no cap set" in s["budget"] and s["spent"] == pytest.approx(0.5)


def test_releases_in_show_carry_what_reruns_them(capsys):
    run(capsys, *KM, "--epsilon", "0.5", "--group", "sex", "--seed", "4")  # a simulation: not listed
    run(capsys, *KM, "--epsilon", "0.5", "--group", "sex")
    (r,) = budget(capsys, "show")["releases"]
    assert (r["id"], r["mechanism"], r["analysis"], r["epsilon"], r["protects"]) == \
        (1, "laplace-counts", "survival curves", 0.5, "the subject")
    assert r["reproduce"] == ("python -m dpsurv_core km --data lung --mechanism laplace-counts --grid 0:1100:20 "
                              "--epsilon 0.5 --group sex --json")


def test_rrr_is_charged_to_the_label_not_the_subject(capsys):
    budget(capsys, "set", "--cap", "1")
    assert "allow-label-only" in fails(capsys, *KM, "--mechanism", "rrr", "--group", "sex", "--epsilon", "0.9")
    budget(capsys, "allow-label-only", "--reason", "labels only")
    o = run(capsys, *KM, "--mechanism", "rrr", "--group", "sex", "--epsilon", "0.9")
    assert o["protects"] == "the group label only" and o["spent"] == pytest.approx(0.9)  # spent on what it protects
    s = budget(capsys, "show")
    assert s["totals"]["the group label only"]["epsilon"] == pytest.approx(0.9) and s["spent"] == 0.0
    assert s["subject_guarantee"].startswith("none: release 3")
    assert "exceed the cap by 0.1" in fails(capsys, *KM, "--mechanism", "rrr", "--group", "sex", "--epsilon", "0.2")
    run(capsys, *KM, "--epsilon", "1")  # the subject's budget is untouched by the label-only release


def test_ledger_option_picks_another_database(capsys, tmp_path, ledger_path):
    other = tmp_path / "elsewhere" / "other.sqlite3"
    o = run(capsys, *KM, "--epsilon", "0.5", "--ledger", str(other))
    assert o["ledger_path"] == str(other) and o["record_id"] == 1
    assert budget(capsys, "show")["releases"] == []
    assert len(budget(capsys, "show", "--ledger", str(other))["releases"]) == 1
    v = run(capsys, "budget", "verify", "--ledger", str(other))
    assert v["ok"] is True and v["records"] == 1 and v["ledger_path"] == str(other)


def test_a_ledger_path_that_is_not_a_database_is_one_sentence(capsys, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("shopping list " * 200)
    assert "not a dpsurv ledger database" in fails(capsys, "budget", "show", "--data", "lung", "--ledger", str(bad))


def test_rounding_leaves_nothing_rather_than_1e_16(capsys):
    budget(capsys, "set", "--cap", "0.3")
    for _ in range(3):
        run(capsys, *KM, "--epsilon", "0.1")  # 0.1 + 0.1 + 0.1 = 0.30000000000000004 still fits the cap 0.3
    msg = fails(capsys, *KM, "--epsilon", "0.1")
    assert "but only 0 of the cap 0.3 is left" in msg and "exceed the cap by 0.1" in msg
