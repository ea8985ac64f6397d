"""Drawing and formatting for the survival-curve pages, plus the session glue that caches releases.

No statistics here: every number comes from ``dpsurv_core`` (curves, curve_summary, logrank).
This module turns them into plotly figures and display tables, builds a mechanism from widget
values, and keeps each private release in ``st.session_state`` so a rerun neither redraws the
noise nor charges the ledger twice.
"""

from __future__ import annotations

import inspect
import math
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.kaplan_meier import SurvivalCurves
from dpsurv_core.curves.release import CurveRelease, NonPrivate, available, groups_of, mechanism_class
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import Cohort, validate
from dpsurv_core.data.public import Disclosure, PublicParameters, TimeGrid
from dpsurv_core.privacy.ledger import GROUP_LABEL
from dpsurv_core.report.figures import curves_figure
from dpsurv_core.report.html import curve_records
from ui import releases, session

COLOURS = qualitative.D3
EPSILONS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0]
PRIVATE_MECHANISMS = ("laplace-counts", "time-indexed", "rrr", "adaptive-km")
LABELS = {
    "laplace-counts": "Laplace noise on counts (Gondara & Wang)",
    "time-indexed": "Time-indexed noise on the curve (arXiv 2412.05164)",
    "rrr": "Randomized response on the group label (De Faveri et al.)",
    "adaptive-km": "Adaptive private Kaplan-Meier (dpsurv)",
}
NOT_RELEASED = "not released"


