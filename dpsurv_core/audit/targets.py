"""Whom the audit attacks, and how visibly one subject moves a released curve.

The target is a privacy unit (the subject id when the data has one, else the row). D' is D without
every row of the target (:func:`without`) or, for label-only mechanisms such as randomized response,
D with the target's group label changed (:func:`relabelled`). By default the target is the most
exposed unit: the one whose removal (or relabelling) moves the non-private result the most, measured
exactly for curves and log-rank statistics (leave-one-out counts, vectorised over units) and by the
one-step approximation theta_(-i) - theta ~ H^-1 grad l_i(theta) for the Weibull and regression fits.

Influential points (Veeraragavan et al. 2024, section 6.6): pairing run r on D with run r on D', the
grid points where |S~_D(t) - S~_D'(t)| exceeds 0.05, 0.1, 0.5 and 0.7.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dpsurv_core.curves import logrank
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.leave_one_out import _first_rows, _units, leave_one_out_counts
from dpsurv_core.curves.result import exact_counts, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError

THRESHOLDS = (0.05, 0.1, 0.5, 0.7)


@dataclass(frozen=True)
class Target:
    """The audited subject: a representative row, every row of the subject, and why it was chosen."""

    row: int
    rows: tuple[int, ...]
    why: str
    chosen_by: str  # "default" or "user"
    influence: float
    time: float
    event: int
    group: str | None = None
    new_group: str | None = None  # randomized response: the label the target gets in D'

    def why_named(self, label: Callable[[str], str]) -> str:
        """``why`` with the group codes (the target's and its new label's) named by ``label`` (their value labels)."""
        out = self.why
        if self.group is not None:
            out = out.replace(f", group {self.group})", f", group {label(str(self.group))})")
        if self.new_group is not None:
            new = label(str(self.new_group))
            out = out.replace(f"changes to {self.new_group} in D'", f"changes to {new} in D'")
            out = out.replace(f"group label to {self.new_group}", f"group label to {new}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "rows": list(self.rows), "why": self.why, "chosen_by": self.chosen_by,
                "influence": self.influence, "time": self.time, "event": self.event, "group": self.group,
                "new_group": self.new_group}


# ------------------------------------------------------------------------------------------- neighbours
def without(cohort: Cohort, target: Target) -> Cohort:
    """D' = D without every row of the target subject."""
    keep = np.ones(cohort.n, dtype=bool)
    keep[list(target.rows)] = False
    return cohort.subset(keep)


def relabelled(cohort: Cohort, target: Target) -> Cohort:
    """D' for randomized response: the target subject's rows get the label ``target.new_group``."""
    assert cohort.group is not None, "randomized response relabels a group column"
    group = cohort.group.astype(object).copy()
    group[list(target.rows)] = target.new_group
    return replace(cohort, group=group.astype(str))


def influential_points(curves_in: np.ndarray, curves_out: np.ndarray, thresholds: tuple[float, ...] = THRESHOLDS
                       ) -> tuple[dict[float, int], dict[float, np.ndarray]]:
    """Pair run r on D with run r on D' and count the grid points (over groups) where |S~_D - S~_D'|
    exceeds each threshold. Returns (total over runs, count per run)."""
    diff = np.abs(np.asarray(curves_in, float) - np.asarray(curves_out, float))
    diff = np.where(np.isfinite(diff), diff, 0.0).reshape(diff.shape[0], -1)
    per = {t: (diff > t).sum(axis=1) for t in thresholds}
    return {t: int(v.sum()) for t, v in per.items()}, per


# ------------------------------------------------------------------------------------------- units and rows
def _describe(cohort: Cohort, row: int) -> str:
    t = cohort.time[row]
    ev = "event" if cohort.event[row] else "censored"
    g = f", group {cohort.group[row]}" if cohort.group is not None else ""
    return f"row {row} (time {t:g} {cohort.time_unit}, {ev}{g})"


