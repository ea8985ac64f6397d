"""Private survival curves: the release object every curve mechanism returns, and the exact reference.

A curve mechanism is a :class:`~dpsurv_core.privacy.mechanism.Mechanism` whose ``release(cohort, public,
noise, trials)`` returns a :class:`CurveResult`: the curves (arrays with a leading trials axis),
the released counts where the mechanism has them, what it charged and every disclosure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, cast

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.kaplan_meier import SurvivalCurves, estimate
from dpsurv_core.curves.summary import at_risk_at
from dpsurv_core.curves.timefix import timefixed
from dpsurv_core.data.categories import row_index
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import MAX_BINS, Disclosure, PublicParameters, TimeGrid
from dpsurv_core.errors import DataError
from dpsurv_core.limits import CLI_CELLS_ENV
from dpsurv_core.privacy.ledger import PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism
from dpsurv_core.privacy.noise import NoiseSource

# the public parameters a curve release uses (its disclosures are these only)
CURVE_PARAMETERS = ("horizon", "grid", "groups")

@dataclass
class CurveResult:
    """One or more releases of survival curves (leading trials axis on every array)."""

    mechanism: str
    cost: PrivacyCost
    parameters: dict[str, Any]
    disclosures: list[Disclosure]
    curves: SurvivalCurves
    counts: BinnedCounts | None
    noise: str
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    released: dict[str, Any] | None = None  # the mechanism's noisy output as the record holds it (JSON normal form)

    @property
    def trials(self) -> int:
        return int(self.curves.survival.shape[0])


def drawn(mechanism: Any, released: dict[str, Any], public: PublicParameters, competing: bool = False
          ) -> CurveResult:
    """A curve release from what the mechanism drew: its output is put in the record's JSON normal form first, and
    :meth:`read` (post-processing, no cohort in reach) makes everything else of it, so a release and its record
    re-read later give the same numbers (to the last bit on one processor)."""
    from dpsurv_core.publication import jsonable

    stored = jsonable(released)
    rel = mechanism.read(stored, public, competing)
    rel.released = stored
    return rel


def risk_counts(rel: CurveResult) -> BinnedCounts | None:
    """The released counts a number-at-risk table reads: adaptive-km's counts derived without the life table's shift
    of half a bin's censorings into the next bin (which its curve needs, but which would keep them at risk a bin too
    long), rrr's de-biased counts (which estimate each true group's, as its de-biased curves do; the reported labels'
    counts mix the groups), else the release's counts (None when it has none)."""
    return rel.extra.get("risk_counts", rel.extra.get("debiased_counts", rel.counts))


def released_at_risk(rel: CurveResult, times: np.ndarray, groups: Sequence[str]) -> np.ndarray | None:
    """The released numbers at risk (G, T) of the first trial at ``times``, read from :func:`risk_counts` (free
    post-processing); None when the release has no counts or its groups are not ``groups`` (the non-private table's),
    so that a table never sets one group's numbers beside another's."""
    counts = risk_counts(rel)
    if rel.counts is None or counts is None or tuple(rel.counts.groups) != tuple(groups):
        return None
    return at_risk_at(counts, times)[0]


def groups_of(cohort: Cohort, public: PublicParameters) -> tuple[str, ...] | None:
    """The public group categories when the cohort has a group column, else None (one group)."""
    has_group = getattr(cohort, "has_group", None)  # a cohort kept in an engine says so without reading rows
    if (cohort.group is None) if has_group is None else not has_group:
        return None
    return tuple(public.group_categories) if public.group_categories else tuple(cohort.groups)


def context(cohort: Cohort, public: PublicParameters) -> dict[str, Any]:
    """What a curve mechanism's factory needs to know besides epsilon and its own options (catalogue)."""
    return {"rows_per_subject": cohort.rows_per_subject, "n_points": public.grid.bins,
            "categories": groups_of(cohort, public)}


def exact_counts(cohort: Cohort, grid: TimeGrid, public: PublicParameters, competing: bool = False) -> BinnedCounts:
    return count(cohort, grid, groups_of(cohort, public), competing)


def tile_trials(counts: BinnedCounts, trials: int) -> BinnedCounts:
    """Exact counts repeated along a new leading trials axis."""
    rep = lambda a: np.broadcast_to(a, (trials, *a.shape)).copy()  # noqa: E731
    return BinnedCounts(counts.grid, counts.groups, rep(counts.n), rep(counts.events), rep(counts.censored),
                        counts.event_types)


