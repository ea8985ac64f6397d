"""Drawing for the trade-off explorer: utility against epsilon, one line and band per mechanism.

Drawing only: every number comes from :mod:`dpsurv_core.tradeoff` (a tidy table and a reference).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dpsurv_app import palette
from dpsurv_core import tradeoff

ANALYSIS_LABELS = {
    "curves": "Survival curves: how far the private curve is from the real one",
    "logrank": "Log-rank tests: how often the private test (calibrated for the noise) reaches the opposite conclusion "
               "to the exact test on the same grid",
    "weibull": "Weibull parameters: how far the private shape and scale are from the real fit",
    "regression": "Regression coefficients: how far the private coefficients are from the real fit",
}
_PALETTE = palette.COLOURS  # Okabe-Ito, by the mechanism's place in its analysis: distinct within each analysis


@dataclass(frozen=True)
class MetricStyle:
    """How a metric is shown: axis title, factor from the core's value, hover format and suffix."""

    title: str
    factor: float
    fmt: str
    suffix: str
    headline: str  # what the line is: "median", "mean", "share"


def metric_style(metric: str, unit: str = "days") -> MetricStyle:
    return {
        "rmse": MetricStyle("Error of the survival curve (RMSE, percentage points)", 100.0, ".2f", " points", "median"),
        "flip_rate": MetricStyle("Releases whose log-rank conclusion flips (%)", 100.0, ".1f", "%", "share"),
        "mdae_shape": MetricStyle("Median absolute error of the shape", 1.0, ".3g", "", "median"),
        "mdae_scale": MetricStyle(f"Median absolute error of the scale ({unit})", 1.0, ",.1f", f" {unit}", "median"),
        "mre": MetricStyle("Mean relative error of the coefficients (%)", 100.0, ",.1f", "%", "mean"),
    }[metric]


def mechanism_label(name: str, analysis: str | None = None) -> str:
    """The catalogue's name of a studied mechanism."""
    return tradeoff.label(name, analysis)


def _order(table: pd.DataFrame) -> list[str]:
    """The mechanisms of the table in the catalogue's order of their analysis."""
    analyses = list(dict.fromkeys(table["analysis"])) if "analysis" in table else []
    order = list(tradeoff.mechanisms(analyses[0])) if len(analyses) == 1 and analyses[0] in tradeoff.ANALYSES else []
    present = list(dict.fromkeys(table["mechanism"]))
    return [m for m in order if m in present] + [m for m in present if m not in order]


def mechanism_colour(name: str, order: Sequence[str]) -> str:
    return _PALETTE[list(order).index(name) % len(_PALETTE)] if name in order else palette.GREY


def _rgba(hex_colour: str, alpha: float) -> str:
    if hex_colour.startswith("rgb"):
        return hex_colour.replace("rgb(", "rgba(").replace(")", f",{alpha})")
    h = hex_colour.lstrip("#")
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{alpha})"


def _label(fig: go.Figure, y: float, text: str, col: int, log_y: bool, left: bool, colour: str) -> None:
    """A label just above a horizontal line (annotations on a log axis take log10 of the value)."""
    suffix = "" if col == 1 else str(col)
    fig.add_annotation(x=0.01 if left else 0.99, xref=f"x{suffix} domain", y=math.log10(y) if log_y else y,
                       yref=f"y{suffix}", text=text, showarrow=False, xanchor="left" if left else "right",
                       yanchor="bottom", font={"size": 11, "color": colour})


