"""The distinguishing attack and the empirical epsilon (after Jagielski et al. 2020 and Nasr et al. 2021).

Releases from D (with the target) and D' (without it) are scored so that high scores point to D.
A threshold is chosen on training runs only; on held-out runs

    TPR = Pr[score > thr | D],   FPR = Pr[score > thr | D'],

with exact Clopper-Pearson bounds (95% two-sided by default), and

    eps_lo = max( ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo)) ),  floored at 0.

An eps-DP mechanism has TPR <= e^eps FPR and 1 - FPR <= e^eps (1 - TPR) for every test, so eps_lo
above the charged epsilon (beyond the chance the bounds leave) is a bug. Each term divides a lower
confidence bound by an upper one, as in Jagielski et al.: (1 - FPR_hi) / FNR_hi. The tempting second
term, ln((1 - FPR_lo) / (1 - TPR_hi)), takes the bounds the wrong way round and is not a lower bound:
with 999/1000 positives in both worlds, i.e. no information, it gives 5.4.

eps-DP also bounds the membership advantage TPR - FPR by (e^eps - 1) / (e^eps + 1) = tanh(eps / 2).

Two tests, two questions. The threshold that maximises eps_lo sits in a tail of the scores, where the
rates are extreme and their ratio large, and says little about how well the attack does overall: on
lung (laplace-counts, epsilon 1, 1000 runs, seed 2) that test's held-out advantage is about 0 while the
strongest attack on the same releases reaches 26%. The headline is therefore the strongest attack
(Yeom et al. 2018): the advantage TPR - FPR of the test maximising it, its score, orientation and
threshold chosen on the fitting half only and its rates measured on the held-out half, so the figure is
not optimistically biased by the choice (the maximum over the held-out ROC itself would be). Its 95%
interval combines Clopper-Pearson intervals of the two rates conservatively, TPR_lo - FPR_hi to
TPR_hi - FPR_lo, each rate's interval at 97.5% so that, by Bonferroni, the difference's interval covers
with at least 95% (floored at 0: an attacker can always ignore the release). Beside it, the area under
the held-out ROC of that score, the Mann-Whitney statistic Pr[S_D > S_D'] + Pr[S_D = S_D'] / 2
(Hanley and McNeil 1982), and the empirical epsilon lower bound.

Two ways to the test, one measurement: :func:`empirical_epsilon` takes given scores (the threshold
fitted on the first half of each world's runs, tests 'score >= thr'); :func:`distinguish` learns
likelihood-ratio scores from the released numbers themselves

    Laplace:  s(x) = sum_{k in K} (|x_k - m'_k| - |x_k - m_k|) / b_k
    Gaussian: s(x) = sum_{k in K} (x_k - (mu_k + mu'_k) / 2)(mu_k - mu'_k) / v_k

(m, m' medians and b the mean absolute deviation on D and D'; mu, mu', v means and pooled variance)
over coordinate sets K near the target and the coordinates whose training means differ most. The
training half is split in two folds: scores are fitted on one, the score, its orientation and its
threshold chosen on the other (both ways round, the better kept), so nothing is judged on the runs
it was fitted on. Scores are rounded to 1e-9 of their training range, so the attack cannot read the
floating-point low bits of the simulation sampler (Mironov 2012). Pure numpy/scipy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from scipy.stats import beta, rankdata

from dpsurv_core.errors import ParameterError

LEVEL = 0.95
ROC_POINTS = 201
MAX_THRESHOLDS = 512


# ------------------------------------------------------------------------------------------- bounds
def clopper_pearson(k: np.ndarray | int, n: np.ndarray | int, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Exact two-sided binomial confidence bounds for k successes in n trials.

    Parameters
    ----------
    k : int or numpy.ndarray
        Successes.
    n : int or numpy.ndarray
        Trials.
    level : float, default 0.95
        Two-sided confidence level.

    Returns
    -------
    tuple of numpy.ndarray
        ``(lower, upper)`` bounds of the success probability.

    References
    ----------
    .. [1] Clopper C. J. & Pearson E. S. (1934), The use of confidence or fiducial limits illustrated in the case of
       the binomial, Biometrika 26(4), 404-413.
    """
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    a = (1.0 - level) / 2.0
    with np.errstate(invalid="ignore"):
        lo = np.where(k > 0, beta.ppf(a, k, n - k + 1), 0.0)
        hi = np.where(k < n, beta.ppf(1 - a, k + 1, n - k), 1.0)
    return lo, hi