def event_times_grid(cohort: Cohort, competing: bool = False) -> TimeGrid:
    """The distinct event times as bin edges (not DP). With ``competing``, the times of every event type
    (a competing event leaves the risk set at its own time, so the exact Aalen-Johansen needs them). A table kept in
    an engine reads them by one ``DISTINCT`` query (refused past the grid's bin limit)."""
    engine_grid = getattr(cohort, "event_time_grid", None)
    if engine_grid is not None:
        return engine_grid(competing and bool(getattr(cohort, "has_event_type", False)))
    if not competing or cohort.event_type is None:
        return TimeGrid.event_times(cohort)
    from dpsurv_core.curves.timefix import merge_near_ties, wanted

    time = merge_near_ties(cohort.time) if wanted(cohort) else cohort.time  # near ties one time, as TimeGrid's
    times = np.unique(time[cohort.event_type > 0])
    if times.size == 0:
        return TimeGrid.event_times(cohort)
    return TimeGrid(np.concatenate([[min(0.0, float(times[0]) - 1.0)], times]), "event-times", True)


class NonPrivate(Mechanism):
    """No privacy: the exact estimators (equal to lifelines on the event-time grid). Charges nothing,
    and says so: these numbers must not leave the data holder. Its constructor takes no parameters.

    Privacy
    -------
    Cost: nothing charged; epsilon = inf (no noise): these numbers must not leave the data holder.
    Neighbours: none (not private).
    Protects: nothing.
    Source: Kaplan & Meier (1958); lifelines.
    """

    name = "nonprivate"
    analysis = "survival curves"

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(float("inf"), protects="nothing (non-private)", neighbouring="none")

    def parameters(self) -> dict[str, Any]:
        return {}

    def noise_law(self, extra: dict[str, Any] | None = None, debiased: bool = False) -> Any:
        """Exact counts: the log-rank test needs no calibration."""
        from dpsurv_core.curves.logrank_test import no_noise_law

        return no_noise_law(self.name)

    def compute(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None = None, trials: int = 1,
                competing: bool = False) -> CurveResult:
        from dpsurv_core.curves.memory import check_curves

        cohort, grid = exact_source(timefixed(cohort), competing)  # near-tied times as one, as R's survfit counts
        # the curves at every event time as well as at the grid points: their memory, before any work
        events = grid.bins if hasattr(cohort, "binned_counts") else np.unique(cohort.time[cohort.event == 1]).size
        groups = groups_of(cohort, public)
        check_curves(self, public.grid.bins + events, 1 if groups is None else len(groups))
        return with_follow_up_end(self._exact(cohort, public, competing), cohort, public)

    def _exact(self, cohort: Cohort, public: PublicParameters, competing: bool) -> CurveResult:
        """The exact curves at the grid points and at every event time, without each curve's end of follow-up
        (near-tied times merged as R's timefix merges them, :mod:`dpsurv_core.curves.timefix`). A table kept in an
        engine is counted there (:func:`exact_source`): the same counts, so the same numbers, with no row read."""
        cohort, grid = exact_source(timefixed(cohort), competing)
        horizon = float(public.horizon)  # a declared horizon ends follow-up: every curve stops there
        exact = until(estimate(tile_trials(exact_counts(cohort, grid, public, competing), 1)), horizon)
        curves = until(at_grid(exact, public.grid.points), horizon)
        if isinstance(cohort, Cohort):  # rows (several per subject too, as R counts rows), in memory or an engine
            from dpsurv_core.curves.summary import at_risk_exact

            # R's n.risk at each reporting time (summary(fit, times = t)): the rows with time >= t
            risk = at_risk_exact(cohort, curves.groups, curves.time)
            curves = replace(curves, at_risk=np.broadcast_to(risk, curves.at_risk.shape).copy())
        counts = exact_counts(cohort, public.grid, public, competing)
        # the curves at every event time too: an area (RMST) is the integral of the step curve there, not of the grid's;
        # each group's last time under observation with both (R's end of the curve)
        return CurveResult(self.name, self.cost, {}, [Disclosure("release", "not DP: exact, non-private estimates.",
                                                                 dp=False)],
                            curves, tile_trials(counts, 1), "none",
                            extra={"event_time_curves": exact})


