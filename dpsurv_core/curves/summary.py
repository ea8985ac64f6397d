"""Numbers the survival-curve and group-comparison pages show, computed from released curves.

Everything here is post-processing of a release (or of the exact, non-private curves kept by the
data holder): landmark values with their 95% CI, restricted mean survival time, error figures
against the non-private curve, number at risk at chosen times, log-rank significance flips, and
sensible default landmark times. No Streamlit here.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.kaplan_meier import SurvivalCurves
from dpsurv_core.curves.logrank import LogRankResult
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import TimeGrid
from dpsurv_core.data.summary import DAYS_PER, factor_or_one, time_factor
from dpsurv_core.errors import ParameterError

SURVIVAL, HAZARD, INCIDENCE = "survival", "cumulative hazard", "cumulative incidence"
ESTIMANDS = (SURVIVAL, HAZARD, INCIDENCE)
_ATTR = {SURVIVAL: "survival", HAZARD: "cumulative_hazard", INCIDENCE: "cumulative_incidence"}


def fingerprint(cohort: Cohort) -> str:
    """A short digest identifying the cohort's analysed arrays (for caching; reveals nothing)."""
    h = hashlib.sha256()
    for arr in (cohort.time, cohort.event, cohort.group, cohort.event_type, cohort.subject):
        if arr is None:
            h.update(b"-")
        else:
            a = np.asarray(arr)
            h.update(a.astype(str).tobytes() if a.dtype == object else a.tobytes())
            h.update(str(a.dtype).encode())
    h.update(f"{cohort.rows_per_subject}|{cohort.time_unit}|{cohort.event_type_labels}".encode())
    return h.hexdigest()[:20]


def estimand_values(curves: SurvivalCurves, estimand: str, event_type: int = 0) -> np.ndarray:
    """The chosen estimand as an array (..., G, J); for cumulative incidence, of event type index ``event_type``."""
    if estimand not in _ATTR:
        raise ParameterError(f"Unknown estimand {estimand!r}: choose one of {', '.join(ESTIMANDS)}.")
    arr = getattr(curves, _ATTR[estimand])
    return arr[..., event_type, :] if estimand == INCIDENCE else arr


def bands(curves: SurvivalCurves, kind: str = "log-log") -> tuple[np.ndarray, np.ndarray]:
    """Pointwise 95% band of the survival curve: ``log-log`` (default) or ``linear``."""
    if kind == "log-log":
        return curves.lower, curves.upper
    if kind == "linear":
        return curves.lower_linear, curves.upper_linear
    raise ParameterError(f"Unknown band {kind!r}: choose log-log or linear.")


def step_at(time: np.ndarray, values: np.ndarray, times: np.ndarray, start: float) -> np.ndarray:
    """A right-continuous step function (``values`` at ``time``, ``start`` before) read at ``times``."""
    idx = np.searchsorted(np.asarray(time, float), np.asarray(times, float), side="right") - 1
    padded = np.concatenate([np.full(values.shape[:-1] + (1,), start), values], axis=-1)
    return padded[..., idx + 1]


@dataclass(frozen=True)
class Landmarks:
    """Values at landmark times: arrays (..., G, T); ``lower``/``upper`` None when the estimand has no band."""

    times: np.ndarray
    value: np.ndarray
    lower: np.ndarray | None
    upper: np.ndarray | None


def landmarks(curves: SurvivalCurves, times: np.ndarray, estimand: str = SURVIVAL, band: str = "log-log",
              event_type: int = 0) -> Landmarks:
    """The estimand at each landmark time, with its 95% CI for survival."""
    times = np.asarray(times, float)
    start = 1.0 if estimand == SURVIVAL else 0.0
    value = step_at(curves.time, estimand_values(curves, estimand, event_type), times, start)
    if estimand != SURVIVAL:
        return Landmarks(times, value, None, None)
    lo, hi = bands(curves, band)
    return Landmarks(times, value, step_at(curves.time, lo, times, 1.0), step_at(curves.time, hi, times, 1.0))


