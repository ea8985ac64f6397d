"""How a curve release is read: bands of R's conf.type, medians and quartiles with their limits, landmarks, RMST,
and the entries ``km`` prints (post-processing of a :class:`~dpsurv_core.curves.result.CurveResult` only).

Intervals follow R survival's ``conf.type`` (default ``log``, R's survfit default); the median and quartiles follow
R's quantile.survfit (the midpoint of an interval where S equals the quantile exactly). A noisy release's band carries
the noise where its curves say so (``interval_method``); with the noise off every number is R's.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.curves.bootstrap import carry_upper, monotone_band, widen_between
from dpsurv_core.curves.clamping import ClampingBias
from dpsurv_core.curves.intervals import incidence_band, quantile_limits, rmst_interval
from dpsurv_core.curves.kaplan_meier import SurvivalCurves, confidence_limits, cumhaz_limits, quantile_r
from dpsurv_core.curves.result import CurveResult

if TYPE_CHECKING:  # a value type only: this module reads no data
    from dpsurv_core.data.public import PublicParameters


def named_groups(obj: Any, names: dict[str, str] | None) -> Any:
    """``obj`` (curves or counts) with its groups called by ``names`` (code -> label), for sentences a reader can
    follow; the numbers are unchanged."""
    return obj if not names else replace(obj, groups=tuple(names.get(str(g), str(g)) for g in obj.groups))


def no_noise(epsilon: float | None) -> bool:
    """True for the nonprivate mechanism and for any mechanism run with ``--epsilon inf``: nothing is protected.
    None is disclosure control (no epsilon, but the counts are altered): not "no noise"."""
    return epsilon is not None and not math.isfinite(epsilon)


def _nullable(a: np.ndarray) -> list | None:
    """Nested lists, or None when the mechanism has no such quantity (all NaN)."""
    return None if np.all(np.isnan(a)) else a.tolist()


def _pick(nested: list | None, t: int, g: int) -> list | None:
    return None if nested is None else nested[t][g]


NOISE_BAND_NOTE = "add the noise's variance"


QUANTILE_PROBS = (0.25, 0.5, 0.75)


def band_curves(rel: CurveResult) -> SurvivalCurves:
    """The curves whose band the release stands behind: rrr's de-biased curves, else the curves."""
    return rel.extra.get("debiased_curves", rel.curves)


def clamping_of(rel: CurveResult) -> ClampingBias | None:
    """What clamping negative released counts at 0 adds to each event and censoring cell of the first trial (which the
    warnings read) of the curves the band stands behind, for the sentence on its bias: the mechanism states it (its
    class's ``clamping(rel)``: rrr's de-biased counts; laplace-counts, whose curve reads the counts without that bias,
    states none but the noise on its numbers at risk); adaptive-km: no clamping sentence, the noise on its numbers at
    risk (:func:`~dpsurv_core.curves.clamping.adaptive_risk_sd`); None for the others and without noise."""
    if no_noise(rel.cost.epsilon):
        return None
    if rel.mechanism == "adaptive-km" and "kept" in rel.extra and rel.parameters.get("counts_scale"):
        from dpsurv_core.curves.clamping import adaptive_risk_sd, noise_sd

        main = band_curves(rel)
        g, k = main.survival.shape[1], len(main.event_types)
        scale, discrete = float(rel.parameters["counts_scale"]), rel.parameters.get("noise") == "discrete Laplace"
        zeros = np.zeros((1, g, main.survival.shape[-1]))
        return ClampingBias(zeros, "", zeros + noise_sd(scale, discrete), None,
                            adaptive_risk_sd(np.asarray(rel.extra["kept"], bool)[:1], g, k, scale, discrete))
    from dpsurv_core.privacy import catalogue

    if rel.mechanism not in catalogue.ids(catalogue.CURVES):
        return None
    cls = catalogue.get(catalogue.CURVES, rel.mechanism).mechanism_class()
    return cls.clamping(rel) if hasattr(cls, "clamping") else None