def exact_source(cohort: Cohort, competing: bool = False) -> tuple[Cohort, TimeGrid]:
    """The cohort the exact estimators count and its event-time grid (:func:`event_times_grid`). A table kept in an
    engine is counted there: its grid is one ``DISTINCT`` query and every count on it one ``GROUP BY`` of the cells,
    so no row is read; only when its distinct event times are more than a grid counted in the engine may have
    (:data:`~dpsurv_core.data.public.MAX_BINS`, times not rounded) are its rows read, through the engine's bounded
    path (refused past the row limit)."""
    exact_grid = getattr(cohort, "exact_grid", None)
    if exact_grid is not None:
        grid = exact_grid(competing)
        if grid is not None:
            return cohort, grid
        try:
            cohort = cast(Any, cohort).in_memory()  # an EngineCohort (curves never import the engines)
        except DataError:
            raise DataError(f"The exact (non-private) estimates are counted inside the engine on at most {MAX_BINS:,} "
                            f"distinct event times, and {cohort.name!r} has more, so they need its rows, which are "
                            f"more than dpsurv reads into memory ({CLI_CELLS_ENV}): round the times in the source (to "
                            "whole days, for example).") from None
    return cohort, event_times_grid(cohort, competing)


def until(curves: SurvivalCurves, horizon: float) -> SurvivalCurves:
    """``curves`` up to the horizon (:meth:`SurvivalCurves.up_to`), whole when no point falls before it."""
    return curves.up_to(horizon) if np.any(np.asarray(curves.time, float) <= horizon) else curves


def with_follow_up_end(rel: CurveResult, cohort: Cohort, public: PublicParameters) -> CurveResult:
    """A release without noise (epsilon inf: nothing is private) with each curve's last time under observation, so
    that its quantiles follow R's rule at a curve's end as the non-private curves do; a noisy release is returned as
    it is (it does not publish those times), and so is a table kept in an engine (its rows are not read here)."""
    if rel.cost.epsilon is None or not math.isinf(rel.cost.epsilon):
        return rel
    rel = _kaplan_meier_without_noise(rel, cohort, public)  # an engine's table too: the non-private release reads it
    if not _rows_in_memory(cohort) and not hasattr(cohort, "follow_up"):
        return rel

    def put(c: SurvivalCurves) -> SurvivalCurves:
        if hasattr(cohort, "follow_up"):  # kept in an engine: one query, no row read
            start, last = cohort.follow_up(c.groups)
            end = np.fmin(last, max(_curves_end(public), 0.0))
        else:
            end = np.array([_last_time(cohort, g, public) for g in c.groups], float)
            start = np.array([_first_time(cohort, g) for g in c.groups], float)
        return replace(c, follow_up_end=np.broadcast_to(end, c.survival.shape[:-1]).copy(),
                       follow_up_start=np.broadcast_to(start, c.survival.shape[:-1]).copy())

    extra = {k: put(v) if isinstance(v, SurvivalCurves) else v for k, v in rel.extra.items()}
    return replace(rel, curves=put(rel.curves), extra=extra)


def _kaplan_meier_without_noise(rel: CurveResult, cohort: Cohort, public: PublicParameters) -> CurveResult:
    """A count mechanism with its noise switched off on a coarse public grid: the curves are the non-private
    Kaplan-Meier curves at the grid points (R's summary(fit, times = grid)), not the life table its noisy counts
    need, so that epsilon = inf reproduces the non-private numbers; the released counts stay the exact binned ones."""
    if (rel.counts is None or rel.mechanism == NonPrivate.name or public.grid.kind == "event-times"
            or "event_time_curves" in rel.extra):
        return rel
    competing = len(rel.curves.event_types) > 1
    exact = NonPrivate()._exact(cohort, public, competing)  # the caller adds each curve's end of follow-up
    trials = rel.curves.survival.shape[0]
    c = exact.curves
    rep = lambda a: np.repeat(a, trials, axis=0) if isinstance(a, np.ndarray) and a.ndim > 1 else a  # noqa: E731
    tiled: dict[str, Any] = {f.name: rep(getattr(c, f.name)) for f in fields(c)}
    curves = replace(c, **tiled)
    extra = {**rel.extra, "event_time_curves": exact.extra["event_time_curves"]}
    if "debiased_curves" in extra:  # no label noise: the de-biased curves are the curves
        extra["debiased_curves"] = curves
    note = ("Epsilon inf: no noise, so the curves are the non-private Kaplan-Meier curves at the grid points (R's "
            "summary(fit, times = grid)) with their Greenwood band; the counts are the exact binned counts.")
    return replace(rel, curves=curves, extra=extra, notes=[*rel.notes, note])


