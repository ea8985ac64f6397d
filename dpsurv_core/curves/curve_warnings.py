"""The plain sentences beside a curve release: where its numbers cannot be read, and why.

Each sentence reads only the release (its curves, band and counts) and public values, so the warnings are part of
what a record derives. Measured fire rates and coverage: docs/coverage-curves.md and docs/inference.md.
"""

from __future__ import annotations

import numpy as np

from dpsurv_core.curves.bootstrap import NOISE_ONLY
from dpsurv_core.curves.clamping import ClampingBias
from dpsurv_core.curves.intervals import first_bin_crossing, quantile_limits
from dpsurv_core.curves.kaplan_meier import (
    SurvivalCurves,
    quantile_r,
)
from dpsurv_core.privacy import catalogue


def _fmt(t: float, unit: str) -> str:
    return f"{t:.4g} {unit}".strip()


def _asked_and_used(time: np.ndarray, when: float, unit: str) -> str:
    """A landmark as the tables name it: the time asked, and the grid point it is read at when that differs."""
    k = _index_at(time, when)
    if k < 0 or np.isclose(time[k], when, rtol=0, atol=1e-9):
        return _fmt(when, unit)
    return f"{_fmt(when, unit)} (read at {_fmt(float(time[k]), unit)})"


def _index_at(time: np.ndarray, when: float) -> int:
    """The grid point a value at ``when`` is read at (the last point at or before it; -1 before the first)."""
    on = np.flatnonzero(np.isclose(time, when, rtol=0, atol=1e-9))
    return int(on[0]) if on.size else int(np.searchsorted(time, when, side="right")) - 1


