"""The clinician's reading of the curve, group, audit, trade-off and ledger pages: value labels in legends
and tables, the explainer open on the first visit, PNG/SVG/CSV downloads, disclosure-control settings without an
epsilon, the number-at-risk table, off-scale private values and cut bands, and the time-indexed median warning."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as st_np
from streamlit.testing.v1 import AppTest

from dpsurv_app import curves_view as cv
from dpsurv_app import palette, session
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise
from tests.app.tables import shown as shown_table
from tests.app.tables import shown_text

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")
GROUPS = str(ROOT / "dpsurv_app" / "pages" / "3_Group_comparison.py")
AUDIT = str(ROOT / "dpsurv_app" / "pages" / "6_Privacy_audit.py")
TRADEOFF = str(ROOT / "dpsurv_app" / "pages" / "7_Trade-off_explorer.py")
LEDGER = str(ROOT / "dpsurv_app" / "pages" / "8_Ledger_and_report.py")
SDC = catalogue.disclosure_ids(catalogue.CURVES, "km")



def shown_tables(at: AppTest) -> list:
    """The page's tables as displayed (st.table cells are escaped Markdown)."""
    return [shown_table(t.value) for t in at.table]

def run(path: str, dataset: str | None = None, **widgets) -> AppTest:
    at = AppTest.from_file(path, default_timeout=60)
    if dataset is not None:
        at.session_state["data_choice"] = session.bundled_choice(dataset)
    at.run()
    for key, value in widgets.items():
        at = _set(at, key, value)
    assert not at.exception, [e.message for e in at.exception]
    return at


def _set(at: AppTest, key: str, value) -> AppTest:
    for kind in ("selectbox", "checkbox", "radio", "select_slider"):
        try:
            getattr(at, kind)(key=key).set_value(value).run()
            return at
        except KeyError:
            continue
    raise AssertionError(f"no widget {key!r}")


def downloads(at: AppTest) -> list[str]:
    return [b.proto.label for b in at.get("download_button")]


def chart_names(at: AppTest) -> set[str]:
    names = set()
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        names |= {t.get("name") for t in spec["data"] if t.get("name")}
    return names


def explainer_expanded(at: AppTest) -> bool:
    return next(e.proto.expanded for e in at.expander if e.label == "What am I looking at?")


# ------------------------------------------------------------------------------------------------ page 2
def test_curves_page_labels_explainer_and_downloads():
    at = run(CURVES, sc_split=True)
    assert explainer_expanded(at)
    assert {"Male (preview)", "Female (non-private)"} <= chart_names(at)  # legends by label, not "sex = 1"
    risk = next(t for t in shown_tables(at) if "Male, non-private" in t.index)
    assert list(risk.index) == ["Male, non-private", "Male, preview", "Female, non-private", "Female, preview"]
    private = risk.loc["Male, preview"].astype(str).str.replace(",", "").astype(float).to_numpy()
    assert np.all(private >= 0) and np.all(np.diff(private) <= 0)  # post-processed: non-negative, non-increasing
    med = next(t for t in shown_tables(at) if any(c.startswith("Quartiles") for c in t.columns))
    assert med["Group"].tolist() == ["Male", "Female"]
    labels = downloads(at)
    assert labels.count("Figure as PNG") == 1 and labels.count("Figure as SVG") == 1
    assert labels.count("Table as CSV") == len(at.table)  # every table has its CSV
    text = " ".join(c.value for c in at.caption)
    assert "Bands stop where nobody is left at risk" in text
    assert any(p.proto.popover.label == "Greenwood" for p in at.get("popover"))
    assert at.session_state["_downloads_show_previews"] is True  # the page's files say they hold a preview


def test_files_saved_from_a_preview_say_so(monkeypatch):
    """A figure or table saved while the page shows a preview carries it in its file name, and a figure on the image."""
    import plotly.graph_objects as go

    from dpsurv_app import downloads as dl

    state: dict = {}
    monkeypatch.setattr(dl.st, "session_state", state)
    dl.start_run()
    assert dl._stem("Survival: lung") == "survival-lung"
    dl.mark_previews()
    assert dl._stem("Survival: lung") == "survival-lung-preview-not-for-publication"
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]))
    frozen = next(c.cell_contents for c in dl._exporter(fig, "png").__closure__ if isinstance(c.cell_contents, go.Figure))
    assert any(a.text == dl.PREVIEW_MARK for a in frozen.layout.annotations) and not fig.layout.annotations