def _rows_in_memory(cohort: Any) -> bool:
    """A cohort whose rows are in memory (an engine's table is read by queries, not row by row)."""
    return isinstance(cohort, Cohort) and not hasattr(cohort, "time_table")


def _last_time(cohort: Cohort, group: str, public: PublicParameters) -> float:
    """The last time under observation (event or censoring) in ``group`` ("all": the whole cohort), no later than the
    curves' end (the public horizon, or the grid's last point): follow-up ends there. NaN if the group is empty."""
    times = (cohort.time if cohort.group is None or group == "all"
             else cohort.time[row_index(cohort.group, (group,)) == 0])
    if not times.size:
        return float("nan")
    return float(min(times.max(), max(_curves_end(public), 0.0)))


def _curves_end(public: PublicParameters) -> float:
    """Where the curves end: the grid's last point, or the horizon on the event-time grid."""
    return float(public.grid.points[-1]) if public.grid.kind != "event-times" else float(public.horizon)


def _first_time(cohort: Cohort, group: str) -> float:
    """The first time under observation (event or censoring) in ``group`` ("all": the whole cohort); NaN if the
    group is empty."""
    times = (cohort.time if cohort.group is None or group == "all"
             else cohort.time[row_index(cohort.group, (group,)) == 0])
    return float(times.min()) if times.size else float("nan")


def at_grid(curves: SurvivalCurves, points: np.ndarray) -> SurvivalCurves:
    """Read step-function curves at other time points (e.g. the public grid's right edges)."""
    vals = {name: curves.at_times(points, name) for name in
            ("survival", "lower", "upper", "lower_linear", "upper_linear", "greenwood", "cumulative_hazard")}
    cif = curves.at_times(points, "cumulative_incidence")
    cif_var = None if curves.incidence_variance is None else curves.at_times(points, "incidence_variance")
    chaz_var = None if curves.cumhaz_variance is None else curves.at_times(points, "cumhaz_variance")
    # number at risk and events at the new points: from the step function of the fine curves
    idx = np.searchsorted(curves.time, points, side="left")
    pad_r = np.concatenate([curves.at_risk, np.zeros(curves.at_risk.shape[:-1] + (1,))], axis=-1)
    at_risk = pad_r[..., np.minimum(idx, curves.time.size)]
    cum_d = np.concatenate([np.zeros(curves.events.shape[:-1] + (1,)), np.cumsum(curves.events, -1)], axis=-1)
    ev_at = cum_d[..., np.searchsorted(curves.time, points, side="right")]
    events = np.diff(np.concatenate([np.zeros(ev_at.shape[:-1] + (1,)), ev_at], axis=-1), axis=-1)
    cum_c = np.concatenate([np.zeros(curves.censored.shape[:-1] + (1,)), np.cumsum(curves.censored, -1)], axis=-1)
    ce_at = cum_c[..., np.searchsorted(curves.time, points, side="right")]
    censored = np.diff(np.concatenate([np.zeros(ce_at.shape[:-1] + (1,)), ce_at], axis=-1), axis=-1)
    return SurvivalCurves(np.asarray(points, float), curves.groups, vals["survival"], vals["lower"], vals["upper"],
                          vals["lower_linear"], vals["upper_linear"], vals["greenwood"], at_risk, events, censored,
                          vals["cumulative_hazard"], cif, curves.event_types, curves.alpha, incidence_variance=cif_var,
                          cumhaz_variance=chaz_var, follow_up_end=curves.follow_up_end,
                          follow_up_start=curves.follow_up_start)


def rmse(private: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Root mean squared error over the grid (last axis)."""
    return np.sqrt(np.mean((private - reference) ** 2, axis=-1))


def sup_norm(private: np.ndarray, reference: np.ndarray) -> np.ndarray:
    return np.max(np.abs(private - reference), axis=-1)
