"""Drawing and formatting for the survival-curve pages, plus the glue of "explore freely, release once".

No statistics here: every number comes from ``dpsurv_core`` (curves, curve_summary, logrank).
This module turns them into plotly figures and display tables, reads the mechanism choices, names
and papers from the catalogue, and builds each page's release :class:`~dpsurv_core.privacy.release.Plan`
with the command line that reproduces it. Pages show the plan's preview (seeded simulation noise,
no charge, never exported) and charge the ledger only through ``release_panel.release_button``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from dpsurv_core.cli.km import (
    band_curves,
    clamping_of,
    conf_bands,
    hazard_band,
    includes_noise,
    interval_method,
    landmark_entries,
    no_noise,
)
from dpsurv_core.curves import logrank, logrank_test, readout
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.kaplan_meier import CONF_TYPES, SurvivalCurves, quantile_r
from dpsurv_core.curves.result import (
    CURVE_PARAMETERS,
    CurveResult,
    context,
    exact_counts,
    tile_trials,
    with_follow_up_end,
)
from dpsurv_core.curves.time_indexed import parse_shares, parse_sizes
from dpsurv_core.curves.uncertainty import (
    curve_warnings,
    incidence_band,
    nobody_left,
    quantile_limits,
    rmst_interval,
)
from dpsurv_core.data import datasets, event_types
from dpsurv_core.data.cohort import Cohort, default_mapping, validate
from dpsurv_core.data.labels import ValueLabels, code_key
from dpsurv_core.data.public import Disclosure, PublicParameters, TimeGrid
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy import options as option_specs
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.ledger import GROUP_LABEL
from dpsurv_core.privacy.release import Plan, Released, charge_phrase, cli_command
from dpsurv_core.publication.reading import READABLE
from dpsurv_core.report.text import markdown_code, markdown_literal, markdown_literal_frame, p_value, plain_label
from ui import downloads, logrank_spread, palette, release_panel, session
from ui.downloads import table_downloads

COLOURS = palette.COLOURS  # Okabe-Ito (colour-blind safe)
EPSILONS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0]
NOT_RELEASED = "not released"
# a grid that starts after 0 bins everyone earlier into its first bin: counts cannot say who is at risk before its
# second edge
UNKNOWN_AT_RISK = "unknown (grid starts later)"
CONF_TYPE_NAMES = {"plain": "plain (S ± 1.96 SE)", "log": "log (R's default)", "log-log": "log-log (lifelines' default)",
                   "logit": "logit", "arcsin": "arcsin"}
QUANTILES = (0.25, 0.5, 0.75)


# ----------------------------------------------------------------------------------------- formatting
def fmt_time(t: float, unit: str, difference: bool = False) -> str:
    """A time in the data's unit: whole days (below 10 days a fraction of a day is kept, as a short grid's points
    may have one; not for a ``difference`` of times, shown as precisely as the times), one decimal for weeks/months,
    two for years; never '-0'."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "—"
    if math.isinf(t):
        return "not reached"
    digits = {"days": 0, "weeks": 1, "months": 1, "years": 2}.get(unit, 1)
    if unit == "days" and not difference and abs(t) < 10 and abs(t - round(t)) > 1e-9:
        digits = 1 if abs(t * 10 - round(t * 10)) < 1e-6 else 2
    text = f"{t:,.{digits}f}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text


def fmt_ci_time(est: float, lo: float, hi: float, unit: str) -> str:
    """``310 (284 to 361)``; ``not reached`` when the curve stays above one half; ``118 (no CI)`` when the lower band
    never reaches one half beside a finite estimate (R's NA for both limits: one patient who died, say)."""
    if math.isinf(est):
        return "not reached" if math.isinf(lo) else f"not reached (CI from {fmt_time(lo, unit)})"
    if math.isinf(lo):
        return f"{fmt_time(est, unit)} (no CI)"
    return f"{fmt_time(est, unit)} ({fmt_time(lo, unit)} to {fmt_time(hi, unit)})"


def fmt_interval(lo: float, hi: float, unit: str) -> str:
    """An interval of times, e.g. '292 to 384'; a dash when it is undefined."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "—"
    return f"{fmt_time(lo, unit)} to {fmt_time(hi, unit)}"


def uninformative(lower: float, upper: float, public: PublicParameters) -> bool:
    """A quantile interval from the grid's start to 'not reached' says nothing."""
    return bool(np.isinf(upper) and lower <= float(public.grid.edges[0]) + 1e-9)


def fmt_pct(v: float, digits: int = 1) -> str:
    return "—" if v is None or math.isnan(v) else f"{100 * v:.{digits}f}%"


def fmt_p(p: float) -> str:
    """A p-value as clinicians write it: two significant digits, ``< 0.001`` below that (report.text.p_value)."""
    if p is None or math.isnan(p):
        return "not defined"
    return p_value(min(max(float(p), 0.0), 1.0))


def fmt_stat(s: float) -> str:
    return "not defined" if s is None or math.isnan(s) else f"{s:.2f}"


def estimand_axis(estimand: str) -> tuple[str, bool]:
    """Axis title and whether values are shown as percentages."""
    return {cs.SURVIVAL: ("Survival (%)", True), cs.HAZARD: ("Cumulative hazard", False),
            cs.INCIDENCE: ("Cumulative incidence (%)", True)}[estimand]


def session_labels() -> ValueLabels:
    """The value labels of the data in use (the Data page's, over a bundled data set's own); none outside a page."""
    try:
        return session.value_labels()
    except Exception:  # no Streamlit session (a bare import, a unit test of a figure): codes as they are
        return ValueLabels()


def group_name(label: str, column: str | None, labels: ValueLabels | None = None) -> str:
    """A group as a reader names it: its value label (``Male``) when the column's code has one; the code itself
    when other codes of the column have labels (so that one table names every group alike: gehan's '6-MP' beside
    'Control', not 'treat = 6-MP'); else ``column = code``; ``All patients`` for the whole cohort."""
    if label == "all":
        return "All patients"
    if not column:
        return str(label)
    known = labels or session_labels()
    named = known.label(column, label)
    if named != code_key(label):
        return named
    return str(label) if known.labels_for(column) else f"{column} = {label}"


# plotly's default (D3) colours that figures built in dpsurv_core still name, and their Okabe-Ito replacements
_D3_TO_OKABE_ITO = {"#1f77b4": palette.BLUE, "#d62728": palette.VERMILLION, "#ff7f0e": palette.ORANGE,
                    "#2ca02c": palette.BLUISH_GREEN, "#9467bd": palette.REDDISH_PURPLE, "#17becf": palette.SKY_BLUE,
                    "#8c564b": palette.SKY_BLUE, "#e377c2": palette.YELLOW, "#9ca3af": palette.GREY,
                    "#b91c1c": palette.VERMILLION, "#475569": palette.GREY,
                    "#d1d5db": "#CCCCCC", "#111827": palette.BLACK}


