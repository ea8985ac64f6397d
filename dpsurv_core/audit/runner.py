"""Privacy audit (spec section 6): membership-inference diagnostics and an empirical epsilon.

For a target subject s and the neighbouring pair D (with s) and D' (without s; for randomized
response, D' gives s another group label instead), the audit

1. picks the target: by default the most exposed subject for the analysis (the one whose removal
   moves the non-private result the most, see :func:`select_target`), or a row the user names;
2. runs the mechanism R times on D and R times on D' (seeded :class:`SimulationNoise`, vectorised
   over the trials) and keeps the released quantities as two (R, q) arrays;
3. counts *influential points* (paper 004, section 6.6): pairing run r on D with run r on D', the
   grid points where |S~_D(t) - S~_D'(t)| exceeds 0.05, 0.1, 0.5 and 0.7 (curve releases only);
4. mounts a *distinguishing attack* (after Jagielski et al. 2020 and Nasr et al. 2021). On the
   first half of the runs of each world it fits candidate likelihood-ratio scores

       Laplace:  s(x) = sum_{k in K} (|x_k - m'_k| - |x_k - m_k|) / b_k
       Gaussian: s(x) = sum_{k in K} (x_k - (mu_k + mu'_k) / 2)(mu_k - mu'_k) / v_k

   (m, m' medians and b the mean absolute deviation on D and D'; mu, mu', v means and pooled
   variance), over coordinate sets K nearest the target (the released cells or grid points whose
   noise-free value differs between D and D', and the coordinates whose training means differ
   most), plus the best single coordinates. The training half is split in two folds: the scores
   are fitted on one fold, and the score, its orientation and its threshold are chosen on the other
   by the bound below (both ways round, the better kept), so nothing is judged on the runs it was
   fitted on. Scores are rounded to 1e-9 of their training range, so the attack cannot read the
   floating-point low bits of the simulation sampler (Mironov 2012). Then, on the held-out half only,
   TPR = Pr[s > thr | D], FPR = Pr[s > thr | D'], their Clopper-Pearson 95% bounds and

       eps_lo = max( ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo)) ).

   (The spec's second term, ln((1 - FPR_lo) / (1 - TPR_hi)), takes the confidence bounds the wrong way
   round and is not a lower bound: with 999/1000 positives in both worlds, i.e. no information, it
   gives 5.4. Each ratio is bounded from below by its numerator's lower and its denominator's upper
   bound, as in Jagielski et al.: (1 - FPR_hi) / FNR_hi.)

   An eps-DP mechanism satisfies TPR <= e^eps FPR and 1 - FPR <= e^eps (1 - TPR) for every test, so
   eps_lo above the charged epsilon (beyond the chance the 95% bounds leave) is a bug. The held-out
   ROC curve and the membership advantage TPR - FPR are reported too; eps-DP bounds that advantage
   by (e^eps - 1) / (e^eps + 1) = tanh(eps / 2).

An audit is a simulation on the data for the data holder or an ethics board, not a release: it is
never charged to a ledger, and its numbers (which come from the raw data) must not be published.
The binomial machinery is :mod:`dpsurv_core.audit.distinguish`.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpsurv_core.audit.distinguish import clopper_pearson, epsilon_lower_bound, laplace_score
from dpsurv_core.curves import logrank
from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.release import exact_counts, groups_of, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import CHANGE_LABEL, EXACT, GROUP_LABEL, PrivacyCost
from dpsurv_core.privacy.noise import SimulationNoise

THRESHOLDS = (0.05, 0.1, 0.5, 0.7)
ANALYSES = ("km", "logrank", "weibull", "regression")
LEVEL = 0.95
DEFAULT_TRIALS = 1000
DEFAULT_LAMBDA = 0.01  # the regression command's default ridge penalty for the private fits
MAX_TRIALS = 200_000
ROC_POINTS = 201
Progress = Callable[[float, str], None]


# ------------------------------------------------------------------------------------------- results
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

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "rows": list(self.rows), "why": self.why, "chosen_by": self.chosen_by,
                "influence": self.influence, "time": self.time, "event": self.event, "group": self.group,
                "new_group": self.new_group}


@dataclass(frozen=True)
class Attack:
    """The distinguishing test as measured on the held-out runs."""

    score: str
    orientation: int
    threshold: float
    tpr: float
    fpr: float
    tpr_ci: tuple[float, float]
    fpr_ci: tuple[float, float]
    epsilon_lower: float
    epsilon_point: float
    runs: int
    roc_fpr: np.ndarray
    roc_tpr: np.ndarray
    auc: float

    @property
    def advantage(self) -> float:
        """Membership advantage TPR - FPR on the held-out runs (0 = a coin toss)."""
        return self.tpr - self.fpr

    @property
    def advantage_lower(self) -> float:
        """A 95% lower bound on the advantage: TPR_lo - FPR_hi, floored at 0."""
        return max(self.tpr_ci[0] - self.fpr_ci[1], 0.0)


@dataclass
class AuditResult:
    analysis: str
    mechanism: str
    cost: PrivacyCost
    target: Target
    trials: int
    seed: int
    attack: Attack
    influential: dict[float, int] | None
    influential_per_trial: dict[float, np.ndarray] | None
    grid_points: int | None
    dataset: str
    n_subjects: int
    notes: list[str] = field(default_factory=list)

    @property
    def epsilon_charged(self) -> float:
        return self.cost.epsilon

    @property
    def within_charge(self) -> bool:
        return self.attack.epsilon_lower <= self.cost.epsilon

    def sentence(self) -> str:
        """One sentence a non-specialist can read."""
        return plain_sentence(self)

    def to_dict(self) -> dict[str, Any]:
        a = self.attack
        infl = None if self.influential is None else {f"{t:g}": int(c) for t, c in self.influential.items()}
        per = None if self.influential_per_trial is None else {
            f"{t:g}": float(np.mean(v)) for t, v in self.influential_per_trial.items()}
        return {
            "analysis": self.analysis, "mechanism": self.mechanism, "dataset": self.dataset,
            "n_subjects": self.n_subjects, "epsilon_charged": self.cost.epsilon, "delta": self.cost.delta,
            "guarantee": self.cost.guarantee, "protects": self.cost.protects, "neighbouring": self.cost.neighbouring,
            "empirical_epsilon_lower": a.epsilon_lower, "empirical_epsilon_point": a.epsilon_point,
            "within_charge": self.within_charge, "trials": self.trials, "held_out_runs": a.runs, "seed": self.seed,
            "target": self.target.to_dict(), "tpr": a.tpr, "fpr": a.fpr, "tpr_ci": list(a.tpr_ci),
            "fpr_ci": list(a.fpr_ci), "confidence": LEVEL, "threshold": a.threshold, "score": a.score,
            "advantage": a.advantage, "advantage_lower": a.advantage_lower,
            "advantage_bound": advantage_bound(self.cost.epsilon), "auc": a.auc,
            "roc": {"fpr": a.roc_fpr, "tpr": a.roc_tpr},
            "influential_points": infl, "influential_points_per_trial": per, "influential_thresholds": list(THRESHOLDS),
            "grid_points": self.grid_points, "sentence": self.sentence(),
            "charged_to_ledger": False,
            "notes": self.notes + ["An audit is a simulation on the data for the data holder or an ethics board, not a "
                                   "release: it is not charged to the ledger and its numbers must not be published."],
        }


def advantage_bound(epsilon: float) -> float:
    """Largest membership advantage TPR - FPR an eps-DP release allows: (e^eps - 1)/(e^eps + 1) = tanh(eps/2)."""
    return 1.0 if math.isinf(epsilon) else math.tanh(epsilon / 2.0)


def plain_sentence(result: AuditResult) -> str:
    eps = result.cost.epsilon
    a = result.attack
    label = result.cost.protects == GROUP_LABEL
    what = (f"which group this patient belongs to ({result.target.group} or {result.target.new_group})" if label
            else "whether this patient is in the data")
    found = (f"the strongest attack simulated here reached {100 * max(a.advantage, 0.0):.0f}% (at least "
             f"{100 * a.advantage_lower:.0f}% with 95% confidence)")
    if math.isinf(eps):
        return (f"This release is not private: an attacker who knows everyone else's record could tell {what} with up "
                f"to 100% advantage over a coin toss; {found}.")
    approx = " if the sampler had converged" if result.cost.guarantee != EXACT else ""
    return (f"An attacker who knows everyone else's record could tell {what} with at most "
            f"{100 * advantage_bound(eps):.0f}% advantage over a coin toss (the guarantee of epsilon {eps:g}{approx}); "
            f"{found}.")


# ------------------------------------------------------------------------------------------- attack
@dataclass(frozen=True)
class _Score:
    label: str
    fn: Callable[[np.ndarray], np.ndarray]


def _floor(scale: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Keep fitted scales positive (deterministic releases have scale 0)."""
    return np.maximum(scale, 1e-9 * np.maximum(np.abs(ref), 1.0))