def test_curves_page_user_labels_win():
    at = AppTest.from_file(CURVES, default_timeout=60)
    choice = session.bundled_choice("lung")
    at.session_state["data_choice"] = choice
    at.session_state["value_labels"] = {choice.fingerprint: session.ValueLabels({"sex": {"1": "Men", "2": "Women"}})}
    at.run()
    at.checkbox(key="sc_split").check().run()
    assert not at.exception
    assert {"Men (preview)", "Women (preview)"} <= chart_names(at)


@pytest.mark.parametrize("mechanism,option", [("suppress-small-cells", "threshold"), ("round", "base"),
                                              ("random-round", "base"), ("smooth-steps", "k"), ("cell-key", None)])
def test_disclosure_control_has_settings_and_no_epsilon(mechanism, option):
    assert mechanism in SDC
    at = run(CURVES, sc_mechanism=mechanism)
    assert not [s for s in at.select_slider if s.key == "sc_epsilon"]
    text = " ".join([c.value for c in at.caption] + [m.value for m in at.markdown])
    assert "No formal guarantee" in text and "Its epsilon protects" not in text
    if option is not None:
        box = at.number_input(key=f"sc_opt_{option}")
        assert box.value == 5
        box.set_value(10).run()
        assert not at.exception
        assert f"--{option} 10" in text_of(at) or f"--{option.replace('_', '-')} 10" in text_of(at)


def text_of(at: AppTest) -> str:
    return " ".join([c.value for c in at.caption] + [m.value for m in at.markdown])


def test_time_indexed_median_warning_shown():
    at = run(CURVES, dataset="ovarian", sc_mechanism="time-indexed")
    warnings = " ".join(w.value for w in at.warning)
    assert "time\\-indexed median" in warnings or "time-indexed median" in warnings
    assert "not be reached" in warnings


# ------------------------------------------------------------------------------------------------ page 3
def test_group_page_labels_downloads_and_sdc():
    at = run(GROUPS)
    assert explainer_expanded(at)
    tests = next(t for t in shown_tables(at) if t.columns[0] == "Test")
    assert tests.loc[0, "Test"] == "Male vs Female"
    risk = next(t for t in shown_tables(at) if "Male, non-private" in t.index)
    assert len(risk) == 4
    assert {"Male (preview)", "Female (preview)"} <= chart_names(at)
    labels = downloads(at)
    assert {"Figure as PNG", "Figure as SVG"} <= set(labels) and labels.count("Table as CSV") == len(at.table)
    at.select_slider(key="gc_epsilon").set_value(0.5).run()  # noise enough for the low-power sentence
    assert "Male vs Female" in " ".join(w.value for w in at.warning)  # the core's warnings name the groups too
    at.selectbox(key="gc_mechanism").set_value("rrr").run()
    assert not at.exception
    assert "Male" in " ".join(w.value for w in at.warning) or not at.warning
    at.selectbox(key="gc_mechanism").set_value("round").run()
    assert not at.exception
    assert not [s for s in at.select_slider if s.key == "gc_epsilon"]
    assert at.number_input(key="gc_opt_base").value == 5
    assert "No formal guarantee" in text_of(at)


# ------------------------------------------------------------------------------------------------ figures
@pytest.fixture(scope="module")
def lung_release():
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1000)
    exact = catalogue.entries(catalogue.CURVES, "km", private=False)[0].build().compute(cohort, public).curves
    return exact, LaplaceCounts(1.0).compute(cohort, public, SimulationNoise(4)).curves


