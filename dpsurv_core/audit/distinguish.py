"""Distinguishing attack and empirical epsilon (spec section 6; Jagielski et al. 2020, Nasr et al. 2021).

Run a mechanism R times on D and R times on a neighbour D' (for example D without one target
subject), score every output so that high scores point to D, then:
  1. fit a threshold on the first half of the runs of each world (the one maximising the bound below),
  2. on the other half measure TPR = Pr[score >= threshold | D] and FPR = Pr[score >= threshold | D'],
  3. take Clopper-Pearson bounds (95% two-sided by default) and report
     eps_lo = max(ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo))).
An epsilon-DP mechanism has TPR <= e^eps FPR and 1 - FPR <= e^eps (1 - TPR) for every test, so
eps_lo above the charged epsilon (beyond the small chance the bounds allow) is a bug.

Correction to spec section 6: it writes the second term as ln((1 - FPR_lo) / (1 - TPR_hi)).
1 - FPR_lo is the *upper* bound of 1 - FPR and 1 - TPR_hi the *lower* bound of 1 - TPR, so that
term is optimistic, not a lower bound: on a correct 2-DP Laplace release it reported 2.26. Each
term here divides a lower confidence bound by an upper one.

Pure numpy/scipy; vectorised over runs and thresholds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta


def clopper_pearson(k: np.ndarray | int, n: np.ndarray | int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided binomial confidence bounds for k successes in n trials."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(a, k, n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1 - a, k + 1, n - k), 1.0)
    return lo, hi


def epsilon_lower_bound(tpr_lo, tpr_hi, fpr_lo, fpr_hi) -> np.ndarray:
    """max(ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo))), floored at 0 (a lower bound on
    epsilon: lower confidence bounds over upper ones). ``fpr_lo`` and ``tpr_hi`` are accepted for
    symmetry and not needed."""
    tpr_lo, fpr_hi = np.asarray(tpr_lo, dtype=float), np.asarray(fpr_hi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where((tpr_lo > 0) & (fpr_hi > 0), np.log(tpr_lo / np.where(fpr_hi > 0, fpr_hi, 1.0)), 0.0)
        b = np.where((1 - fpr_hi > 0) & (1 - tpr_lo > 0),
                     np.log((1 - fpr_hi) / np.where(1 - tpr_lo > 0, 1 - tpr_lo, 1.0)), 0.0)
    return np.maximum(np.maximum(a, b), 0.0)


def laplace_score(released: np.ndarray, mean_in: np.ndarray, mean_out: np.ndarray, scale: np.ndarray | float) -> np.ndarray:
    """Log likelihood ratio of D (mean_in) against D' (mean_out) for Laplace noise of ``scale``,
    summed over the last axis: sum (|x - mean_out| - |x - mean_in|) / scale. Also the exact log
    ratio for the discrete Laplace of the same scale on integers. Post-processed (clamped) values
    give a valid, if weaker, score. A scale of 0 (no noise) is scored as scale 1."""
    x = np.asarray(released, dtype=float)
    s = np.asarray(scale, dtype=float)
    s = np.where(s > 0, s, 1.0)
    return ((np.abs(x - mean_out) - np.abs(x - mean_in)) / s).sum(axis=-1)


@dataclass(frozen=True)
class Audit:
    """Result of one distinguishing test; rates and bounds are measured on the held-out half."""

    epsilon_lower: float
    threshold: float
    tpr: float
    fpr: float
    tpr_ci: tuple[float, float]
    fpr_ci: tuple[float, float]
    runs: int  # held-out runs per world
    level: float

    def to_dict(self) -> dict:
        return {"empirical_epsilon_lower": self.epsilon_lower, "threshold": self.threshold, "tpr": self.tpr,
                "fpr": self.fpr, "tpr_ci": list(self.tpr_ci), "fpr_ci": list(self.fpr_ci), "runs": self.runs,
                "level": self.level}


def _rates(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#(score >= t) for each threshold."""
    s = np.sort(scores)
    return s.size - np.searchsorted(s, thresholds, side="left")


def empirical_epsilon(scores_in: np.ndarray, scores_out: np.ndarray, level: float = 0.95,
                      max_thresholds: int = 512) -> Audit:
    """Fit the threshold on the first half of each world's runs, measure on the second half."""
    a = np.asarray(scores_in, dtype=float).ravel()
    b = np.asarray(scores_out, dtype=float).ravel()
    ha, hb = a.size // 2, b.size // 2
    fit_a, test_a, fit_b, test_b = a[:ha], a[ha:], b[:hb], b[hb:]
    cands = np.unique(np.concatenate([fit_a, fit_b]))
    if cands.size > max_thresholds:
        cands = np.unique(np.quantile(cands, np.linspace(0, 1, max_thresholds)))
    tp, fp = _rates(fit_a, cands), _rates(fit_b, cands)
    t_lo, t_hi = clopper_pearson(tp, fit_a.size, level)
    f_lo, f_hi = clopper_pearson(fp, fit_b.size, level)
    best = int(np.argmax(epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi))) if cands.size else 0
    thr = float(cands[best]) if cands.size else 0.0
    tp = int(_rates(test_a, np.array([thr]))[0])
    fp = int(_rates(test_b, np.array([thr]))[0])
    t_lo, t_hi = clopper_pearson(tp, test_a.size, level)
    f_lo, f_hi = clopper_pearson(fp, test_b.size, level)
    eps = float(epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi))
    return Audit(eps, thr, tp / max(test_a.size, 1), fp / max(test_b.size, 1), (float(t_lo), float(t_hi)),
                 (float(f_lo), float(f_hi)), int(min(test_a.size, test_b.size)), level)