def candidate_scores(train_in: np.ndarray, train_out: np.ndarray, focus: dict[str, np.ndarray],
                     top: int = 8) -> dict[str, _Score]:
    """Likelihood-ratio-style scores fitted on training runs (high = looks like D), by a stable name:
    Laplace and Gaussian log likelihood ratios over each focus set and over the ``top`` coordinates
    whose training means differ most, and the two best single coordinates of each set."""
    m_in, m_out = np.median(train_in, 0), np.median(train_out, 0)
    b = 0.5 * (np.mean(np.abs(train_in - m_in), 0) + np.mean(np.abs(train_out - m_out), 0))
    b = _floor(b, 0.5 * (m_in + m_out))
    mu_in, mu_out = train_in.mean(0), train_out.mean(0)
    var = 0.5 * (train_in.var(0) + train_out.var(0))
    var = np.maximum(var, 1e-18 * np.maximum((0.5 * (mu_in + mu_out)) ** 2, 1.0))
    n = train_in.shape[0]
    sep = np.maximum(np.abs(mu_in - mu_out) / np.sqrt(2.0 * var / max(n, 1)), np.abs(m_in - m_out) / b)
    sets = {k: np.asarray(v, dtype=np.int64) for k, v in focus.items() if np.asarray(v).size}
    ranked = np.argsort(-sep, kind="stable")
    sets["most different"] = ranked[: min(top, ranked.size)]
    out: dict[str, _Score] = {}
    for name, idx in sets.items():
        mi, mo, bi = m_in[idx], m_out[idx], b[idx]
        out[f"laplace:{name}"] = _Score(f"Laplace likelihood ratio ({name})",
                                        lambda x, idx=idx, mi=mi, mo=mo, bi=bi: laplace_score(x[:, idx], mi, mo, bi))
        c, w = 0.5 * (mu_in[idx] + mu_out[idx]), (mu_in[idx] - mu_out[idx]) / var[idx]
        out[f"gauss:{name}"] = _Score(f"Gaussian likelihood ratio ({name})",
                                      lambda x, idx=idx, c=c, w=w: (x[:, idx] - c) @ w)
        for rank, k in enumerate(idx[np.argsort(-sep[idx], kind="stable")][:2]):
            out[f"single:{name}:{rank}"] = _Score(f"released coordinate {int(k)} ({name})",
                                                  lambda x, k=int(k): x[:, k])
    both = np.concatenate([train_in, train_out])
    return {k: _quantised(v, both) for k, v in out.items()}


def _quantised(score: _Score, train: np.ndarray) -> _Score:
    """The score rounded to a step of 1e-9 of its largest training magnitude (fixed on the training runs).

    Values that are equal in exact arithmetic (e.g. the flat tails of the Laplace ratio) differ in their
    last bits in floating point, and those bits differ between the worlds when a release adds noise to
    an exact count (1 + noise keeps fewer low bits than noise alone). That is the floating-point side
    channel of naive Laplace sampling (Mironov 2012), a property of the simulation sampler, not of the
    mechanism (releases use OpenDP's samplers), so the audit must not exploit it."""
    with np.errstate(all="ignore"):
        ref = score.fn(train)
    finite = np.abs(ref[np.isfinite(ref)])
    step = 1e-9 * (float(finite.max()) if finite.size and finite.max() > 0 else 1.0)
    return _Score(score.label, lambda x, f=score.fn, q=step: np.round(f(x) / q) * q)


def _threshold_bounds(s_in: np.ndarray, s_out: np.ndarray, thresholds: np.ndarray, level: float
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """eps_lo (both orientations) for tests 'score > t': returns (eps for +score, eps for -score, t)."""
    a, b = np.sort(s_in), np.sort(s_out)
    tp = a.size - np.searchsorted(a, thresholds, side="right")
    fp = b.size - np.searchsorted(b, thresholds, side="right")
    t_lo, t_hi = clopper_pearson(tp, a.size, level)
    f_lo, f_hi = clopper_pearson(fp, b.size, level)
    plus = epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi)
    # -score > -t  <=>  score < t: counts of the complement side (ties at t count in neither; thresholds are midpoints)
    tp_m, fp_m = np.searchsorted(a, thresholds, side="left"), np.searchsorted(b, thresholds, side="left")
    t_lo, t_hi = clopper_pearson(tp_m, a.size, level)
    f_lo, f_hi = clopper_pearson(fp_m, b.size, level)
    minus = epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi)
    return plus, minus, thresholds


