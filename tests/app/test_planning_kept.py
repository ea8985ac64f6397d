"""AppTest of the Planning page's simulations: the first view simulates nothing, "Simulate and plan" simulates the
declaration once, a changed target is answered from the kept simulations (no new release, no new reading), and the
answer shown is ``python -m dpsurv_core plan``'s for the same declaration and seed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_core.planning import evaluate
from dpsurv_core.planning.document import target_rows
from tests.app.apptest import ok

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dpsurv_app" / "pages" / "9_Planning.py")
TARGETS = "survival:365:0.1\nmedian:300\nlogrank-power:0.6:0.8"
CHANGED = "survival:365:0.085\nmedian:260\nlogrank-power:0.6:0.7"


@pytest.fixture()
def counted(monkeypatch) -> dict[str, int]:
    """Calls of the cohorts' simulation and of the profiles' release-and-read step, while the test runs the page."""
    calls = {"simulate": 0, "evaluate": 0}
    simulate = evaluate.simulate

    def counted_simulate(*args, **kwargs):
        calls["simulate"] += 1
        return simulate(*args, **kwargs)

    monkeypatch.setattr(evaluate, "simulate", counted_simulate)
    for cls in evaluate.PROFILES.values():
        def wrapped(self, targets, eps, _orig=cls._evaluate):
            calls["evaluate"] += 1
            return _orig(self, targets, eps)
        monkeypatch.setattr(cls, "_evaluate", wrapped)
    return calls


def page(n: int, targets: str = TARGETS) -> AppTest:
    """The page's first view for ``n`` subjects (each test its own n, so that no other test's kept simulations
    answer it), 5 cohorts per epsilon."""
    at = AppTest.from_file(PAGE, default_timeout=600)
    for key, value in {"pl_n": n, "pl_cohorts": 5, "pl_targets": targets}.items():
        at.session_state[key] = value
    return ok(at)


def infos(at: AppTest) -> str:
    return " ".join(i.value.replace("\\", "").replace("**", "") for i in at.info)


def test_the_first_view_simulates_nothing(counted):
    t0 = time.perf_counter()
    at = page(220)
    took = time.perf_counter() - t0
    assert counted == {"simulate": 0, "evaluate": 0}
    assert not at.dataframe and not at.status and not at.error
    assert at.button(key="plan-run").proto.label == "Simulate and plan"
    assert "Simulate and plan simulates the declared study" in infos(at)
    assert took < 10.0, took  # the page's imports included: about 1 s here


def test_a_changed_declaration_asks_again_before_simulating(counted):
    at = page(230, "survival:365:0.1")
    at.button(key="plan-run").click()
    ok(at)
    assert at.dataframe and counted["simulate"] > 0
    before = dict(counted)
    at.number_input(key="pl_n").set_value(240)
    ok(at)
    assert counted == before and not at.dataframe
    assert "The declaration has changed since the last plan" in infos(at)


def test_a_changed_target_is_read_from_the_kept_simulations(counted):
    at = page(260)
    at.button(key="plan-run").click()
    ok(at)
    first = at.dataframe[0].value
    assert counted["simulate"] > 0 and counted["evaluate"] > 0
    assert at.status[0].label.startswith("Simulated: ")
    steps = [m.value.replace("\\", "") for m in at.status[0].markdown]  # each release, as it was made
    assert "laplace-counts (power, HR 0.6): 240 simulated cohorts released and read at epsilon 1" in steps, steps
    assert any(c.value.startswith("Kept for quick changes") for c in at.caption)  # filled in at every epsilon
    before = dict(counted)
    at.text_area(key="pl_targets").input(CHANGED)
    t0 = time.perf_counter()
    ok(at)
    took = time.perf_counter() - t0
    # every goal changed: judged on the releases and readings kept, none made again
    assert counted == before, (counted, before)
    assert at.status[0].label.startswith("Read from the simulations kept for this declaration")
    rows = at.dataframe[0].value
    assert list(rows["Target"].str.slice(0, 30)) != list(first["Target"].str.slice(0, 30))
    assert (rows["Smallest epsilon"].astype(float) != first["Smallest epsilon"].astype(float)).any()
    assert took < 2.0, took  # about 0.1 s here; the bound leaves room for a busy machine
    # a new time for a survival target: the kept releases read at it, nothing simulated or released again
    at.text_area(key="pl_targets").input(CHANGED.replace("365", "500"))
    ok(at)
    assert counted["simulate"] == before["simulate"]
    assert at.status[0].label.startswith("Read from the simulations kept for this declaration")


def cli_plan(n: int, targets: str) -> dict:
    """``python -m dpsurv_core plan`` for the page's declaration at its defaults (seed 1), in its own process."""
    argv = [sys.executable, "-m", "dpsurv_core", "plan", "--n", str(n), "--groups", "2", "--horizon", "1825",
            "--grid", "0:1825:20", "--censoring", "0.2", "--median", "730", "--time-unit", "days",
            "--mechanism", "laplace-counts", "--cohorts", "5", "--seed", "1", "--json"]
    for line in targets.splitlines():
        argv += ["--target", line]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout)


def test_the_answer_is_the_cli_plan():
    # the same declaration as the test above: after it, the page answers from its kept (and filled-in) simulations
    at = page(260)
    at.button(key="plan-run").click()
    ok(at)
    at.text_area(key="pl_targets").input(CHANGED)
    ok(at)
    cli = cli_plan(260, CHANGED)
    shown = at.dataframe[0].value.reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, pd.DataFrame(target_rows(cli)), check_dtype=False)
    said = [m.value.replace("\\", "") for m in [*at.success, *at.warning]]
    assert any(f"{cli['epsilon']:g}" in m for m in said), (said, cli["epsilon"])
    assert list(at.dataframe[1].value["Epsilon"]) == [r["epsilon"] for r in cli["releases"]]
