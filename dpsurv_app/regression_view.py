"""The Regression page's tables and figures: the coefficient table as shown, the forest plot, pSGLD's chain diagnostics
and the simulation studies' figures (error against epsilon, the Lambda trade-off). Drawing and formatting only: the
numbers come from :mod:`dpsurv_core.regression` (Nguyen & Hui 2017, regression; pSGLD: Li et al. 2016)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import SupportsFloat

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dpsurv_app import palette
from dpsurv_core.regression.inference import format_ratio, format_ratio_ci
from dpsurv_core.report.text import markdown_literal, p_value, plain_label


def _ratio_ci(r: pd.Series) -> str:
    """OR (95% CI) as clinicians write it, by the rule of the warnings and the report (format_ratio): two decimals,
    three significant figures beyond 0.01 to 100, no scientific notation, and beyond 1/1,000 and 1,000 in words
    (``0.60 (95% CI 0.43 to 0.83)``, ``below 0.001 (95% CI below 0.001 to 0.0123)``)."""
    return format_ratio_ci(r.odds_ratio, r.lower, r.upper)


def _p(v: SupportsFloat | None) -> str:
    return p_value(float(v)) if v is not None and pd.notna(v) and np.isfinite(float(v)) else "–"


def coefficient_table(table: pd.DataFrame, display_name: Callable[[str], str]) -> pd.DataFrame:
    """The coefficient table as the Regression page shows it: each row's ratio with its 95% CI, p, the caution,
    the non-private p of a preview, the coefficient and the epsilon charged."""
    show = pd.DataFrame({
        "Estimate": table.estimate, "Covariate": table.covariate.map(display_name),
        "Ratio type": table.ratio,
        "Ratio (95% CI)": table.apply(_ratio_ci, axis=1),
        "p": table.p_value.map(_p),
        "Read with care": table.get("caution", pd.Series("", index=table.index)).fillna(""),
        "Non-private p (preview only)": table.get("p_value_nonprivate", pd.Series(np.nan, index=table.index)).map(_p),
        "Coefficient (log ratio)": table.coefficient.round(4),
        "Epsilon": table.epsilon,
    })
    return show


def forest_figure(parts: list[pd.DataFrame], groups: list[tuple[str, pd.DataFrame]], ypos: dict[str, int],
                  colours: dict[str, str], display_name: Callable[[str], str]) -> tuple[go.Figure, list[str]]:
    """The forest plot of the ratios with their 95% intervals, a row per covariate (``ypos``) and a marker per fit
    (``groups``), on a log scale one decade beyond the non-private intervals (``parts[0]``, ``parts[1]``); a ratio
    beyond it is drawn as a triangle at the edge and named in the list returned with the figure."""
    ffig = go.Figure()
    offsets = np.linspace(-0.3, 0.3, len(groups)) if len(groups) > 1 else [0.0]
    lo_ref = float(np.nanmin(np.concatenate([parts[0].lower, parts[1].lower])))
    hi_ref = float(np.nanmax(np.concatenate([parts[0].upper, parts[1].upper])))
    x_lo, x_hi = min(lo_ref, 1.0) / 10, max(hi_ref, 1.0) * 10  # one decade beyond the non-private intervals
    off_scale = []
    for (kind, part), off in zip(groups, offsets):
        y = [ypos[c] + off for c in part.covariate]
        err = None
        if part["lower"].notna().all():
            err = dict(type="data", symmetric=False, array=part.upper - part.odds_ratio,
                       arrayminus=part.odds_ratio - part.lower)
        ratio = part.odds_ratio.to_numpy()
        outside = (ratio < x_lo) | (ratio > x_hi)
        off_scale += [f"{part.estimate.iloc[0]}: {markdown_literal(display_name(c))} {format_ratio(r)}"
                      for c, r, o in zip(part.covariate, ratio, outside) if o]
        ffig.add_trace(go.Scatter(x=np.clip(ratio, x_lo, x_hi), y=y, mode="markers", error_x=err,
                                  name=part.estimate.iloc[0], text=[format_ratio(r) for r in ratio], hoverinfo="text+name",
                                  marker={"size": 10, "color": colours[kind],
                                          "symbol": np.where(outside, "triangle-right", "circle").tolist()}))
    ffig.add_vline(x=1.0, line_dash="dot", line_color=palette.GREY)
    ffig.update_layout(xaxis_type="log", xaxis_range=[math.log10(x_lo), math.log10(x_hi)],
                       xaxis_title="odds ratio (discrete-time) or hazard ratio (Cox), log scale",
                       yaxis={"tickvals": list(ypos.values()), "ticktext": [plain_label(display_name(c)) for c in ypos]}, height=180 + 90 * len(ypos),
                       legend={"orientation": "h", "y": -0.5})
    return ffig, off_scale


def chains_figure(trace: np.ndarray, mre_ep: np.ndarray, names: Sequence[str], factors: np.ndarray,
                  beta_private: np.ndarray, burn_in: int, colour: str, display_name: Callable[[str], str]
                  ) -> go.Figure:
    """pSGLD's chain diagnostics: each coefficient's chains in original units (``factors``) against the epochs, the
    non-private value dashed and the burn-in shaded, and the MRE by epoch."""
    tfig = make_subplots(rows=1, cols=len(names) + 1, subplot_titles=[f"trace: {plain_label(display_name(n))}" for n in names] + ["MRE by epoch"])
    epochs_axis = np.arange(trace.shape[0])
    for j in range(len(names)):
        for c in range(trace.shape[1]):
            tfig.add_trace(go.Scatter(x=epochs_axis, y=trace[:, c, j] * factors[j], mode="lines", showlegend=False,
                                      line={"width": 1, "color": palette.colour(c)}), row=1, col=j + 1)
        tfig.add_hline(y=float(beta_private[j] * factors[j]), line_dash="dash", line_color=palette.BLACK, row=1, col=j + 1)
        tfig.add_vrect(x0=0, x1=burn_in, fillcolor="#ccc", opacity=0.3, line_width=0, row=1, col=j + 1)
    tfig.add_trace(go.Scatter(x=epochs_axis, y=mre_ep, mode="lines", line={"color": colour},
                              showlegend=False), row=1, col=len(names) + 1)
    tfig.update_xaxes(title_text="epoch")
    tfig.update_layout(height=340)
    return tfig


def error_figure(part: pd.DataFrame, labels: dict[str, str], colours: dict[str, str]) -> go.Figure:
    """The error study so far: each mechanism's mean relative error against epsilon, log-log."""
    partial = go.Figure()
    for k in dict.fromkeys(part.mechanism):
        sub = part[part.mechanism == k]
        partial.add_trace(go.Scatter(x=sub.epsilon, y=sub.mre, mode="lines+markers", name=labels[k],
                                     line={"color": colours[k]}))
    partial.update_layout(xaxis_type="log", yaxis_type="log", xaxis_title="epsilon",
                          yaxis_title="mean relative error", height=380, legend={"orientation": "h", "y": -0.3})
    return partial


def lambda_figure(lam_rows: pd.DataFrame, labels: dict[str, str], colours: dict[str, str], lam: float,
                  epsilon: float) -> go.Figure:
    """The Lambda trade-off at one epsilon: each mechanism's mean relative error against Lambda, log-log, the
    chosen Lambda dotted."""
    lfig = go.Figure()
    for kind in dict.fromkeys(lam_rows.mechanism):
        sub = lam_rows[lam_rows.mechanism == kind]
        lfig.add_trace(go.Scatter(x=sub["lambda"], y=sub.mre, mode="lines+markers", name=labels[kind],
                                  line={"color": colours[kind]}))
    lfig.add_vline(x=lam, line_dash="dot", line_color=palette.GREY)
    lfig.update_layout(title=f"Lambda trade-off at epsilon {epsilon:g}: small Lambda = more noise, large Lambda = "
                             "coefficients shrunk to 0", xaxis_type="log", yaxis_type="log", xaxis_title="Lambda",
                       yaxis_title="mean relative error", height=360, legend={"orientation": "h", "y": -0.3})
    return lfig
