"""Plotly figures built from core results, shared by the app and the HTML report (no Streamlit)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpsurv_core.curves.kaplan_meier import SurvivalCurves
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.report.palette import BLUE, COLOURS, SKY_BLUE, VERMILLION
from dpsurv_core.report.text import plain_label

PALETTE = list(COLOURS)  # Okabe-Ito (dpsurv_core.report.palette): colour-blind safe, as in the app

ESTIMANDS = {"survival": ("survival", "Survival (%)"), "cumulative-hazard": ("cumulative_hazard", "Cumulative hazard"),
             "cumulative-incidence": ("cumulative_incidence", "Cumulative incidence (%)")}


def step_xy(time: np.ndarray, values: np.ndarray, start: float) -> tuple[np.ndarray, np.ndarray]:
    """Step-function coordinates starting at time 0."""
    t = np.concatenate([[0.0], np.repeat(time, 2)])
    v = np.concatenate([[start, start], np.repeat(values, 2)[:-1]])
    return t, v


def _nobody_left(outputs: dict, shape: tuple[int, ...]) -> np.ndarray | None:
    """(G, J) bool: from the first bin where a record's released counts leave nobody at risk (the life table's
    r_j + c_j / 2, as the curve reads them; :func:`~dpsurv_core.curves.uncertainty.nobody_left`); None without
    counts."""
    from dpsurv_core.curves.intervals import nobody_left

    try:
        n = np.asarray(outputs["at_risk"], float)
        d = np.asarray(outputs["events"], float)
        c = np.asarray(outputs["censored"], float)
    except (KeyError, TypeError, ValueError):
        return None
    d = d.sum(-2) if d.ndim == 3 else d
    if n.shape != shape[:1] or d.shape != shape or c.shape != shape:
        return None
    r = n[:, None] - (np.cumsum(d, -1) - d) - np.cumsum(c, -1) + 0.5 * c
    return nobody_left(r)


def band_trace(time: np.ndarray, lower: np.ndarray, upper: np.ndarray, colour: str, name: str) -> go.Scatter:
    """A survival band as a filled step polygon in percent; where R gives no interval (S = 0) it is drawn from 0 to
    the last upper limit."""
    low = np.nan_to_num(np.asarray(lower, float), nan=0.0)
    high = pd.Series(np.asarray(upper, float)).ffill().fillna(1.0).to_numpy()
    tl, vl = step_xy(time, low * 100, 100.0)
    th, vh = step_xy(time, high * 100, 100.0)
    return go.Scatter(x=np.concatenate([th, tl[::-1]]), y=np.concatenate([vh, vl[::-1]]), fill="toself",
                      fillcolor=colour, opacity=0.15, line=dict(width=0), hoverinfo="skip", showlegend=False,
                      name=f"{name} 95% band")


def curves_figure(labelled: dict[str, SurvivalCurves], time_unit: str, estimand: str = "survival", trial: int = 0,
                  bands: str = "log-log", title: str = "") -> go.Figure:
    """Step curves for each (label -> curves) pair, every group, with bands where available.

    Parameters
    ----------
    labelled : dict of str to SurvivalCurves
        Curves by label (e.g. "private", "non-private"), each drawn with its own dash.
    time_unit : str
        The time axis's unit.
    estimand : {"survival", "cumulative-hazard", "cumulative-incidence"}, default "survival"
        What is drawn.
    trial : int, default 0
        The draw shown, for curves with a trial axis.
    bands : str, default "log-log"
        The confidence band drawn.
    title : str, default ""
        The figure's title.

    Returns
    -------
    plotly.graph_objects.Figure
        The figure.
    """
    field, axis = ESTIMANDS[estimand]
    pct = estimand != "cumulative-hazard"
    fig = go.Figure()
    k = 0
    for dash, (label, cur) in zip(("solid", "dash", "dot", "dashdot"), labelled.items()):
        arr = getattr(cur, field)
        arr = arr[trial] if arr.ndim > (3 if field == "cumulative_incidence" else 2) else arr
        for gi, group in enumerate(cur.groups):
            series = [(arr[gi, ti], f" {cur.event_types[ti]}") for ti in range(arr.shape[1])] if field == "cumulative_incidence" else [(arr[gi], "")]
            for values, suffix in series:
                colour = PALETTE[k % len(PALETTE)]
                k += 1
                scale = 100.0 if pct else 1.0
                t, v = step_xy(cur.time, values * scale, 1.0 * scale if field == "survival" else 0.0)
                name = plain_label(f"{label}: {group}{suffix}" if len(cur.groups) > 1 or suffix else label)
                fig.add_trace(go.Scatter(x=t, y=v, mode="lines", name=name, line=dict(color=colour, dash=dash),
                                         hovertemplate=f"{name}<br>%{{x:.4g}} {time_unit}: %{{y:.3g}}<extra></extra>"))
                if field == "survival" and bands != "none":
                    lo = cur.lower if bands == "log-log" else cur.lower_linear
                    hi = cur.upper if bands == "log-log" else cur.upper_linear
                    lo = lo[trial] if lo.ndim > 2 else lo
                    hi = hi[trial] if hi.ndim > 2 else hi
                    if np.any(np.isfinite(lo[gi])) and np.any(np.isfinite(hi[gi])):
                        fig.add_trace(band_trace(cur.time, lo[gi], hi[gi], colour, name))
    fig.update_layout(title=plain_label(title), xaxis_title=plain_label(f"Time ({time_unit})"), yaxis_title=axis,
                      template="plotly_white", legend=dict(orientation="h", y=-0.2), margin=dict(l=60, r=20, t=50 if title else 20, b=40))
    if pct:
        fig.update_yaxes(range=[0, 101])
    return fig


def ledger_figure(ledger: Ledger, entries: list | None = None) -> go.Figure:
    """Epsilon of each release (``entries``, default every release of ``ledger``) and their running total against the
    cap; when ``entries`` are a part of the ledger, the data set's whole total as a dotted line."""
    chosen = list(ledger.entries) if entries is None else list(entries)
    no_eps = [e for e in chosen if e.cost.epsilon is None]  # disclosure control: no epsilon to draw (never a 0 bar)
    chosen = [e for e in chosen if e.cost.epsilon is not None]
    eps = [e.cost.epsilon for e in chosen if e.cost.epsilon is not None]  # all of them (filtered above)
    labels = [plain_label(f"{e.record_id or i + 1}. {e.mechanism} ({e.analysis})") for i, e in enumerate(chosen)]
    fig = go.Figure(go.Bar(x=labels, y=eps, name="epsilon of the release", marker_color=SKY_BLUE,
                           hovertemplate="%{x}<br>epsilon %{y:.4g}<extra></extra>"))
    fig.add_trace(go.Scatter(x=labels, y=np.cumsum(eps), mode="lines+markers", name="running total (sequential)",
                             line_color=BLUE, hovertemplate="%{x}<br>total %{y:.4g}<extra></extra>"))
    if ledger.cap:
        fig.add_hline(y=ledger.cap, line_dash="dash", line_color=VERMILLION, annotation_text=f"cap {ledger.cap:g}")
    if entries is not None and len(chosen) != len(ledger.entries):
        fig.add_hline(y=ledger.spent(), line_dash="dot", line_color="#475569",
                      annotation_text=f"data set total {ledger.spent():.3g}", annotation_position="bottom right")
    if no_eps:
        fig.add_annotation(text=f"{len(no_eps)} disclosure-control release(s) with no epsilon (no formal guarantee) "
                                "are not drawn", showarrow=False, xref="paper", yref="paper", x=0.0, y=-0.35,
                           xanchor="left", font=dict(color=VERMILLION))
    fig.update_layout(yaxis_title="epsilon", template="plotly_white", height=300, legend=dict(orientation="h", y=1.15),
                      margin=dict(l=60, r=20, t=30, b=60))
    return fig