def _midpoints(values: np.ndarray, max_points: int = 512) -> np.ndarray:
    u = np.unique(values[np.isfinite(values)])
    if u.size == 0:
        return np.array([0.0])
    mids = np.concatenate([[u[0] - 1.0], 0.5 * (u[1:] + u[:-1]), [u[-1] + 1.0]])
    if mids.size > max_points:
        mids = np.unique(np.quantile(mids, np.linspace(0.0, 1.0, max_points)))
    return mids


def point_epsilon(tpr: float, fpr: float) -> float:
    """max(ln(TPR / FPR), ln((1 - FPR) / (1 - TPR))) from the rates themselves (inf when a denominator is 0)."""
    vals = [0.0]
    for num, den in ((tpr, fpr), (1.0 - fpr, 1.0 - tpr)):
        if num > 0:
            vals.append(math.inf if den <= 0 else math.log(num / den))
    return max(vals)


def roc_curve(s_in: np.ndarray, s_out: np.ndarray, points: int = ROC_POINTS) -> tuple[np.ndarray, np.ndarray, float]:
    """Held-out ROC (FPR, TPR from (0,0) to (1,1)) for tests 'score > t', and its area."""
    thr = np.concatenate([[np.inf], np.sort(np.unique(np.concatenate([s_in, s_out])))[::-1], [-np.inf]])
    a, b = np.sort(s_in), np.sort(s_out)
    tpr = (a.size - np.searchsorted(a, thr, side="left")) / max(a.size, 1)
    fpr = (b.size - np.searchsorted(b, thr, side="left")) / max(b.size, 1)
    auc = float(np.sum(np.diff(fpr) * 0.5 * (tpr[1:] + tpr[:-1])))
    if fpr.size > points:
        keep = np.unique(np.concatenate([[0, fpr.size - 1], np.linspace(0, fpr.size - 1, points).round().astype(int)]))
        fpr, tpr = fpr[keep], tpr[keep]
    return fpr, tpr, auc


def distinguish(released_in: np.ndarray, released_out: np.ndarray, focus: dict[str, np.ndarray] | None = None,
                level: float = LEVEL) -> Attack:
    """The distinguishing attack on (R, q) releases from D (``released_in``) and D' (``released_out``).

    Scores and threshold are fitted on the first half of each world's runs, TPR/FPR with Clopper-Pearson
    bounds measured on the second half (see the module docstring)."""
    x_in = np.nan_to_num(np.asarray(released_in, dtype=float), nan=0.0, posinf=1e300, neginf=-1e300)
    x_out = np.nan_to_num(np.asarray(released_out, dtype=float), nan=0.0, posinf=1e300, neginf=-1e300)
    if x_in.ndim != 2 or x_out.ndim != 2 or x_in.shape[1] != x_out.shape[1]:
        raise ParameterError("The releases on D and D' must be two (runs, quantities) arrays of the same width.")
    if min(x_in.shape[0], x_out.shape[0]) < 4:
        raise ParameterError("The audit needs at least 4 runs per data set (2 to fit the attack, 2 to test it).")
    h_in, h_out = x_in.shape[0] // 2, x_out.shape[0] // 2
    tr_in, te_in, tr_out, te_out = x_in[:h_in], x_in[h_in:], x_out[:h_out], x_out[h_out:]
    focus = focus or {}
    # Two-stage training, so nothing is judged on the runs it was fitted on: the scores are fitted on one
    # fold of the training half, the score, its orientation and the threshold are chosen on the other
    # fold (both ways round; the better pipeline by its selection-fold bound is kept); the held-out
    # half is used only to measure.
    folds = [(slice(0, None, 2), slice(1, None, 2)), (slice(1, None, 2), slice(0, None, 2))]
    best: tuple[float, float, _Score | None, int, float] = (-1.0, -1.0, None, 1, 0.0)
    with np.errstate(all="ignore"):
        for fit, sel in folds:
            for cand in candidate_scores(tr_in[fit], tr_out[fit], focus).values():
                s_in, s_out = cand.fn(tr_in[sel]), cand.fn(tr_out[sel])
                if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
                    continue
                plus, minus, thr = _threshold_bounds(s_in, s_out, _midpoints(np.concatenate([s_in, s_out])), level)
                sep = abs(float(np.median(s_in) - np.median(s_out)))
                for orient, vals in ((1, plus), (-1, minus)):
                    i = int(np.argmax(vals))
                    if (float(vals[i]), sep) > best[:2]:
                        best = (float(vals[i]), sep, cand, orient, float(thr[i]))
    sc, orient, thr = best[2], best[3], best[4]
    if sc is None:  # every score degenerate: a coin toss
        sc, orient, thr = _Score("constant", lambda x: np.zeros(x.shape[0])), 1, 0.0
    with np.errstate(all="ignore"):
        s_in, s_out = orient * sc.fn(te_in), orient * sc.fn(te_out)
    t = orient * thr
    tp = int(np.sum(s_in > t))
    fp = int(np.sum(s_out > t))
    t_lo, t_hi = clopper_pearson(tp, s_in.size, level)
    f_lo, f_hi = clopper_pearson(fp, s_out.size, level)
    eps_lo = float(epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi))
    tpr, fpr = tp / s_in.size, fp / s_out.size
    eps_pt = point_epsilon(tpr, fpr)
    rf, rt, auc = roc_curve(s_in, s_out)
    return Attack(sc.label + (" (reversed)" if orient < 0 else ""), orient, float(t), tpr, fpr,
                  (float(t_lo), float(t_hi)), (float(f_lo), float(f_hi)), eps_lo, eps_pt,
                  int(min(s_in.size, s_out.size)), rf, rt, auc)


def influential_points(curves_in: np.ndarray, curves_out: np.ndarray, thresholds: tuple[float, ...] = THRESHOLDS
                       ) -> tuple[dict[float, int], dict[float, np.ndarray]]:
    """Paper 004, section 6.6: pair run r on D with run r on D' and count the grid points (over groups)
    where |S~_D - S~_D'| exceeds each threshold. Returns (total over runs, count per run)."""
    diff = np.abs(np.asarray(curves_in, float) - np.asarray(curves_out, float))
    diff = np.where(np.isfinite(diff), diff, 0.0).reshape(diff.shape[0], -1)
    per = {t: (diff > t).sum(axis=1) for t in thresholds}
    return {t: int(v.sum()) for t, v in per.items()}, per


