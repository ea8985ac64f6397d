"""A plan in the ledger: ``budget set --plan`` sets the cap from it; each later release is marked as planned, or
refused as a deviation unless confirmed (and then marked so)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from dpsurv_core.planning.adherence import AS_PLANNED, DEVIATION, adherence, checked_note, summary
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.cli_run import fails, run

KM = ["--data", "lung", "--time", "time", "--event", "status", "--grid", "0:1000:20", "--horizon", "1000"]


def plan_file(tmp_path, releases=(("laplace-counts", 1.1), ("lsp-tll", 0.7)), cap=None) -> str:
    """A plan file as ``plan --out`` writes it (only the parts the ledger reads)."""
    body = {"plan_version": 1, "epsilon": sum(e for _, e in releases), "reachable": True, "study": {"n": 228},
            "budget": {"cap": cap, "total": sum(e for _, e in releases),
                       "releases": [{"release": i + 1, "analysis": "survival curves" if m == "laplace-counts"
                                     else "Weibull parameters", "mechanism": m, "epsilon": e,
                                     "targets": [{"target": "survival:365:0.1"}]}
                                    for i, (m, e) in enumerate(releases)]}}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(body))
    return str(path)


def test_budget_set_from_a_plan_and_a_release_as_planned(capsys, tmp_path):
    ledger = ["--ledger", str(tmp_path / "l.db")]
    out = run(capsys, "budget", "set", "--data", "lung", "--plan", plan_file(tmp_path), *ledger)
    assert out["cap"] == pytest.approx(1.8) and [r["mechanism"] for r in out["plan"]["releases"]] == ["laplace-counts",
                                                                                                      "lsp-tll"]
    km = run(capsys, "km", *KM, "--mechanism", "laplace-counts", "--epsilon", "1.1", *ledger)
    assert km["plan"].startswith("as planned: release 1 of the plan (laplace-counts at epsilon 1.1")
    shown = run(capsys, "budget", "show", "--data", "lung", *ledger)
    assert shown["releases"][0]["note"] == km["plan"]
    # the same planned release again is a deviation: refused with one sentence, nothing recorded
    line = fails(capsys, "km", *KM, "--mechanism", "laplace-counts", "--epsilon", "1.1", *ledger)
    assert "deviation from plan" in line and "--confirm-deviation" in line
    assert len([r for r in LedgerStore(tmp_path / "l.db").records() if r.kind == RELEASE]) == 1


def test_a_deviation_needs_confirming_and_is_marked(capsys, tmp_path):
    ledger = ["--ledger", str(tmp_path / "l.db")]
    run(capsys, "budget", "set", "--data", "lung", "--plan", plan_file(tmp_path), *ledger)
    line = fails(capsys, "km", *KM, "--mechanism", "adaptive-km", "--epsilon", "0.5", *ledger)
    assert line.startswith("error: This release would be a deviation from plan: adaptive-km at epsilon 0.5")
    km = run(capsys, "km", *KM, "--mechanism", "adaptive-km", "--epsilon", "0.5", "--confirm-deviation", *ledger)
    assert km["plan"].startswith("deviation from plan: adaptive-km at epsilon 0.5") and "confirmed" in km["plan"]
    record = [r for r in LedgerStore(tmp_path / "l.db").records() if r.kind == RELEASE][0]
    assert record.body["note"] == km["plan"]  # kept in the hash-chained record


def test_without_a_plan_nothing_changes(capsys, tmp_path):
    km = run(capsys, "km", *KM, "--mechanism", "adaptive-km", "--epsilon", "0.5", "--ledger", str(tmp_path / "l.db"))
    assert "plan" not in km


def test_budget_plan_refusals(capsys, tmp_path):
    ledger = ["--ledger", str(tmp_path / "l.db")]
    path = plan_file(tmp_path, cap=3.0)
    assert "differs from the plan's cap 3" in fails(capsys, "budget", "set", "--data", "lung", "--plan", path,
                                                    "--cap", "2", *ledger)
    assert "budget set --plan" in fails(capsys, "budget", "raise", "--data", "lung", "--plan", path, "--cap", "4",
                                        "--reason", "x", *ledger)
    bad = tmp_path / "bad.json"
    bad.write_text('{"epsilon": 1}')
    assert "not a dpsurv plan" in fails(capsys, "budget", "set", "--data", "lung", "--plan", str(bad), *ledger)
    bad.write_text("not json")
    assert "is not JSON" in fails(capsys, "budget", "set", "--data", "lung", "--plan", str(bad), *ledger)
    out = run(capsys, "budget", "set", "--data", "lung", "--plan", path, *ledger)
    assert out["cap"] == 3.0  # the cap the plan was made for, not its total


def test_a_plan_written_by_the_planner_is_read(capsys, tmp_path):
    path = tmp_path / "plan.json"
    run(capsys, "plan", "--mechanism", "laplace-counts", "--n", "228", "--horizon", "1000", "--grid", "0:1000:20",
        "--censoring", "0.28", "--median", "310", "--target", "survival:365:0.12", "--cohorts", "5", "--out", str(path))
    got = summary(json.loads(path.read_text()), str(path))
    assert got["releases"][0]["mechanism"] == "laplace-counts" and got["total"] == got["releases"][0]["epsilon"]


def _records(plan: dict, notes: list[str]) -> list:
    return [SimpleNamespace(body={"cap": plan["total"], "plan": plan})] + [SimpleNamespace(body={"note": n})
                                                                           for n in notes]


def test_adherence_takes_each_planned_release_once():
    plan = {
        "releases": [{"release": 1, "mechanism": "laplace-counts", "epsilon": 1.1, "analysis": "curves"},
                     {"release": 2, "mechanism": "laplace-counts", "epsilon": 1.1, "analysis": "curves"}],
        "total": 2.2}
    status, note = adherence(_records(plan, []), "laplace-counts", 1.1)
    assert status == AS_PLANNED and note.startswith("as planned: release 1 ")
    status, note = adherence(_records(plan, [note]), "laplace-counts", 1.1)
    assert status == AS_PLANNED and note.startswith("as planned: release 2 ")
    assert adherence(_records(plan, []), "laplace-counts", 1.0)[0] == DEVIATION
    assert adherence([SimpleNamespace(body={"cap": 2})], "laplace-counts", 1.1) is None
    assert checked_note([SimpleNamespace(body={"cap": 2})], "rrr", 1.0, False) == ""