def outputs_figure(outputs: Any, time_unit: str = "") -> go.Figure | None:
    """The released survival curves of a ledger record's ``outputs`` (``groups``, ``time``, ``survival``) as steps;
    None when the outputs are not curves."""
    if not (isinstance(outputs, dict) and all(k in outputs for k in ("groups", "time", "survival"))):
        return None
    time = np.asarray(outputs["time"], dtype=float)
    debiased = isinstance(outputs.get("debiased_survival"), list)  # rrr: the de-biased curves carry the band
    prefix = "debiased_" if debiased else ""
    surv = np.asarray(outputs[prefix + "survival"], dtype=float)
    groups = [str(g) for g in outputs.get("group_labels") or outputs["groups"]]  # by their value labels when kept
    if surv.shape != (len(groups), time.size):
        return None
    fig = go.Figure()
    bands = [np.asarray([[np.nan if x is None else x for x in row] for row in outputs[prefix + k]], dtype=float)
             if isinstance(outputs.get(prefix + k), list) else None for k in ("lower", "upper")]
    cut = None if debiased else _nobody_left(outputs, surv.shape)  # as the app draws it: no band once nobody is left
    conf = outputs.get("conf_type")
    for gi, g in enumerate(groups):
        colour = PALETTE[gi % len(PALETTE)]
        t, v = step_xy(time, surv[gi] * 100, 100.0)
        what = "de-biased" if debiased else "released"
        name = what if groups == ["all"] else plain_label(f"{what}: {g}")
        fig.add_trace(go.Scatter(x=t, y=v, mode="lines", name=name, line=dict(color=colour),
                                 hovertemplate=f"{name}<br>%{{x:.4g}}: %{{y:.3g}}%<extra></extra>"))
        if bands[0] is not None and bands[1] is not None and bands[0].shape == surv.shape:
            keep = slice(None) if cut is None or not cut[gi].any() else slice(0, int(np.argmax(cut[gi])))
            if time[keep].size:
                fig.add_trace(band_trace(time[keep], bands[0][gi][keep], bands[1][gi][keep], colour,
                                         f"{name} ({conf})" if isinstance(conf, str) else name))
    fig.update_layout(xaxis_title=f"Time ({time_unit})" if time_unit else "Time", yaxis_title="Survival (%)",
                      template="plotly_white", legend=dict(orientation="h", y=-0.2),
                      margin=dict(l=60, r=20, t=20, b=40))
    fig.update_yaxes(range=[0, 101])
    return fig
