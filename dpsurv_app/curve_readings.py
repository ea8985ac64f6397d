"""What the survival-curve pages read off a release: its pointwise band of R's ``conf.type``, quantiles, restricted
mean survival times, landmarks and the captions and warnings on how readable they are. The numbers come from
``dpsurv_core`` (``km``'s own readers); this module picks and labels them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from dpsurv_app.curve_format import QUANTILES
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
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.kaplan_meier import CONF_TYPES, SurvivalCurves, quantile_r
from dpsurv_core.curves.result import CurveResult
from dpsurv_core.curves.uncertainty import curve_warnings, incidence_band, quantile_limits, rmst_interval
from dpsurv_core.data.public import PublicParameters


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


def landmark_times_used(curves: SurvivalCurves, times: Sequence[float] | np.ndarray, exact_grid: bool) -> list[float]:
    """Where each requested landmark time is read on ``curves``' grid (``km --landmarks``' time_used): the time itself
    on the event-times grid or when it is a grid point, else the last grid point before it."""
    return [e["time_used"] for e in landmark_entries(curves, list(times), "log", exact_grid) if e["trial"] == 0
            and e["group"] == curves.groups[0]]


def noise_in_band(result: CurveResult) -> bool:
    """Whether the release's band carries the privacy noise (dpsurv_core.curves.uncertainty)."""
    return includes_noise(result)


def survival_landmarks(curves: SurvivalCurves, times: Sequence[float] | np.ndarray, conf_type: str, exact_grid: bool,
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


def estimand_landmarks(curves: SurvivalCurves, times: Sequence[float] | np.ndarray, estimand: str, event_type: int,
                       conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(value, lower, upper) (G, T) of the cumulative hazard or incidence at ``times`` for the first trial, as ``km``
    prints them: the hazard's limits are R's from its Nelson-Aalen variance for exact counts and -log of the
    noise-aware survival band's for a private release (:func:`hazard_band`), the
    incidence's R's conf.type formulas from its variance (:func:`incidence_band`); NaN limits where the release has none."""
    at = np.asarray(times, float)
    value = cs.step_at(curves.time, cs.estimand_values(curves, estimand, event_type)[0], at, 0.0)
    nan = np.full(value.shape, np.nan)
    if estimand == cs.HAZARD:
        if np.all(np.isnan(curves.lower)):
            return value, nan, nan
        h_lo, h_up = hazard_band(curves, conf_type, with_noise)
        return value, cs.step_at(curves.time, h_lo[0], at, 0.0), cs.step_at(curves.time, h_up[0], at, 0.0)
    band = incidence_band(curves, conf_type)
    if band is None:
        return value, nan, nan
    lo, up = band
    return (value, cs.step_at(curves.time, lo[0][..., event_type, :], at, 0.0),
            cs.step_at(curves.time, up[0][..., event_type, :], at, 0.0))