def check_row(cohort: Cohort, row: int) -> tuple[int, tuple[int, ...]]:
    """The row and every row of its subject; refuses a row outside the data."""
    if not (0 <= row < cohort.n):
        raise ParameterError(f"--target {row} is not a row of the data: choose a row from 0 to {cohort.n - 1}.")
    unit, _ = _units(cohort)
    rows = tuple(int(i) for i in np.flatnonzero(unit == unit[row]))
    return int(row), rows


def _make_target(cohort: Cohort, row: int, why: str, chosen_by: str, influence: float,
                 new_group: str | None = None) -> Target:
    row, rows = check_row(cohort, row)
    g = None if cohort.group is None else str(cohort.group[row])
    if len(rows) > 1:
        why += (f" The privacy unit is the subject: its {len(rows)} rows ({', '.join(map(str, rows))}) are "
                + ("relabelled together." if new_group is not None else "removed together."))
    return Target(row, rows, why, chosen_by, float(influence), float(cohort.time[row]), int(cohort.event[row]), g,
                  new_group)


def user_target(cohort: Cohort, row: int, label_categories: tuple[str, ...] | None = None) -> Target:
    """The subject of a row the user names. With ``label_categories`` (label-only mechanisms) D' gives it
    the next category's label; otherwise D' is the data without it."""
    new = None
    if label_categories is not None:
        cats = list(label_categories)
        assert cohort.group is not None, "label-only mechanisms need a group column"
        label = str(cohort.group[row])
        new = cats[((cats.index(label) if label in cats else -1) + 1) % len(cats)]
    action = f"its group label changes to {new} in D'" if label_categories is not None else "D' is the data without it"
    return _make_target(cohort, row, f"{_describe(cohort, row)} was chosen by the user; {action}.", "user", math.nan, new)


# ------------------------------------------------------------------------------------------- curves and log-rank
def _curve_influence(cohort: Cohort, public: PublicParameters, label_change: bool
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str | None]]:
    """Sup-norm change of the non-private KM curves on the public grid when each unit is removed (or, with
    ``label_change``, moved to the next group category). Returns (influence per unit, argmax point,
    at-risk there, first row per unit, new labels)."""
    exact, contrib, loo, unit = leave_one_out_counts(cohort, public)
    n_units = contrib.n.shape[0]
    new_labels: list[str | None] = [None] * n_units
    if label_change:
        groups = exact.groups
        gi = np.argmax(contrib.n, axis=1)  # the unit's group (one label per subject)
        gj = (gi + 1) % len(groups)
        moved = np.zeros_like(contrib.n)
        moved[np.arange(n_units), gj] = contrib.n[np.arange(n_units), gi]
        ev_m = np.zeros_like(contrib.events)
        ev_m[np.arange(n_units), gj] = contrib.events[np.arange(n_units), gi]
        ce_m = np.zeros_like(contrib.censored)
        ce_m[np.arange(n_units), gj] = contrib.censored[np.arange(n_units), gi]
        loo = replace(loo, n=loo.n + moved, events=loo.events + ev_m, censored=loo.censored + ce_m)
        new_labels = [groups[j] for j in gj]
    base = estimate(exact, exact_incidence_variance=False).survival
    curves = estimate(loo, exact_incidence_variance=False)  # survival only: no (U, G, K, J) variance
    diff = np.abs(curves.survival - base[None]).reshape(n_units, -1)
    diff = np.where(np.isfinite(diff), diff, 0.0)
    arg = diff.argmax(axis=1)
    r = exact.at_risk().reshape(-1)[arg]
    return diff.max(axis=1), arg, r, _first_rows(unit, n_units), new_labels