# ------------------------------------------------------------------------------------------- helpers
def _units(cohort: Cohort) -> tuple[np.ndarray, int]:
    """Privacy unit of every row (the subject id when given, else the row) and the number of units."""
    if cohort.subject is None:
        return np.arange(cohort.n), cohort.n
    _, inv = np.unique(cohort.subject, return_inverse=True)
    return inv, int(inv.max()) + 1 if inv.size else 0


def _first_rows(unit: np.ndarray, n_units: int) -> np.ndarray:
    first = np.full(n_units, -1, dtype=np.int64)
    first[unit[::-1]] = np.arange(unit.size)[::-1]
    return first


def fingerprint(cohort: Cohort) -> str:
    """A short hash of the cohort's arrays (for caches keyed by data identity)."""
    h = hashlib.sha1()
    for a in (cohort.time, cohort.event, cohort.group, cohort.subject, cohort.event_type):
        if a is not None:
            h.update(np.ascontiguousarray(a).astype(str if a.dtype == object else a.dtype).tobytes())
    h.update(pd.util.hash_pandas_object(cohort.covariates, index=False).to_numpy().tobytes()
             if len(cohort.covariates.columns) else b"")
    return h.hexdigest()[:16]


def _describe(cohort: Cohort, row: int) -> str:
    t = cohort.time[row]
    ev = "event" if cohort.event[row] else "censored"
    g = f", group {cohort.group[row]}" if cohort.group is not None else ""
    return f"row {row} (time {t:g} {cohort.time_unit}, {ev}{g})"


def _target_from_row(cohort: Cohort, row: int) -> tuple[int, tuple[int, ...]]:
    if not (0 <= row < cohort.n):
        raise ParameterError(f"--target {row} is not a row of the data: choose a row from 0 to {cohort.n - 1}.")
    unit, _ = _units(cohort)
    rows = tuple(int(i) for i in np.flatnonzero(unit == unit[row]))
    return int(row), rows


def _make_target(cohort: Cohort, row: int, why: str, chosen_by: str, influence: float,
                 new_group: str | None = None) -> Target:
    row, rows = _target_from_row(cohort, row)
    g = None if cohort.group is None else str(cohort.group[row])
    if len(rows) > 1:
        why += (f" The privacy unit is the subject: its {len(rows)} rows ({', '.join(map(str, rows))}) are "
                + ("relabelled together." if new_group is not None else "removed together."))
    return Target(row, rows, why, chosen_by, float(influence), float(cohort.time[row]), int(cohort.event[row]), g,
                  new_group)


def without(cohort: Cohort, target: Target) -> Cohort:
    """D' = D without every row of the target subject."""
    keep = np.ones(cohort.n, dtype=bool)
    keep[list(target.rows)] = False
    return cohort.subset(keep)


def relabelled(cohort: Cohort, target: Target) -> Cohort:
    """D' for randomized response: the target subject's rows get the label ``target.new_group``."""
    group = cohort.group.astype(object).copy()
    group[list(target.rows)] = target.new_group
    return replace(cohort, group=group.astype(str))


def _other_label(categories: tuple[str, ...], label: str) -> str:
    cats = list(categories)
    i = cats.index(label) if label in cats else -1
    return cats[(i + 1) % len(cats)]


# ------------------------------------------------------------------------------------------- influence
def leave_one_out_counts(cohort: Cohort, public: PublicParameters, competing: bool = False
                         ) -> tuple[BinnedCounts, BinnedCounts, np.ndarray, np.ndarray]:
    """Exact counts on the public grid for D and, vectorised, for D minus each privacy unit.

    Every row's own cells are counted in one call (each row as its own "group"), summed per unit
    into the unit's real group: returns (exact, contributions (U, G, ...), loo (U, G, ...) with a
    leading unit axis, unit index per row)."""
    groups = groups_of(cohort, public)
    exact = count(cohort, public.grid, groups, competing)
    unit, n_units = _units(cohort)
    labels = tuple(str(i) for i in range(cohort.n))
    solo = Cohort(cohort.time, cohort.event, np.array(labels, dtype=object), None, cohort.event_type,
                  cohort.event_type_labels, name=cohort.name)
    rows = count(solo, public.grid, labels, competing)  # (n,) (n, K, J) (n, J)
    if groups is None:
        gi = np.zeros(cohort.n, dtype=np.int64)
    else:
        uniq, inv = np.unique(cohort.group.astype(str), return_inverse=True)
        lookup = {g: i for i, g in enumerate(groups)}
        gi = np.array([lookup.get(str(g), -1) for g in uniq], dtype=np.int64)[inv]
    ok = gi >= 0
    G = len(exact.groups)
    n_c = np.zeros((n_units, G))
    ev_c = np.zeros((n_units, G, *exact.events.shape[-2:]))
    ce_c = np.zeros((n_units, G, exact.censored.shape[-1]))
    np.add.at(n_c, (unit[ok], gi[ok]), rows.n[ok])
    np.add.at(ev_c, (unit[ok], gi[ok]), rows.events[ok])
    np.add.at(ce_c, (unit[ok], gi[ok]), rows.censored[ok])
    contrib = BinnedCounts(exact.grid, exact.groups, n_c, ev_c, ce_c, exact.event_types)
    loo = BinnedCounts(exact.grid, exact.groups, exact.n[None] - n_c, exact.events[None] - ev_c,
                       exact.censored[None] - ce_c, exact.event_types)
    return exact, contrib, loo, unit


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
    base = estimate(exact).survival
    curves = estimate(loo)
    diff = np.abs(curves.survival - base[None]).reshape(n_units, -1)
    diff = np.where(np.isfinite(diff), diff, 0.0)
    arg = diff.argmax(axis=1)
    r = exact.at_risk().reshape(-1)[arg]
    return diff.max(axis=1), arg, r, _first_rows(unit, n_units), new_labels


def select_curve_target(cohort: Cohort, public: PublicParameters, label_change: bool = False) -> Target:
    """Default target for curve releases: the unit whose removal (or label change) moves the non-private
    Kaplan-Meier curves on the public grid the most; ties go to the later time (the latest event first)."""
    infl, arg, risk, first, new_labels = _curve_influence(cohort, public, label_change)
    valid = first >= 0
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
    why = (f"{_describe(cohort, row)} was chosen as the most exposed subject: {action} moves the non-private "
           f"survival curve on the public grid the most, by {infl[u]:.3f} at {t_point:g} {cohort.time_unit}, where "
           f"{risk[u]:.0f} subject(s) are at risk")
    why += "; its event is the only one in its bin." if alone else "."
    return _make_target(cohort, row, why, "default", infl[u], new_labels[u])


