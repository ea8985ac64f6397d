"""AppTest of the Planning page: the plan's table from the declaration and targets (simulated when asked), its
downloads, a changed target read from the releases kept for the declaration, and bad input as a sentence."""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app.apptest import ok

PAGE = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "9_Planning.py")
TARGETS = "survival:365:0.1\nmedian:300"


def page(**state) -> AppTest:
    """The page with ``state`` set, "Simulate and plan" pressed where the input lets it be offered."""
    at = AppTest.from_file(PAGE, default_timeout=300)
    state = {"pl_cohorts": 5, "pl_n": 300, "pl_targets": TARGETS, **state}
    for k, v in state.items():
        at.session_state[k] = v
    ok(at)
    if any(b.key == "plan-run" for b in at.button):
        at.button(key="plan-run").click()
        ok(at)
    return at


def errors(at: AppTest) -> list[str]:
    """The error sentences as read (markdown's escapes removed)."""
    return [e.value.replace("\\", "") for e in at.error]


def table(at: AppTest):
    return at.dataframe[0].value


def test_plan_table_downloads_and_a_quick_redraw():
    at = page()
    assert not at.error, [e.value for e in at.error]
    rows = table(at)
    assert list(rows["Target"]) == ["survival at 365 days within +-0.1 (95% interval, each group)",
                                    "median survival time within +-300 days (95% interval, each group)"]
    assert (rows["Mechanism"] == "laplace-counts").all() and (rows["Met"] == "yes").all()
    eps = float(rows["Planned epsilon"].iloc[0])
    assert 0.05 <= eps <= 10 and eps == max(rows["Smallest epsilon"])
    assert any(f"{eps:g}" in s.value for s in at.success)
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Plan as JSON", "Plan as a document (Markdown)"]
    # the declaration's releases are kept: a tighter target is read from them, without a new simulation
    at.text_area(key="pl_targets").input("survival:365:0.08\nmedian:300")
    t0 = time.perf_counter()
    ok(at)
    took = time.perf_counter() - t0
    rows2 = table(at)
    assert rows2["Target"].iloc[0].startswith("survival at 365 days within +-0.08")
    assert float(rows2["Smallest epsilon"].iloc[0]) > float(rows["Smallest epsilon"].iloc[0])
    assert took < 2.0, took  # about half a second here; the bound leaves room for a busy machine


def test_bad_target_is_a_sentence():
    at = page(pl_targets="survival:365")
    assert errors(at) == ["--target 'survival:365' needs the form survival:T:H."]
    assert not at.dataframe


def test_mechanism_that_cannot_serve_is_a_sentence():
    at = page(pl_targets="weibull-shape:0.2", pl_mechanisms=["laplace-counts"])
    assert len(at.error) == 1 and "cannot serve the target weibull-shape:0.2" in errors(at)[0]