def test_off_scale_values_marked_and_noted(lung_release):
    exact, priv = lung_release
    s = priv.survival.copy()
    s[0, 0, 0], s[0, 0, -1] = 1.07, -0.03
    odd = replace(priv, survival=s)
    fig = cv.curve_figure(exact, odd, cs.SURVIVAL, "log", "overlaid", "days", 1000.0, None)
    assert list(fig.layout.yaxis.range) == [0, 102]
    marks = [t for t in fig.data if t.mode == "markers"]
    assert sorted((m.marker.symbol, float(m.y[0])) for m in marks) == [("triangle-down", 0.0), ("triangle-up", 100.0)]
    lines = [t for t in fig.data if t.mode == "lines" and t.name]
    assert all(0 <= np.nanmin(t.y) and np.nanmax(t.y) <= 100 for t in lines)
    notes = " ".join(cv.figure_notes(exact, odd, cs.SURVIVAL, True, "days"))
    assert "2 private value(s) fall outside 0-100%" in notes and "107.0%" in notes and "-3.0%" in notes
    assert "raise epsilon" in notes
    inside = replace(priv, survival=np.clip(priv.survival, 0, 1))
    assert "outside" not in " ".join(cv.figure_notes(exact, inside, cs.SURVIVAL, True, "days"))


def test_band_cut_where_nobody_is_at_risk(lung_release):
    exact, priv = lung_release
    n = priv.at_risk.copy()
    n[0, 0, 5:] = np.array([3, 0, 2] + [1] * (n.shape[-1] - 8), float)  # noise: zero at point 6, then back up
    cut = cv.band_cut(n[0, 0])
    assert not cut[:6].any() and cut[6:].all()
    fig = cv.curve_figure(exact, replace(priv, at_risk=n), cs.SURVIVAL, "log", "overlaid", "days", 1000.0, None)
    band = [t for t in fig.data if t.fill == "tonexty"][-1]  # the private band
    assert np.isnan(np.asarray(band.y, float)[7:]).all() and not np.isnan(np.asarray(band.y, float)[1:7]).any()
    assert "released number at risk reaches zero" in " ".join(
        cv.figure_notes(exact, replace(priv, at_risk=n), cs.SURVIVAL, True, "days"))
    assert cv.band_cut(np.array([np.nan, np.nan])).sum() == 0  # no counts: never cut


def test_at_risk_display_is_whole_non_negative_non_increasing():
    shown = cs.at_risk_display(np.array([[10.4, 11.2, 7.6, -0.8, 2.2], [5.0, 5.0, 4.0, 4.0, 0.0]]))
    np.testing.assert_array_equal(shown, [[10, 10, 8, 0, 0], [5, 5, 4, 4, 0]])
    table = cv.at_risk_table(np.array([0.0, 100.0]), np.array([[9.0, 7.0]]), np.array([[8.6, 9.3]]), ["1"], None,
                             "days")
    assert table.iloc[1].tolist() == ["9", "9"]


def test_palette_and_recolour(lung_release):
    import plotly.graph_objects as go

    exact, priv = lung_release
    fig = cv.curve_figure(exact, priv, cs.SURVIVAL, None, "side by side", "days", 1000.0, None)
    assert {t.line.color for t in fig.data if t.mode == "lines"} <= set(palette.COLOURS)
    old = go.Figure([go.Scatter(y=[1, 2], line={"color": "#1f77b4"}), go.Bar(y=[1], marker={"color": "#d62728"})])
    new = cv.recolour(old)
    assert new.data[0].line.color == palette.BLUE and new.data[1].marker.color == palette.VERMILLION
    capped = go.Figure([go.Scatter(y=[1, 2])])
    capped.add_hline(y=1, line_color="#b91c1c", annotation_text="cap 1", annotation_font_color="#b91c1c")
    cv.recolour(capped)
    assert capped.layout.shapes[0].line.color == palette.VERMILLION
    assert capped.layout.annotations[0].font.color == palette.VERMILLION


# ------------------------------------------------------------------------------------------------ pages 6, 7, 8
def test_audit_page_explainer_and_terms():
    at = run(AUDIT)
    assert explainer_expanded(at)
    assert {"membership inference", "exposure", "empirical epsilon"} <= {p.proto.popover.label for p in at.get("popover")}


def test_tradeoff_page_explainer_and_downloads():
    at = run(TRADEOFF)
    assert explainer_expanded(at)
    labels = downloads(at)
    assert {"Figure as PNG", "Figure as SVG", "Table as CSV"} <= set(labels)