def follow_up_ends(rel: CurveResult, names: dict[str, str] | None = None) -> dict[str, float] | None:
    """Each group's last time under observation (at most the horizon), known without noise only (None for a noisy
    release); groups called by ``names``."""
    exact = every_event_time(rel)
    if exact is None or exact.follow_up_end is None:
        return None
    names = names or {}
    return {names.get(str(g), str(g)): float(exact.follow_up_end[0, k]) for k, g in enumerate(exact.groups)
            if np.isfinite(exact.follow_up_end[0, k])}


def every_event_time(rel: CurveResult) -> SurvivalCurves | None:
    """A release without noise keeps the curves at every event time (R's survfit): its medians, quartiles, landmarks
    and RMST are read there, as R reads them, so that switching the noise off reproduces the non-private numbers.
    None for a noisy release, which is known at the public grid's points only."""
    return rel.extra.get("event_time_curves")


def quantile_curves(rel: CurveResult, curves: SurvivalCurves) -> SurvivalCurves | None:
    """Where ``curves``' medians and quartiles are read instead of on themselves: every event time without noise
    (:func:`every_event_time`); None for a noisy release."""
    exact = every_event_time(rel)
    return None if exact is None or exact.survival.shape[:2] != curves.survival.shape[:2] else exact


def rmst_curves(rel: CurveResult) -> SurvivalCurves:
    """The curves an RMST integrates: the non-private release's at every event time (its grid curve's step area would
    overstate the area by about half a bin times each bin's drop), else those the release's numbers are read from."""
    return rel.extra.get("event_time_curves", band_curves(rel))


def rmst_on_grid(rel: CurveResult, public: PublicParameters) -> bool:
    """True when the RMST integrates a curve known at a coarse public grid's points only, read linearly between them,
    with or without noise (so that noise switched off is the limit of a smaller and smaller noise); False for a
    curve at every event time (the non-private release's own, or an event-time grid), whose step area is R's."""
    return public.grid.kind != "event-times" and "event_time_curves" not in rel.extra


def incidence_method(curves: SurvivalCurves, conf_type: str, debiased: bool = False, altered: bool = False) -> str:
    """One phrase naming how the cumulative incidence's limits were computed (:func:`incidence_band`); ``debiased``:
    rrr, whose reported-label curves have none; ``altered``: a deterministic disclosure-control rule changed the
    counts the formula reads."""
    if curves.incidence_variance is None:
        return "no interval: the release carries no variance for the cumulative incidence"
    if curves.interval_method is None:
        return (f"pointwise 95% {conf_type} interval on the incidence (R survfit conf.type on a multi-state curve) from "
                "the infinitesimal jackknife variance, as R's survfit computes it: the sampling error only"
                + ("; it reads the altered counts as exact and ignores what the rule did, so it is too narrow"
                   if altered else ""))
    return (("de-biased curves only (the reported-label curves have no interval): " if debiased else "")
            + f"pointwise 95% {conf_type} interval (R's conf.type formulas on 1 - incidence) from the bootstrap variance, "
            f"which includes the noise: {curves.interval_method}; where nobody is left at risk, from the last lower "
            "limit to 1")


def includes_noise(rel: CurveResult) -> bool:
    """True when the release's bands carry its noise (dpsurv_core.curves.uncertainty, or adaptive-km's delta method)."""
    return band_curves(rel).interval_method is not None or any(NOISE_BAND_NOTE in n for n in rel.notes)


def interval_method(rel: CurveResult, conf_type: str) -> str:
    """One phrase naming how the intervals were computed."""
    curves = band_curves(rel)
    method = curves.interval_method
    if method is None and np.all(np.isnan(curves.lower)):
        return ("no interval: the mechanism releases no counts, so there is no variance to build one from (a private "
                "time-indexed release inverts its noise law; without noise there is none)")
    if method is None:
        return (f"pointwise 95% {conf_type} interval (R survfit conf.type) from Greenwood's variance only: the sampling "
                "band, it does not include the privacy noise")
    if np.all(np.isnan(curves.greenwood)):
        return f"pointwise 95% band by {method} (the conf.type does not apply: no variance is released)"
    return f"pointwise 95% {conf_type} interval (R survfit conf.type) from a variance that includes the noise: {method}"


