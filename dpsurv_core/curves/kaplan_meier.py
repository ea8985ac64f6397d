"""Estimators on (noisy, post-processed) counts: free post-processing (spec sections 0.4, 1).

With the distinct event times as the grid and exact counts, each equals lifelines:
- Kaplan-Meier  S(b_j) = prod_{i<=j} (1 - d_i / r_i)        (KaplanMeierFitter.survival_function_)
- Greenwood     G_j = sum_{i<=j} d_i / (r_i (r_i - d_i)), var S = S^2 G
  log-log 95% band exp(-exp(log(-log S) -/+ z sqrt(G) / log S))   (KaplanMeierFitter's default)
  linear band  S -/+ z S sqrt(G), clipped to [0, 1]                  (R's conf.type = "plain")
- Nelson-Aalen  A(b_j) = sum_{i<=j} d_i / r_i      (NelsonAalenFitter(nelson_aalen_smoothing=False))
- Aalen-Johansen cumulative incidence of type k: I_k(b_j) = sum_{i<=j} S(b_{i-1}) d_ik / r_i
- median: first grid point with S <= 0.5 (inf: "not reached"); its 95% CI from the log-log band.
Bins where nobody is left at risk (r <= 0) add nothing: the curve stays at its last value there.
Arrays keep the counts' leading trial axes: (..., G, J).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri

from dpsurv_core.curves.counts import BinnedCounts


@dataclass(frozen=True)
class SurvivalCurves:
    """Curves on the grid's right edges ``time``; arrays are (..., G, J) (CIF: (..., G, K, J))."""

    time: np.ndarray
    groups: tuple[str, ...]
    survival: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lower_linear: np.ndarray
    upper_linear: np.ndarray
    greenwood: np.ndarray
    at_risk: np.ndarray
    events: np.ndarray
    censored: np.ndarray
    cumulative_hazard: np.ndarray
    cumulative_incidence: np.ndarray
    event_types: tuple[str, ...]
    alpha: float = 0.05

    def median(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Median survival and its CI: (median, lower, upper), each (..., G); inf = not reached."""
        return (first_crossing(self.time, self.survival), first_crossing(self.time, self.lower),
                first_crossing(self.time, self.upper))

    def at_times(self, times: np.ndarray, what: str = "survival") -> np.ndarray:
        """Step-function values at arbitrary times (e.g. landmarks): value at the last grid point <= t."""
        arr = getattr(self, what)
        idx = np.searchsorted(self.time, np.asarray(times, float), side="right") - 1
        start = 1.0 if what in ("survival", "lower", "upper", "lower_linear", "upper_linear") else 0.0
        padded = np.concatenate([np.full(arr.shape[:-1] + (1,), start), arr], axis=-1)
        return padded[..., idx + 1]

    def rmst(self, horizon: float) -> np.ndarray:
        """Restricted mean survival time: area under the step curve from time 0 to ``horizon`` (..., G).

        The curve is 1 before its first point; equals lifelines' ``restricted_mean_survival_time``
        on the exact event-time curve.
        """
        t = np.clip(np.asarray(self.time, float), 0.0, horizon)
        widths = np.diff(np.concatenate([[0.0], t, [horizon]]))
        values = np.concatenate([np.ones(self.survival.shape[:-1] + (1,)), self.survival], axis=-1)
        return (values * widths).sum(-1)


def first_crossing(time: np.ndarray, curve: np.ndarray, q: float = 0.5) -> np.ndarray:
    """First time where ``curve <= q`` along the last axis; inf when it never gets there."""
    below = curve <= q
    hit = below.any(-1)
    idx = below.argmax(-1)
    return np.where(hit, time[idx], np.inf)


def greenwood_bands(survival: np.ndarray, variance: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, ...]:
    """(log-log lower, log-log upper, linear lower, linear upper) from G = var(log S), as lifelines computes them:
    exp(-exp(log(-log S) -/+ z sqrt(G) / log S)) (1 where undefined) and S -/+ z S sqrt(G) clipped to [0, 1]."""
    z = ndtri(1 - alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.log(survival)
        spread = z * np.sqrt(variance) / v
        lower = np.exp(-np.exp(np.log(-v) - spread))
        upper = np.exp(-np.exp(np.log(-v) + spread))
    lower = np.where(np.isnan(lower), 1.0, lower)
    upper = np.where(np.isnan(upper), 1.0, upper)
    half = z * survival * np.sqrt(variance)
    return lower, upper, np.clip(survival - half, 0.0, 1.0), np.clip(survival + half, 0.0, 1.0)


def actuarial_share(grid) -> float:
    """Share of a bin's censorings counted at risk for its events: 0 on the event-time grid (exact Kaplan-Meier),
    0.5 on a public grid (the actuarial life-table rule; removing them all first biases the curve down)."""
    return 0.0 if grid.kind == "event-times" else 0.5


def estimate(counts: BinnedCounts, alpha: float = 0.05, actuarial: float = 0.0,
             noisy: bool = False) -> SurvivalCurves:
    """All curve estimators from one set of counts (exact or post-processed noisy).

    ``actuarial`` = a puts a share a of each bin's censorings back at risk for the bin's events
    (r_j + a c_j); a = 0.5 is the life-table rule for coarse public bins (see :func:`actuarial_share`).
    ``noisy``: the counts are a private release, so where nobody is left at risk the curve carries no
    information and its band is [0, 1] (exact counts keep lifelines' convention: the last value and band).
    """
    r = counts.at_risk().astype(float) + actuarial * counts.censored.astype(float)
    d = counts.events_total.astype(float)
    live = r > 0
    safe_r = np.where(live, r, 1.0)
    hazard = np.where(live, np.minimum(d, np.where(live, r, 0)) / safe_r, 0.0)
    survival = np.cumprod(1.0 - hazard, axis=-1)
    gw_term = np.zeros_like(r)
    ok = live & (r > d)
    np.divide(d, r * (r - d), out=gw_term, where=ok)
    greenwood = np.cumsum(gw_term, axis=-1)
    lower, upper, lower_lin, upper_lin = greenwood_bands(survival, greenwood, alpha)
    # a noisy release that leaves nobody at risk carries no information from there on: its band is [0, 1],
    # not a zero-width interval that would look certain
    stopped = np.logical_or.accumulate(~live, axis=-1) & noisy
    lower, lower_lin = np.where(stopped, 0.0, lower), np.where(stopped, 0.0, lower_lin)
    upper, upper_lin = np.where(stopped, 1.0, upper), np.where(stopped, 1.0, upper_lin)
    cumhaz = np.cumsum(hazard, axis=-1)
    s_prev = np.concatenate([np.ones(survival.shape[:-1] + (1,)), survival[..., :-1]], axis=-1)
    dk = counts.events.astype(float)
    cif_terms = np.where(live[..., None, :], s_prev[..., None, :] * dk / safe_r[..., None, :], 0.0)
    cif = np.cumsum(cif_terms, axis=-1)
    return SurvivalCurves(counts.grid.points, counts.groups, survival, lower, upper, lower_lin, upper_lin, greenwood,
                          np.maximum(r, 0.0), d, counts.censored.astype(float), cumhaz, cif, counts.event_types, alpha)
