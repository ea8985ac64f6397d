"""The Weibull parameters page through Streamlit's AppTest, with real values.

Explore freely, release once: the page and its sliders show previews and charge nothing; each mechanism's Release
button writes one record to the ledger database (``DPSURV_LEDGER``, one per test).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import palette
from dpsurv_app.session import DataChoice, bundled_choice
from dpsurv_core.data.cohort import ColumnMap, load_bundled
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.weibull.model import sample_from_cohort, weibull_mle
from tests.app.apptest import release, releases
from tests.app.tables import shown_text

PAGE = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "4_Weibull_parameters.py")
FIRST = catalogue.ids(catalogue.WEIBULL, "weibull", private=True)[0]


def run(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=90)
    state.setdefault("wb_trials", 50)
    state.setdefault("wb_run_study", True)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at: AppTest) -> pd.DataFrame:
    return at.dataframe[0].value


def declared(name: str = "lung", horizon: float = 1100.0) -> DataChoice:
    """A bundled data set with its horizon declared (its published size is its declared n): with the censoring share
    declared too (``wb_censoring``), a release reads nothing off the data."""
    choice = bundled_choice(name)
    choice.horizon = horizon
    return choice


def test_default_page_on_lung_shows_the_fits_and_a_preview():
    at = run()
    t = table(at)
    mle = weibull_mle(sample_from_cohort(load_bundled("lung"), 1100.0))
    assert len(t) == 3 and t["Estimate"].iloc[2] == f"{catalogue.get(catalogue.WEIBULL, FIRST).name}, preview"
    assert t["Shape p"].iloc[1] == pytest.approx(mle.shape, rel=1e-12)
    assert t["Shape p"].iloc[0] == pytest.approx(mle.shape, rel=1e-6)  # lifelines
    assert t["Scale (days)"].iloc[1] == pytest.approx(mle.scale, rel=1e-12)
    p, lam = t["Shape p"].iloc[2], t["Scale (days)"].iloc[2]
    assert 0 <= p <= 10 and np.isfinite(lam) and lam > 0
    assert t["Scale / T_max"].iloc[2] == pytest.approx(lam / 1100.0)
    assert t["Epsilon"].iloc[2].endswith("if released; preview: none")
    lo, hi = (float(v) for v in t["Shape 95% interval"].iloc[2].split(" to "))
    assert lo <= p <= hi  # the noise-aware interval of the preview, beside it
    assert "carrying the privacy noise" in " ".join(shown_text(m.value) for m in at.markdown)
    assert any("censoring share" in i.value for i in at.info)  # read off the data: disclosed
    text = " ".join(shown_text(m.value) for m in at.markdown)
    assert "preview (not charged, not for publication)" in text
    assert "protecting the subject, neighbours: add/remove one subject" in text
    assert all(e.paper in text for e in catalogue.entries(catalogue.WEIBULL, "weibull", private=True))
    assert any("Preview, not for publication" in c.value for c in at.caption)
    assert any("What am I looking at?" in e.label for e in at.expander)
    assert len(at.get("plotly_chart")) == 3
    # the study: one row per mechanism and epsilon, not charged
    study = at.dataframe[1].value
    assert set(study["mechanism"].str[:3]) == {"LSP", "Lap", "Sam"} and (study["trials"] == 50).all()
    lsp = study[study["mechanism"].str.startswith("LSP")].sort_values("epsilon")
    assert lsp["mdae_shape"].iloc[-1] < lsp["mdae_shape"].iloc[0]
    # a rerun shows the same preview; nothing was charged
    at.run()
    assert table(at)["Shape p"].iloc[2] == p
    assert releases() == []


def test_moving_epsilon_changes_the_preview_and_charges_nothing():
    at = run()
    before = table(at)["Scale (days)"].iloc[2]
    at.select_slider(key="wb_epsilon").set_value(0.2).run()
    assert not at.exception
    assert table(at)["Scale (days)"].iloc[2] != before  # the same seeded draw, scaled for the new epsilon
    assert any("charge epsilon = 0.2" in c.value for c in at.caption)
    at.number_input(key="wb_gamma").set_value(12.0).run()
    assert releases() == []


def test_release_button_charges_once_per_click():
    at = run(wb_epsilon=0.5, data_choice=declared(), wb_censoring=0.3)
    release(at, f"release-weibull-{FIRST}").run()
    assert not at.exception
    recs = releases()
    assert len(recs) == 1
    body = recs[0].body
    assert body["cost"]["epsilon"] == pytest.approx(0.5) and body["analysis"] == "Weibull parameters"
    assert body["command"].startswith("python -m dpsurv_core weibull ")
    assert f"--mechanism {FIRST} --epsilon 0.5" in body["command"]
    assert "--censoring 0.3" in body["command"] and "--n-public 228" in body["command"]
    released = table(at).iloc[2]
    assert released["Estimate"].endswith(f"released, record {recs[0].id}")
    assert body["released"]["estimates"][0]["shape"] == pytest.approx(released["Shape p"])
    # the record publishes declared values only: lung's published size and the declared censoring share
    assert body["public_inputs"]["n"] == 228 and body["public_inputs"]["censoring"] == 0.3
    assert body["disclosures"] == [] and body["kind"] == "weibull"
    # the record keeps the intervals and warnings the page shows beside the release (post-processing)
    (kept,) = body["derived"]["intervals"]
    assert kept["shape"]["estimate"] == pytest.approx(released["Shape p"]) and kept["method"] == body["derived"]["interval_method"]
    shown = " ".join(shown_text(m.value) for m in at.markdown)
    assert f"{kept['shape']['lower']:.3g} to {kept['shape']['upper']:.3g}" in shown
    assert released["Epsilon"].endswith("charged")
    # the preview's caption goes once the plan is released: the block shows the released numbers
    assert not any("Releasing this plan would charge" in c.value for c in at.caption)
    # the same button now says that another click is another release, charged again
    assert at.button(key=f"release-weibull-{FIRST}").label.startswith("Release again: a new draw, a new record")
    release(at, f"release-weibull-{FIRST}").run()  # a fresh draw, a second record
    assert len(releases()) == 2


def test_every_mechanism_has_its_own_release():
    ids = catalogue.ids(catalogue.WEIBULL, "weibull", private=True)
    at = run(wb_mechanisms=ids, wb_epsilon=0.4)
    assert len(table(at)) == 2 + len(ids)
    assert releases() == []
    warnings = " ".join(shown_text(w.value) for w in at.warning)
    # SAA's number of blocks derived from n sets its noise scale: flagged as not DP
    assert "Not differentially private (blocks)" in warnings
    # the horizon, the censoring share and SAA's blocks would be read off the data: each Release button is off
    # until they are declared or ticked beside it
    assert "Release is off" in warnings
    assert all(at.button(key=f"release-weibull-{mid}").disabled for mid in ids)
    for mid in ids:
        for value in ("horizon", "censoring", "blocks") if mid == "saa" else ("horizon", "censoring"):
            at.checkbox(key=f"accept-weibull-{mid}-{value}").check()
    at.run()
    # the header says what the release will be: charged, but not DP as run
    assert "A release would charge: epsilon = 0.4, but not differentially private as run" in " ".join(
        shown_text(m.value) for m in at.markdown)
    for mid in ids:
        release(at, f"release-weibull-{mid}").run()
    recs = releases()
    assert [r.body["mechanism"] for r in recs] == ids
    assert sum(r.body["cost"]["epsilon"] for r in recs) == pytest.approx(0.4 * len(ids))
    # accepted: recorded as not DP as run, naming the values read off the data
    for r in recs:
        names = {d["parameter"] for d in r.body["disclosures"]}
        assert names == ({"horizon", "censoring", "blocks"} if r.body["mechanism"] == "saa" else {"horizon", "censoring"})
        assert all(d["dp"] is False for d in r.body["disclosures"]) and r.body["public_inputs"]["n"] == 228


def test_refused_past_the_cap():
    LedgerStore().set_cap(bundled_choice("lung").fingerprint, 0.5, "lung")
    at = run(data_choice=declared(), wb_censoring=0.3)
    # the budget cannot pay: the button is off before any click, with the ledger's sentence naming the cap
    assert not at.exception and at.button(key=f"release-weibull-{FIRST}").disabled
    assert any("Release is off" in w.value and "cap" in w.value for w in at.warning)
    assert releases() == []
    assert table(at)["Estimate"].iloc[2].endswith("preview")  # the preview stays, labelled


@pytest.mark.slow
def test_flchain_with_declared_horizon():
    choice = declared("flchain", 5300.0)
    at = run(data_choice=choice, wb_trials=50, wb_mechanisms=[FIRST], wb_censoring=0.7)
    t = table(at)
    assert t["Shape p"].iloc[1] == pytest.approx(0.96160775, abs=1e-7)
    assert abs(t["Shape p"].iloc[2] - 0.9616) < 0.3
    assert not any("horizon" in i.value for i in at.info)  # declared: no disclosure
    release(at, f"release-weibull-{FIRST}").run()
    assert "--horizon 5300" in releases()[0].body["command"]


def test_bad_data_gives_a_sentence():
    frame = pd.DataFrame({"t": [5.0] * 12, "e": [1] * 12})
    choice = DataChoice("equal", frame, ColumnMap(time="t", event="e"), "days", False, horizon=10.0)
    at = run(data_choice=choice)
    assert at.error and "same" in at.error[0].value
    assert releases() == []


def test_clinician_view_explainer_glossary_downloads_and_the_laplace_explanation():
    at = run(wb_mechanisms=[FIRST, "laplace"], wb_epsilon=1.0, wb_run_study=False)
    assert not at.exception
    # the explainer is open on the first visit, with the glossary popovers of the page's words
    (box,) = [e for e in at.expander if "What am I looking at?" in e.label]
    assert box.proto.expanded
    popovers = {p.proto.popover.label for p in at.get("popover")}
    assert {"LSP rung", "TLL", "sample and aggregate", "omega", "gamma", "global sensitivity"} <= popovers
    # the Laplace baseline's error of about 14 (gamma 10, epsilon 1) is explained beside it, with what to do
    infos = " ".join(i.value for i in at.info)
    assert "Why the Laplace baseline is so far off" in infos and "global sensitivity" in infos
    assert "gamma / (epsilon/2) = 20" in infos and "20 x ln 2 = 13.9" in infos and "What to do" in infos
    # the scale is fitted in horizons: its typical error is said in horizons and in the data's unit
    assert "13.9 horizons (" in infos and " days) on the scale" in infos
    # every figure with PNG and SVG, every table with CSV; the study waits for its switch (fast first view)
    downloads = [b.proto.label for b in at.get("download_button")]
    assert downloads.count("Figure as PNG") == downloads.count("Figure as SVG") == len(at.get("plotly_chart")) == 2
    assert "Table as CSV" in downloads
    assert any("error study is off" in i.value for i in at.info)
    # the Okabe-Ito palette (and black and grey for the non-private references) only
    allowed = {c.lower() for c in (*palette.OKABE_ITO, palette.GREY)}
    for chart in at.get("plotly_chart"):
        traces = json.loads(chart.proto.spec)["data"]
        colours = {str(t.get(part, {}).get("color")).lower() for t in traces for part in ("line", "marker")
                   if isinstance(t.get(part, {}).get("color"), str)}
        assert colours and colours <= allowed
    assert releases() == []


def test_the_next_epsilons_intervals_start_in_the_background_and_equal_an_uncached_computation():
    """The redraw after one slider step: the intervals of the previews one step either side start in the
    background after the first view; the one picked up after the move is exactly the interval computed afresh from
    the shown preview (same seed, same public inputs), and the page shows it."""
    from dpsurv_core.weibull.inference import censoring_share, weibull_intervals
    from dpsurv_core.weibull.mechanisms import WeibullEstimates

    at = run(wb_run_study=False, preview_seed=11)
    store = at.session_state["_prefetch"]
    started = {key[1][1]: fut for key, fut in store.items() if key[0] == "wb_intervals" and key[1][1] != 1.0}
    clamped = {key[1][1]: key[1][-1] for key in store if key[0] == "wb_intervals"}
    assert sorted(started) == [0.8, 1.6]  # the slider's neighbours of epsilon 1
    prefetched = started[0.8].result(timeout=120)
    at.select_slider(key="wb_epsilon").set_value(0.8).run()
    assert not at.exception
    row = table(at).iloc[2]
    sample = sample_from_cohort(load_bundled("lung"), 1100.0)
    est = WeibullEstimates(FIRST, np.array([row["Shape p"]]), np.array([row["Scale / T_max"]]), 1100.0,
                           clamped=np.array([clamped[0.8]]))  # whether TLL clamped the preview, as the key says
    mech = catalogue.get(catalogue.WEIBULL, FIRST).build(0.8, horizon=1100.0)
    fresh = weibull_intervals(mech, est, sample.n, censoring_share(sample)).to_dict()
    assert prefetched == fresh  # the prefetched result is the uncached one, number for number
    assert row["Shape 95% interval"] == f"{fresh['shape']['lower']:.3g} to {fresh['shape']['upper']:.3g}"
    # a time as clinicians read it: whole days from 100 on, never 1.1e+04
    assert row["Scale 95% interval"] == f"{fresh['scale']['lower']:,.0f} to {fresh['scale']['upper']:,.0f} days"
    # after the move the neighbours of 0.8 are wanted: 0.5 started, 1.0 is the first view's own result
    keys = {key[1][1] for key in at.session_state["_prefetch"] if key[0] == "wb_intervals"}
    assert {0.5, 0.8, 1.0} <= keys
    assert releases() == []


def test_saa_with_blocks_read_off_the_data_says_it_protects_nothing():
    """Sample and aggregate with the block count derived from n (0 = records / 500): charged, but not DP as run. The
    header and the table say so, not 'protecting the subject'."""
    at = run(wb_mechanisms=["saa"], wb_epsilon=1.0, wb_run_study=False)
    head = " ".join(m.value for m in at.markdown if "Sample" in m.value and "epsilon = 1" in m.value)
    assert "not differentially private as run" in head and "protecting the subject" not in head
    (row,) = [r for r in table(at).to_dict("records") if "Sample" in r["Estimate"]]
    assert "not DP as run" in row["Epsilon"] and "protects the subject" not in row["Epsilon"]
    at = run(wb_mechanisms=["saa"], wb_epsilon=1.0, wb_run_study=False, wb_blocks=1)  # declared: DP
    head = " ".join(m.value for m in at.markdown if "Sample" in m.value and "epsilon = 1" in m.value)
    assert "protecting the subject" in head


def test_an_upload_needs_its_n_declared_and_the_page_s_release_publishes_declared_values_only():
    """An upload has no published size: n would be counted in the data (disclosed) and the Release button stays off
    until it is declared or ticked. Declared on the page, the record's public inputs hold the declared n and share,
    nothing read off the data, its intervals are the ones the page shows, and the record re-derives identically."""
    from dpsurv_core.data import datasets
    from dpsurv_core.publication import rederive

    frame = datasets.load("lung")[["time", "status"]]  # status 0/1
    choice = DataChoice("my study", frame, ColumnMap(time="time", event="status"), "days", False, horizon=1100.0)
    at = run(data_choice=choice, wb_censoring=0.3, wb_run_study=False)
    assert any(i.value.startswith("Disclosure (n)") and "228" in i.value for i in at.info)
    assert at.button(key=f"release-weibull-{FIRST}").disabled
    assert releases() == []
    at.number_input(key="wb_n").set_value(250).run()  # declared from the study design (not the cohort's 228)
    assert not any("Disclosure (n)" in i.value for i in at.info)
    release(at, f"release-weibull-{FIRST}").run()
    assert not at.exception
    (rec,) = releases()
    body = rec.body
    assert body["public_inputs"]["n"] == 250 and body["public_inputs"]["censoring"] == 0.3
    assert not body["public_inputs"]["n_from_data"] and body["disclosures"] == []
    assert "--n-public 250" in body["command"] and "--censoring 0.3" in body["command"]
    (kept,) = body["derived"]["intervals"]
    row = table(at).iloc[2]
    assert row["Shape 95% interval"] == f"{kept['shape']['lower']:.3g} to {kept['shape']['upper']:.3g}"
    assert rederive(body)["identical"] is True


def test_a_preview_shows_the_spread_of_twenty_draws_and_another_draw():
    at = run(data_choice=declared(), wb_censoring=0.3)
    said = " ".join(c.value for c in at.caption)
    assert re.search(r"Across 20 preview draws \(simulation noise, free, never exported\): shape [0-9.]+ to [0-9.]+", said)
    assert any(b.key == f"another-draw-weibull-{FIRST}" for b in at.button)
    assert releases() == []


def test_the_page_says_its_reference_is_the_clipped_mle_and_gives_survreg_s_fit_beside_it():
    """stanford2 has times below e^-6 of the horizon: the table's maximum-likelihood row is the clipped MLE (what the
    private mechanisms estimate, shape 0.575), and the caption gives R's survreg fit on the times as they are (0.5543);
    on flchain (3 times of 0) survreg gives no fit, and the caption says why."""
    at = run(data_choice=declared("stanford2", 3700.0), wb_censoring=0.3, wb_run_study=False)
    t = table(at)
    assert "clipped times: the private rows' reference" in t["Estimate"].iloc[1]
    assert t["Shape p"].iloc[1] == pytest.approx(0.575, abs=1e-3)
    said = " ".join(shown_text(c.value) for c in at.caption)
    assert "Reference: the clipped MLE" in said and "gives shape 0.5543" in said
    at = run(data_choice=declared("flchain", 5300.0), wb_censoring=0.7, wb_run_study=False, wb_mechanisms=[FIRST])
    said = " ".join(shown_text(c.value) for c in at.caption)
    assert "Reference: the clipped MLE" in said and "3 record(s) have time 0" in said