def select_logrank_target(cohort: Cohort, public: PublicParameters) -> Target:
    """Default target for log-rank releases: the unit whose removal changes the exact overall statistic the most."""
    exact, _, loo, unit = leave_one_out_counts(cohort, public)
    base = float(logrank.overall(tile_trials(exact, 1)).statistic[0])
    with np.errstate(all="ignore"):
        stat = logrank.overall(loo).statistic
    change = np.abs(np.nan_to_num(stat, nan=base) - base)
    first = _first_rows(unit, change.size)
    order = np.lexsort((cohort.time[first], change))[::-1]
    u = int(order[first[order] >= 0][0])
    row = int(first[u])
    why = (f"{_describe(cohort, row)} was chosen as the most exposed subject: removing it changes the non-private "
           f"overall log-rank chi-square the most, from {base:.3f} by {change[u]:.3f}.")
    return _make_target(cohort, row, why, "default", change[u])


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


# ------------------------------------------------------------------------------------------- adapters
@dataclass
class Released:
    """R releases on D and on D' as (R, q) arrays, the coordinates nearest the target, optional curves."""

    released_in: np.ndarray
    released_out: np.ndarray
    focus: dict[str, np.ndarray]
    curves_in: np.ndarray | None = None
    curves_out: np.ndarray | None = None
    grid_points: int | None = None
    notes: list[str] = field(default_factory=list)


class Adapter:
    """What the audit needs from an analysis: a mechanism, its cost, a default target and the releases."""

    analysis: str = ""
    mechanism_name: str = ""
    cohort: Cohort

    @property
    def cost(self) -> PrivacyCost:
        raise NotImplementedError

    @property
    def label_only(self) -> bool:
        return self.cost.protects == GROUP_LABEL or self.cost.neighbouring == CHANGE_LABEL

    def default_target(self) -> Target:
        raise NotImplementedError

    def target(self, row: int | None) -> Target:
        if row is None:
            return self.default_target()
        row, _ = _target_from_row(self.cohort, int(row))
        self.check_target(row)
        new = None
        if self.label_only:
            cats = tuple(self.public.group_categories) or tuple(self.cohort.groups)
            new = _other_label(cats, str(self.cohort.group[row]))
        action = f"its group label changes to {new} in D'" if self.label_only else "D' is the data without it"
        return _make_target(self.cohort, row, f"{_describe(self.cohort, row)} was chosen by the user; {action}.",
                            "user", math.nan, new)

    def check_target(self, row: int) -> None:
        """Refuse a row the analysis never sees (e.g. dropped for a missing covariate)."""

    def neighbour(self, target: Target) -> Cohort:
        return relabelled(self.cohort, target) if self.label_only else without(self.cohort, target)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        raise NotImplementedError


def _noises(seed: int) -> tuple[SimulationNoise, SimulationNoise]:
    a, b = np.random.SeedSequence(int(seed)).spawn(2)
    return SimulationNoise(a), SimulationNoise(b)


def _tick(progress: Progress | None, frac: float, text: str) -> None:
    if progress is not None:
        progress(float(min(max(frac, 0.0), 1.0)), text)


def _broadcast(a: np.ndarray, trials: int) -> np.ndarray:
    return np.broadcast_to(a, (trials, *a.shape[1:])).copy() if a.shape[0] == 1 and trials > 1 else a