def epsilon_lower_bound(tpr_lo: np.ndarray | float, tpr_hi: np.ndarray | float, fpr_lo: np.ndarray | float,
                        fpr_hi: np.ndarray | float) -> np.ndarray:
    """max(ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo))), floored at 0 (a lower bound on
    epsilon: lower confidence bounds over upper ones). ``fpr_lo`` and ``tpr_hi`` are accepted for
    symmetry and not needed.

    Parameters
    ----------
    tpr_lo, tpr_hi : float or numpy.ndarray
        Lower and upper confidence bounds of the true positive rate.
    fpr_lo, fpr_hi : float or numpy.ndarray
        Lower and upper confidence bounds of the false positive rate.

    Returns
    -------
    numpy.ndarray
        The epsilon lower bound, at least 0.

    References
    ----------
    .. [1] Kairouz P., Oh S. & Viswanath P. (2015), The composition theorem for differential privacy, ICML.
    """
    tpr_lo, fpr_hi = np.asarray(tpr_lo, dtype=float), np.asarray(fpr_hi, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where((tpr_lo > 0) & (fpr_hi > 0), np.log(tpr_lo / np.where(fpr_hi > 0, fpr_hi, 1.0)), 0.0)
        b = np.where((1 - fpr_hi > 0) & (1 - tpr_lo > 0),
                     np.log((1 - fpr_hi) / np.where(1 - tpr_lo > 0, 1 - tpr_lo, 1.0)), 0.0)
    return np.maximum(np.maximum(a, b), 0.0)


def _bounds(tp: np.ndarray | int, n_in: int, fp: np.ndarray | int, n_out: int, level: float
            ) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """eps_lo of tests with ``tp`` of ``n_in`` and ``fp`` of ``n_out`` positives, with the two intervals."""
    t_lo, t_hi = clopper_pearson(tp, n_in, level)
    f_lo, f_hi = clopper_pearson(fp, n_out, level)
    return epsilon_lower_bound(t_lo, t_hi, f_lo, f_hi), (t_lo, t_hi), (f_lo, f_hi)


def point_epsilon(tpr: float, fpr: float) -> float:
    """max(ln(TPR / FPR), ln((1 - FPR) / (1 - TPR))) from the rates themselves (inf when a denominator is 0)."""
    vals = [0.0]
    for num, den in ((tpr, fpr), (1.0 - fpr, 1.0 - tpr)):
        if num > 0:
            vals.append(math.inf if den <= 0 else math.log(num / den))
    return max(vals)


def advantage_bound(epsilon: float) -> float:
    """Largest membership advantage TPR - FPR an eps-DP release allows: (e^eps - 1)/(e^eps + 1) = tanh(eps/2)."""
    return 1.0 if math.isinf(epsilon) else math.tanh(epsilon / 2.0)


def roc_curve(s_in: np.ndarray, s_out: np.ndarray, points: int = ROC_POINTS) -> tuple[np.ndarray, np.ndarray, float]:
    """Held-out ROC (FPR, TPR from (0,0) to (1,1)) for tests 'score > t', and its area (the Mann-Whitney
    statistic, which equals the trapezoidal area of the full, unthinned curve)."""
    thr = np.concatenate([[np.inf], np.sort(np.unique(np.concatenate([s_in, s_out])))[::-1], [-np.inf]])
    a, b = np.sort(s_in), np.sort(s_out)
    tpr = (a.size - np.searchsorted(a, thr, side="left")) / max(a.size, 1)
    fpr = (b.size - np.searchsorted(b, thr, side="left")) / max(b.size, 1)
    auc = auc_mann_whitney(s_in, s_out)
    if fpr.size > points:
        keep = np.unique(np.concatenate([[0, fpr.size - 1], np.linspace(0, fpr.size - 1, points).round().astype(int)]))
        fpr, tpr = fpr[keep], tpr[keep]
    return fpr, tpr, auc


def auc_mann_whitney(s_in: np.ndarray, s_out: np.ndarray) -> float:
    """Area under the ROC as the Mann-Whitney statistic U / (n_in n_out) = Pr[S_D > S_D'] + Pr[S_D = S_D'] / 2
    (Hanley and McNeil 1982), from mid-ranks of the pooled scores; 0.5 when a world has no scores."""
    a = np.asarray(s_in, dtype=float).ravel()
    b = np.asarray(s_out, dtype=float).ravel()
    if a.size == 0 or b.size == 0:
        return 0.5
    ranks = rankdata(np.concatenate([a, b]))
    u = float(ranks[: a.size].sum()) - a.size * (a.size + 1) / 2.0
    return u / (a.size * b.size)


def _best_advantage_threshold(s_in: np.ndarray, s_out: np.ndarray, thresholds: np.ndarray,
                             inclusive: bool = False) -> tuple[float, float]:
    """(advantage, threshold) of the test 'score > t' ('>=' with ``inclusive``) that maximises TPR - FPR
    over ``thresholds`` on these scores (the first such threshold on ties)."""
    a, b = np.sort(np.asarray(s_in, dtype=float)), np.sort(np.asarray(s_out, dtype=float))
    side: Literal["left", "right"] = "left" if inclusive else "right"
    tpr = (a.size - np.searchsorted(a, thresholds, side=side)) / max(a.size, 1)
    fpr = (b.size - np.searchsorted(b, thresholds, side=side)) / max(b.size, 1)
    adv = tpr - fpr
    i = int(np.argmax(adv))
    return float(adv[i]), float(thresholds[i])


# ------------------------------------------------------------------------------------------- result
@dataclass(frozen=True)
class Attack:
    """A distinguishing test as measured on the held-out runs: 'orientation * score > threshold'
    (or '>=' with ``inclusive``) says "D"."""

    score: str
    orientation: int
    threshold: float
    tpr: float
    fpr: float
    tpr_ci: tuple[float, float]
    fpr_ci: tuple[float, float]
    epsilon_lower: float
    epsilon_point: float
    runs: int  # held-out runs per world (the smaller world)
    roc_fpr: np.ndarray
    roc_tpr: np.ndarray
    auc: float
    level: float = LEVEL
    inclusive: bool = False
    # the strongest attack (the headline): the test maximising TPR - FPR on the fitting half, measured held out
    adv_score: str = ""
    adv_threshold: float = math.nan
    adv_tpr: float = math.nan
    adv_fpr: float = math.nan
    adv_tpr_ci: tuple[float, float] = (math.nan, math.nan)
    adv_fpr_ci: tuple[float, float] = (math.nan, math.nan)

    @property
    def advantage(self) -> float:
        """The strongest attack's membership advantage TPR - FPR on the held-out runs: its threshold maximised
        TPR - FPR on the fitting half. Floored at 0 (a coin toss, which any attacker can do); the unfloored held-out
        value is :attr:`advantage_held_out`."""
        return max(self.advantage_held_out, 0.0)

    @property
    def advantage_held_out(self) -> float:
        """TPR - FPR of the strongest attack's threshold on the held-out runs, below 0 when that threshold is useless."""
        return self.adv_tpr - self.adv_fpr

    @property
    def advantage_lower(self) -> float:
        """Lower end of the advantage's 95% interval: TPR_lo - FPR_hi (Clopper-Pearson at 97.5% each), floored at 0."""
        return max(self.adv_tpr_ci[0] - self.adv_fpr_ci[1], 0.0)

    @property
    def advantage_upper(self) -> float:
        """Upper end of the advantage's 95% interval: TPR_hi - FPR_lo (Clopper-Pearson at 97.5% each), floored at 0."""
        return max(self.adv_tpr_ci[1] - self.adv_fpr_ci[0], 0.0)

    @property
    def epsilon_test_advantage(self) -> float:
        """TPR - FPR of the test that maximises the epsilon lower bound (a tail test, usually far weaker)."""
        return self.tpr - self.fpr


def _with_headline(att: Attack, s_in: np.ndarray, s_out: np.ndarray, threshold: float, score: str,
                   inclusive: bool = False) -> Attack:
    """``att`` with the strongest attack: the test 'score > threshold' on held-out scores (already oriented),
    its rates, their Clopper-Pearson intervals (each at (1 + level) / 2, so TPR_lo - FPR_hi to TPR_hi - FPR_lo
    is a ``level`` interval for the advantage), and the ROC and AUC of that score."""
    if inclusive:
        tp, fp = int(np.sum(s_in >= threshold)), int(np.sum(s_out >= threshold))
    else:
        tp, fp = int(np.sum(s_in > threshold)), int(np.sum(s_out > threshold))
    each = 1.0 - (1.0 - att.level) / 2.0  # Bonferroni: the difference's interval then has level att.level
    t_lo, t_hi = clopper_pearson(tp, s_in.size, each)
    f_lo, f_hi = clopper_pearson(fp, s_out.size, each)
    rf, rt, auc = roc_curve(s_in, s_out)
    return replace(att, adv_score=score, adv_threshold=float(threshold), adv_tpr=tp / max(s_in.size, 1),
                   adv_fpr=fp / max(s_out.size, 1), adv_tpr_ci=(float(t_lo), float(t_hi)),
                   adv_fpr_ci=(float(f_lo), float(f_hi)), roc_fpr=rf, roc_tpr=rt, auc=auc)


def measure(s_in: np.ndarray, s_out: np.ndarray, threshold: float, level: float = LEVEL, score: str = "given score",
            orientation: int = 1, inclusive: bool = False) -> Attack:
    """The test 'score > threshold' ('>=' with ``inclusive``) on held-out scores of D (``s_in``) and D'
    (``s_out``, already multiplied by ``orientation``): rates, Clopper-Pearson bounds, eps_lo, the point
    estimate and the ROC. The one place the empirical epsilon is computed. The strongest attack defaults to
    this same test; :func:`distinguish` and :func:`empirical_epsilon` replace it with their own."""
    if inclusive:
        tp, fp = int(np.sum(s_in >= threshold)), int(np.sum(s_out >= threshold))
    else:
        tp, fp = int(np.sum(s_in > threshold)), int(np.sum(s_out > threshold))
    eps_lo, (t_lo, t_hi), (f_lo, f_hi) = _bounds(tp, s_in.size, fp, s_out.size, level)
    tpr, fpr = tp / max(s_in.size, 1), fp / max(s_out.size, 1)
    rf, rt, auc = roc_curve(s_in, s_out)
    att = Attack(score, orientation, float(threshold), tpr, fpr, (float(t_lo), float(t_hi)),
                 (float(f_lo), float(f_hi)), float(eps_lo), point_epsilon(tpr, fpr),
                 int(min(s_in.size, s_out.size)), rf, rt, auc, level, inclusive)
    return _with_headline(att, s_in, s_out, threshold, score, inclusive)


# ------------------------------------------------------------------------------------------- given scores
def _count_at_or_above(scores: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#(score >= t) for each threshold."""
    s = np.sort(scores)
    return s.size - np.searchsorted(s, thresholds, side="left")


def empirical_epsilon(scores_in: np.ndarray, scores_out: np.ndarray, level: float = LEVEL,
                      max_thresholds: int = MAX_THRESHOLDS) -> Attack:
    """The test 'score >= thr' on given scores (high = looks like D): ``thr`` maximises eps_lo on the first
    half of each world's runs (among the scores seen there, at most ``max_thresholds`` quantiles of them),
    and the test is measured on the second half. The strongest attack's threshold maximises TPR - FPR on the
    first half, measured on the second likewise.

    Parameters
    ----------
    scores_in, scores_out : numpy.ndarray
        The attack's scores of the releases on D (with the target) and on D' (without).
    level : float, default 0.95
        Confidence level of the TPR and FPR bounds.
    max_thresholds : int, default 512
        At most this many candidate thresholds (quantiles of the first halves' scores).

    Returns
    -------
    Attack
        Threshold, TPR and FPR with their bounds, and the empirical epsilon lower bound.

    References
    ----------
    .. [1] Jagielski M., Ullman J. & Oprea A. (2020), Auditing differentially private machine learning: how private
       is private SGD?, NeurIPS.
    .. [2] Nasr M., Song S., Thakurta A., Papernot N. & Carlini N. (2021), Adversary Instantiation: Lower Bounds for
       Differentially Private Machine Learning, IEEE Symposium on Security and Privacy.
    """
    a = np.asarray(scores_in, dtype=float).ravel()
    b = np.asarray(scores_out, dtype=float).ravel()
    ha, hb = a.size // 2, b.size // 2
    fit_a, test_a, fit_b, test_b = a[:ha], a[ha:], b[:hb], b[hb:]
    cands = np.unique(np.concatenate([fit_a, fit_b]))
    if cands.size > max_thresholds:
        cands = np.unique(np.quantile(cands, np.linspace(0, 1, max_thresholds)))
    thr = adv_thr = 0.0
    if cands.size:
        eps, _, _ = _bounds(_count_at_or_above(fit_a, cands), fit_a.size, _count_at_or_above(fit_b, cands),
                            fit_b.size, level)
        thr = float(cands[int(np.argmax(eps))])
        _, adv_thr = _best_advantage_threshold(fit_a, fit_b, cands, inclusive=True)
    att = measure(test_a, test_b, thr, level, inclusive=True)
    return _with_headline(att, test_a, test_b, adv_thr, att.score, inclusive=True)


# ------------------------------------------------------------------------------------------- learned scores
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
class _Score:
    label: str
    fn: Callable[[np.ndarray], np.ndarray]


def _floor(scale: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Keep fitted scales positive (deterministic releases have scale 0)."""
    return np.maximum(scale, 1e-9 * np.maximum(np.abs(ref), 1.0))


def _candidate_scores(train_in: np.ndarray, train_out: np.ndarray, focus: dict[str, np.ndarray],
                     top: int = 8, names: Sequence[str] | None = None) -> dict[str, _Score]:
    """Likelihood-ratio-style scores fitted on training runs (high = looks like D), by a stable name:
    Laplace and Gaussian log likelihood ratios over each focus set and over the ``top`` coordinates
    whose training means differ most, and the two best single coordinates of each set (called by their
    ``names`` when given: a record's field paths)."""
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
        out[f"laplace:{name}"] = _Score(f"Laplace likelihood ratio ({name})", _laplace_fn(idx, mi, mo, bi))
        c, w = 0.5 * (mu_in[idx] + mu_out[idx]), (mu_in[idx] - mu_out[idx]) / var[idx]
        out[f"gauss:{name}"] = _Score(f"Gaussian likelihood ratio ({name})", _gauss_fn(idx, c, w))
        for rank, k in enumerate(idx[np.argsort(-sep[idx], kind="stable")][:2]):
            what = f"field {names[int(k)]}" if names is not None else f"released coordinate {int(k)}"
            out[f"single:{name}:{rank}"] = _Score(f"{what} ({name})", _column_fn(int(k)))
    both = np.concatenate([train_in, train_out])
    return {k: _quantised(v, both) for k, v in out.items()}


def _laplace_fn(idx: np.ndarray, mi: np.ndarray, mo: np.ndarray, bi: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: laplace_score(x[:, idx], mi, mo, bi)


def _gauss_fn(idx: np.ndarray, c: np.ndarray, w: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: (x[:, idx] - c) @ w


def _column_fn(k: int) -> Callable[[np.ndarray], np.ndarray]:
    return lambda x: x[:, k]


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
    f = score.fn
    return _Score(score.label, lambda x: np.round(f(x) / step) * step)


def _threshold_bounds(s_in: np.ndarray, s_out: np.ndarray, thresholds: np.ndarray, level: float
                      ) -> tuple[np.ndarray, np.ndarray]:
    """eps_lo of the tests 'score > t' and '-score > -t' (i.e. 'score < t') for each threshold."""
    a, b = np.sort(s_in), np.sort(s_out)
    plus, _, _ = _bounds(a.size - np.searchsorted(a, thresholds, side="right"), a.size,
                         b.size - np.searchsorted(b, thresholds, side="right"), b.size, level)
    # ties at t count in neither direction; thresholds are midpoints
    minus, _, _ = _bounds(np.searchsorted(a, thresholds, side="left"), a.size,
                          np.searchsorted(b, thresholds, side="left"), b.size, level)
    return plus, minus


def _midpoints(values: np.ndarray, max_points: int = MAX_THRESHOLDS) -> np.ndarray:
    u = np.unique(values[np.isfinite(values)])
    if u.size == 0:
        return np.array([0.0])
    mids = np.concatenate([[u[0] - 1.0], 0.5 * (u[1:] + u[:-1]), [u[-1] + 1.0]])
    if mids.size > max_points:
        mids = np.unique(np.quantile(mids, np.linspace(0.0, 1.0, max_points)))
    return mids


def distinguish(released_in: np.ndarray, released_out: np.ndarray, focus: dict[str, np.ndarray] | None = None,
                level: float = LEVEL, names: Sequence[str] | None = None) -> Attack:
    """The distinguishing attack on (R, q) releases from D (``released_in``) and D' (``released_out``).

    Scores, orientation and threshold are fitted on the first half of each world's runs (two folds, see
    the module docstring), the test measured on the second half by :func:`measure`. Twice: the test that
    maximises the epsilon lower bound, and the strongest attack (the score and orientation maximising
    TPR - FPR on the selection fold, then its threshold maximising TPR - FPR on the whole fitting half),
    whose held-out scores also give the ROC and the AUC. ``names``: one per column (a record's field paths), for
    the scores' labels."""
    x_in = np.nan_to_num(np.asarray(released_in, dtype=float), nan=0.0, posinf=1e300, neginf=-1e300)
    x_out = np.nan_to_num(np.asarray(released_out, dtype=float), nan=0.0, posinf=1e300, neginf=-1e300)
    if x_in.ndim != 2 or x_out.ndim != 2 or x_in.shape[1] != x_out.shape[1]:
        raise ParameterError("The releases on D and D' must be two (runs, quantities) arrays of the same width.")
    if min(x_in.shape[0], x_out.shape[0]) < 4:
        raise ParameterError("The audit needs at least 4 runs per data set (2 to fit the attack, 2 to test it).")
    h_in, h_out = x_in.shape[0] // 2, x_out.shape[0] // 2
    tr_in, te_in, tr_out, te_out = x_in[:h_in], x_in[h_in:], x_out[:h_out], x_out[h_out:]
    focus = focus or {}
    folds = [(slice(0, None, 2), slice(1, None, 2)), (slice(1, None, 2), slice(0, None, 2))]
    best: tuple[float, float, _Score | None, int, float] = (-1.0, -1.0, None, 1, 0.0)
    strongest: tuple[float, float, _Score | None, int, float] = (-1.0, -1.0, None, 1, 0.0)
    with np.errstate(all="ignore"):
        for fit, sel in folds:
            for cand in _candidate_scores(tr_in[fit], tr_out[fit], focus, names=names).values():
                s_in, s_out = cand.fn(tr_in[sel]), cand.fn(tr_out[sel])
                if not (np.all(np.isfinite(s_in)) and np.all(np.isfinite(s_out))):
                    continue
                cuts = _midpoints(np.concatenate([s_in, s_out]))
                plus, minus = _threshold_bounds(s_in, s_out, cuts, level)
                sep = abs(float(np.median(s_in) - np.median(s_out)))
                for orient, vals in ((1, plus), (-1, minus)):
                    i = int(np.argmax(vals))
                    if (float(vals[i]), sep) > best[:2]:
                        best = (float(vals[i]), sep, cand, orient, float(cuts[i]))
                    # thresholds are midpoints, never a score, so 'score < t' is the complement of 'score > t'
                    adv, t = _best_advantage_threshold(orient * s_in, orient * s_out, orient * cuts)
                    if (adv, sep) > strongest[:2]:
                        strongest = (adv, sep, cand, orient, t)  # t is on the oriented scale
    constant = _Score("constant", lambda x: np.zeros(x.shape[0]))
    sc, orient, thr = best[2], best[3], best[4]
    if sc is None:  # every score degenerate: a coin toss
        sc, orient, thr = constant, 1, 0.0
    with np.errstate(all="ignore"):
        s_in, s_out = orient * sc.fn(te_in), orient * sc.fn(te_out)
    att = measure(s_in, s_out, orient * thr, level, sc.label + (" (reversed)" if orient < 0 else ""), orient)
    sc, orient, thr = strongest[2], strongest[3], strongest[4]
    if sc is None:
        sc, orient, thr = constant, 1, 0.0
    else:  # its threshold again on the whole fitting half: twice the runs, a steadier choice
        with np.errstate(all="ignore"):
            f_in, f_out = orient * sc.fn(tr_in), orient * sc.fn(tr_out)
        _, thr = _best_advantage_threshold(f_in, f_out, _midpoints(np.concatenate([f_in, f_out])))
    with np.errstate(all="ignore"):
        s_in, s_out = orient * sc.fn(te_in), orient * sc.fn(te_out)
    return _with_headline(att, s_in, s_out, thr, sc.label + (" (reversed)" if orient < 0 else ""))
