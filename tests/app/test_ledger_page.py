"""The Ledger and report page through Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.report.html import ReleaseItem, curve_records, session_report

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "8_Ledger_and_report.py")


def _session_with_release():
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100)
    mech = LaplaceCounts(0.5)
    ledger = Ledger(cap=2.0)
    entry = ledger.charge(mech.ledger_entry("lung"))
    rel = mech.release(cohort, public, SimulationNoise(3))
    return cohort, public, ledger, [ReleaseItem("Survival curves", entry, curve_records(rel), None, rel)]


def test_empty_ledger_says_so():
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert [m.value for m in at.metric][:2] == ["ε = 0", "ε = 5"]
    assert "No release yet" in at.info[0].value


def test_ledger_lists_releases_and_totals():
    _, _, ledger, items = _session_with_release()
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["ledger"] = ledger
    at.session_state["budget_cap"] = 2.0
    at.session_state["stored_releases"] = items
    at.run()
    assert not at.exception
    assert at.metric[0].value == "ε = 0.5" and at.metric[2].value == "ε = 1.5"
    table = at.dataframe[0].value
    assert list(table["mechanism"]) == ["laplace-counts"] and list(table["protects"]) == ["the subject"]
    assert "release(s) and 0 audit(s)" in at.caption[-2].value or any("1 release(s)" in c.value for c in at.caption)


def test_session_report_release_vs_review():
    cohort, public, ledger, items = _session_with_release()
    release = session_report("r", "lung", ledger, items, [], "release")
    review = session_report("r", "lung", ledger, items, [], "review", cohort, public)
    assert "CONFIDENTIAL" not in release and "Released numbers" in release
    assert "comparison with the non-private analysis" in review and review.count("CONFIDENTIAL") >= 3


def test_a_curve_release_reaches_the_ledger_page_and_its_bundle():
    root = Path(__file__).resolve().parents[2] / "pages"
    curves = AppTest.from_file(str(root / "2_Survival_curves.py"), default_timeout=60).run()
    assert not curves.exception
    items = curves.session_state["stored_releases"]
    assert len(items) == 1 and items[0].entry.mechanism == "laplace-counts"
    quantities = {r["quantity"] for r in items[0].records}
    assert {"survival", "at_risk", "events"} <= quantities and items[0].figure is not None
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["ledger"] = curves.session_state["ledger"]
    at.session_state["stored_releases"] = items
    at.run()
    assert not at.exception
    assert list(at.dataframe[0].value["mechanism"]) == ["laplace-counts"]
    assert at.metric[0].value == f"ε = {curves.session_state['ledger'].spent():.3g}"


def test_review_report_compares_each_release_with_the_non_private_analysis():
    """The curves page releases the pooled curve by default while the data maps a group: the review still compares."""
    root = Path(__file__).resolve().parents[2] / "pages"
    at = AppTest.from_file(str(root / "2_Survival_curves.py"), default_timeout=60).run()
    items = at.session_state["stored_releases"]
    assert items[0].result.curves.groups == ("all",)
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort)
    review = session_report("r", "lung", at.session_state["ledger"], items, [], "review", cohort, public)
    assert "Survival curves: laplace-counts: comparison with the non-private analysis" in review
    assert "non-private" in review and "RMSE" in review


def test_review_report_compares_weibull_releases_with_the_mle():
    root = Path(__file__).resolve().parents[2] / "pages"
    at = AppTest.from_file(str(root / "4_Weibull_parameters.py"), default_timeout=90).run()
    items = at.session_state["stored_releases"]
    assert items and items[0].entry.analysis.startswith("weibull") or items[0].title.startswith("Weibull")
    cohort = load_bundled("lung", group="sex")
    review = session_report("r", "lung", at.session_state["ledger"], items, [], "review", cohort,
                            PublicParameters.derive(cohort))
    assert "comparison with the non-private fit" in review and "non-private (MLE)" in review