def select_curve_target(cohort: Cohort, public: PublicParameters, label_change: bool = False,
                        eligible: np.ndarray | None = None) -> Target:
    """Default target for curve releases: the unit whose removal (or label change) moves the non-private
    Kaplan-Meier curves on the public grid the most; ties go to the later time (the latest event first).
    ``eligible`` (one flag per unit): choose among these units only (a deterministic disclosure-control rule: the
    units whose removal changes its released table)."""
    infl, arg, risk, first, new_labels = _curve_influence(cohort, public, label_change)
    valid = first >= 0
    if eligible is not None and np.any(valid & eligible):
        valid = valid & eligible
    order = np.lexsort((cohort.event[first], cohort.time[first], infl))[::-1]
    order = order[valid[order]]
    u = int(order[0])
    row = int(first[u])
    J = public.grid.bins
    t_point = float(public.grid.points[int(arg[u]) % J])
    bin_j = int(np.clip(np.searchsorted(public.grid.edges, cohort.time[row], side="left"), 1, J)) - 1
    exact = exact_counts(cohort, public.grid, public)
    alone = bool(cohort.event[row]) and exact.events_total.sum(axis=0)[bin_j] == 1
    action = (f"changing its group label to {new_labels[u]}" if label_change else "removing it")
    among = "" if eligible is None else ", among the subjects whose removal changes the released table"
    why = (f"{_describe(cohort, row)} was chosen as the most exposed subject{among}: {action} moves the non-private "
           f"survival curve on the public grid the most, by {infl[u]:.3f} at {t_point:g} {cohort.time_unit}, where "
           f"{risk[u]:.0f} subject(s) are at risk")
    why += "; its event is the only one in its bin." if alone else "."
    return _make_target(cohort, row, why, "default", infl[u], new_labels[u])


def select_logrank_target(cohort: Cohort, public: PublicParameters, eligible: np.ndarray | None = None) -> Target:
    """Default target for log-rank releases: the unit whose removal changes the exact overall statistic the most;
    ``eligible`` (one flag per unit): among these units only (a deterministic disclosure-control rule: the units
    whose removal changes its released table)."""
    exact, _, loo, unit = leave_one_out_counts(cohort, public)
    base = float(logrank.overall(tile_trials(exact, 1)).statistic[0])
    with np.errstate(all="ignore"):
        stat = logrank.overall(loo).statistic
    change = np.abs(np.nan_to_num(stat, nan=base) - base)
    first = _first_rows(unit, change.size)
    valid = first >= 0
    if eligible is not None and np.any(valid & eligible):
        valid = valid & eligible
    order = np.lexsort((cohort.time[first], change))[::-1]
    u = int(order[valid[order]][0])
    row = int(first[u])
    among = "" if eligible is None else ", among the subjects whose removal changes the released table"
    why = (f"{_describe(cohort, row)} was chosen as the most exposed subject{among}: removing it changes the "
           f"non-private overall log-rank chi-square the most, from {base:.3f} by {change[u]:.3f}.")
    return _make_target(cohort, row, why, "default", change[u])


# ------------------------------------------------------------------------------------------- Weibull
def weibull_influence(t: np.ndarray, d: np.ndarray, shape: float, scale: float) -> np.ndarray:
    """One-step leave-one-out change of the Weibull MLE theta = (p, lambda) for every subject.

    With u_i = (t_i/lambda)^p and L_i = ln(t_i/lambda), the score of subject i is
      d l_i/dp = d_i (1/p + L_i) - u_i L_i,   d l_i/dlambda = (p/lambda)(u_i - d_i),
    and the Hessian H of the log likelihood sums
      d2/dp2 = -d_i/p^2 - u_i L_i^2,   d2/dp dlambda = (-d_i + u_i + p u_i L_i)/lambda,
      d2/dlambda2 = -(p/lambda^2)(u_i - d_i) - p^2 u_i/lambda^2.
    Removing i shifts theta by about H^-1 g_i; returns (n, 2)."""
    p, lam = shape, scale
    u = (t / lam) ** p
    L = np.log(t / lam)
    g = np.column_stack([d * (1.0 / p + L) - u * L, (p / lam) * (u - d)])
    h11 = np.sum(-d / p ** 2 - u * L ** 2)
    h12 = np.sum(-d + u + p * u * L) / lam
    h22 = np.sum(-(p / lam ** 2) * (u - d) - p ** 2 * u / lam ** 2)
    H = np.array([[h11, h12], [h12, h22]])
    return np.linalg.solve(H, g.T).T