# ----------------------------------------------------------------------------------------- formatting
def fmt_time(t: float, unit: str) -> str:
    """A time in the data's unit: whole days, one decimal for weeks/months, two for years."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "—"
    if math.isinf(t):
        return "not reached"
    digits = {"days": 0, "weeks": 1, "months": 1, "years": 2}.get(unit, 1)
    return f"{t:,.{digits}f}"


def fmt_ci_time(est: float, lo: float, hi: float, unit: str) -> str:
    """``310 (284 to 361)``; ``not reached`` when the curve stays above one half."""
    if math.isinf(est):
        return "not reached" if math.isinf(lo) else f"not reached (CI from {fmt_time(lo, unit)})"
    return f"{fmt_time(est, unit)} ({fmt_time(lo, unit)} to {fmt_time(hi, unit)})"


def fmt_pct(v: float, digits: int = 1) -> str:
    return "—" if v is None or math.isnan(v) else f"{100 * v:.{digits}f}%"


def fmt_p(p: float) -> str:
    """A p-value to two significant digits, never in scientific notation."""
    if p is None or math.isnan(p):
        return "not defined"
    if p < 0.0001:
        return "< 0.0001"
    return f"{p:#.2g}"


def fmt_stat(s: float) -> str:
    return "not defined" if s is None or math.isnan(s) else f"{s:.2f}"


def estimand_axis(estimand: str) -> tuple[str, bool]:
    """Axis title and whether values are shown as percentages."""
    return {cs.SURVIVAL: ("Survival (%)", True), cs.HAZARD: ("Cumulative hazard", False),
            cs.INCIDENCE: ("Cumulative incidence (%)", True)}[estimand]


def group_name(label: str, column: str | None) -> str:
    if label == "all":
        return "All patients"
    return f"{column} = {label}" if column else str(label)


# ----------------------------------------------------------------------------------------- figures
def _step_xy(time: np.ndarray, values: np.ndarray, start: float, end: float | None) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate([[0.0], time])
    y = np.concatenate([[start], values])
    if end is not None and end > x[-1]:
        x, y = np.append(x, end), np.append(y, y[-1])
    return x, y


def _rgba(hex_colour: str, alpha: float) -> str:
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _add_curve(fig: go.Figure, curves: SurvivalCurves, values: np.ndarray, band: tuple[np.ndarray, np.ndarray] | None,
               name: str, colour: str, dash: str, start: float, end: float | None, scale: float, row: int | None,
               col: int | None, unit: str, show_legend: bool = True) -> None:
    kw = {"row": row, "col": col} if row else {}
    if band is not None:
        lo, hi = band
        x, yh = _step_xy(curves.time, hi, start, end)
        _, yl = _step_xy(curves.time, lo, start, end)
        fig.add_trace(go.Scatter(x=x, y=yh * scale, mode="lines", line={"width": 0, "shape": "hv"}, hoverinfo="skip",
                                 showlegend=False, legendgroup=name), **kw)
        fig.add_trace(go.Scatter(x=x, y=yl * scale, mode="lines", line={"width": 0, "shape": "hv"}, fill="tonexty",
                                 fillcolor=_rgba(colour, 0.15), hoverinfo="skip", showlegend=False, legendgroup=name),
                      **kw)
    x, y = _step_xy(curves.time, values, start, end)
    fmt = "%{y:.1f}%" if scale == 100 else "%{y:.3f}"
    fig.add_trace(go.Scatter(x=x, y=y * scale, mode="lines", name=name, legendgroup=name, showlegend=show_legend,
                             line={"shape": "hv", "color": colour, "dash": dash, "width": 2.4 if dash == "solid" else 1.8},
                             hovertemplate=f"{name}<br>%{{x:.0f}} {unit}: {fmt}<extra></extra>"), **kw)


def curve_figure(exact: SurvivalCurves, private: SurvivalCurves | None, estimand: str, band_kind: str | None,
                 layout: str, unit: str, horizon: float, group_column: str | None,
                 private_label: str = "private", exact_label: str = "non-private", private_bands: bool = True,
                 type_labels: Sequence[str] = ()) -> go.Figure:
    """Non-private (dashed) and private (solid) curves, overlaid or side by side, with 95% bands for survival.

    ``exact`` and ``private`` carry a leading trials axis of length 1 (the first trial is drawn).
    """
    title, pct = estimand_axis(estimand)
    scale = 100.0 if pct else 1.0
    start = 1.0 if estimand == cs.SURVIVAL else 0.0
    side = layout == "side by side" and private is not None
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=(exact_label.capitalize(), private_label.capitalize())) if side else go.Figure()
    n_types = max(1, len(type_labels)) if estimand == cs.INCIDENCE else 1
    for which, curves in (("exact", exact), ("private", private)):
        if curves is None:
            continue
        pos = (1, 1 if which == "exact" else 2) if side else (None, None)
        dash = "dash" if which == "exact" and not side else "solid"
        tag = exact_label if which == "exact" else private_label
        single = len(curves.groups) * n_types == 1
        for gi, g in enumerate(curves.groups):
            for k in range(n_types):
                colour = COLOURS[(gi * n_types + k) % len(COLOURS)]
                if single and which == "exact" and private is not None and not side:
                    colour = "#4d4d4d"
                values = cs.estimand_values(curves, estimand, k)[0, gi]
                band = None
                exact_band = side or private is None
                if estimand == cs.SURVIVAL and band_kind and (private_bands if which == "private" else exact_band):
                    lo, hi = cs.bands(curves, band_kind)
                    band = (lo[0, gi], hi[0, gi])
                name = group_name(g, group_column)
                if estimand == cs.INCIDENCE and type_labels:
                    name = f"{name}: {type_labels[k]}"
                name = f"{name} ({tag})"
                _add_curve(fig, curves, values, band, name, colour, dash, start, horizon, scale, pos[0], pos[1], unit)
    fig.update_layout(height=460, margin={"l": 10, "r": 10, "t": 40 if side else 20, "b": 10},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
                      hovermode="x unified", template="plotly_white")
    fig.update_xaxes(title_text=f"Time ({unit})", range=[0, horizon])
    fig.update_yaxes(title_text=title, row=1, col=1) if side else fig.update_yaxes(title_text=title)
    if pct:
        top = 100 if estimand == cs.SURVIVAL else None
        fig.update_yaxes(range=[0, 102] if top else None, ticksuffix="%")
    return fig


def rrr_figure(raw: SurvivalCurves, debiased: SurvivalCurves, exact: SurvivalCurves, unit: str, horizon: float,
               group_column: str | None) -> go.Figure:
    """Randomized response: survival per reported group (raw) and de-biased, each over the non-private curves."""
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("Raw (curves of the reported groups)", "De-biased (mixing undone)"))
    for col, curves in ((1, raw), (2, debiased)):
        for gi, g in enumerate(curves.groups):
            colour = COLOURS[gi % len(COLOURS)]
            name = group_name(g, group_column)
            _add_curve(fig, exact, exact.survival[0, gi], None, f"{name} (non-private)", colour, "dash", 1.0, horizon,
                       100.0, 1, col, unit, show_legend=col == 1)
            _add_curve(fig, curves, curves.survival[0, gi], None, f"{name} (private)", colour, "solid", 1.0, horizon,
                       100.0, 1, col, unit, show_legend=col == 1)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 40, "b": 10}, template="plotly_white",
                      legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0}, hovermode="x unified")
    fig.update_xaxes(title_text=f"Time ({unit})", range=[0, horizon])
    fig.update_yaxes(range=[0, 102], ticksuffix="%")
    fig.update_yaxes(title_text="Survival (%)", row=1, col=1)
    return fig


# ----------------------------------------------------------------------------------------- tables
def at_risk_table(times: np.ndarray, exact: np.ndarray, private: np.ndarray | None, groups: Sequence[str],
                  group_column: str | None, unit: str, private_label: str = "private",
                  show_private: bool = True) -> pd.DataFrame:
    """Rows: per group, non-private then private (``not released`` when the mechanism has no counts)."""
    cols = [fmt_time(t, unit) for t in times]
    rows, index = [], []
    for gi, g in enumerate(groups):
        name = group_name(g, group_column)
        rows.append([f"{v:,.0f}" for v in exact[gi]])
        index.append(f"{name}, non-private")
        if show_private:
            rows.append([NOT_RELEASED] * len(times) if private is None else [f"{v:,.0f}" for v in private[gi]])
            index.append(f"{name}, {private_label}")
    return pd.DataFrame(rows, index=index, columns=cols)


def style_flips(df: pd.DataFrame, flip_column: str = "Flip?") -> Any:
    """Highlight rows whose significance at 0.05 differs between private and non-private."""
    def paint(row: pd.Series) -> list[str]:
        bad = str(row.get(flip_column, "")).startswith("FLIP")
        return ["background-color: #fde2e1; color: #8a1c13; font-weight: 600" if bad else ""] * len(row)
    return df.style.apply(paint, axis=1)


def test_label(r: cs.TestComparison, group_column: str | None) -> str:
    if r.group_b is None:
        return f"overall ({len(r.group_a.split(', '))} groups)"
    return f"{group_name(r.group_a, group_column)} vs {group_name(r.group_b, group_column)}"


def logrank_table(rows: list[cs.TestComparison], private_label: str = "private",
                  group_column: str | None = None) -> pd.DataFrame:
    """Statistic, p-value and significance at 0.05, non-private next to private; flips spelled out."""
    out = []
    for r in rows:
        sig = lambda s: "significant" if s else "not significant"  # noqa: E731
        flip = ("no private test possible" if not r.defined else
                f"FLIPPED: {sig(r.significant_exact)} → {sig(r.significant_private)}" if r.flipped else "same conclusion")
        out.append({"Test": test_label(r, group_column), "Chi² non-private": fmt_stat(r.statistic_exact), "p non-private": fmt_p(r.p_exact),
                    f"Chi² {private_label}": fmt_stat(r.statistic_private), f"p {private_label}": fmt_p(r.p_private),
                    "At 0.05 non-private": sig(r.significant_exact),
                    f"At 0.05 {private_label}": sig(r.significant_private) if r.defined else "no test",
                    "Flip?": flip})
    return pd.DataFrame(out)


def privacy_card(release: CurveRelease, extra: Sequence[Disclosure] = ()) -> None:
    """What the release charged and protects, every disclosure (not-DP ones as warnings), and its notes."""
    with st.container(border=True):
        cost = release.cost
        st.markdown(f"**Charged to this session's ledger:** {cost.sentence()}.")
        if cost.protects == GROUP_LABEL:
            st.markdown("**Protects the group label only**: survival times and events are published as they are "
                        "(label-DP, not record-level DP).")
        disclosures = [*release.disclosures, *extra]
        for d in disclosures:
            if not d.dp:
                st.warning(f"**Not differentially private** ({d.parameter}): {d.message}", icon="⚠️")
        dp_ones = [d for d in disclosures if d.dp]
        if dp_ones:
            st.markdown("**Disclosures** (public parameters read off the data, published as they are):\n"
                        + "\n".join(f"- ℹ️ *{d.parameter}*: {d.message}" for d in dp_ones))
        if not disclosures:
            st.caption("Disclosures: none (the horizon, grid and groups were declared on the Data page).")
        for note in release.notes:
            st.caption(note)


# ----------------------------------------------------------------------------------------- session glue
def mechanism_choices(needs_counts: bool = False, has_group: bool = True) -> list[str]:
    """Private curve mechanisms present in this installation, in a fixed order."""
    present = set(available())
    names = [n for n in PRIVATE_MECHANISMS if n in present]
    if not has_group:
        names = [n for n in names if n != "rrr"]
    return names


def build_mechanism(name: str, epsilon: float, options: dict[str, Any], cohort: Cohort,
                    public: PublicParameters) -> Any:
    """The mechanism object from widget values; passes only the keywords its constructor takes.

    ``options["mode"] == "as published"`` makes ``epsilon`` the paper's base epsilon (time-indexed).
    """
    cls = mechanism_class(name)
    params = inspect.signature(cls.__init__).parameters
    kwargs = {k: v for k, v in options.items() if k in params}
    if "rows_per_subject" in params:
        kwargs["rows_per_subject"] = cohort.rows_per_subject
    if "n_points" in params:
        kwargs["n_points"] = int(public.grid.points.size)
    if "categories" in params:
        kwargs["categories"] = groups_of(cohort, public) or ()
    if options.get("mode") == "as published" and "base_epsilon" in params:
        return cls(base_epsilon=epsilon, **kwargs)
    return cls(epsilon=epsilon, **kwargs)


def option_defaults(name: str) -> dict[str, Any]:
    """Keyword defaults of a mechanism's constructor (to seed its option widgets)."""
    params = inspect.signature(mechanism_class(name).__init__).parameters
    return {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}