class CurveAdapter(Adapter):
    """Survival-curve mechanisms (issue 3): released counts (when the mechanism has them), the
    mechanism's raw histograms in ``extra`` (adaptive-km), and the curves at the public grid points."""

    analysis = "km"
    RAW_EXTRA = ("selection_counts", "block_events", "block_censored", "beyond_grid")

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        self.mechanism, self.cohort, self.public = mechanism, cohort, public
        self.mechanism_name = mechanism.name
        if self.label_only and cohort.group is None:
            raise ParameterError("A label-only mechanism (rrr) randomizes the group label: choose a group column.")

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def default_target(self) -> Target:
        return select_curve_target(self.cohort, self.public, self.label_only)

    def _run(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        rel = self.mechanism.release(cohort, self.public, noise, trials)
        R = trials
        parts: dict[str, np.ndarray] = {}
        if rel.counts is not None:
            parts["counts"] = _broadcast(rel.counts.cells().reshape(rel.counts.cells().shape[0], -1).astype(float), R)
        for key in self.RAW_EXTRA:
            v = rel.extra.get(key) if isinstance(rel.extra, dict) else None
            if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == R and np.issubdtype(v.dtype, np.number):
                parts[key] = v.reshape(R, -1).astype(float)
        surv = rel.curves.at_times(self.public.grid.points, "survival")
        surv = _broadcast(surv, R)
        parts["curve"] = surv.reshape(R, -1)
        return parts, surv

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        other = self.neighbour(target)
        _tick(progress, 0.1, f"{trials} releases on D")
        p_in, s_in = self._run(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} releases on D'")
        p_out, s_out = self._run(other, n_out, trials)
        keys = [k for k in p_in if k in p_out and p_in[k].shape == p_out[k].shape]
        offsets = np.cumsum([0] + [p_in[k].shape[1] for k in keys])
        focus: dict[str, np.ndarray] = {}
        exact_in = exact_counts(self.cohort, self.public.grid, self.public)
        exact_out = exact_counts(other, self.public.grid, self.public)
        for i, k in enumerate(keys):
            if k == "counts" and p_in[k].shape[1] == exact_in.cells().size:
                diff = np.flatnonzero(exact_in.cells() != exact_out.cells())
                focus["target's cells"] = offsets[i] + diff
            if k == "curve":
                ref_in = estimate(tile_trials(exact_in, 1)).survival.reshape(-1)
                ref_out = estimate(tile_trials(exact_out, 1)).survival.reshape(-1)
                diff = np.flatnonzero(np.abs(ref_in - ref_out) > 1e-12)
                if diff.size:
                    focus["curve where the target matters"] = offsets[i] + diff
        return Released(np.concatenate([p_in[k] for k in keys], 1), np.concatenate([p_out[k] for k in keys], 1),
                        focus, s_in, s_out, int(self.public.grid.bins))


class LogrankAdapter(CurveAdapter):
    """Log-rank tests computed from a curve mechanism's released counts (post-processing): the pairwise
    and overall chi-square statistics and the overall observed-minus-expected per group."""

    analysis = "logrank"

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        super().__init__(mechanism, cohort, public)
        if cohort.group is None or len(groups_of(cohort, public) or ()) < 2:
            raise ParameterError("A log-rank audit needs a group column with two or more groups: pass --group.")

    def default_target(self) -> Target:
        if self.label_only:
            return select_curve_target(self.cohort, self.public, True)
        return select_logrank_target(self.cohort, self.public)

    def _stats(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> np.ndarray:
        rel = self.mechanism.release(cohort, self.public, noise, trials)
        if rel.counts is None:
            raise ParameterError(f"{self.mechanism_name} releases no counts, so there is no log-rank test to audit: "
                                 "choose laplace-counts, rrr or adaptive-km.")
        with np.errstate(all="ignore"):
            cols = [t.statistic for t in logrank.pairwise(rel.counts)]
            ov = logrank.overall(rel.counts)
            cols.append(ov.statistic)
            oe = (ov.observed - ov.expected).reshape(ov.statistic.shape[0], -1)
        out = np.column_stack([np.asarray(c, float).reshape(-1, 1) for c in cols] + [oe])
        return _broadcast(np.nan_to_num(out, nan=0.0), trials)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        _tick(progress, 0.1, f"{trials} log-rank releases on D")
        a = self._stats(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} log-rank releases on D'")
        b = self._stats(self.neighbour(target), n_out, trials)
        return Released(a, b, {"all tests": np.arange(a.shape[1])},
                        notes=["Log-rank tests are post-processing of the released counts; no curve is released, so "
                               "there are no influential points."])


class WeibullAdapter(Adapter):
    """Weibull mechanisms (issue 4): the released (shape, normalised scale); curves S(t) on the grid."""

    analysis = "weibull"

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        self.mechanism, self.cohort, self.public = mechanism, cohort, public
        self.mechanism_name = mechanism.name
        self.sample = mechanism.prepare(cohort)

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def default_target(self) -> Target:
        return select_weibull_target(self.cohort, self.sample)

    def _run(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> tuple[np.ndarray, np.ndarray]:
        from dpsurv_core.weibull.model import survival_curve

        est = self.mechanism.release_many(self.mechanism.prepare(cohort), noise, trials)
        q = np.column_stack([est.shape, est.scale_normalised]).astype(float)
        curves = survival_curve(self.public.grid.points, est.shape, est.scale).reshape(trials, 1, -1)
        return _broadcast(q, trials), _broadcast(curves, trials)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        _tick(progress, 0.1, f"{trials} Weibull releases on D")
        a, ca = self._run(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} Weibull releases on D'")
        b, cb = self._run(self.neighbour(target), n_out, trials)
        return Released(a, b, {"shape and scale": np.arange(2)}, ca, cb, int(self.public.grid.bins),
                        notes=["Influential points compare the released Weibull curves S(t) = exp(-(t/scale)^shape) "
                               "on the public grid."])


class NonPrivateRegression:
    """The non-private regularised fit w*(Lambda), repeated: for calibrating the audit only."""

    name = "nonprivate"

    def __init__(self, lam: float) -> None:
        self.lam = lam

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(math.inf, protects="nothing (non-private)", neighbouring="none")

    def release(self, pp: Any, noise: Any, trials: int = 1) -> Any:
        from dpsurv_core.regression.model import minimise

        w = minimise(pp, self.lam)
        return type("Fit", (), {"W": np.repeat(w[None, :], trials, axis=0)})()


class RegressionAdapter(Adapter):
    """Discrete-time regression mechanisms (issue 5): the released coefficient vector W (R, dim).

    D' keeps D's public design: the same horizon, intervals, knots, covariate encoding and public
    normaliser n, so the mechanism (calibrated on those constants) is the same object on both."""

    analysis = "regression"

    def __init__(self, kind: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                 covariates: tuple[str, ...], lam: float = 0.01, intervals: int | None = None,
                 knots: int | None = None, ranges: dict[str, tuple[float, float]] | None = None,
                 n_public: int | None = None, **psgld: Any) -> None:
        from dpsurv_core.regression.mechanisms import build_mechanism
        from dpsurv_core.regression.person_period import DEFAULT_INTERVALS, DEFAULT_KNOTS, person_period

        if not covariates:
            raise ParameterError("A regression audit needs covariates: pass --covariates, for example age,sex.")
        self.cohort, self.public, self.covariates = cohort, public, tuple(covariates)
        self.design = dict(horizon=public.horizon, intervals=intervals or DEFAULT_INTERVALS,
                           knots=knots or DEFAULT_KNOTS)
        self.pp = person_period(cohort, self.covariates, ranges=ranges, n_public=n_public, **self.design)
        enc = self.pp.encoding
        self.ranges = {c.source: (c.centre - c.half_range, c.centre + c.half_range)
                       for c in enc.columns if c.kind == "numeric"}
        levels: dict[str, list[str]] = {}
        for c in enc.columns:
            if c.kind == "categorical":
                levels.setdefault(c.source, []).append(str(c.level))
        frame = cohort.covariates
        self.levels = {}
        for src, levs in levels.items():  # the reference level (dropped from the encoding) comes first
            allv = sorted(frame[src].dropna().astype(str).unique())
            ref = [v for v in allv if v not in levs][:1]
            self.levels[src] = tuple(ref + levs)
        self.lam = lam
        if kind == "nonprivate":
            self.mechanism: Any = NonPrivateRegression(lam)
        else:
            self.mechanism = build_mechanism(kind, epsilon, self.pp, lam=lam, **psgld)
        self.kind = kind
        self.mechanism_name = kind

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def _complete(self) -> np.ndarray:
        return self.cohort.covariates[list(self.covariates)].notna().all(axis=1).to_numpy()

    def check_target(self, row: int) -> None:
        if not self._complete()[row]:
            missing = [c for c in self.covariates if pd.isna(self.cohort.covariates[c].iloc[row])]
            raise ParameterError(f"Row {row} has no value of {missing[0]!r}, so the regression drops it and it cannot be "
                                 "audited: choose another row.")

    def default_target(self) -> Target:
        from dpsurv_core.regression.model import minimise

        w = minimise(self.pp, self.lam)
        delta = regression_influence(self.pp, w, self.lam)
        rows = np.flatnonzero(self._complete())
        unit_all, n_units = _units(self.cohort)
        unit = unit_all[rows]
        per = np.zeros((n_units, delta.shape[1]))
        np.add.at(per, unit, delta)
        size = np.linalg.norm(per, axis=1)
        first = _first_rows(unit_all, n_units)
        order = np.lexsort((self.cohort.time[first], size))[::-1]
        u = int(order[0])
        row = int(first[u])
        p = self.pp.p
        beta = per[u, :p] * self.pp.encoding.to_original
        parts = ", ".join(f"{n} {v:+.3g}" for n, v in zip(self.pp.encoding.names, beta))
        why = (f"{_describe(self.cohort, row)} was chosen as the most exposed subject: removing it moves the "
               f"non-private regularised fit the most (coefficient changes {parts}; a one-step leave-one-out "
               "approximation).")
        return _make_target(self.cohort, row, why, "default", float(size[u]))

    def _pp(self, cohort: Cohort) -> Any:
        from dpsurv_core.regression.person_period import person_period

        return person_period(cohort, self.covariates, ranges=self.ranges, levels=self.levels,
                             n_public=self.pp.n_public, **self.design)

    def _run(self, pp: Any, noise: SimulationNoise, trials: int, progress: Callable[[float], None] | None) -> np.ndarray:
        if self.kind == "psgld":
            # The sampler's vectorised path shares one minibatch sequence among the chains of a call, so
            # its chains are not independent draws; the binomial bounds need independent runs, so every
            # run here is its own chain with its own spawned seed (a loop over runs, ~0.1 s per chain).
            seeds = noise.rng.bit_generator.seed_seq.spawn(trials)
            out = np.empty((trials, pp.dim))
            for i, s in enumerate(seeds):
                out[i] = self.mechanism.release(pp, SimulationNoise(s), 1).W[0]
                if progress is not None:
                    progress((i + 1) / trials)
            return out
        return np.asarray(self.mechanism.release(pp, noise, trials).W, float)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        pp_out = self._pp(self.neighbour(target))
        _tick(progress, 0.1, f"{trials} regression releases on D")
        a = self._run(self.pp, n_in, trials, None if progress is None else
                      lambda f: _tick(progress, 0.1 + 0.35 * f, f"pSGLD chains on D: {f:.0%}"))
        _tick(progress, 0.45, f"{trials} regression releases on D'")
        b = self._run(pp_out, n_out, trials, None if progress is None else
                      lambda f: _tick(progress, 0.45 + 0.35 * f, f"pSGLD chains on D': {f:.0%}"))
        notes = ["The released quantity is the coefficient vector (covariates and baseline spline); no curve is "
                 "released, so there are no influential points."]
        if self.cost.guarantee != EXACT:
            notes.append("pSGLD is approximate DP (MCMC): its epsilon holds only if the chain samples the exponential "
                         "mechanism's density exactly, so the audit may exceed it without a bug in the accounting. "
                         "Each run is an independent chain (about 0.1 s each on lung).")
        return Released(a, b, {"coefficients": np.arange(self.pp.p), "all": np.arange(a.shape[1])}, notes=notes)


# ------------------------------------------------------------------------------------------- driver
def audit(adapter: Adapter, trials: int = DEFAULT_TRIALS, seed: int = 0, target_row: int | None = None,
          progress: Progress | None = None) -> AuditResult:
    """Run the audit: target, R releases on D and D', influential points and the distinguishing attack."""
    trials = int(trials)
    if not 4 <= trials <= MAX_TRIALS:
        raise ParameterError(f"--trials must be between 4 and {MAX_TRIALS}, got {trials}.")
    _tick(progress, 0.0, "choosing the target")
    target = adapter.target(target_row)
    rel = adapter.releases(target, trials, int(seed), progress)
    _tick(progress, 0.85, "distinguishing attack")
    attack = distinguish(rel.released_in, rel.released_out, rel.focus)
    infl = per = None
    if rel.curves_in is not None and rel.curves_out is not None:
        infl, per = influential_points(rel.curves_in, rel.curves_out)
    notes = list(rel.notes)
    if adapter.label_only:
        notes.append("This mechanism protects the group label only: D' gives the target another group label; times "
                     "and events are published as they are.")
    _tick(progress, 1.0, "done")
    c = adapter.cohort
    return AuditResult(adapter.analysis, adapter.mechanism_name, adapter.cost, target, trials, int(seed), attack,
                       infl, per, rel.grid_points, c.name, c.n_subjects, notes)


def curve_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters, **options: Any) -> Any:
    """A curve mechanism by name with its options (time-indexed: alpha, tau_start, tau_end, window,
    edge_mode, base_epsilon), built the way the ``km`` command builds it."""
    import argparse

    from dpsurv_core.cli.km import build_mechanism

    ns = argparse.Namespace(epsilon=epsilon, alpha=0.5, tau_start=1.0, tau_end=0.6, window=5, edge_mode="mean",
                            base_epsilon=None)
    for k, v in options.items():
        setattr(ns, k, v)
    return build_mechanism(name, ns, cohort, public)


def weibull_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters, **options: Any) -> Any:
    """A Weibull mechanism by name (mle, lsp-tll, laplace, saa) with the public horizon of ``public``."""
    from dpsurv_core.weibull.mechanisms import make_mechanism

    keep = {k: v for k, v in options.items() if k in ("omega", "gamma", "rungs", "blocks", "block_size") and v is not None}
    return make_mechanism(name, epsilon, public.horizon, rows_per_subject=cohort.rows_per_subject, **keep)


def mechanisms_for(analysis: str) -> list[str]:
    """Mechanism names the audit accepts for an analysis (those whose modules are present)."""
    from dpsurv_core.curves.release import available

    if analysis == "km":
        return available()
    if analysis == "logrank":
        return [m for m in available() if m != "time-indexed"]
    if analysis == "weibull":
        from dpsurv_core.weibull.mechanisms import MECHANISMS

        return list(MECHANISMS)
    if analysis == "regression":
        return ["nonprivate", "output", "objective", "psgld"]
    raise ParameterError(f"Unknown analysis {analysis!r}: choose one of {', '.join(ANALYSES)}.")


def make_adapter(analysis: str, mechanism: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                 **options: Any) -> Adapter:
    """The adapter for an analysis and a mechanism name (options as in the CLI, by keyword)."""
    names = mechanisms_for(analysis)
    if mechanism not in names:
        raise ParameterError(f"The {analysis} audit has no mechanism {mechanism!r}: choose one of {', '.join(names)}.")
    if analysis in ("km", "logrank"):
        mech = curve_mechanism(mechanism, epsilon, cohort, public, **options)
        return CurveAdapter(mech, cohort, public) if analysis == "km" else LogrankAdapter(mech, cohort, public)
    if analysis == "weibull":
        return WeibullAdapter(weibull_mechanism(mechanism, epsilon, cohort, public, **options), cohort, public)
    psgld_keys = ("bound_B", "prior_sd", "epochs", "burn_in", "batch", "step", "step_decay", "step_gamma")
    psgld = {k: v for k, v in options.items() if k in psgld_keys and v is not None} if mechanism == "psgld" else {}
    lam = options.get("lam")
    return RegressionAdapter(mechanism, epsilon, cohort, public, tuple(options.get("covariates") or ()),
                             lam=DEFAULT_LAMBDA if lam is None else float(lam),
                             intervals=options.get("intervals"), knots=options.get("knots"),
                             ranges=options.get("ranges"), n_public=options.get("n_public"), **psgld)


# ------------------------------------------------------------------------------------------- figures
def roc_figure(result: AuditResult) -> go.Figure:
    """Held-out ROC of the attack, the chance diagonal and the eps-DP region for the charged epsilon."""
    a = result.attack
    fig = go.Figure()
    eps = result.cost.epsilon
    if math.isfinite(eps):
        f = np.linspace(0.0, 1.0, 201)
        bound = np.minimum(np.minimum(math.exp(eps) * f, 1.0 - math.exp(-eps) * (1.0 - f)), 1.0)
        fig.add_trace(go.Scatter(x=f, y=bound, mode="lines", name=f"most an epsilon {eps:g} release allows",
                                 line={"color": "#9ca3af", "dash": "dot"}))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="coin toss", line={"color": "#d1d5db"}))
    fig.add_trace(go.Scatter(x=a.roc_fpr, y=a.roc_tpr, mode="lines", name=f"attack (AUC {a.auc:.2f})",
                             line={"color": "#d62728", "width": 2.5}))
    fig.add_trace(go.Scatter(x=[a.fpr], y=[a.tpr], mode="markers", name="chosen threshold",
                             marker={"size": 10, "color": "#1f77b4"},
                             error_x={"type": "data", "symmetric": False, "array": [a.fpr_ci[1] - a.fpr],
                                      "arrayminus": [a.fpr - a.fpr_ci[0]]},
                             error_y={"type": "data", "symmetric": False, "array": [a.tpr_ci[1] - a.tpr],
                                      "arrayminus": [a.tpr - a.tpr_ci[0]]}))
    fig.update_layout(height=420, template="plotly_white", margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="false positive rate", yaxis_title="true positive rate",
                      legend={"orientation": "h", "y": -0.2}, title="Attack on held-out runs (ROC)")
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    return fig