def select_weibull_target(cohort: Cohort, sample: Any) -> Target:
    """Default target for Weibull releases: the unit with the largest standardised influence on (p*, lambda*)."""
    from dpsurv_core.weibull.model import weibull_mle

    fit = weibull_mle(sample)
    delta = weibull_influence(sample.t, sample.d.astype(float), fit.shape, fit.scale_normalised)
    unit, n_units = _units(cohort)
    per = np.zeros((n_units, 2))
    np.add.at(per, unit, delta)
    rel = np.abs(per[:, 0]) / fit.shape + np.abs(per[:, 1]) / fit.scale_normalised
    first = _first_rows(unit, n_units)
    order = np.lexsort((cohort.time[first], rel))[::-1]
    u = int(order[0])
    row = int(first[u])
    why = (f"{_describe(cohort, row)} was chosen as the most exposed subject: removing it moves the non-private "
           f"Weibull fit the most (about {per[u, 0]:+.3g} on the shape {fit.shape:.3g} and {per[u, 1] * sample.horizon:+.3g} "
           f"{cohort.time_unit} on the scale {fit.scale:.4g}, a one-step leave-one-out approximation).")
    return _make_target(cohort, row, why, "default", rel[u])


# ------------------------------------------------------------------------------------------- regression
def regression_influence(pp: Any, w: np.ndarray, lam: float) -> np.ndarray:
    """One-step leave-one-out change of the regularised fit w* for every subject of ``pp``:
    H^-1 grad L_i(w*) with H = sum_i grad^2 L_i(w*) + n Lambda I and
    grad L_i = sum_j (sigma(w.z_ij) - y_ij) z_ij (n = the public normaliser). Returns (n, dim)."""
    from scipy import special

    from dpsurv_core.regression.model import hessian

    r = special.expit(pp.Z @ w) - pp.y
    per_row = pp.Z * r[:, None]
    grads = np.add.reduceat(per_row, pp.offsets[:-1], axis=0)
    H = hessian(w, pp) + pp.n_public * lam * np.eye(pp.dim)
    return np.linalg.solve(H, grads.T).T


def select_regression_target(cohort: Cohort, pp: Any, lam: float, complete: np.ndarray) -> Target:
    """Default target for regression releases: the unit whose removal moves the non-private regularised
    fit w*(Lambda) the most (Euclidean norm). ``complete`` marks the rows the person-period data ``pp``
    holds (those with every covariate)."""
    from dpsurv_core.regression.model import minimise

    w = minimise(pp, lam)
    delta = regression_influence(pp, w, lam)
    rows = np.flatnonzero(complete)
    unit_all, n_units = _units(cohort)
    unit = unit_all[rows]
    per = np.zeros((n_units, delta.shape[1]))
    np.add.at(per, unit, delta)
    size = np.linalg.norm(per, axis=1)
    first = _first_rows(unit_all, n_units)
    order = np.lexsort((cohort.time[first], size))[::-1]
    u = int(order[0])
    row = int(first[u])
    beta = per[u, :pp.p] * pp.encoding.to_original
    parts = ", ".join(f"{n} {v:+.3g}" for n, v in zip(pp.encoding.names, beta))
    why = (f"{_describe(cohort, row)} was chosen as the most exposed subject: removing it moves the "
           f"non-private regularised fit the most (coefficient changes {parts}; a one-step leave-one-out "
           "approximation).")
    return _make_target(cohort, row, why, "default", float(size[u]))