def data_key(cohort: Cohort, public: PublicParameters) -> str:
    """Identity of the analysed data and its public grid, for caches."""
    grid = ",".join(f"{e:.6g}" for e in public.grid.edges)
    return f"{cohort.name}|{cs.fingerprint(cohort)}|{grid}|{public.group_categories}"


def _exact_pair(cohort: Cohort, public: PublicParameters, competing: bool) -> tuple[CurveRelease, CurveRelease]:
    fine = PublicParameters.derive(cohort, horizon=public.horizon, grid=TimeGrid.event_times(cohort),
                                   group_categories=public.group_categories or None)
    return NonPrivate().release(cohort, fine, competing=competing), NonPrivate().release(cohort, public, competing=competing)


@st.cache_data(max_entries=24, show_spinner=False)
def _exact_cached(key: str, competing: bool, _cohort: Cohort, _public: PublicParameters) -> tuple[CurveRelease, CurveRelease]:
    return _exact_pair(_cohort, _public, competing)


def exact_results(cohort: Cohort, public: PublicParameters, competing: bool = False) -> tuple[CurveRelease, CurveRelease]:
    """Non-private curves (at every event time, and on the public grid), cached by data identity.

    Bundled data use ``st.cache_data``; uploads are cached in this session only, so nothing derived
    from an upload is shared with another session.
    """
    key = data_key(cohort, public)
    if session.data_choice().bundled:
        return _exact_cached(key, competing, cohort, public)
    store = st.session_state.setdefault("exact_curves", {})
    if (key, competing) not in store:
        if len(store) > 8:
            store.clear()
        store[(key, competing)] = _exact_pair(cohort, public, competing)
    return store[(key, competing)]


