"""Plotly figures of the survival-curve pages: the exact and private curves with their bands (cut where nobody is
left at risk), the notes under them, and rrr's raw and de-biased curves. No statistics here: every number
comes from ``dpsurv_core``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dpsurv_app import palette
from dpsurv_app.curve_format import _D3_TO_OKABE_ITO, estimand_axis, fmt_time, group_name
from dpsurv_app.curve_readings import band_arrays
from dpsurv_core.cli.km import hazard_band
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.kaplan_meier import SurvivalCurves
from dpsurv_core.curves.uncertainty import incidence_band, nobody_left
from dpsurv_core.report.text import plain_label


def recolour(fig: go.Figure) -> go.Figure:
    """``fig`` with the D3 colours of its traces' lines and markers swapped for the Okabe-Ito palette (for the
    figures dpsurv_core builds, which cannot import ``dpsurv_app.palette``); other colours are kept."""
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