def rmst(curves: SurvivalCurves, horizon: float) -> np.ndarray:
    """Restricted mean survival time: area under the step survival curve from time 0 to ``horizon`` (..., G).

    The curve is 1 before its first time point; equals lifelines' ``restricted_mean_survival_time``
    on the exact event-time curve.
    """
    if not horizon > 0:
        raise ParameterError(f"The RMST horizon must be a positive time, got {horizon}.")
    return curves.rmst(horizon)


def curve_errors(private: SurvivalCurves, reference: SurvivalCurves, estimand: str = SURVIVAL,
                 event_type: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """RMSE and sup-norm (..., G) of the private estimand against the reference read at the private grid points."""
    start = 1.0 if estimand == SURVIVAL else 0.0
    ref = step_at(reference.time, estimand_values(reference, estimand, event_type), private.time, start)
    priv = estimand_values(private, estimand, event_type)
    ref = ref[0] if ref.ndim == priv.ndim and ref.shape[0] == 1 else ref
    diff = priv - ref
    return np.sqrt(np.mean(diff ** 2, axis=-1)), np.max(np.abs(diff), axis=-1)


def table_times(grid: TimeGrid, max_columns: int = 11) -> np.ndarray:
    """Grid edges to show in a number-at-risk table: every k-th edge, at most ``max_columns`` of them."""
    edges = grid.edges
    step = max(1, math.ceil((edges.size - 1) / (max_columns - 1)))
    picked = edges[::step]
    return np.maximum(picked, 0.0)


def at_risk_at(counts: BinnedCounts, times: np.ndarray) -> np.ndarray:
    """Number at risk at each time (..., G, T): n minus events and censorings in bins ending at or before it.

    Read from the (released) counts alone, so it is free post-processing; between grid edges it is the
    value at the last edge at or before the time. A grid that starts after 0 bins the rows with earlier times into
    its first bin, so before its second edge the counts cannot tell who is still at risk: NaN there.
    """
    edges = counts.grid.edges
    gone = np.cumsum(counts.events_total + counts.censored, axis=-1)
    gone = np.concatenate([np.zeros(gone.shape[:-1] + (1,)), gone], axis=-1)
    k = np.clip(np.searchsorted(edges, np.asarray(times, float), side="right") - 1, 0, edges.size - 1)
    known = (k >= 1) | (edges[0] <= 0)
    return np.where(known, np.maximum(counts.n[..., None] - gone[..., k], 0.0), np.nan)


def at_risk_display(values: np.ndarray) -> np.ndarray:
    """Released numbers at risk (..., T) as a table shows them: rounded to whole patients, at least 0 and never
    rising over time (a running minimum), as a number at risk must be. Post-processing of released values (free);
    exact numbers at risk are left unchanged by it."""
    v = np.asarray(values, float)
    return np.fmin.accumulate(np.maximum(np.rint(v), 0.0), axis=-1)  # fmin: an unknown (NaN) value stays unknown


AT_RISK_DEFINITION = ("number at risk at time t: rows (subjects, with one row each) with time >= t, as R's summary.survfit(times = t) n.risk "
                      "(Therneau 2024)")
AT_RISK_FROM_COUNTS = ("read from the released binned counts: exact at grid edges except that an event exactly at t "
                       "(binned into the bin ending at t) is counted as gone")


def at_risk_exact(cohort: Cohort, groups: tuple[str, ...], times: np.ndarray) -> np.ndarray:
    """Rows with time >= t per group (G, T), from the data itself (non-private): R's n.risk at t. A table kept in an
    engine counts them there (one query on its cells), to the same numbers."""
    from dpsurv_core.curves.counts import _group_index

    times = np.asarray(times, float)
    if hasattr(cohort, "rows_at_risk"):
        return cohort.rows_at_risk(None if tuple(groups) == ("all",) else groups, times)
    gi, labels = _group_index(cohort, None if cohort.group is None or tuple(groups) == ("all",) else tuple(groups))
    out = np.zeros((len(labels), times.size))
    for g in range(len(labels)):
        tg = np.sort(np.asarray(cohort.time, float)[gi == g])
        out[g] = tg.size - np.searchsorted(tg, times, side="left")
    return out


AT_RISK_ALTERED = ("the released counts carry the privacy noise (or the disclosure-control rule's changes), so these "
                   "are estimates without an interval, post-processed to be whole, non-negative and non-increasing")


def risk_table(times: np.ndarray, groups: tuple[str, ...], values: np.ndarray | None, exact: bool,
               altered: bool = False) -> dict | None:
    """The number-at-risk table ``km`` and ``logrank`` print: ``values`` (trials, G, T); None when nothing to show.
    ``altered``: read from noisy or altered released counts."""
    if values is None:
        return None
    if altered:  # noisy or altered counts: whole, non-negative and non-increasing, as a number at risk must be
        values = at_risk_display(values)
    rows = [{"trial": t, "group": g, "at_risk": [None if np.isnan(v) else v for v in values[t, k].tolist()]}
            for t in range(values.shape[0]) for k, g in enumerate(groups)]
    definition = AT_RISK_DEFINITION + ("" if exact else "; " + AT_RISK_FROM_COUNTS)
    return {"times": np.asarray(times, float).tolist(), "rows": rows,
            "definition": definition + ("; " + AT_RISK_ALTERED if altered else "")}


@dataclass(frozen=True)
class TestComparison:
    """One log-rank test, non-private next to private (first trial)."""

    group_a: str
    group_b: str | None  # None: the overall k-group test (group_a lists the groups)
    statistic_exact: float
    p_exact: float
    statistic_private: float
    p_private: float
    significant_exact: bool
    significant_private: bool

    @property
    def label(self) -> str:
        return f"{self.group_a} vs {self.group_b}" if self.group_b is not None else f"overall ({self.group_a})"

    @property
    def defined(self) -> bool:
        """False when the released counts support no private test (e.g. nobody left at risk in a group)."""
        return math.isfinite(self.p_private)

    @property
    def flipped(self) -> bool:
        return self.defined and self.significant_exact != self.significant_private


def _first(a: np.ndarray) -> float:
    a = np.asarray(a, float)
    return float(a.reshape(-1)[0]) if a.size else math.nan


def compare_tests(exact: list[LogRankResult], private: list[LogRankResult], alpha: float = 0.05) -> list[TestComparison]:
    """Pair up tests by their groups; significance at ``alpha`` (an undefined p-value counts as not significant)."""
    priv = {(r.group_a, r.group_b): r for r in private}
    out = []
    for r in exact:
        p = priv.get((r.group_a, r.group_b))
        if p is None:
            continue
        pe, pp = _first(r.p_value), _first(p.p_value)
        out.append(TestComparison(r.group_a, r.group_b, _first(r.statistic), pe, _first(p.statistic), pp,
                                  bool(pe < alpha), bool(pp < alpha)))
    return out


@dataclass(frozen=True)
class LogRankRows:
    """A private reading's log-rank tests beside the non-private ones, row for row (the pairs, then the overall test
    when there are more than two groups: with two it is the pair's). ``on_grid`` compares them with the exact tests
    on the public grid (like with like: a flip there is the release's doing), ``every_time`` with the exact tests on
    every event time, and ``needed`` is the statistic each private test must exceed at 5% (its null 95% point)."""

    on_grid: list[TestComparison]
    every_time: list[TestComparison]
    needed: list[float]


def logrank_rows(exact_pairs: list[LogRankResult], exact_overall: LogRankResult, grid_tests: list[LogRankResult],
                 private_pairs: Sequence[Any], private_overall: Any, groups: int) -> LogRankRows:
    """The rows of a private reading's log-rank table: ``exact_*`` on every event time, ``grid_tests`` on the public
    grid (the pairs, then the overall test), ``private_*`` the calibrated tests of the release (with their
    ``critical_value``), for ``groups`` groups."""
    several = groups > 2
    every_exact = [*exact_pairs, exact_overall] if several else list(exact_pairs)
    same_grid = list(grid_tests) if several else list(grid_tests[:-1])
    private = [*private_pairs, private_overall] if several else list(private_pairs)
    on_grid = compare_tests(same_grid, private)
    needed = {(t.group_a, t.group_b): float(t.critical_value[0]) for t in private}
    return LogRankRows(on_grid, compare_tests(every_exact, private), [needed[(c.group_a, c.group_b)] for c in on_grid])


def default_landmarks(horizon: float, unit: str, first: float = 0.0) -> tuple[list[float], str]:
    """Up to three landmark times inside ``horizon`` (in ``unit``), in the unit a clinician would use, none before
    ``first`` (the public grid's first point: earlier the private curve is still 1 by definition).

    Years (1, 5, 10 / 1, 3, 5 / 1, 2, 3, whichever fits) when the horizon spans at least 18 months, else months (3, 6, 12, 24), else
    quarters of the time from ``first`` to the horizon in the data's unit. Returns (values, their unit).
    """
    start = min(max(first, 0.0), horizon)
    quarters = [round(start + (horizon - start) * q, 3) for q in (0.25, 0.5, 0.75)]  # of what is after ``first``
    if unit not in DAYS_PER:
        return quarters, unit
    years = horizon * time_factor(unit, "years")
    first_years = first * time_factor(unit, "years")
    if years >= 1.5:
        for triple in ((1, 5, 10), (1, 3, 5), (1, 2, 3), (1, 2), (1,)):
            if triple[-1] <= years + 1e-9:
                kept = [float(c) for c in triple if c >= first_years - 1e-9]
                return (kept, "years") if kept else (quarters, unit)
    months = horizon * time_factor(unit, "months")
    first_months = first * time_factor(unit, "months")
    cand = [c for c in (3, 6, 12, 24) if c <= months + 1e-9 and c >= first_months - 1e-9]
    if cand:
        return [float(c) for c in cand[-3:]], "months"
    return quarters, unit


def parse_times(text: str) -> list[float]:
    """Comma- or space-separated times, 0 or more, e.g. ``"1, 3, 5"`` (0 is the start, read as R's summary(fit,
    times = 0): survival 1 unless events happen at time 0)."""
    parts = [p for p in text.replace(";", ",").replace(" ", ",").split(",") if p.strip()]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ParameterError(f"{text!r} is not a list of times: type numbers separated by commas, e.g. 1, 3, 5.") from None
    if not values:
        raise ParameterError("Type at least one landmark time, e.g. 1, 3, 5.")
    if any(not (v >= 0) or not math.isfinite(v) for v in values):
        raise ParameterError("Landmark times must be numbers from 0 on, e.g. 1, 3, 5.")
    return sorted(set(values))


def landmark_request(text: str, picked: Sequence[float], grid_points: np.ndarray, unit: str, asked_unit: str
                     ) -> tuple[list[float], np.ndarray]:
    """The landmark times a reader asks for: (as asked, in ``asked_unit``; the same times in the data's ``unit``).
    Grid times ``picked`` (in ``asked_unit``) replace the typed ``text`` and are taken exactly: each is the grid point
    nearest it (a picker shows them rounded, as the typed text would)."""
    to_asked = factor_or_one(unit, asked_unit)
    if picked:
        points = np.asarray(grid_points, float)
        times = np.array([points[int(np.argmin(np.abs(points * to_asked - v)))] for v in sorted(set(picked))])
        return [float(f"{t * to_asked:.6g}") for t in times], times
    values = parse_times(text)
    return values, np.array(values) * factor_or_one(asked_unit, unit)