def tradeoff_figure(table: pd.DataFrame, reference: dict[str, float], reference_label: str,
                    current_epsilon: float | None, unit: str = "days", log_y: bool = False,
                    height: int = 480, guides: Sequence[tuple[str, str, float]] = ()) -> go.Figure:
    """Utility against epsilon (log x): per mechanism a line (the headline value), a band (10%-90% of the
    simulated releases, or the 95% interval of a rate), a marker at the current epsilon; the non-private
    reference as a dashed line (left out on a log axis when it is 0); ``guides`` (text, metric, value) as
    dotted lines; hover shows the numbers."""
    metrics = list(dict.fromkeys(table["metric"]))
    fig = make_subplots(rows=1, cols=len(metrics), horizontal_spacing=0.09,
                        subplot_titles=[metric_style(m, unit).title for m in metrics] if len(metrics) > 1 else None)
    mechanisms = _order(table)
    analysis = table["analysis"].iloc[0] if len(table) and "analysis" in table else None
    for col, metric in enumerate(metrics, start=1):
        st = metric_style(metric, unit)
        sub = table[table["metric"] == metric]
        positive = sub[["value", "lower"]].to_numpy(float) * st.factor
        positive = positive[np.isfinite(positive) & (positive > 0)]
        floor = positive.min() / 3 if positive.size else 1e-6
        for name in mechanisms:
            rows = sub[sub["mechanism"] == name].sort_values("epsilon")
            if rows.empty:
                continue
            colour = mechanism_colour(name, mechanisms)
            label = mechanism_label(name, analysis)
            x = rows["epsilon"].to_numpy(float)
            y = rows["value"].to_numpy(float) * st.factor
            lo = rows["lower"].to_numpy(float) * st.factor
            hi = rows["upper"].to_numpy(float) * st.factor
            if log_y:
                lo = np.maximum(lo, floor)
            fig.add_trace(go.Scatter(x=x, y=hi, mode="lines", line={"width": 0}, hoverinfo="skip", showlegend=False,
                                     legendgroup=name), row=1, col=col)
            fig.add_trace(go.Scatter(x=x, y=lo, mode="lines", line={"width": 0}, fill="tonexty",
                                     fillcolor=_rgba(colour, 0.13), hoverinfo="skip", showlegend=False,
                                     legendgroup=name), row=1, col=col)
            band = "95% interval" if metric == "flip_rate" else "8 in 10 releases"
            custom = np.column_stack([rows["lower"].to_numpy(float) * st.factor, hi, rows["trials"].to_numpy(int)])
            hover = (f"<b>{label}</b><br>epsilon %{{x:.3~g}}<br>{st.headline}: %{{y:{st.fmt}}}{st.suffix}<br>"
                     f"{band}: %{{customdata[0]:{st.fmt}}} to %{{customdata[1]:{st.fmt}}}{st.suffix}"
                     "<br>%{customdata[2]} simulated releases<extra></extra>")
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines+markers", name=label, legendgroup=name, showlegend=col == 1,
                                     line={"color": colour, "width": 2.4}, marker={"size": 6}, customdata=custom,
                                     hovertemplate=hover), row=1, col=col)
            if current_epsilon is not None:
                at = np.isclose(x, current_epsilon, rtol=1e-9)
                if at.any():
                    fig.add_trace(go.Scatter(x=x[at], y=y[at], mode="markers", legendgroup=name, showlegend=False,
                                             marker={"size": 15, "symbol": "diamond", "color": colour,
                                                     "line": {"color": "black", "width": 1.5}},
                                             customdata=custom[at], hovertemplate=hover.replace(
                                                 "<b>", "<b>Your epsilon: ", 1)), row=1, col=col)
        ref = reference.get(metric)
        if ref is not None and math.isfinite(ref) and (ref > 0 or not log_y):
            text = f"non-private, {reference_label}: {ref * st.factor:{st.fmt}}{st.suffix}"
            fig.add_hline(y=ref * st.factor, line={"color": "#555555", "dash": "dash", "width": 1.6}, row=1, col=col)
            _label(fig, ref * st.factor, text, col, log_y, left=True, colour="#333333")
        for text, guide_metric, value in guides:
            if guide_metric == metric and math.isfinite(value) and (value > 0 or not log_y):
                fig.add_hline(y=value * st.factor, line={"color": "#888888", "dash": "dot", "width": 1.4}, row=1, col=col)
                _label(fig, value * st.factor, f"{text}: {value * st.factor:{st.fmt}}{st.suffix}", col, log_y,
                       left=False, colour="#555555")
        if current_epsilon is not None:
            fig.add_vline(x=current_epsilon, line={"color": "#222222", "dash": "dot", "width": 1.2},
                          annotation_text=f"your epsilon {current_epsilon:g}", annotation_position="top left",
                          annotation_font={"size": 11}, row=1, col=col)
        fig.update_yaxes(title_text=st.title if len(metrics) == 1 else None, type="log" if log_y else "linear",
                         dtick=1 if log_y else None, exponentformat="none" if log_y else None,
                         ticksuffix="%" if st.suffix == "%" else None, rangemode="tozero" if not log_y else None,
                         row=1, col=col)
        if metric == "flip_rate" and not log_y:
            fig.update_yaxes(range=[-2, 102], row=1, col=col)
    eps = table["epsilon"].to_numpy(float)
    lo_x, hi_x = (float(eps.min()), float(eps.max())) if eps.size else (0.05, 10.0)
    fig.update_xaxes(type="log", title_text="epsilon (log scale; smaller = more private)",
                     range=[math.log10(lo_x) - 0.08, math.log10(hi_x) + 0.08],
                     tickvals=[0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10], ticktext=["0.05", "0.1", "0.2", "0.5", "1", "2", "5",
                                                                          "10"])
    fig.update_layout(height=height, template="plotly_white", hovermode="closest",
                      margin={"l": 10, "r": 10, "t": 40 if len(metrics) > 1 else 24, "b": 10},
                      legend={"orientation": "h", "yanchor": "top", "y": -0.2, "x": 0})
    return fig


def summary_table(table: pd.DataFrame, epsilons: Sequence[float], unit: str = "days") -> pd.DataFrame:
    """The headline value per mechanism (rows) at the chosen epsilons (columns), formatted."""
    out = []
    for (name, metric), rows in table.groupby(["mechanism", "metric"], sort=False):
        st = metric_style(metric, unit)
        row = {"Mechanism": mechanism_label(name, rows["analysis"].iloc[0] if "analysis" in rows else None)}
        if table["metric"].nunique() > 1:
            row["Measure"] = st.title
        for e in epsilons:
            hit = rows[np.isclose(rows["epsilon"].to_numpy(float), e)]
            v = float(hit["value"].iloc[0]) * st.factor if len(hit) else math.nan
            row[f"epsilon {e:g}"] = "—" if math.isnan(v) else f"{v:{st.fmt}}{st.suffix}"
        out.append(row)
    return pd.DataFrame(out)


BINNING = "binning alone changes a conclusion (1 = yes)"


def reference_table(values: dict[str, float], name: Callable[[str], str]) -> pd.DataFrame:
    """The non-private reference as the page shows it: groups by their labels (``name`` maps a group code), the
    binning flag as yes / no, numbers to four significant digits (text: one column of one type)."""
    def quantity(key: str) -> str:
        key = re.sub(r"(\S+) vs (\S+)$", lambda m: f"{name(m.group(1))} vs {name(m.group(2))}", key)
        key = re.sub(r"overall \((.*)\)$", lambda m: "overall (" + ", ".join(
            name(g.strip()) for g in m.group(1).split(",")) + ")", key)
        return "binning alone changes a conclusion" if key == BINNING else key

    shown = [("yes" if v else "no") if k == BINNING else f"{v:.4g}" for k, v in values.items()]
    return pd.DataFrame({"Quantity": [quantity(k) for k in values], "Value": shown})