def epsilon_figure(result: AuditResult) -> go.Figure:
    """The charged epsilon next to the empirical one: the 95% lower bound and the point estimate of the attack."""
    a = result.attack
    eps = result.cost.epsilon
    fig = go.Figure()
    top = max(a.epsilon_lower, a.epsilon_point if math.isfinite(a.epsilon_point) else 0.0,
              eps if math.isfinite(eps) else 0.0, 0.1) * 1.15
    if math.isfinite(eps):
        fig.add_trace(go.Bar(y=["charged"], x=[eps], orientation="h", marker={"color": "#9ca3af"},
                             name="charged by the mechanism", hovertemplate="charged epsilon %{x:.3g}<extra></extra>"))
    point = a.epsilon_point if math.isfinite(a.epsilon_point) else top
    fig.add_trace(go.Bar(y=["empirical"], x=[a.epsilon_lower], orientation="h", name="empirical (95% lower bound)",
                         marker={"color": "#d62728" if not result.within_charge else "#1f77b4"},
                         hovertemplate="empirical epsilon, 95% lower bound %{x:.3g}<extra></extra>"))
    fig.add_trace(go.Scatter(y=["empirical"], x=[point], mode="markers", name="point estimate of the attack",
                             marker={"symbol": "line-ns-open", "size": 18, "color": "#111827"},
                             hovertemplate="point estimate %{x:.3g}<extra></extra>"))
    fig.update_layout(height=200, template="plotly_white", barmode="overlay", margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis_title="epsilon", legend={"orientation": "h", "y": -0.45}, xaxis_range=[0, top])
    return fig


