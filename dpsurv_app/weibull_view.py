"""The Weibull page's figures: the fitted curves over the Kaplan-Meier curve, the LSP ladder (a teaching view of
Figure 1 of Nguyen & Hui 2017, Weibull) and the error study against epsilon. Drawing only: the numbers come from
:mod:`dpsurv_core.weibull`."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dpsurv_app import palette
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.weibull.lsp import Ladder
from dpsurv_core.weibull.mechanism_base import WeibullMechanism
from dpsurv_core.weibull.model import survival_curve

MLE_COLOUR, KM_COLOUR, LADDER_COLOUR = palette.BLACK, palette.GREY, palette.BLUE


def weibull_mechanism(entry: Entry, epsilon: float | None = None, **params: Any) -> WeibullMechanism:
    """``entry.build(epsilon, **params)`` for an entry of the catalogue's Weibull family: the Weibull mechanism it
    builds (the catalogue returns every mechanism as its base type)."""
    mech = entry.build(epsilon, **params)
    if not isinstance(mech, WeibullMechanism):
        raise TypeError(f"The catalogue's {entry.id!r} does not build a Weibull mechanism.")
    return mech


def curves_figure(km_t: np.ndarray, km_s: np.ndarray, grid: np.ndarray, mle: Any, results: dict[str, Any],
                  labels: dict[str, str], mechanism_labels: dict[str, str], colours: dict[str, str], unit: str
                  ) -> tuple[go.Figure, list[str]]:
    """The fitted Weibull curves over the Kaplan-Meier curve (in %): the clipped maximum-likelihood fit dashed, each
    private release's curve (``labels``: preview or the record released); a release whose shape or scale the noise
    made non-positive has no curve and is named in the list returned with the figure."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=km_t, y=100 * km_s, mode="lines", line={"shape": "hv", "color": KM_COLOUR},
                             name="Kaplan-Meier (not private)"))
    fig.add_trace(go.Scatter(x=grid, y=100 * survival_curve(grid, mle.shape, mle.scale), mode="lines",
                             line={"color": MLE_COLOUR, "dash": "dash"},
                             name="Weibull, clipped maximum likelihood (not private)"))
    invalid = []
    for name, est in results.items():
        curve = survival_curve(grid, float(est.shape[0]), float(est.scale[0]))
        if np.all(np.isnan(curve)):
            invalid.append(mechanism_labels[name])
            continue
        fig.add_trace(go.Scatter(x=grid, y=100 * curve, mode="lines", line={"color": colours[name], "width": 3},
                                 name=f"Weibull, {mechanism_labels[name]} ({labels[name]})"))
    fig.update_layout(xaxis_title=f"time ({unit})", yaxis_title="survival (%)", yaxis_range=[0, 101], height=430,
                      legend={"orientation": "h", "y": -0.2})
    return fig, invalid



def ladder_figure(ladder: Ladder, k_show: int, epsilon: float, results: dict[str, Any], mechs: dict[str, Any],
                  labels: dict[str, str], mechanism_labels: dict[str, str], rows_per_subject: float) -> go.Figure:
    """The LSP ladder as a teaching view of Figure 1 of Nguyen & Hui (2017, Weibull): the utility -k of rung k over
    the shapes, the true shape p* and the released shapes of the mechanisms that draw from the ladder; beside it
    the chance of each of the first ``k_show`` rungs at ``epsilon`` (half of it for the shape)."""
    lfig = make_subplots(rows=1, cols=2, column_widths=[0.62, 0.38],
                         subplot_titles=("Utility U(p) = -k on rung k", f"Chance of each rung at epsilon {epsilon:g}"))
    xs, ys = [], []
    for k, a, b in ladder.segments(k_show):
        xs += [a, b, None]
        ys += [-k, -k, None]
    lfig.add_trace(go.Scatter(x=xs, y=ys, mode="lines+markers", line={"width": 4, "color": LADDER_COLOUR},
                              marker={"size": 4}, name="rungs", showlegend=False), row=1, col=1)
    lfig.add_trace(go.Scatter(x=[ladder.p_star], y=[0], mode="markers", marker={"size": 12, "color": MLE_COLOUR,
                              "symbol": "star"}, name="true shape p* (rung 0)"), row=1, col=1)
    for name in [n for n in results if hasattr(mechs[n], "ladder")]:  # the mechanisms that draw from the ladder
        p_rel = float(results[name].shape[0])
        lfig.add_trace(go.Scatter(x=[p_rel], y=[float(ladder.utility(np.array([p_rel]))[0])], mode="markers",
                                  marker={"size": 12, "color": palette.VERMILLION, "symbol": "x"},
                                  name=f"{mechanism_labels[name]} shape ({labels[name]})"), row=1, col=1)
    probs = ladder.probabilities(epsilon / 2, float(rows_per_subject))
    shown = probs[:k_show]
    lfig.add_trace(go.Bar(x=[str(i) for i in range(1, k_show + 1)] + ["more"], y=np.append(shown, probs[k_show:].sum()),
                          marker_color=LADDER_COLOUR, showlegend=False, name="probability"), row=1, col=2)
    lo = float(ladder.lower[min(k_show, ladder.rungs + 1)])
    hi = float(ladder.upper[min(k_show, ladder.rungs + 1)])
    pad = 0.05 * max(hi - lo, 1e-3)
    lfig.update_xaxes(title_text="shape p", range=[lo - pad, hi + pad], row=1, col=1)
    lfig.update_yaxes(title_text="utility", row=1, col=1)
    lfig.update_xaxes(title_text="rung k", row=1, col=2)
    lfig.update_yaxes(title_text="probability", row=1, col=2)
    lfig.update_layout(height=400, legend={"orientation": "h", "y": -0.25})
    return lfig



def error_figure(study: pd.DataFrame, ids: list[str], mechanism_labels: dict[str, str], colours: dict[str, str],
                 unit: str) -> go.Figure:
    """The error study: each mechanism's median absolute error of the shape and of the scale against epsilon,
    log-log."""
    sfig = make_subplots(rows=1, cols=2, subplot_titles=("Shape p", f"Scale ({unit})"))
    for name in ids:
        sub = study[study.mechanism == name]
        for col, key in ((1, "mdae_shape"), (2, "mdae_scale")):
            sfig.add_trace(go.Scatter(x=sub.epsilon, y=sub[key], mode="lines+markers", name=mechanism_labels[name],
                                      legendgroup=name, showlegend=col == 1, line={"color": colours[name]}), row=1, col=col)
    sfig.update_xaxes(type="log", title_text="epsilon per release (half for each parameter)")
    sfig.update_yaxes(type="log", title_text="median absolute error")
    sfig.update_layout(height=420, legend={"orientation": "h", "y": -0.25})
    return sfig