def log_variance(curves: SurvivalCurves, with_noise: bool = False) -> np.ndarray:
    """var(log S) behind the bands: the noise-aware variance the release carries (``interval_variance``), else
    Greenwood's. (``with_noise`` is kept for callers; the curves now say themselves.)"""
    if curves.interval_variance is not None:
        return curves.interval_variance
    return curves.greenwood


def hazard_limits(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The band of the cumulative hazard H = -log S from the survival band: (-log upper, -log lower); inf where the
    survival's lower limit is 0 (no upper limit on H), NaN where the survival band is NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.log(np.asarray(upper, float)) + 0.0, -np.log(np.asarray(lower, float)) + 0.0  # + 0.0: no "-0"


def hazard_band(curves: SurvivalCurves, conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative hazard's ``conf_type`` band: R's (plot.survfit with cumhaz = TRUE) from the Nelson-Aalen variance
    for exact counts (:func:`cumhaz_limits`); for a noisy release -log of its noise-aware survival band
    (:func:`hazard_limits`); NaN where the release has no band."""
    if curves.interval_method is None and curves.cumhaz_variance is not None and not np.all(np.isnan(curves.lower)):
        return cumhaz_limits(curves.cumulative_hazard, curves.cumhaz_variance, conf_type, curves.alpha)
    return hazard_limits(*conf_bands(curves, conf_type, with_noise))


def conf_bands(curves: SurvivalCurves, conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The curves' pointwise band of R's ``conf.type``; NaN where R gives NA (S = 0; S = 1 for log-log, logit,
    arcsin) and everywhere when the mechanism releases no band. A noisy release's [0, 1] band where nobody is
    left at risk has lower limit 0 (exact counts: [0, 1]); a noise-aware band is made non-increasing (:func:`monotone_band`; where the noisy
    curve has dropped to 0 the upper limit carries the last one before).
    A band with no variance behind it (time-indexed's inversion band) is returned as it is."""
    if np.all(np.isnan(curves.lower)):
        return curves.lower, curves.upper
    if np.all(np.isnan(curves.greenwood)) and curves.interval_variance is None:
        return curves.lower, curves.upper
    lo, up = confidence_limits(curves.survival, log_variance(curves, with_noise), conf_type, curves.alpha)
    if conf_type == "plain" and len(curves.event_types) > 1 and curves.interval_method is None:
        # competing events: R's multi-state survfit gives the event-free probability at 0 a standard error of 0, so
        # its plain interval there is [0, 0] (the other conf.types stay NA: they take logs of 0)
        at_zero = curves.survival == 0
        lo, up = np.where(at_zero, 0.0, lo), np.where(at_zero, 0.0, up)
    if curves.follow_up_start is not None:  # before a curve's first time: S = 1 with limits [1, 1], as R's summary
        before = np.asarray(curves.time, float) < curves.follow_up_start[..., None]
        lo, up = np.where(before, 1.0, lo), np.where(before, 1.0, up)
    # nobody left at risk: the estimator's band there is [0, 1] ([0, the last upper limit] for a noise-aware band)
    marked = (curves.upper == 1) | (curves.interval_method is not None)
    stopped = np.logical_or.accumulate(curves.at_risk <= 0, axis=-1) & (curves.lower == 0) & marked
    lo, up = np.where(stopped, 0.0, lo), np.where(stopped, 1.0, up)
    if curves.interval_method is not None:
        lo, up = monotone_band(np.where(curves.survival <= 0, 0.0, lo), carry_upper(curves.survival, up))
    if curves.known_at is not None:
        lo, up = widen_between(lo, up, curves.known_at)
    return lo, up


_NONE = np.array(None, dtype=object)  # np.where(..., None) as NumPy's stubs accept it: an object array


def _none_where_nan(a: np.ndarray) -> list:
    a = np.asarray(a, float)
    return np.where(np.isfinite(a), a, _NONE).tolist()


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def quantile_entries(curves: SurvivalCurves, conf_type: str = "log", with_noise: bool = False,
                     coarse_grid: bool = False) -> list[dict[str, Any]]:
    """One dict per trial and group: the median and the quartiles by R's rule (quantile.survfit: the first time the
    curve is <= 1 - p, the midpoint where it equals 1 - p over an interval; NaN: not reached), each with its limits
    from the ``conf_type`` band (null without a band; on a coarse public grid read linearly between the points)."""
    lo, up = conf_bands(curves, conf_type, with_noise)
    no_band = bool(np.all(np.isnan(curves.lower)))
    end = curves.follow_up_end
    quant = {p: (quantile_r(curves.time, curves.survival, 1 - p, last=end),
                 *quantile_limits(curves.time, lo, up, 1 - p, coarse_grid, curves.survival, end))
             for p in QUANTILE_PROBS}
    med, med_lo, med_up = quant[0.5]
    trials, groups = curves.survival.shape[:2]
    return [{"trial": t, "group": curves.groups[g], "median": float(med[t, g]),
             "median_lower": None if no_band else float(med_lo[t, g]),
             "median_upper": None if no_band else float(med_up[t, g]),
             "quantiles": [{"probability": p, "time": _finite_or_none(q[0][t, g]),
                            "lower": None if no_band else _finite_or_none(q[1][t, g]),
                            "upper": None if no_band else _finite_or_none(q[2][t, g])} for p, q in quant.items()]}
            for t in range(trials) for g in range(groups)]


def read_quantiles(curves: SurvivalCurves, exact: SurvivalCurves | None, conf_type: str, with_noise: bool,
                   coarse_grid: bool) -> list[dict[str, Any]]:
    """:func:`quantile_entries` of ``curves``, or of ``exact`` (the curves at every event time, without noise) where
    there are such curves: there the quantiles are R's."""
    if exact is None:
        return quantile_entries(curves, conf_type, with_noise, coarse_grid)
    return quantile_entries(exact, conf_type)


def curve_entries(curves: SurvivalCurves, estimand: str, conf_type: str = "log", with_noise: bool = False,
                  coarse_grid: bool = False, quantiles_from: SurvivalCurves | None = None, **flags: Any
                  ) -> list[dict[str, Any]]:
    """One dict per trial and group (arrays are (trials, G, J)); quantities the mechanism does not
    release (bands, at-risk and event counts of time-indexed) are null, and so are limits where R gives NA.
    ``coarse_grid``: the curve is known at public grid points only, so a quantile's limits are where the bands, read
    linearly between the grid points, cross (:func:`dpsurv_core.curves.uncertainty.quantile_limits`).
    ``quantiles_from``: curves without noise at every event time, where the medians and quartiles are read instead."""
    s = curves.survival.tolist()
    lo_arr, up_arr = conf_bands(curves, conf_type, with_noise)
    no_band = bool(np.all(np.isnan(curves.lower)))
    lo = None if no_band else np.where(np.isnan(lo_arr), _NONE, lo_arr).tolist()
    up = None if no_band else np.where(np.isnan(up_arr), _NONE, up_arr).tolist()
    if with_noise or no_band:
        lol, upl = _nullable(curves.lower_linear), _nullable(curves.upper_linear)
    else:  # Greenwood's plain band as R gives it (no interval where S = 0), as --conf-type plain prints it
        lol, upl = (_nullable(a) for a in conf_bands(curves, "plain", False))
    risk, ev = _nullable(curves.at_risk), _nullable(curves.events)
    summaries = read_quantiles(curves, quantiles_from, conf_type, with_noise, coarse_grid)
    hazard = curves.cumulative_hazard.tolist() if estimand == "cumulative-hazard" else None
    haz_lo = haz_up = None
    if hazard is not None and not no_band:
        h_lo, h_up = hazard_band(curves, conf_type, with_noise)
        haz_lo, haz_up = _none_where_nan(h_lo), _none_where_nan(h_up)
    cif = curves.cumulative_incidence.tolist() if estimand == "cumulative-incidence" else None
    cif_lo = cif_up = None
    band_i = incidence_band(curves, conf_type) if cif is not None else None
    if band_i is not None:
        cif_lo, cif_up = _none_where_nan(band_i[0]), _none_where_nan(band_i[1])
    time = curves.time.tolist()
    out = []
    trials, groups = curves.survival.shape[:2]
    for t in range(trials):
        for g in range(groups):
            e = {"trial": t, "group": curves.groups[g], "time": time, "survival": s[t][g], "lower": _pick(lo, t, g),
                 "upper": _pick(up, t, g), "lower_linear": _pick(lol, t, g), "upper_linear": _pick(upl, t, g),
                 "at_risk": _pick(risk, t, g), "events": _pick(ev, t, g),
                 **{k: v for k, v in summaries[t * groups + g].items() if k not in ("trial", "group")}, **flags}
            if hazard is not None:
                e["cumulative_hazard"] = hazard[t][g]
                e["cumulative_hazard_lower"] = _pick(haz_lo, t, g)
                e["cumulative_hazard_upper"] = _pick(haz_up, t, g)
            if cif is not None:
                e["cumulative_incidence"] = {name: cif[t][g][k] for k, name in enumerate(curves.event_types)}
                e["cumulative_incidence_lower"] = (None if cif_lo is None else
                                                   {name: cif_lo[t][g][k] for k, name in enumerate(curves.event_types)})
                e["cumulative_incidence_upper"] = (None if cif_up is None else
                                                   {name: cif_up[t][g][k] for k, name in enumerate(curves.event_types)})
            out.append(e)
    return out


def landmark_entries(curves: SurvivalCurves, times: list[float], conf_type: str, exact_grid: bool,
                     with_noise: bool = False) -> list[dict[str, Any]]:
    """One entry per trial, group and requested time: the step curve at ``time_used`` (the requested time itself on
    the event-times grid or when it is a grid point, else the last grid point before it; 0 before the first). Before
    the grid's first point, and before a curve's own first time where it is known, S = 1 with limits [1, 1] for every
    conf.type, as R's summary.survfit gives them there (a curve's own first time: :func:`conf_bands`)."""
    lo, up = conf_bands(curves, conf_type, with_noise)
    no_band = bool(np.all(np.isnan(curves.lower)))
    grid = np.asarray(curves.time, float)
    out = []
    trials, groups = curves.survival.shape[:2]
    for t in range(trials):
        for g in range(groups):
            for when in times:
                on = np.flatnonzero(np.isclose(grid, when, rtol=0, atol=1e-9))
                k = int(on[0]) if on.size else int(np.searchsorted(grid, when, side="right")) - 1
                if k < 0:  # S = 1 with limits [1, 1] before the first time, for every conf.type (R's summary)
                    used, s, lo_v, up_v = (when if exact_grid else 0.0), 1.0, 1.0, 1.0
                else:
                    used = when if (exact_grid or on.size) else float(grid[k])
                    s, lo_v, up_v = curves.survival[t, g, k], lo[t, g, k], up[t, g, k]
                out.append({"trial": t, "group": curves.groups[g], "time_requested": when, "time_used": float(used),
                            "survival": float(s), "lower": None if no_band else _finite_or_none(lo_v),
                            "upper": None if no_band else _finite_or_none(up_v)})
    return out


def counts_definition(exact_grid: bool, has_counts: bool, noisy: bool, from_rows: bool = False) -> str:
    """What ``at_risk`` and ``events`` beside each curve point are (``km`` JSON ``counts_definition``); ``from_rows``:
    the non-private curve, whose number at risk is read off the rows at each time."""
    if not has_counts:
        return "the mechanism releases no counts: at_risk and events are null"
    source = "from the released (noisy, post-processed) counts; " if noisy else ""
    if exact_grid:
        return (source + "at_risk and events at each curve time are R's n.risk (subjects with time >= t) and n.event "
                "at that time")
    if from_rows:
        return ("at_risk at each curve time is R's n.risk there (subjects with time >= t, as summary(fit, times = t)); "
                "events are the bin's, from the previous grid point to this one")
    return (source + "at_risk and events at each curve time are its bin's, from the previous grid point to this one: "
            "the bin's events, and its effective number at risk (at risk at the bin's start less half the bin's "
            "censorings, the life-table rule that the curve uses); the number at risk at a time (time >= t, R's "
            "convention) is number_at_risk")


def rmst_entries(curves: SurvivalCurves, horizon: float, coarse_grid: bool = False) -> list[dict[str, Any]]:
    """Restricted mean survival time to ``horizon`` per trial and group with its 95% interval (null where the
    mechanism has none): the area under the curve up to the time asked (no grid rounding is needed); on a coarse
    public grid the curve is read linearly between its points (:func:`rmst_interval`)."""
    value, lo, up = rmst_interval(curves, horizon, coarse_grid)
    trials, groups = curves.survival.shape[:2]
    return [{"trial": t, "group": curves.groups[g], "time_requested": horizon, "time_used": horizon,
             "rmst": float(value[t, g]), "lower": _finite_or_none(lo[t, g]), "upper": _finite_or_none(up[t, g])}
            for t in range(trials) for g in range(groups)]


def beyond_follow_up(public: PublicParameters, landmarks: list[float], rmst: float | None, unit: str,
                     ends: dict[str, float] | None = None) -> list[str]:
    """Sentences for a landmark before the public grid's first point or after its horizon, or an RMST time after the
    horizon, where the curve is not estimated. ``ends``: without noise, each group's last time under observation
    (:func:`follow_up_ends`): the curve is read at every event time, so no landmark is early, and one is late after
    its group's own end of follow-up (R's summary(fit, times = t) gives no row there)."""
    end = float(public.horizon)
    fmt = lambda t: f"{t:.4g} {unit}".strip()  # noqa: E731
    out = []
    if ends is not None:
        said_horizon = False
        for g, last in ends.items():
            late = [t for t in landmarks if t > last]
            at_horizon = last >= float(public.horizon) - 1e-9
            if not late or (at_horizon and said_horizon):  # the horizon ends every group's follow-up: said once
                continue
            said_horizon = said_horizon or at_horizon
            whose = "The data are" if g == "all" else f"Group {g} is"
            out.append((f"Follow-up ends at the horizon ({fmt(last)})" if at_horizon
                        else f"{whose} last followed at {fmt(last)}") + ", so the survival shown at "
                       f"{', '.join(fmt(t) for t in late)} is the curve carried on past its end of follow-up, not "
                       f"an estimate at that time (R's summary gives no row there); choose landmarks up to "
                       f"{fmt(last)}.")
        past = {g: last for g, last in ends.items() if rmst is not None and rmst > last}
        if past and len(past) < len(ends):  # some groups' follow-up ends before the time asked, not every group's
            named = ", ".join(f"group {g} ({fmt(last)})" for g, last in past.items())
            its = "its curve is" if len(past) == 1 else "each such curve is"
            out.append(f"The RMST to {fmt(rmst)} runs past the last follow-up of {named}: {its} held at its last value "
                       f"after it, so that part of its area is an assumption, not an estimate; choose a time up to "
                       f"{fmt(min(past.values()))}.")
        end = max(ends.values(), default=end)
        if rmst is not None and rmst > end:
            what = "the horizon" if end >= float(public.horizon) - 1e-9 else "the last time under observation"
            out.append(f"The RMST to {fmt(rmst)} runs past {what} ({fmt(end)}): the curve is "
                       f"held flat after it, so that part of the area is an assumption, not an estimate; choose a time "
                       f"up to {fmt(end)}.")
        return out
    first = float(public.grid.points[0])
    # 0 is the start: a private curve there is 1 (events at time 0, if any, are in the first bin)
    early = [t for t in landmarks if 0 < t < first] if public.grid.kind != "event-times" else []
    if early:
        out.append(f"The landmark time {', '.join(fmt(t) for t in early)} is before the first point of the public grid "
                   f"({fmt(first)}), so the survival shown is the curve at time 0 (100%, with no uncertainty), not an "
                   f"estimate at that time; choose landmarks from {fmt(first)} on, or a finer grid.")
    late = [t for t in landmarks if t > end]
    if late:
        out.append(f"The landmark time {', '.join(fmt(t) for t in late)} is after the end of follow-up on the public grid "
                   f"({fmt(end)}), so the survival shown is the curve's last value, not an estimate at that time; "
                   f"choose landmarks up to {fmt(end)}.")
    if rmst is not None and rmst > end:
        out.append(f"The RMST to {fmt(rmst)} runs past the end of follow-up on the public grid ({fmt(end)}): the curve "
                   f"is held flat after it, so that part of the area is an assumption, not an estimate; choose a time up "
                   f"to {fmt(end)}.")
    return out