def influential_figure(result: AuditResult) -> go.Figure:
    """Influential points per run for each threshold (box plots over the R paired runs)."""
    fig = go.Figure()
    if result.influential_per_trial is None:
        fig.add_annotation(text="no curve is released by this analysis", showarrow=False, x=0.5, y=0.5,
                           xref="paper", yref="paper")
    else:
        for t, v in result.influential_per_trial.items():
            fig.add_trace(go.Box(y=v, name=f"> {t:g}", boxmean=True, marker={"color": "#1f77b4"}))
    fig.update_layout(height=380, template="plotly_white", showlegend=False, margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      title="Influential points per run", xaxis_title="threshold on |S(D) - S(D')|",
                      yaxis_title="grid points per run")
    return fig


def summary_table(result: AuditResult) -> pd.DataFrame:
    """The audit's numbers as a two-column table (for the report and the page)."""
    a = result.attack
    eps = result.cost.epsilon
    rows = [("epsilon charged by the mechanism", "not private" if math.isinf(eps) else f"{eps:.4g}"),
            ("empirical epsilon (95% lower bound)", f"{a.epsilon_lower:.3f}"),
            ("within the charge", "yes" if result.within_charge else "NO: a bug to fix"),
            ("true positive rate (95% CI)", f"{a.tpr:.3f} ({a.tpr_ci[0]:.3f} to {a.tpr_ci[1]:.3f})"),
            ("false positive rate (95% CI)", f"{a.fpr:.3f} ({a.fpr_ci[0]:.3f} to {a.fpr_ci[1]:.3f})"),
            ("membership advantage found / allowed", f"{a.advantage:.3f} / {advantage_bound(eps):.3f}"),
            ("runs per data set (held out)", f"{result.trials} ({a.runs})"),
            ("attack score", a.score)]
    if result.influential is not None:
        rows += [(f"influential points > {t:g} (total over runs)", str(c)) for t, c in result.influential.items()]
    return pd.DataFrame(rows, columns=["quantity", "value"])


def report_section(report: Any, cohort: Cohort, public: PublicParameters, mechanism: Any,
                   trials: int = 500, seed: int = 0) -> AuditResult:
    """Add a "Privacy audit" section (text, ROC and influential-point figures, a table) to a
    :class:`~dpsurv_core.report.html.Report` for a curve mechanism. The audit reads the raw data, so the
    section is confidential: only a review report can hold it."""
    result = audit(CurveAdapter(mechanism, cohort, public), trials=trials, seed=seed)
    report.add_section("Privacy audit", confidential=True)
    report.add_text(f"Target: {result.target.why}")
    report.add_text(result.sentence())
    report.add_text(f"Empirical epsilon (95% lower bound) {result.attack.epsilon_lower:.3f} against the charged "
                    f"{result.cost.sentence()}. The audit is a simulation on the data ({trials} runs on D and on D', "
                    "seeded), not a release: it is not charged to the ledger and must not be published.", "note")
    report.add_figure(roc_figure(result))
    report.add_figure(influential_figure(result))
    report.add_table(summary_table(result), "Privacy audit")
    return result