def recolour(fig: go.Figure) -> go.Figure:
    """``fig`` with the D3 colours of its traces' lines and markers swapped for the Okabe-Ito palette (for the
    figures dpsurv_core builds, which cannot import ``ui.palette``); other colours are kept."""
    def swap(c: Any) -> Any:
        return _D3_TO_OKABE_ITO.get(c.lower(), c) if isinstance(c, str) else c

    for trace in fig.data:
        for part in ("line", "marker"):
            obj = getattr(trace, part, None)
            if obj is not None and getattr(obj, "color", None) is not None and isinstance(obj.color, str):
                obj.color = swap(obj.color)
        if isinstance(getattr(trace, "fillcolor", None), str):
            trace.fillcolor = swap(trace.fillcolor)
    for shape in fig.layout.shapes or ():  # reference lines (a cap, a bound)
        if isinstance(shape.line.color, str):
            shape.line.color = swap(shape.line.color)
    for note in fig.layout.annotations or ():
        if isinstance(note.font.color, str):
            note.font.color = swap(note.font.color)
    return fig


# ----------------------------------------------------------------------------------------- figures
def _step_xy(time: np.ndarray, values: np.ndarray, start: float, end: float | None) -> tuple[np.ndarray, np.ndarray]:
    x = np.concatenate([[0.0], time])
    y = np.concatenate([[start], values])
    if end is not None and end > x[-1]:
        x, y = np.append(x, end), np.append(y, y[-1])
    return x, y


_rgba = palette.rgba


def band_cut(at_risk: np.ndarray) -> np.ndarray:
    """Where a band is not drawn (bool, same shape): from the first point where nobody is at risk (the released
    number at risk of a private curve, which noise can push to zero or below) to the end; a curve without counts
    (NaN) is never cut."""
    return nobody_left(at_risk)


