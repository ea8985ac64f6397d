"""AppTest of the trade-off explorer page and its plotly view, with real values on lung."""

from __future__ import annotations

import base64
import dataclasses
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_app import tradeoff_view as tv
from dpsurv_core import tradeoff
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import LedgerStore
from tests.app.tables import shown

PAGE = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "7_Trade-off_explorer.py")


def run(at: AppTest | None = None, **state) -> AppTest:
    at = at or AppTest.from_file(PAGE, default_timeout=60)
    state.setdefault("to_trials", 50)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def full_study(at: AppTest) -> AppTest:
    """Ask for the full study (the first view is a quick look)."""
    at.button(key="to_run").click()
    return run(at)


def figure(at: AppTest) -> dict:
    charts = at.get("plotly_chart")
    assert len(charts) == 1
    return json.loads(charts[0].proto.spec)


def arr(v) -> list[float]:
    """A plotly array from the chart's JSON (plain list, or base64 typed array)."""
    if isinstance(v, dict) and "bdata" in v:
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"])).tolist()
    return list(v)


def summary(at: AppTest) -> pd.DataFrame:
    return shown(at.table[0].value)


def test_first_view_is_a_quick_look_at_the_first_mechanism_then_the_study_adds_the_others():
    at = run()
    fig = figure(at)
    assert {t.get("name") for t in fig["data"] if t.get("name")} == {tv.mechanism_label("laplace-counts")}
    xs = {x for t in fig["data"] if t.get("name") for x in arr(t["x"])}
    assert xs == set(tradeoff.DEFAULT_EPSILONS)
    assert list(summary(at)["Mechanism"]) == [tv.mechanism_label("laplace-counts")]
    assert any(m.value.startswith("**Quick look:**") for m in at.markdown)
    assert any(c.value.startswith("10 points, 50 simulated releases each") for c in at.caption)
    assert [b.key for b in at.button] == ["to_run"]
    quick = summary(at).set_index("Mechanism").loc[tv.mechanism_label("laplace-counts")]
    full_study(at)
    n = len(tradeoff.defaults(tradeoff.CURVE_MECHANISMS))
    assert any(c.value.startswith(f"{10 * n} points") and "(10 points reused from earlier runs)" in c.value
               for c in at.caption)  # the quick look's points are the study's own
    pd.testing.assert_series_equal(summary(at).set_index("Mechanism").loc[tv.mechanism_label("laplace-counts")], quick)


def test_default_page_on_lung_shows_the_curve_tradeoff():
    at = full_study(run())
    assert "to_run" not in [b.key for b in at.button]
    fig = figure(at)
    assert fig["layout"]["xaxis"]["type"] == "log"
    names = {t.get("name") for t in fig["data"] if t.get("name")}
    assert names == {tv.mechanism_label(m, "curves") for m in tradeoff.defaults(tradeoff.CURVE_MECHANISMS)}
    assert tv.mechanism_label("laplace-counts") == catalogue.get(catalogue.CURVES, "laplace-counts").name
    # a diamond per mechanism at the current epsilon (1 by default)
    diamonds = [t for t in fig["data"] if t.get("marker", {}).get("symbol") == "diamond"]
    assert len(diamonds) == len(tradeoff.defaults(tradeoff.CURVE_MECHANISMS)) and all(arr(t["x"]) == [1.0] for t in diamonds)
    assert all("Your epsilon" in t["hovertemplate"] for t in diamonds)
    # the numbers equal the core's with the page's seed, and the reference line is the binning error
    lung = load_bundled("lung", group="sex")
    public = PublicParameters.derive(lung, horizon=1100.0)
    core = tradeoff.tradeoff("curves", lung, public, ["laplace-counts"], [0.1, 1.0, 10.0], trials=50, seed=2024)
    row = summary(at).set_index("Mechanism").loc[tv.mechanism_label("laplace-counts")]
    for eps in (0.1, 1.0, 10.0):
        v = core.table.set_index("epsilon").loc[eps, "value"]
        assert row[f"epsilon {eps:g}"] == f"{100 * v:.2f} points"
    shapes = fig["layout"]["shapes"]
    hline = [s for s in shapes if s.get("y0") == s.get("y1") and s.get("line", {}).get("dash") == "dash"]
    assert len(hline) == 1 and hline[0]["y0"] == pytest.approx(100 * core.reference["rmse"])
    # the chart says what the epsilons protect, the page that nothing is released or charged
    text = " ".join([c.value for c in at.caption] + [m.value for m in at.markdown] + [i.value for i in at.info])
    assert "protects the group label only" in text and "add or remove one patient" in text
    assert "nothing is charged to the privacy ledger" in text
    assert f"**At your epsilon 1:** {tv.mechanism_label('laplace-counts')}:" in text
    assert any("What am I looking at?" in e.label for e in at.expander)
    # the explainer cites each mechanism's paper from the catalogue
    assert all(e.paper in text for e in catalogue.entries(catalogue.CURVES, "km", private=True))
    assert LedgerStore().records() == []