def test_ledger_page_explainer_table_csv_and_figure(ledger_path):
    from dpsurv_core.cli.km import released_numbers
    from dpsurv_core.privacy.ledger import LedgerEntry, LedgerStore, PrivacyCost

    cohort = load_bundled("lung", group="sex")
    outputs = released_numbers(LaplaceCounts(0.5).compute(cohort, PublicParameters.derive(cohort), SimulationNoise(3)))
    store = LedgerStore()
    with store.transaction(session.bundled_choice("lung").fingerprint) as tx:
        tx.charge(LedgerEntry("laplace-counts", "survival curves", "lung", {"epsilon": 0.5}, PrivacyCost(0.5),
                              command="python -m dpsurv_core km --data lung --json"), outputs)
    at = run(LEDGER)
    assert explainer_expanded(at)
    labels = downloads(at)
    assert "Table as CSV" in labels and {"Figure as PNG", "Figure as SVG"} <= set(labels)
    ledger = next(shown_table(t.value) for t in at.table if "reproduce command" in t.value.columns)
    assert ledger["reproduce command"].iloc[0].startswith("python -m dpsurv_core km")  # in full, not cut


def test_explainer_collapsed_on_a_later_visit():
    at = run(GROUPS)
    assert explainer_expanded(at)
    at.session_state["_glossary_visit"] = at.session_state["_glossary_visit"] + 1 \
        if "_glossary_visit" in at.session_state else 5
    at.run()
    assert not explainer_expanded(at)


@settings(max_examples=60, deadline=None)
@given(st_np.arrays(float, st_np.array_shapes(min_dims=1, max_dims=3, max_side=8),
                    elements=st.floats(-50, 500, allow_nan=False)))
def test_at_risk_display_properties(values):
    shown = cs.at_risk_display(values)
    assert shown.shape == values.shape and np.all(shown >= 0) and np.all(np.diff(shown, axis=-1) <= 0)
    assert np.all(shown == np.rint(shown))
    exact = np.sort(np.abs(np.rint(values)), axis=-1)[..., ::-1]  # whole, non-negative, non-increasing: unchanged
    np.testing.assert_array_equal(cs.at_risk_display(exact), exact)


def test_audit_run_draws_recoloured_figures_with_downloads():
    at = run(AUDIT)
    assert at.checkbox(key="au_split").value is False  # as the Survival curves page: one pooled curve by default
    at.checkbox(key="au_split").check().run()
    at.button(key="au_run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    labels = downloads(at)
    assert labels.count("Figure as PNG") == 3 and "Table as CSV" in labels
    colours = set()
    for chart in at.get("plotly_chart"):
        for t in json.loads(chart.proto.spec)["data"]:
            colours |= {(t.get(part) or {}).get("color") for part in ("line", "marker")} - {None}
    assert not colours & {"#1f77b4", "#d62728"}  # D3's blue and red replaced by Okabe-Ito
    (target,) = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("**Target.**")]
    # the audited subject's group by its value label, as in the legends
    assert "group Male)" in target or "group Female)" in target


def test_curve_page_warnings_name_the_groups_by_their_labels():
    at = run(CURVES, sc_split=True)
    text = " ".join(w.value for w in at.warning)
    assert "Male" in text and "group 1" not in text and "group 2" not in text


def test_audit_takes_the_mechanism_options_chosen_on_the_curves_page():
    """The audit simulates the release the curves page would make: its time-indexed options (decay alpha) and a
    disclosure-control rule's (the rounding base), named in a caption."""
    for mechanism, key, value, shown in (("time-indexed", "sc_opt_alpha", 2.0, "alpha = 2.0"),
                                         ("round", "sc_opt_base", 10, "base = 10")):
        at = AppTest.from_file(AUDIT, default_timeout=60)
        at.session_state["sc_mechanism"] = mechanism
        at.session_state[key] = value
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        captions = [shown_text(c.value) for c in at.caption if "Mechanism settings taken from its page" in c.value]
        assert captions and shown in captions[0], captions


def test_disclosure_control_preview_says_it_charges_no_epsilon():
    at = run(CURVES, sc_mechanism="round")
    words = " ".join([c.value for c in at.caption] + [m.value for m in at.markdown])
    assert "would be recorded, charging no epsilon: no formal guarantee" in words
    assert "would charge no formal guarantee" not in words and "would charge: no formal" not in words