def off_scale(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Points of a probability curve above 1 and below 0 (a private estimate can leave [0, 1]): two bool masks."""
    v = np.asarray(values, float)
    return v > 1 + 1e-9, v < -1e-9


def _add_curve(fig: go.Figure, curves: SurvivalCurves, values: np.ndarray, band: tuple[np.ndarray, np.ndarray] | None,
               name: str, colour: str, dash: str, start: float, end: float | None, scale: float, row: int | None,
               col: int | None, unit: str, show_legend: bool = True) -> None:
    kw = {"row": row, "col": col} if row else {}
    name = plain_label(name)  # data-derived (group label, column name): plain text in legend and hover
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
    shown = np.clip(y, 0.0, 1.0) if scale == 100 else y  # a percentage axis is fixed to [0, 100%]
    fig.add_trace(go.Scatter(x=x, y=shown * scale, mode="lines", name=name, legendgroup=name, showlegend=show_legend,
                             line={"shape": "hv", "color": colour, "dash": dash, "width": 2.4 if dash == "solid" else 1.8},
                             hovertemplate=f"{name}<br>%{{x:.0f}} {unit}: {fmt}<extra></extra>"), **kw)
    if scale == 100:
        above, below = off_scale(values)
        for mask, edge, symbol in ((above, 100.0, "triangle-up"), (below, 0.0, "triangle-down")):
            if mask.any():
                fig.add_trace(go.Scatter(
                    x=curves.time[mask], y=np.full(int(mask.sum()), edge), mode="markers", legendgroup=name,
                    showlegend=False, marker={"symbol": symbol, "size": 9, "color": colour,
                                              "line": {"color": palette.BLACK, "width": 1}},
                    customdata=100 * values[mask],
                    hovertemplate=f"{name}<br>%{{x:.0f}} {unit}: %{{customdata:.1f}}% (off the scale)<extra></extra>"),
                    **kw)


def curve_figure(exact: SurvivalCurves | None, private: SurvivalCurves | None, estimand: str, band_kind: str | None,
                 layout: str, unit: str, horizon: float, group_column: str | None,
                 private_label: str = "private", exact_label: str = "non-private", private_bands: bool = True,
                 type_labels: Sequence[str] = (), private_noise_band: bool = False,
                 private_band_kind: str | None = None) -> go.Figure:
    """Non-private (dashed) and private (solid) curves, overlaid or side by side, with 95% bands for survival.

    ``band_kind`` is R's ``conf.type`` of the band (plain, log, log-log, logit, arcsin; None: no band), named in
    the legend's title. ``exact`` and ``private`` carry a leading trials axis of length 1 (the first trial is drawn);
    ``exact`` None: the private curves alone (a released figure holds no non-private number).
    """
    title, pct = estimand_axis(estimand)
    scale = 100.0 if pct else 1.0
    start = 1.0 if estimand == cs.SURVIVAL else 0.0
    side = layout == "side by side" and private is not None and exact is not None
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=(exact_label.capitalize(), private_label.capitalize())) if side else go.Figure()
    n_types = max(1, len(type_labels)) if estimand == cs.INCIDENCE else 1
    shaded = False
    for which, curves in (("exact", exact), ("private", private)):
        if curves is None:
            continue
        pos = (1, 1 if which == "exact" else 2) if side else (None, None)
        dash = "dash" if which == "exact" and not side else "solid"
        tag = exact_label if which == "exact" else private_label
        single = len(curves.groups) * n_types == 1
        for gi, g in enumerate(curves.groups):
            for k in range(n_types):
                colour = palette.colour(gi * n_types + k)
                if single and which == "exact" and private is not None and not side:
                    colour = palette.GREY
                values = cs.estimand_values(curves, estimand, k)[0, gi]
                band = None
                exact_band = side or private is None
                if estimand == cs.SURVIVAL and band_kind and (private_bands if which == "private" else exact_band):
                    lo, hi = band_arrays(curves, band_kind, private_noise_band and which == "private")
                    cut = band_cut(curves.at_risk[0, gi])
                    band = (np.where(cut, np.nan, np.clip(lo[0, gi], 0, 1)), np.where(cut, np.nan, np.clip(hi[0, gi], 0, 1)))
                elif estimand == cs.HAZARD and band_kind and (private_bands if which == "private" else exact_band):
                    lo, hi = hazard_band(curves, band_kind, private_noise_band and which == "private")
                    # no upper limit (the survival band reaches 0) or nobody at risk: no band drawn there
                    cut = band_cut(curves.at_risk[0, gi]) | ~np.isfinite(hi[0, gi])
                    band = (np.where(cut, np.nan, lo[0, gi]), np.where(cut, np.nan, hi[0, gi]))
                    band = None if np.all(np.isnan(band[0])) else band
                elif estimand == cs.INCIDENCE and band_kind and (private_bands if which == "private" else exact_band):
                    ib = incidence_band(curves, band_kind)
                    if ib is not None:  # R's NA (incidence 0) drawn as zero width
                        cut = band_cut(curves.at_risk[0, gi])
                        lo_k, hi_k = (np.clip(np.where(np.isnan(x[0, gi, k]), values, x[0, gi, k]), 0, 1) for x in ib)
                        band = (np.where(cut, np.nan, lo_k), np.where(cut, np.nan, hi_k))
                name = group_name(g, group_column)
                if estimand == cs.INCIDENCE and type_labels:
                    name = f"{name}: {type_labels[k]}"
                name = f"{name} ({tag})"
                shaded = shaded or band is not None
                _add_curve(fig, curves, values, band, name, colour, dash, start, horizon, scale, pos[0], pos[1], unit)
    fig.update_layout(height=460, margin={"l": 10, "r": 10, "t": 40 if side else 20, "b": 10},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
                      hovermode="x unified", template="plotly_white")
    if band_kind and shaded:
        fig.update_layout(legend_title_text=f"Shaded: 95% {band_kind} band" if not private_band_kind else
                          f"Shaded: 95% band, {exact_label} {band_kind}, {private_label} {private_band_kind}")
    fig.update_xaxes(title_text=f"Time ({unit})", range=[0, horizon])
    fig.update_yaxes(title_text=title, row=1, col=1) if side else fig.update_yaxes(title_text=title)
    if pct:  # fixed to [0, 100%]: off-scale private values are drawn at the edge with a marker (figure_notes)
        fig.update_yaxes(range=[0, 102], ticksuffix="%")
    return fig


def figure_notes(exact: SurvivalCurves, private: SurvivalCurves | None, estimand: str, banded: bool,
                 unit: str, group_column: str | None = None) -> list[str]:
    """The sentences under a curve chart: where a band is cut (nobody at risk) and which private values are off the
    [0, 100%] scale (drawn at the edge, with a triangle), each saying what to do."""
    notes = []
    cut_at = []
    banded_estimand = estimand in (cs.SURVIVAL, cs.INCIDENCE)
    for curves in (exact, private):
        if curves is None or not banded or not banded_estimand:
            continue
        cut = band_cut(curves.at_risk[0])
        for gi, g in enumerate(curves.groups):
            if cut[gi].any() and curves is private:  # nobody at risk in (t[j-1], t[j]]: the band stops at t[j-1]
                j = int(np.argmax(cut[gi]))
                cut_at.append(f"{group_name(g, group_column)} from {fmt_time(curves.time[j - 1] if j else 0.0, unit)} "
                              f"{unit}")
    if banded and banded_estimand:
        noisy = private is not None and private.interval_method is not None  # incidence_band's rule past the cut
        what = ("survival" if estimand == cs.SURVIVAL else "the incidence (the tables give it from its last lower limit "
                "to 100%)" if noisy else "the incidence")
        notes.append(f"Bands stop where nobody is left at risk: past that time the data say nothing more about {what}"
                     + (f" (private curve: {'; '.join(cut_at)}, where its released number at risk reaches zero)."
                        if cut_at else "."))
    if private is not None and estimand in (cs.SURVIVAL, cs.INCIDENCE):
        k_types = max(1, len(private.event_types)) if estimand == cs.INCIDENCE else 1
        n_off = 0
        extremes = []
        for k in range(k_types):
            values = cs.estimand_values(private, estimand, k)[0]
            above, below = off_scale(values)
            n_off += int(above.sum() + below.sum())
            if above.any():
                extremes.append(f"up to {100 * float(values[above].max()):.1f}%")
            if below.any():
                extremes.append(f"down to {100 * float(values[below].min()):.1f}%")
        if n_off:
            notes.append(f"{n_off} private value(s) fall outside 0-100% ({', '.join(extremes)}): noise, not data. They "
                         "are drawn at the edge of the axis with a triangle; read them as 100% (or 0%), or raise epsilon "
                         "for a curve that stays in range.")
    return notes


def band_arrays(curves: SurvivalCurves, conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The curves' pointwise band of R's ``conf.type`` (the ``km --conf-type`` computation); where R gives no
    interval at S = 1 (log-log, logit, arcsin) the drawn band is the point 1, and it stops where S = 0."""
    if conf_type not in CONF_TYPES:
        raise ValueError(f"Unknown confidence interval type {conf_type!r}: choose one of {', '.join(CONF_TYPES)}.")
    lo, hi = conf_bands(curves, conf_type, with_noise)
    at_one = curves.survival >= 1
    return np.where(at_one & np.isnan(lo), 1.0, lo), np.where(at_one & np.isnan(hi), 1.0, hi)


def quantiles(curves: SurvivalCurves, conf_type: str, with_noise: bool = False, coarse: bool = False
              ) -> dict[float, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """R's quantile.survfit (25%, 50%, 75%: first time S <= 1 - p, midpoint on a flat 1 - p), each with its CI
    read off the ``conf_type`` band the same way: p -> (time, lower, upper), arrays (..., G); inf = not reached.
    ``coarse``: a private curve known at the public grid's points only (``km``'s rule: the bands read linearly between grid points)."""
    lo, hi = conf_bands(curves, conf_type, with_noise)
    end = curves.follow_up_end
    return {p: (quantile_r(curves.time, curves.survival, 1 - p, last=end),
                *quantile_limits(curves.time, lo, hi, 1 - p, coarse, curves.survival, end)) for p in QUANTILES}


def reading_curves(result: CurveResult) -> SurvivalCurves:
    """The curves the numbers are read from: rrr's de-biased curves, else the release's curves (``km``'s choice)."""
    return band_curves(result)


def read_on_grid(result: CurveResult, public: PublicParameters) -> bool:
    """True when a private curve is known at the public grid's points only (``km``'s rule for quantile limits)."""
    return public.grid.kind != "event-times" and not no_noise(result.cost.epsilon)


def band_caption(result: CurveResult, conf_type: str) -> str:
    """How the private band was computed, in ``km``'s words (``interval_method``)."""
    return interval_method(result, conf_type)


def rmst_with_ci(curves: SurvivalCurves, horizon: float, coarse: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """RMST to ``horizon`` and its 95% interval (G,) for the first trial (noise-aware for private releases; on a
    coarse public grid the curve is read linearly between grid points)."""
    value, lo, up = rmst_interval(curves, horizon, coarse)
    return value[0], lo[0], up[0]


def readability_warnings(result: CurveResult, conf_type: str, landmarks: Sequence[float] | None, coarse: bool,
                         unit: str, name: Callable[[str], str] | None = None) -> list[str]:
    """``km``'s ``warnings`` for this release: plain sentences where a private number cannot be read (groups called
    by ``name``, e.g. their value labels)."""
    curves = reading_curves(result)
    lo, hi = conf_bands(curves, conf_type)
    if name is not None:  # (a single pooled curve keeps its "all": the sentences call it "the curve")
        curves = replace(curves, groups=tuple(g if g == "all" else name(g) for g in curves.groups))
    return curve_warnings(curves, lo, hi, result.mechanism, list(landmarks) if landmarks is not None else None,
                          coarse, unit, private=not no_noise(result.cost.epsilon),
                          raw_label_curves="debiased_curves" in result.extra, clamping=clamping_of(result))


def landmark_times_used(curves: SurvivalCurves, times: Sequence[float], exact_grid: bool) -> list[float]:
    """Where each requested landmark time is read on ``curves``' grid (``km --landmarks``' time_used): the time itself
    on the event-times grid or when it is a grid point, else the last grid point before it."""
    return [e["time_used"] for e in landmark_entries(curves, list(times), "log", exact_grid) if e["trial"] == 0
            and e["group"] == curves.groups[0]]


def noise_in_band(result: CurveResult) -> bool:
    """Whether the release's band carries the privacy noise (dpsurv_core.curves.uncertainty)."""
    return includes_noise(result)


def survival_landmarks(curves: SurvivalCurves, times: Sequence[float], conf_type: str, exact_grid: bool,
                       with_noise: bool = False) -> dict[tuple[str, int], dict]:
    """``km --landmarks`` entries of the first trial, keyed by (group, index of the time)."""
    out: dict[tuple[str, int], dict] = {}
    entries = [e for e in landmark_entries(curves, list(times), conf_type, exact_grid, with_noise) if e["trial"] == 0]
    for g in curves.groups:
        for i, e in enumerate(x for x in entries if x["group"] == g):
            out[(g, i)] = e
    return out


def incidence_caption(private: SurvivalCurves | None, conf_type: str, private_name: str = "Private",
                      exact_shaded: bool = True) -> str:
    """The sentence under a cumulative incidence chart: what its shaded bands are (``exact_shaded``: the non-private
    curve is drawn with its band, as side by side)."""
    exact = ("Non-private: R's interval for a competing-risks curve (survfit's infinitesimal jackknife variance, the "
             "formula applied to the incidence itself)." if exact_shaded else
             "The non-private band is drawn side by side (Layout); its limits are in the landmark table.")
    text = f"Shaded: pointwise 95% band of type {conf_type}. {exact}"
    if private is None or private.incidence_variance is None:
        return text + f" {private_name}: no band (this mechanism releases no variance for the incidence)."
    if private.interval_method is None:
        return (text + f" {private_name}: R's formula on its altered counts, which ignores what the rule did to them, "
                "so it is too narrow.")
    return (text + f" {private_name}: from a bootstrap over the public noise law, so it carries the noise (the "
            "formula applied to 1 - incidence, whose long arm points down: noisy incidences run high).")


def estimand_landmarks(curves: SurvivalCurves, times: Sequence[float], estimand: str, event_type: int,
                       conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, lower, upper) (G, T) of the cumulative hazard or incidence at ``times`` for the first trial, as ``km``
    prints them: the hazard's limits are R's from its Nelson-Aalen variance for exact counts and -log of the
    noise-aware survival band's for a private release (:func:`hazard_band`), the
    incidence's R's conf.type formulas from its variance (:func:`incidence_band`); NaN limits where the release has none."""
    times = np.asarray(times, float)
    value = cs.step_at(curves.time, cs.estimand_values(curves, estimand, event_type)[0], times, 0.0)
    nan = np.full(value.shape, np.nan)
    if estimand == cs.HAZARD:
        if np.all(np.isnan(curves.lower)):
            return value, nan, nan
        h_lo, h_up = hazard_band(curves, conf_type, with_noise)
        return value, cs.step_at(curves.time, h_lo[0], times, 0.0), cs.step_at(curves.time, h_up[0], times, 0.0)
    band = incidence_band(curves, conf_type)
    if band is None:
        return value, nan, nan
    lo, up = band
    return (value, cs.step_at(curves.time, lo[0][..., event_type, :], times, 0.0),
            cs.step_at(curves.time, up[0][..., event_type, :], times, 0.0))


def rrr_figure(raw: SurvivalCurves, debiased: SurvivalCurves, exact: SurvivalCurves | None, unit: str,
               horizon: float, group_column: str | None, conf_type: str | None = None,
               private_label: str = "private") -> go.Figure:
    """Randomized response: survival per reported group (raw) and de-biased, each over the non-private curves (none
    when ``exact`` is None: a released figure); with ``conf_type`` the de-biased curves carry their noise-aware 95%
    band. ``private_label`` names the release (a preview or a record)."""
    deb_band = band_arrays(debiased, conf_type) if conf_type and not np.all(np.isnan(debiased.lower)) else None
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=("Raw (curves of the reported groups)", "De-biased (mixing undone)"))
    for col, curves in ((1, raw), (2, debiased)):
        for gi, g in enumerate(curves.groups):
            colour = palette.colour(gi)
            name = group_name(g, group_column)
            if exact is not None:
                _add_curve(fig, exact, exact.survival[0, gi], None, f"{name} (non-private)", colour, "dash", 1.0,
                           horizon, 100.0, 1, col, unit, show_legend=col == 1)
            band = (deb_band[0][0, gi], deb_band[1][0, gi]) if deb_band is not None and col == 2 else None
            _add_curve(fig, curves, curves.survival[0, gi], band, f"{name} ({private_label})", colour, "solid", 1.0, horizon,
                       100.0, 1, col, unit, show_legend=col == 1)
    fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 40, "b": 10}, template="plotly_white",
                      legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0}, hovermode="x unified")
    if deb_band is not None:
        fig.update_layout(legend_title_text=f"Shaded (de-biased): 95% {conf_type} band")
    fig.update_xaxes(title_text=f"Time ({unit})", range=[0, horizon])
    fig.update_yaxes(range=[0, 102], ticksuffix="%")
    fig.update_yaxes(title_text="Survival (%)", row=1, col=1)
    return fig


# ----------------------------------------------------------------------------------------- tables
def at_risk_table(times: np.ndarray, exact: np.ndarray, private: np.ndarray | None, groups: Sequence[str],
                  group_column: str | None, unit: str, private_label: str = "private",
                  show_private: bool = True) -> pd.DataFrame:
    """Rows: per group, non-private then private (``not released`` when the mechanism has no counts). The private
    numbers are shown as :func:`dpsurv_core.curves.summary.at_risk_display` makes them (whole, non-negative,
    non-increasing: post-processing of the released counts)."""
    private = None if private is None else cs.at_risk_display(private)
    cols = [fmt_time(t, unit) for t in times]
    rows, index = [], []
    for gi, g in enumerate(groups):
        name = group_name(g, group_column)
        rows.append([UNKNOWN_AT_RISK if np.isnan(v) else f"{v:,.0f}" for v in exact[gi]])
        index.append(f"{name}, non-private")
        if show_private:
            rows.append([NOT_RELEASED] * len(times) if private is None
                        else [UNKNOWN_AT_RISK if np.isnan(v) else f"{v:,.0f}" for v in private[gi]])
            index.append(f"{name}, {private_label}")
    return pd.DataFrame(rows, index=index, columns=cols)


def exact_at_risk(cohort: Cohort, counts: Any, times: np.ndarray) -> np.ndarray:
    """The non-private number at risk (G, T) at ``times`` for the groups of ``counts``: R's n.risk (time >= t) read
    from the rows (:func:`dpsurv_core.curves.summary.at_risk_exact`), as ``km`` prints it; for a table kept in an
    engine, whose rows are not read, from its exact counts on the public grid."""
    if in_engine(cohort):
        return cs.at_risk_at(counts, times)[0]
    return cs.at_risk_exact(cohort, tuple(counts.groups), times)


def show_table(df: pd.DataFrame, name: str, key: str, styled: Any = None, index: bool = False,
               publishable: pd.DataFrame | None = None, confidential: bool = False) -> None:
    """A table drawn whole (``st.table``: nothing truncated, text wraps) with its CSV download underneath; ``styled``
    is a Styler of ``df`` to draw instead (the CSV is always the plain table). ``confidential``: ``df`` holds
    non-private numbers; ``publishable``: after a release, its released part, which "Table as CSV" then saves (the
    whole table is a separate, marked file: :func:`ui.downloads.table_downloads`). ``st.table`` reads cells as
    Markdown, so every text cell, header and index is drawn escaped (an uploaded label shows as typed, never as a
    link or image); the CSV holds the text itself, formula-safe."""
    st.table(literal_table(df, styled), hide_index=not index, width="stretch")
    table_downloads(df, name, f"{key}-csv", publishable, confidential, index)


def literal_table(df: pd.DataFrame, styled: Any = None) -> Any:
    """``df`` (or its Styler ``styled``, whose styles are kept) with its text as ``st.table`` shows it literally."""
    shown = markdown_literal_frame(df)
    if styled is None:
        return shown
    restyled = shown.style
    restyled.use(styled.export())
    return restyled


def comparison_table(df: pd.DataFrame, name: str, key: str, released: Released | None, styled: Any = None,
                     index: bool = False, drop: Sequence[str] = ()) -> None:
    """A table of non-private numbers beside private ones (:func:`show_table`, marked confidential): after a
    release, "Table as CSV" saves its released part only (:func:`released_part`, less the ``drop`` columns, which
    compare the two), and the whole table is a separate, marked file."""
    publishable = None if released is None else released_part(df.drop(columns=list(drop)))
    show_table(df, name, key, styled, index, publishable=publishable, confidential=True)


NON_PRIVATE = "non-private"


def released_part(df: pd.DataFrame, keep: Sequence[str] = ("Group", "Test", "Time")) -> pd.DataFrame:
    """The columns and rows of a page's table that hold released numbers only: the ``keep`` columns (what a row is
    about) and every column and row not named non-private (the exact numbers, and the differences from them, are for
    the data holder's eyes only)."""
    columns = [c for c in df.columns if c in keep or NON_PRIVATE not in str(c).lower()]
    rows = [i for i in df.index if NON_PRIVATE not in str(i).lower()]
    return df.loc[rows, columns]


def named_groups(counts: Any, tests: Sequence[Any], group_column: str | None) -> tuple[Any, list[Any]]:
    """Copies of released counts and their tests whose groups carry the readers' names (:func:`group_name`), for the
    sentences the core writes about them (``logrank_test.warnings_for``); the numbers are unchanged."""
    names = {g: group_name(g, group_column) for g in counts.groups}

    def rename(t: Any) -> Any:
        if t.group_b is None:
            return replace(t, group_a=", ".join(names.get(g, g) for g in str(t.group_a).split(", ")))
        return replace(t, group_a=names.get(t.group_a, t.group_a), group_b=names.get(t.group_b, t.group_b))

    return replace(counts, groups=tuple(names[g] for g in counts.groups)), [rename(t) for t in tests]


def style_flips(df: pd.DataFrame, flip_column: str = "Flip?") -> Any:
    """Highlight rows whose significance at 0.05 differs between private and non-private; None when no row does (the
    table is then drawn as it is: pandas' Styler, whose first use imports matplotlib, would paint nothing)."""
    if flip_column not in df.columns or not df[flip_column].astype(str).str.startswith("FLIP").any():
        return None

    def paint(row: pd.Series) -> list[str]:
        bad = str(row.get(flip_column, "")).startswith("FLIP")
        return [f"background-color: {palette.rgba(palette.VERMILLION, 0.15)}; font-weight: 600" if bad else ""] * len(row)
    return df.style.apply(paint, axis=1)


def test_label(r: cs.TestComparison, group_column: str | None) -> str:
    if r.group_b is None:
        return f"overall ({len(r.group_a.split(', '))} groups)"
    return f"{group_name(r.group_a, group_column)} vs {group_name(r.group_b, group_column)}"


@dataclass(frozen=True)
class GroupTests:
    """The Group comparison page's log-rank tests: non-private on every event time (``exact``, ``exact_overall``)
    and on the public grid (``on_grid``: pairs, then overall), and per private reading (the release; rrr's de-biased
    counts too) label -> (pairwise, overall, noise law), with the sentences the core writes about them."""

    exact: list[Any]
    exact_overall: Any
    on_grid: list[Any]
    private: dict[str, tuple[list[Any], Any, Any]]
    warnings: list[str]


def group_tests(cohort: Any, public: PublicParameters, fine: CurveResult, result: CurveResult, mechanism: Any,
                group_column: str | None, private_label: str) -> GroupTests:
    """The calibrated private tests of ``result`` (as many null draws as its ledger record keeps, so the same
    p-values) beside the non-private ones (``fine``: the exact counts on every event time)."""
    grid_counts = tile_trials(exact_counts(cohort, public.grid, public), 1)  # like with like: the same public grid
    on_grid = [*logrank.pairwise(grid_counts), logrank.overall(grid_counts)]
    private: dict[str, tuple[list[Any], Any, Any]] = {}
    warnings: list[str] = []
    if result.counts is not None:
        readings = {private_label: (result.counts, False)}
        if "debiased_counts" in result.extra:
            readings[f"{private_label}, de-biased"] = (result.extra["debiased_counts"], True)
        for label, (counts, debiased) in readings.items():
            calibrated, law = logrank_spread.calibrated(counts, mechanism, result.extra, debiased)
            private[label] = (calibrated[:-1], calibrated[-1], law)
            named_counts, named_tests = named_groups(counts, calibrated, group_column)  # sentences name the groups
            warnings += [w for w in logrank_test.warnings_for(named_counts, law, named_tests, result.cost.epsilon,
                                                              mechanism, general=not debiased)
                         if w not in warnings]
    return GroupTests(logrank.pairwise(fine.counts), logrank.overall(fine.counts), on_grid, private, warnings)


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


# ----------------------------------------------------------------------------------------- mechanisms (catalogue)
def mechanism_choices(command: str = "km", has_group: bool = True) -> list[str]:
    """The catalogue's private curve mechanisms for ``command`` (``km`` or ``logrank``), in its order; a mechanism
    that randomizes the group label only when there are groups."""
    return [e.id for e in catalogue.entries(catalogue.CURVES, command, private=True)
            if has_group or e.protects != GROUP_LABEL]


def mechanism_entry(mechanism_id: str) -> Entry:
    return catalogue.get(catalogue.CURVES, mechanism_id)


def mechanism_name(mechanism_id: str) -> str:
    return mechanism_entry(mechanism_id).name


def releases_counts(entry: Entry) -> bool:
    """Whether the mechanism publishes counts (numbers at risk, events): the log-rank command serves exactly those."""
    return "logrank" in entry.commands


def label_only(entry: Entry) -> bool:
    """Whether the mechanism protects the group label only (it randomizes labels, so it needs groups)."""
    return entry.protects == GROUP_LABEL


def without_counts(command: str = "km") -> list[str]:
    """Names of the mechanisms of ``command`` that publish no counts (so no log-rank test)."""
    return [e.name for e in catalogue.entries(catalogue.CURVES, command, private=True) if not releases_counts(e)]


def in_engine(cohort: Cohort) -> bool:
    """Whether the cohort is a server table kept in an engine (:class:`dpsurv_core.engines.EngineCohort`): its
    statistics are queries, and reading its rows is refused past the app's row limit."""
    return hasattr(cohort, "binned_counts")


def has_groups(cohort: Cohort) -> bool:
    """Whether the cohort has a group column (a cohort kept in an engine says so without reading its rows)."""
    return bool(cohort.has_group) if in_engine(cohort) else cohort.group is not None


ENGINE_BASELINE = ("Non-private curves for a table kept on the server: the exact Kaplan-Meier computed from the "
                   "counts DuckDB returns at every distinct event time (no row is read into the app). It is the same "
                   "estimator, to the same numbers, as lifelines and R survival on the rows: the engines' tests show "
                   "the counts are identical.")


def engine_note(left_out: Sequence[str]) -> str:
    """What a counting page says first about a server table kept in the engine: the mechanisms it leaves out, in the
    row limit's sentence (:func:`ui.session.too_large_sentence`), else that the table stays on the server."""
    if not left_out:
        return "This table is kept on the server (DuckDB): every mechanism here runs from its counts."
    names = ", ".join(left_out[:-1]) + (" and " if len(left_out) > 1 else "") + left_out[-1]
    return (session.too_large_sentence(session.data_choice(), names, plural=len(left_out) > 1)
            + " They are not offered here; the others run from the counts DuckDB computes in the file.")


def engine_mechanisms(names: Sequence[str], family: str = catalogue.CURVES) -> tuple[list[str], list[str]]:
    """``names`` split into the mechanisms that run from an engine's counts (catalogue column ``engines``) and the
    names of those that read each subject's values."""
    runs = [n for n in names if "duckdb" in catalogue.get(family, n).engines]
    return runs, [catalogue.get(family, n).name for n in names if n not in runs]


def data_key(cohort: Cohort, public: PublicParameters) -> str:
    """Identity of the analysed data and its public grid, for caches (a cohort kept in an engine: its source and
    column map)."""
    grid = ",".join(f"{e:.6g}" for e in public.grid.edges)
    ident = (f"{cohort.engine.source}|{cohort.mapping}|{cohort.time_unit}" if in_engine(cohort)
             else cs.fingerprint(cohort))
    return f"{cohort.name}|{ident}|{grid}|{public.group_categories}"


def _exact_pair(cohort: Cohort, public: PublicParameters, competing: bool) -> tuple[CurveResult, CurveResult]:
    if in_engine(cohort) and not competing:  # from the engine's counts: the same exact KM, no row read
        on_grid = cohort.exact_release(public)
        if on_grid.notes:  # more distinct event times than the engine counts on a grid: the exact curve on this grid
            return on_grid, on_grid
        return cohort.exact_release(replace(public, grid=cohort.event_time_grid())), on_grid
    fine = PublicParameters.derive(cohort, horizon=public.horizon, grid=TimeGrid.event_times(cohort),
                                   group_categories=public.group_categories or None)
    exact = catalogue.entries(catalogue.CURVES, "km", private=False)[0].build()
    return exact.compute(cohort, fine, competing=competing), exact.compute(cohort, public, competing=competing)


@st.cache_data(max_entries=24, show_spinner=False)
def _exact_cached(key: str, competing: bool, _cohort: Cohort, _public: PublicParameters) -> tuple[CurveResult, CurveResult]:
    return _exact_pair(_cohort, _public, competing)


def empty_groups_warning(on_grid: CurveResult, group_column: str | None) -> None:
    """One sentence for declared group categories that no patient of the data is in (a category typed as its label
    where the data hold codes, say): their non-private numbers describe nobody and their private ones are noise."""
    counts = on_grid.counts
    if counts is None or group_column is None:
        return
    n = np.asarray(counts.n, float).reshape(-1, len(counts.groups))[0]
    empty = [g for g, k in zip(counts.groups, n) if k <= 0]
    if not empty:
        return
    present = [str(g) for g, k in zip(counts.groups, n) if k > 0]
    named = [group_name(g, group_column) for g in empty]
    named = [f"{group_column} = {g}" if name == str(g) else name for g, name in zip(empty, named)]
    st.warning(f"No patient in the data is in {markdown_literal(', '.join(named))}: the declared "
               f"group categories include {'it' if len(empty) == 1 else 'them'}, so {'its' if len(empty) == 1 else 'their'}"
               " rows below describe nobody (a private release still publishes noise for "
               f"{'it' if len(empty) == 1 else 'them'}). Declare the categories as the data's codes"
               + (f" ({markdown_literal(', '.join(present))} have patients)" if present else "") + " on the Data page.",
               icon=":material/warning:")


def exact_results(cohort: Cohort, public: PublicParameters, competing: bool = False) -> tuple[CurveResult, CurveResult]:
    """Non-private curves (at every event time, and on the public grid), cached by data identity.

    Bundled data use ``st.cache_data``; uploads are cached in this session only, so nothing derived
    from an upload is shared with another session. A server table kept in an engine gives the exact curves from its
    counts on the distinct event times (equal to lifelines on the same rows), cached in this session by its source
    and column map (ui.cache.session_cache).
    """
    key = data_key(cohort, public)
    if session.data_choice().bundled:
        return _exact_cached(key, competing, cohort, public)
    if in_engine(cohort):
        from ui.cache import session_cache

        return session_cache(("engine_exact", key, competing), lambda: _exact_pair(cohort, public, competing))
    store = st.session_state.setdefault("exact_curves", {})
    if (key, competing) not in store:
        if len(store) > 8:
            store.clear()
        store[(key, competing)] = _exact_pair(cohort, public, competing)
    return store[(key, competing)]


# ----------------------------------------------------------------------------------------- plans (CLI reproducible)
def _num(v: float) -> str:
    return f"{float(v):.10g}"


def data_options(choice: session.DataChoice, group: str | None = None, covariates: Sequence[str] = ()
                 ) -> dict[str, Any]:
    """The CLI's data options for the Data page's choice: --data, --time, --event (with its codes when they are
    not the bundled data set's own), --group (and --labels when its value labels are the session's own), --id,
    --max-rows-per-subject, --covariates."""
    m = choice.mapping
    out: dict[str, Any] = {"data": choice.name, "time": m.time, "event": m.event}
    codes = tuple(m.event_codes), tuple(m.censor_codes)
    if choice.bundled and choice.name in datasets.DATASETS:
        d = default_mapping(choice.name)
        if m.event == d.event and codes == (tuple(d.event_codes), tuple(d.censor_codes)):
            codes = ((), ())
    if codes[0]:
        out["event_codes"] = list(codes[0])
        out["censor_codes"] = list(codes[1]) or None
    out["group"] = group
    # categories declared on the Data page that the command line would not know: --categories (a bundled data set's
    # documented codes it declares itself)
    declared = choice.categories.get(group) if group else None
    documented = (tuple(datasets.info(choice.name).labels.values.get(group) or ())
                  if choice.bundled and choice.name in datasets.DATASETS else ())
    out["categories"] = f"{group}:{','.join(declared)}" if declared and tuple(declared) != documented else None
    # group names set on the Data page travel in the file its 'Labels as JSON' saves
    out["labels"] = session.labels_file(choice) if session.relabelled([group], choice) else None
    out["id"] = m.id
    out["max_rows_per_subject"] = m.max_rows_per_subject if m.max_rows_per_subject > 1 else None
    out["covariates"] = list(covariates) or None
    return out


def timefix_option(choice: session.DataChoice) -> dict[str, Any]:
    """``--no-timefix`` (km and logrank) when the Data page keeps near-tied times apart, else nothing."""
    return {} if choice.mapping.timefix else {"no_timefix": True}


def event_type_options(choice: session.DataChoice) -> dict[str, Any]:
    """--event-type, --event-types and --type-censor-codes of the Data page's event-type column, for a competing-risks
    command line: none for a bundled data set's documented column (the command line declares it itself)."""
    m = choice.mapping
    if not m.event_type:
        return {}
    info = datasets.info(choice.name) if choice.bundled and choice.name in datasets.DATASETS else None
    documented = tuple((str(k), str(v)) for k, v in info.event_types.items()) if info is not None else ()
    if info is not None and m.event_type == info.event_type and tuple(m.event_type_names) == documented:
        return {}
    censor = tuple(str(c) for c in m.type_censor_codes)
    default = tuple(str(c) for c in event_types.DEFAULT_CENSOR_CODES)
    return {"event_type": m.event_type, "event_types": event_types.text(m.event_type_names) or None,
            "type_censor_codes": None if set(censor) == set(default) else list(censor)}


def grid_options(choice: session.DataChoice, public: PublicParameters, grid: bool = True) -> dict[str, Any]:
    """--grid and --horizon as the CLI needs them to use the same public time axis, in the unit the file stores
    (the command line reads the file's own unit): nothing when both were read off the data with the default 20 bins
    (the CLI reads them off the same way, with the same disclosures)."""
    f = session.source_factor(choice)
    out: dict[str, Any] = {"horizon": _num(public.horizon * f) if choice.horizon is not None else None}
    g = public.grid
    if not grid:
        return out
    if g.kind == "event-times":
        out["grid"] = "event-times"
    elif not (public.horizon_from_data and g.kind == "equal" and g.bins == 20):
        out["grid"] = f"{_num(g.edges[0] * f)}:{_num(g.edges[-1] * f)}:{g.bins}"
    return out


def command_line(command: str, options: dict[str, Any], repeated: dict[str, Sequence[str]] | None = None) -> str:
    """``cli_command(command, options)`` with options the CLI takes once per value (``--range A --range B``)."""
    import shlex

    line = cli_command(command, options)
    extra = [part for name, values in (repeated or {}).items() for v in values
             for part in ("--" + name.replace("_", "-"), str(v))]
    if not extra:
        return line
    head, tail = line.rsplit(" --json", 1)
    return f"{head} {shlex.join(extra)} --json{tail}"


def reading_names(groups: Sequence[str], group_column: str | None) -> dict[str, str]:
    """code -> the name the page shows a group by (:func:`group_name`: its value label); a single pooled curve keeps
    "all", which the core's sentences call "the curve"."""
    return {str(g): str(g) if g == "all" else group_name(g, group_column) for g in groups}


def pooled(public: PublicParameters, cohort: Cohort) -> PublicParameters:
    """``public`` as a release of ``cohort`` uses it: a cohort without groups (one pooled curve) publishes no group
    categories, so none is read off the data for it (as ``km`` without ``--group``)."""
    if has_groups(cohort) or not public.group_categories:
        return public
    return replace(public, group_categories=(), categories_from_data=False)


def curve_plan(entry: Entry, epsilon: float | None, cohort: Cohort, public: PublicParameters, command: str,
               options: dict[str, Any], mechanism_options: dict[str, Any] | None = None, competing: bool = False,
               analysis: str = "survival curves", extra: Sequence[Disclosure] = (), group_column: str | None = None,
               reading: dict[str, Any] | None = None, tests: dict[str, Any] | None = None) -> Plan:
    """The release plan of a curve mechanism on the page's cohort, as ``python -m dpsurv_core <command>`` builds it
    (``options``: the command line's options). The catalogue builds the mechanism from the release's context and
    ``mechanism_options`` (the page's settings; None values left out), and exactly these parameters go into the
    record's public inputs, so that its reader rebuilds the same mechanism. Its disclosures are the public
    parameters the curves use.

    The record is of kind ``curves`` (``logrank`` with ``tests``, the log-rank options ``{"null_draws": B}``): its
    ``released`` part is the mechanism's noisy output and its ``public_inputs`` are
    :func:`dpsurv_core.curves.readout.public_inputs` with ``reading`` (``conf_type``, ``time_unit``, ``landmarks``,
    ``rmst``) and the groups' names as the page shows them (``group_column``'s value labels)."""
    public = pooled(public, cohort)
    build = {**context(cohort, public), **{k: v for k, v in (mechanism_options or {}).items() if v is not None}}
    mechanism = entry.build(epsilon, **build)
    types: list[Disclosure] = []
    if competing:  # the event types: declared on the Data page (or documented), else read off the data (refused)
        types = event_types.disclosures(cohort)
        options = {**options, **event_type_options(session.data_choice())}

    def compute(noise: Any, trials: int) -> CurveResult:
        rel = with_follow_up_end(mechanism.compute(cohort, public, noise, trials if entry.private else 1,
                                                   competing=competing), cohort, public)
        rel.disclosures = [*extra, *rel.disclosures, *types]
        return rel

    def publish(rel: CurveResult) -> tuple[dict[str, Any], dict[str, Any]]:
        asked = {"conf_type": "log", "time_unit": cohort.time_unit, "landmarks": None, "rmst": None, **(reading or {})}
        asked["names"] = reading_names(rel.curves.groups, group_column)
        inputs = readout.public_inputs(entry.id, epsilon, build, public, competing, asked)
        if competing:
            inputs.update(event_types.public_inputs(cohort))
        if tests is not None:
            inputs["tests"] = dict(tests)
        return dict(rel.released or {}), inputs

    used = CURVE_PARAMETERS if has_groups(cohort) else tuple(p for p in CURVE_PARAMETERS if p != "groups")
    return Plan(entry, mechanism, cohort.name, session.data_choice().fingerprint, compute,
                [*extra, *public.disclosures(used), *types], cli_command(command, options), analysis=analysis,
                kind="curves" if tests is None else "logrank", publish=publish)


def reading_options(choice: session.DataChoice, conf_type: str, landmarks: Sequence[float], rmst: float | None
                    ) -> dict[str, Any]:
    """--conf-type, --landmarks and --rmst as the page reads the release (times in the file's unit, as the command
    line reads them): how the numbers printed beside it are read, not what is released."""
    f = session.source_factor(choice)
    return {"conf_type": None if conf_type == "log" else conf_type,
            "landmarks": [_num(t * f) for t in landmarks] or None, "rmst": None if rmst is None else _num(rmst * f)}


def record_curves(released: Released) -> CurveResult:
    """A curve release as its record holds it: the mechanism, rebuilt from the record's public inputs, reads the
    record's noisy output (:func:`dpsurv_core.curves.readout.curve_release`, the reader that made the record's
    ``derived`` part), so that every number the page shows after a release is a function of the record alone. Kept
    for this session by record id."""
    pub = released.publication
    if pub is None:  # a release made without a reader (not through curve_plan): its result as computed
        return released.result
    kept = st.session_state.setdefault("record_curves", {})
    if released.record_id not in kept:
        if len(kept) > 8:
            kept.clear()
        rel = readout.curve_release(pub.released, pub.public_inputs)
        rel.disclosures = [Disclosure(str(d.get("parameter", "")), str(d.get("message", "")), bool(d.get("dp", True)))
                           for d in released.entry.disclosures]
        kept[released.record_id] = rel
    return kept[released.record_id]


# ----------------------------------------------------------------------------------------- explore, then release
def cached_preview(plan: Plan, key: str) -> Any:
    """``release_panel.preview(plan)`` (seeded simulation noise: no charge, recorded nowhere), kept for this session
    so that a rerun with the same plan does not compute it again. Never exported."""
    cache = st.session_state.setdefault("preview_cache", {})
    pk = (release_panel.plan_key(plan, key), release_panel.preview_seed(plan))
    if pk not in cache:
        if len(cache) > 24:
            cache.clear()
        cache[pk] = release_panel.preview(plan)
    return cache[pk]


def preview_spread_of(plan: Plan, key: str) -> Any:
    """The plan previewed over PREVIEW_SPREAD_DRAWS draws of simulation noise (free, recorded nowhere, never exported),
    kept for this session like the preview; None when the mechanism cannot draw several at once."""
    from dpsurv_core.privacy.release import PREVIEW_SPREAD_DRAWS

    cache = st.session_state.setdefault("preview_spread_cache", {})
    pk = (release_panel.plan_key(plan, key), release_panel.preview_seed(plan))
    if pk not in cache:
        if len(cache) > 24:
            cache.clear()
        try:
            cache[pk] = release_panel.preview(plan, PREVIEW_SPREAD_DRAWS)
        except DpsurvError:
            cache[pk] = None
    return cache[pk]


def explore_or_release(plan: Plan, key: str, label: str = "Release",
                       disclosures: Callable[[Any], Sequence[Disclosure]] | None = None,
                       reread: Callable[[Released], Any] | None = None) -> tuple[Any, Released | None, str]:
    """The preview caption and the Release button (``release-<key>``) of ``plan``; returns what to show (the released
    result after a click, else the preview), the release (or None) and its label ("released, record N", "record N read
    anew" once the reading options differ from the recorded ones, or "preview"). ``disclosures(preview)``: what the
    release will disclose, read off the preview (a mechanism's disclosures follow from its parameters, not from its
    noise), recorded with the release. ``reread(released)``: the result to show after a release, read from its record
    (:func:`record_curves`), instead of the result as computed."""
    deterministic = bool(getattr(plan.mechanism, "deterministic", False))
    if plan.private and not deterministic and not release_panel.read_from_ledger(plan, key):
        release_panel.another_draw_button(plan, key)  # before the preview is drawn, so a click shows the next one
    preview = cached_preview(plan, key)
    if disclosures is not None:
        plan.disclosures = list(disclosures(preview))
    slot = st.empty()  # the preview's caption, taken away once this plan is released
    with slot.container():
        release_panel.preview_caption(plan)
    inputs = None
    if plan.publish is not None and plan.kind in READABLE:
        try:  # the public inputs its record would hold (they follow from the plan; the preview only names the groups)
            inputs = plan.publish(preview)[1]
        except Exception:  # noqa: BLE001 - no match to look for; the release itself reports any problem
            inputs = None
    rel = release_panel.release_button(plan, key, label, inputs)
    if rel is not None:
        slot.empty()
        shown = rel.result if reread is None else reread(rel)
        if release_panel.read_from_ledger(plan, key):  # a release of this plan made earlier, read again
            return shown, rel, f"released, record {rel.record_id}"
        if rel.entry.command and plan.command and not release_panel.same_command(rel.entry.command, plan.command):
            # the reading options (band type, landmarks, RMST time) moved after the click: the same released numbers
            # read another way, which its record and the report do not hold (release_panel's note says so)
            return shown, rel, f"record {rel.record_id} read anew"
        return shown, rel, f"released, record {rel.record_id}"
    downloads.mark_previews()  # files saved from this page say they hold a preview
    return preview, None, "preview"


def declared_sizes_input(key_prefix: str) -> tuple[int, ...] | None:
    """The time-indexed band's declared group sizes (public numbers, e.g. from the study design); None when blank."""
    text = st.text_input("Declared group size (optional, public)", key=f"{key_prefix}_sample_size",
                         placeholder="e.g. 120 or 120,108",
                         help="The number of patients per group as already published (the study design, a trial "
                              "report), one per group in the legend's order. It is not read off the data. With it "
                              "the band also carries the sampling error; without it the band covers the noise only.")
    try:
        return parse_sizes(text)
    except DpsurvError as exc:
        st.error(f"{markdown_literal(exc)} The band below covers the noise only until this is fixed.",
                 icon=":material/error:")
        return None


def declared_censoring_input(key_prefix: str, sizes: tuple[int, ...] | None) -> tuple[float, ...] | None:
    """The time-indexed band's declared censoring shares (public, e.g. the design's expected share); None when blank
    or when no group size is declared (the share censors the band's simulated cohorts of that size)."""
    text = st.text_input("Declared censoring share (optional, public)", key=f"{key_prefix}_censoring",
                         placeholder="e.g. 0.3 or 30%", disabled=sizes is None,
                         help="The share of patients censored as the study design expects it (or as already "
                              "published), one per group in the legend's order or one for all. It is not read off the "
                              "data. With a declared group size it censors the band's simulated cohorts; without it "
                              "they are uncensored and the band is too narrow late in a censored study.")
    if sizes is None:
        return None
    try:
        return parse_shares(text)
    except DpsurvError as exc:
        st.error(f"{markdown_literal(exc)} The band below treats the cohort as uncensored until this is fixed.",
                 icon=":material/error:")
        return None


def option_widgets(entry: Entry, key_prefix: str, skip: Sequence[str] = ("base_epsilon",)) -> dict[str, Any]:
    """A widget per option the catalogue entry declares (seeded with its defaults), in an expander; their values. Each
    is made from the option's one specification (:data:`dpsurv_core.privacy.options.OPTIONS`), as its flag is."""
    specified = option_specs.widgets(entry.options, skip)
    values: dict[str, Any] = {}
    if not specified:
        return values
    with st.expander(f"Options of {entry.name}", expanded=not entry.formal):
        cols = st.columns(min(4, len(specified)))
        for i, w in enumerate(specified):
            col, key = cols[i % len(cols)], f"{key_prefix}_opt_{w.name}"
            if w.kind == "choice":
                values[w.name] = col.radio(w.label, w.choices, index=w.choices.index(w.value), key=key, help=w.help)
            else:
                values[w.name] = w.read(col.number_input(w.label, w.low, w.high, w.value, w.step, key=key,
                                                         help=w.help))
    return values


def privacy_card(result: CurveResult, plan: Plan, released: Released | None, bands: bool = True) -> None:
    """What the release charges (or charged) and protects, every disclosure (not-DP ones as warnings), and notes
    (``bands`` False: the page draws no bands, so the notes about them are left out)."""
    with st.container(border=True):
        cost = plan.cost
        if released is not None:
            st.markdown(f"**Released as record {released.record_id}**, "
                        f"{markdown_literal(charge_phrase(released.entry.cost, True, released.entry.disclosures))}.")
        else:
            st.markdown(f"**Preview** (not charged, not for publication). A release "
                        f"{markdown_literal(charge_phrase(cost, False, plan.disclosures))}.")
        if cost.protects == GROUP_LABEL:
            st.markdown("**Protects the group label only**: survival times and events are published as they are "
                        "(label-DP, not record-level DP).")
        disclosures = list(result.disclosures)
        for d in disclosures:
            if not d.dp:
                st.warning(f"**Not differentially private** ({d.parameter}): {markdown_literal(d.message)}", icon="⚠️")
        dp_ones = [d for d in disclosures if d.dp]
        if dp_ones:
            st.markdown("**Disclosures** (public parameters read off the data, published as they are):\n"
                        + "\n".join(f"- ℹ️ *{d.parameter}*: {markdown_literal(d.message)}" for d in dp_ones))
        if not disclosures:
            st.caption("Disclosures: none (the horizon, grid and groups were declared on the Data page).")
        if released is not None:
            st.caption("Files saved with 'Figure as' and 'Table as CSV' hold the released numbers only, as the record "
                       "has them; the 'Comparison (confidential)' files add the non-private numbers and say so in "
                       "their name and on the image: they are not for publication.")
        for note in result.notes:
            if bands or "bands" not in note.lower():
                st.caption(markdown_literal(note))
        st.caption("Reproduce this plan on the command line (a new release, charged again): "
                   + markdown_code(plan.command))


def competing_cohort(cohort: Cohort) -> Cohort | None:
    """The cohort with its competing-event types: as mapped, or for a bundled data set that declares them (none for
    a server table kept in an engine: its Data page maps no event type)."""
    if in_engine(cohort):
        return cohort if cohort.has_event_type else None
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