@pytest.mark.slow
def test_other_analyses_render():
    at = run()
    at.selectbox(key="to_analysis").set_value("logrank")
    full_study(run(at))
    assert {t["name"] for t in figure(at)["data"] if t.get("name")} == \
        {tv.mechanism_label(m, "logrank") for m in tradeoff.defaults(tradeoff.TEST_MECHANISMS)}
    assert all(v.endswith("%") for v in summary(at)["epsilon 10"])
    # the non-private reference names the groups by their labels and says yes / no, not "1 = yes"
    ref = next(t.value for t in at.dataframe if "Quantity" in t.value.columns)
    assert "p Male vs Female" in set(ref["Quantity"]) and "binning alone changes a conclusion" in set(ref["Quantity"])
    assert not any("1 = yes" in q for q in ref["Quantity"])
    at.selectbox(key="to_analysis").set_value("weibull")
    full_study(run(at))
    fig = figure(at)
    assert fig["layout"]["yaxis"]["type"] == "log" and fig["layout"]["yaxis2"]["type"] == "log"
    assert len(summary(at)) == 6  # three mechanisms, shape and scale
    at.selectbox(key="to_analysis").set_value("regression")
    full_study(run(at))
    names = {t["name"] for t in figure(at)["data"] if t.get("name")}
    assert names == {tv.mechanism_label("output"), tv.mechanism_label("objective")}  # pSGLD only on request
    assert LedgerStore().records() == []  # four analyses simulated, nothing recorded
    # the dotted guide: the error of the ridge penalty alone, 0 < it < the errors at epsilon 10
    guide = [s for s in figure(at)["layout"]["shapes"] if s["line"]["dash"] == "dot" and s.get("y0") == s.get("y1")]
    assert len(guide) == 1 and 0 < guide[0]["y0"] < 100


def test_moving_epsilon_simulates_and_records_nothing():
    at = run()
    at.select_slider(key="to_epsilon").set_value(0.2)
    run(at)
    diamonds = [t for t in figure(at)["data"] if t.get("marker", {}).get("symbol") == "diamond"]
    assert diamonds and all(arr(t["x"]) == [0.2] for t in diamonds)
    assert LedgerStore().records() == []
    assert not [b for b in at.button if b.key and b.key.startswith("release-")]  # no Release button here


def test_current_epsilon_comes_from_the_curves_page():
    at = run(sc_epsilon=0.5)
    diamonds = [t for t in figure(at)["data"] if t.get("marker", {}).get("symbol") == "diamond"]
    assert diamonds and all(arr(t["x"]) == [0.5] for t in diamonds)
    assert "epsilon 0.5" in summary(at).columns


def test_uploaded_data_are_cached_in_the_session_only():
    choice = dataclasses.replace(session.bundled_choice("lung"), name="my upload", bundled=False)
    at = run(data_choice=choice)
    def cells() -> list:
        return [k for k in at.session_state["_session_cache"] if k[0] == "tradeoff-cell"]

    quick = len(tradeoff.DEFAULT_EPSILONS)  # the quick look: the first mechanism at every epsilon
    assert len(cells()) == quick
    before = summary(at)
    run(at)  # a rerun reuses the session's cells
    pd.testing.assert_frame_equal(before, summary(at))
    assert any("reused from earlier runs" in c.value for c in at.caption)
    full_study(at)
    assert len(cells()) == len(tradeoff.defaults(tradeoff.CURVE_MECHANISMS)) * len(tradeoff.DEFAULT_EPSILONS)


def test_the_full_study_stays_on_when_epsilon_moves_and_a_new_setting_asks_again():
    at = full_study(run())
    n_full = len(figure(at)["data"])
    at.select_slider(key="to_epsilon").set_value(0.8)
    run(at)
    assert "to_run" not in [b.key for b in at.button]
    xs = {x for t in figure(at)["data"] if t.get("name") for x in arr(t["x"])}
    assert xs == {*tradeoff.DEFAULT_EPSILONS, 0.8} and len(figure(at)["data"]) == n_full
    at.select_slider(key="to_trials").set_value(100).run()  # another study: a quick look again until asked for
    assert not at.exception
    assert [b.key for b in at.button] == ["to_run"]
    assert LedgerStore().records() == []


def test_figure_on_a_log_axis_leaves_out_a_zero_reference_and_clips_bands():
    table = pd.DataFrame([
        {"analysis": "weibull", "mechanism": "lsp-tll", "epsilon": e, "metric": "mdae_shape", "value": v,
         "median": v, "mean": v, "lower": 0.0, "upper": 2 * v, "trials": 10, "protects": "the subject",
         "guarantee": "exact"} for e, v in ((0.1, 1.0), (1.0, 0.1), (10.0, 0.01))])
    fig = tv.tradeoff_figure(table, {"mdae_shape": 0.0}, "maximum-likelihood fit", 1.0, log_y=True)
    assert not [s for s in fig.layout.shapes if s.line.dash == "dash"]
    band_low = [t for t in fig.data if t.fill == "tonexty"][0]
    assert np.all(np.asarray(band_low.y) > 0)
    lin = tv.tradeoff_figure(table, {"mdae_shape": 0.0}, "maximum-likelihood fit", None, log_y=False)
    assert [s for s in lin.layout.shapes if s.line.dash == "dash"]
    assert not [t for t in lin.data if t.marker.symbol == "diamond"]
    # labels of lines on a log axis sit at log10 of the value (plotly's convention), not at the value
    guided = tv.tradeoff_figure(table, {"mdae_shape": 0.0}, "fit", 1.0, log_y=True, guides=[("floor", "mdae_shape", 0.5)])
    label = [a for a in guided.layout.annotations if a.text.startswith("floor")][0]
    assert label.y == pytest.approx(np.log10(0.5))