def private_release(key: tuple, make: Callable[[], CurveRelease], mechanism: Any, dataset: str,
                    new: bool = False, extra: list[Disclosure] | tuple = ()) -> CurveRelease | None:
    """The cached private release for ``key``; otherwise draw one with ``make`` and charge the ledger.

    Returns None when the ledger refuses (``session.record_release`` shows the sentence).
    """
    store = st.session_state.setdefault("curve_releases", {})
    if key in store and not new:
        return store[key]
    release = make()
    release.disclosures = [*extra, *release.disclosures]
    entry = mechanism.ledger_entry(dataset, disclosures=release.disclosures)
    entry.parameters = {**entry.parameters, "release_id": uuid.uuid4().hex[:8]}
    if not session.record_release(entry):
        return None
    store[key] = release
    releases.store(f"Survival curves: {mechanism.name}", entry, curve_records(release),
                   curves_figure({"private": release.curves}, session.data_choice().time_unit), release)
    return release


def competing_cohort(cohort: Cohort) -> Cohort | None:
    """The cohort with its competing-event types: as mapped, or for a bundled data set that declares them."""
    if cohort.event_type is not None:
        return cohort
    choice = session.data_choice()
    if not choice.bundled:
        return None
    info = datasets.info(choice.name)
    if not info.event_type:
        return None
    mapping = replace(choice.mapping, event_type=info.event_type,
                      event_type_names=tuple((str(k), v) for k, v in info.event_types.items()))
    comp, _ = validate(choice.frame, mapping)
    if comp is None:
        return None
    comp.name, comp.time_unit = cohort.name, cohort.time_unit
    return comp