def curve_warnings(curves: SurvivalCurves, lower: np.ndarray, upper: np.ndarray, mechanism: str,
                   landmarks: list[float] | None = None, coarse: bool = False, time_unit: str = "",
                   private: bool = True, raw_label_curves: bool = False, trial: int = 0,
                   clamping: ClampingBias | None = None) -> list[str]:
    """Plain sentences for results that cannot be read (first trial), each saying what to do next: a band from near
    0 to near 1, a median that is not identifiable or has no upper limit, an error bar larger than the difference between groups, a
    time-indexed median where the truth may not be reached, a time-indexed band without the sampling error (no group
    size declared), rrr's reported-label curves, a curve that clamping its released counts at 0 pulls below its band
    (``clamping``: what clamping adds to each event cell). With competing events (several event types) the curve counts every
    event type, and the sentences say so (its median is the event-free median, not the median survival)."""
    if not private:
        return []
    out: list[str] = []
    time = np.asarray(curves.time, float)
    s = curves.survival[trial]
    lo, up = np.asarray(lower, float)[trial], np.asarray(upper, float)[trial]
    has_band = not np.all(np.isnan(lo))
    groups = curves.groups
    informative = False  # some point's band is narrower than almost [0, 1]
    event_free = len(curves.event_types) > 1
    median = "event-free median (time to the first event of any type)" if event_free else "median"
    for g, name in enumerate(groups):
        label = f"group {name}" if len(groups) > 1 or name != "all" else "the curve"
        curve = (f"the event-free curve of {label}" if label != "the curve" else "the event-free curve") if event_free \
            else label
        if has_band:
            # where S = 0 a band of exact counts is R's NA (or [0, 1] once nobody is left): no interval, not a wide
            # one; a noise-aware band there runs from 0 to the last upper limit and still says something
            no_interval = (((s[g] <= 0) & (np.isnan(up[g]) | (curves.interval_method is None)))
                           | (np.isnan(lo[g]) & np.isnan(up[g])))  # R's NA (S = 0, or S = 1 on some types)
            wide = (np.nan_to_num(lo[g], nan=0.0) <= 0.05) & (np.nan_to_num(up[g], nan=1.0) >= 0.95) & ~no_interval
            informative = informative or not wide.all()
            tail = np.logical_and.accumulate(wide[::-1])[::-1]  # wide from there to the end
            if tail.any():
                k = int(np.argmax(tail))
                where = "at every time" if k == 0 else f"from {_fmt(time[k], time_unit)} on"
                out.append(f"The 95% band of {curve} spans almost 0 to 1 {where}: the private curve says little "
                           "there; raise epsilon, widen the bins or pool groups.")
        side = np.sign(s[g] - 0.5)
        side = side[side != 0]  # a curve that rests on 0.5 and goes on down crosses once (R's midpoint median)
        crossings = int(np.count_nonzero(np.diff(side) != 0))
        med = quantile_r(time, s[g])
        if has_band and coarse:
            out += _first_bin_warnings(time, lo[g], label, median, time_unit)
        if crossings > 1:
            whose = "The curve" if label == "the curve" else f"The curve of {label}"
            out.append(f"{whose} crosses 0.5 {crossings} times, so its {median} is not identifiable; "
                       "raise epsilon or widen the bins.")
        elif mechanism == "time-indexed" and np.isfinite(med) and has_band and up[g][-1] >= 0.5:
            out.append(f"The time-indexed median of {label} ({_fmt(float(med), time_unit)}) may be an artefact of the "
                       "clipping and noise: the band still allows a survival above 0.5 at the end of the grid, so the "
                       "true median may not be reached; use a counts mechanism or raise epsilon.")
        elif has_band and not np.isfinite(med) and np.any(np.nan_to_num(lo[g], nan=1.0) < 0.5):
            med_lo, _ = quantile_limits(time, lo[g], up[g], 0.5, coarse, s[g])
            out.append(f"The {median} of {label} is not reached on the noisy curve, but its band falls below 0.5 from "
                       f"{_fmt(float(med_lo), time_unit)} on: the true {median} may well be reached; report it as "
                       f"'not reached' only with that lower limit, or raise epsilon.")
        elif has_band and np.isfinite(med):
            _, med_up = quantile_limits(time, lo[g], up[g], 0.5, coarse, s[g])
            if not np.isfinite(med_up):
                out.append(f"The {median} of {label} ({_fmt(float(med), time_unit)}) has no upper limit: the band's upper "
                           "limit never falls to 0.5 on the grid, so the true median may lie beyond the grid or not be "
                           "reached at all; report its interval as open above (from its lower limit to 'not "
                           "reached', as printed), or raise epsilon.")
    if mechanism == "time-indexed" and informative and NOISE_ONLY in (curves.interval_method or ""):
        out.append("The time-indexed band covers the privacy noise only, not the sampling error (the mechanism releases "
                   "no counts), so where the curve says something the band holds the truth far less often than 95% "
                   "(about 52-64% at the median and later for 100 subjects per group at base epsilon 5); declare each "
                   "group's size and censoring share (public numbers such as the study design's: --sample-size and "
                   "--censoring, or the two boxes on the Survival curves page) for a band that covers both.")
    if has_band and len(groups) > 1:
        times = list(landmarks) if landmarks else [float(time[time.size // 2])]
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                for when in times:
                    k = _index_at(time, when)
                    if k < 0:
                        continue
                    diff = abs(s[a, k] - s[b, k])
                    half = np.nanmax([(up[a, k] - lo[a, k]) / 2, (up[b, k] - lo[b, k]) / 2])
                    if np.isfinite(half) and half > diff:
                        out.append(f"At {_fmt(time[k], time_unit)} the difference in {'event-free ' if event_free else ''}"
                                   f"survival between {groups[a]} and "
                                   f"{groups[b]} ({100 * diff:.1f} points) is smaller than the error bar "
                                   f"(+/- {100 * half:.1f} points): the private curves cannot tell these groups apart "
                                   "there; raise epsilon or use fewer, wider bins.")
                        break
    if clamping is not None and has_band and np.any(np.asarray(clamping.events, float)[trial] > 0):
        out += _clamping_warnings(curves, np.asarray(upper, float), clamping, time_unit, trial, event_free)
    if clamping is not None and clamping.risk_sd is not None and has_band:
        out += _few_at_risk_warnings(curves, np.asarray(clamping.risk_sd, float), time_unit, trial, event_free)
    if coarse:
        out += _steep_bin_warnings(curves, time_unit, trial, event_free)
    out += _empty_risk_set_warnings(curves, landmarks, time_unit, trial, mechanism, event_free)
    if raw_label_curves:
        out.append("The curves of the randomized (reported) group labels estimate a mixture of the groups, not each "
                   "group: read the de-biased curves, whose bands carry the label noise.")
    out += _disclosure_control_warnings(curves, mechanism, time_unit, trial)
    return out



def _first_bin_warnings(time: np.ndarray, lower: np.ndarray, label: str, median: str, time_unit: str) -> list[str]:
    """Where the band's lower limit is at or below 1 - p at the grid's first point, the p quantile may lie inside the
    first bin, where the curve is not known: its interval is one-sided, from the grid's start to the first point
    (:func:`~dpsurv_core.curves.intervals.quantile_limits`). One sentence naming every such quantile."""
    names = {0.25: "25% quantile", 0.5: median, 0.75: "75% quantile"}
    inside = [name for p, name in names.items() if first_bin_crossing(lower, 1.0 - p)]
    if not inside:
        return []
    what = inside[0] if len(inside) == 1 else ", ".join(inside[:-1]) + " and " + inside[-1]
    its, they = ("its interval is", "it") if len(inside) == 1 else ("their intervals are", "them")
    start, first = _fmt(min(0.0, float(time[0])), time_unit), _fmt(float(time[0]), time_unit)
    return [f"The {what} of {label} may lie inside the first bin (before {first}), where the private curve is known "
            f"only at its end and may fall anywhere inside it: {its} one-sided, from {start} to {first}, not a "
            f"position inside the bin. Choose a grid with shorter bins at the start to place {they}."]


def _clamping_warnings(curves: SurvivalCurves, upper: np.ndarray, clamp: ClampingBias, time_unit: str,
                       trial: int, event_free: bool) -> list[str]:
    """Where clamping released counts at 0 alone biases a curve below its band. Each event cell gains about b_j
    (``clamp.events``) and each censoring cell c_j (``clamp.censored``), read at the counts clamping would have pulled
    up to the released ones (laplace-counts; rrr's at its released de-biased counts); so the hazard d_j / r_j is too
    high twice over: d_j by b_j, and r_j too low by the sum of b_i + c_i over the bins before. The curve corrected for both, prod (1 - (d_j - b_j) / (r_j + sum_{i<j}
    (b_i + c_i))), is an estimate of where the curve would be without that bias; the sentence fires at the first point
    (survival at least 25%: later the few left at risk make the estimate too rough) where it lies above the band's
    upper limit."""
    r = np.asarray(curves.at_risk, float)[trial]
    s = curves.survival[trial]
    b = np.asarray(clamp.events, float)[trial]
    lost = b + (0.0 if clamp.censored is None else np.asarray(clamp.censored, float)[trial])
    r_true = r + np.cumsum(lost, axis=-1) - lost  # the biases of the bins before took subjects out of the risk set
    d = np.asarray(curves.events, float)[trial]
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(r >= 1, np.clip(np.maximum(d - b, 0.0) / np.maximum(r_true, 1.0), 0.0, 1.0),
                          np.nan_to_num(1.0 - s / np.concatenate([np.ones(s.shape[:-1] + (1,)), s[..., :-1]], -1)))
    corrected = np.maximum(np.cumprod(1.0 - hazard, axis=-1), s)
    time = np.asarray(curves.time, float)
    out = []
    for g, name in enumerate(curves.groups):
        off = (s[g] >= 0.25) & (corrected[g] > np.nan_to_num(upper[trial, g], nan=1.0) + 1e-9)
        if not off.any():
            continue
        k = int(np.argmax(off))
        whose = "the curve" if (len(curves.groups) == 1 and name == "all") else f"the curve of group {name}"
        if event_free:
            whose = whose.replace("the curve", "the event-free curve")
        out.append(f"At {_fmt(time[k], time_unit)} {clamp.what} alone pulls {whose} down: "
                   f"{100 * s[g, k]:.1f}% here, against about {100 * corrected[g, k]:.1f}% or more without that bias, "
                   f"above the band's upper limit ({100 * float(upper[trial, g, k]):.1f}%). The band does not carry "
                   "this bias, so neither it nor the median and landmarks read from it can be trusted from there on. "
                   "Choose fewer, wider bins (each holding several times the noise's +/- "
                   f"{float(np.asarray(clamp.noise_sd)[trial, g, k]):.1f} events there), or adaptive-km, which merges "
                   "sparse bins, or raise epsilon.")
    return out


# the number at risk a noisy curve reads must be this many times the noise on it (its standard deviation), else the
# curve and band from there are the noise's (measured: docs/coverage-curves.md)
STEEP_DROP = 0.35  # the share of those at risk a bin's events may take before its life-table rule reads it high


def _steep_bin_warnings(curves: SurvivalCurves, time_unit: str, trial: int, event_free: bool) -> list[str]:
    """Where a public bin takes more than STEEP_DROP of the curve (1 - S_j / S_{j-1}), while S_{j-1} > 0.2. The life
    table counts half of a bin's censorings at risk for its events (Cutler and Ederer 1958), as if they fell at the
    bin's middle; where the hazard is high within the bin, those censored are censored earlier than that on average
    (a subject must still be alive to be censored), so the bin's drop is read too small and the curve too high from its
    end on: an exponential curve falling to 0.46 in its first of 20 bins read 0.474-0.488 there (the truth 0.464), and
    one falling to 0.31 read 0.34-0.39, the bands holding the truth in 82-91% of releases (benchmarks/curve_validity.py). One sentence per group, from the
    end of the first such bin."""
    s = np.asarray(curves.survival, float)[trial]
    time = np.asarray(curves.time, float)
    prev = np.concatenate([np.ones(s.shape[:-1] + (1,)), s[..., :-1]], axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        drop = np.where(prev > 0.2, 1.0 - s / np.where(prev > 0, prev, 1.0), 0.0)
    out = []
    for g, name in enumerate(curves.groups):
        steep = drop[g] > STEEP_DROP
        if not steep.any():
            continue
        k = int(np.argmax(steep))
        kind = "event-free curve" if event_free else "curve"
        whose = f" of group {name}" if len(curves.groups) > 1 or name != "all" else ""
        start = _fmt(float(time[k - 1]) if k > 0 else min(0.0, float(time[0])), time_unit)
        out.append(f"From {_fmt(time[k], time_unit)} on the {kind}{whose} may read a little high: it falls by "
                   f"{100 * drop[g, k]:.0f}% in the bin from {start} to {_fmt(time[k], time_unit)}, and in so steep a "
                   "bin the life-table rule (half of the bin's censorings at risk) takes too few events out; in "
                   "simulations the curve read 0.01-0.04 high after such a bin and its band held the truth in 82-91% "
                   "of releases. Choose shorter bins where the curve falls fast.")
    return out


RISK_NOISE_RATIO = 3.0


def _few_at_risk_warnings(curves: SurvivalCurves, risk_sd: np.ndarray, time_unit: str, trial: int,
                          event_free: bool) -> list[str]:
    """Where the number at risk a noisy curve reads, r_j (released or derived from the released counts), is less than
    RISK_NOISE_RATIO times the noise's standard deviation on it (``risk_sd``, from the public noise law): each
    hazard d_j / r_j there divides by a number the noise may have doubled or halved, so the curve is far off in a
    share of releases that a bootstrap drawn around the release itself cannot see. On 200 subjects, 20 to 200 bins
    and epsilon 0.5 to 2, laplace-counts' band held the truth in 93.7-96.8% of the landmarks read with at least 3
    noise standard deviations at risk and 88% of those read with fewer; where this sentence fires the late bands
    held it in as few as 82-86% of releases (S = 0.1: adaptive-km on 200 bins, laplace-counts on 50 bins, epsilon
    0.5 and 2; benchmarks/curve_validity.py). One sentence per group, from the first such point while anyone is left
    at risk (where nobody is, another sentence says so)."""
    r = np.asarray(curves.at_risk, float)[trial]
    sd = np.broadcast_to(risk_sd[trial] if risk_sd.ndim == r.ndim + 1 else risk_sd, r.shape)
    time = np.asarray(curves.time, float)
    out = []
    for g, name in enumerate(curves.groups):
        live = np.logical_and.accumulate(r[g] > 0)
        few = live & (sd[g] > 0) & (r[g] < RISK_NOISE_RATIO * sd[g])
        if not few.any():
            continue
        k = int(np.argmax(few))
        named = len(curves.groups) > 1 or name != "all"
        kind = "event-free curve" if event_free else "curve"
        whose = f" of group {name}" if named else ""
        out.append(f"From {_fmt(time[k], time_unit)} on the {kind}{whose} divides by a number at risk read from "
                   f"noisy counts (about {r[g, k]:.0f} there) that is less than {RISK_NOISE_RATIO:g} times the noise "
                   f"on it (+/- {sd[g, k]:.0f}), so the curve, its band and what is read from them there (landmarks, "
                   f"the {'event-free ' if event_free else ''}median, the RMST) are the noise's more than the data's: "
                   "in simulations the band held the truth in as few as "
                   f"82% of releases there, not 95%. Read them only before {_fmt(time[k], time_unit)}, or choose "
                   "fewer, wider bins, raise epsilon or pool groups.")
    return out


def _empty_risk_set_warnings(curves: SurvivalCurves, landmarks: list[float] | None, time_unit: str,
                             trial: int, mechanism: str = "", event_free: bool = False) -> list[str]:
    """Where the released counts leave nobody at risk before the grid's last bin, one sentence per group: for the
    landmarks read there (as asked, up to the grid's end: later ones have their own sentence), or else for the curve
    itself. The curve there is where the released counts stopped it, carried on, not an estimate at that time (a noisy
    release's band runs from 0 to the last upper limit)."""
    risk = np.asarray(curves.at_risk, float)[trial] if curves.at_risk is not None else None
    if risk is None or np.all(np.isnan(risk)):
        return []
    landmarks = landmarks or []
    time = np.asarray(curves.time, float)
    rule = mechanism in catalogue.disclosure_ids(catalogue.CURVES)  # no epsilon: a rule changed the counts
    curve, fix = (("released curve", "widen the bins or choose a milder rule") if rule
                  else ("noisy curve", "raise epsilon or widen the bins"))
    out = []
    for g, name in enumerate(curves.groups):
        empty = np.logical_and.accumulate((np.nan_to_num(risk[g], nan=1.0) <= 0)[::-1])[::-1]  # empty to the end
        if not empty.any():
            continue
        k0 = int(np.argmax(empty))
        # a rule's curve that fell to 0 is exact there (everyone had the event); a noisy 0 is where the noise ended it
        late = [t for t in landmarks if _index_at(time, t) >= k0 and t <= time[-1] + 1e-9
                and not (rule and curves.survival[trial, g, _index_at(time, t)] <= 0)]
        start = float(time[k0 - 1]) if k0 > 0 else 0.0  # the empty bin's start: time >= t, R's number at risk
        named = len(curves.groups) > 1 or name != "all"
        where, whose = (f" in group {name}", f" of group {name}") if named else ("", "")
        if late:
            out.append(f"From {_fmt(start, time_unit)} on the released counts leave nobody at risk{where}, so the "
                       f"survival{whose} at {', '.join(_asked_and_used(time, t, time_unit) for t in late)} is the "
                       f"value the "
                       f"{curve} stopped at, carried on, not an estimate at that time; choose an earlier landmark, or "
                       f"{fix}.")
        elif k0 < time.size - 1 and not (rule and curves.survival[trial, g, k0] <= 0):
            # more than the last bin: the curve drawn to the grid's end holds there a value nothing estimates
            value = 100.0 * float(curves.survival[trial, g, k0])
            kind = "event-free curve" if event_free else "curve"  # with competing events: survival from all of them
            out.append(f"From {_fmt(start, time_unit)} on the released counts leave nobody at risk{where}, so the "
                       f"{kind}{whose} from there to the end of the grid is the value the {curve} stopped at "
                       f"({value:.0f}%), carried on, not an estimate (nor is any curve read from its counts); read it "
                       f"only up to {_fmt(start, time_unit)}, or {fix}.")
    return out


# disclosure control's deterministic rules (their bands are Greenwood's) and what each does to the counts
RULES = {"round": "rounding", "suppress-small-cells": "small-cell suppression", "smooth-steps": "step smoothing"}
FEW_AT_RISK = 50


def _disclosure_control_warnings(curves: SurvivalCurves, mechanism: str, time_unit: str, trial: int) -> list[str]:
    """Disclosure control moves small counts by about as much as they are, which no band here carries in full
    (measured in docs/coverage-curves.md): a deterministic rule's Greenwood band treats the altered counts as exact,
    and random rounding's bootstrap band misses the bias of bins with a handful of events."""
    if mechanism in RULES:
        which = ("These bands (Greenwood's for survival, the infinitesimal jackknife's for the cumulative incidence) "
                 "treat" if len(curves.event_types) > 1 else "This band is Greenwood's: it treats")
        out = [f"{which} the published counts as exact, but {RULES[mechanism]} changed "
               "them, so it is too narrow, most where few subjects remain (with 100 subjects per group it held the "
               "truth 60-87% of the time, not 95%); read it as the least uncertainty there is."]
        events = np.asarray(curves.events, float)[trial]
        events = events.reshape(events.shape[0], -1).sum(-1)  # per group, over bins (and event types)
        gone = [str(name) for g, name in enumerate(curves.groups) if events[g] <= 0]
        if gone:
            pooled = list(curves.groups) == ["all"]
            whose = ("the curve" if pooled else f"group {gone[0]}" if len(gone) == 1
                     else "groups " + ", ".join(gone))
            out.append(f"The released counts of {whose} hold no events at all, so its curve stays at 100% and its band "
                       f"and RMST interval have no width. {RULES[mechanism].capitalize()} takes a bin's few events to "
                       "0, so this says 'no events released', not 'nobody had the event'; widen the bins"
                       + ("." if pooled else " or pool groups."))
        return out + at_risk_notes(mechanism)
    if mechanism != "random-round":
        return []
    return _random_rounding_warnings(curves, time_unit, trial)


def at_risk_notes(mechanism: str) -> list[str]:
    """What a deterministic disclosure-control rule does to the number at risk read from its released counts (the
    Survival curves and Group comparison pages show them under that table; ``km`` among its warnings)."""
    if mechanism == "suppress-small-cells":
        return ["Suppressed cells (shown as '<k') count as 0 here, so from the first of them on the curve misses "
                "their events and the number at risk misses their events and censorings: both stay too high late in "
                "follow-up (subjects can seem at risk after the last of them has died); do not read the late curve or "
                "landmarks as estimates."]
    if mechanism == "round":
        return ["The number at risk is rebuilt from rounded counts, so its rounding errors add up over time and it can "
                "be off by several times the base late in follow-up; the late curve inherits them."]
    return []


def _random_rounding_warnings(curves: SurvivalCurves, time_unit: str, trial: int) -> list[str]:
    risk = np.asarray(curves.at_risk, float)[trial]
    few = (risk < FEW_AT_RISK) & (np.asarray(curves.survival, float)[trial] > 0)
    if not few.any():
        return []
    first = float(np.asarray(curves.time, float)[int(np.argmax(few.any(axis=0)))])
    return [f"From {_fmt(first, time_unit)} on fewer than {FEW_AT_RISK} subjects remain at risk in a group, and "
            "random rounding moves a bin's handful of events to 0 or the base: the curve there can be off by more than "
            "its band (with 100 subjects per group the late band held the truth 86% of the time); widen the bins."]
