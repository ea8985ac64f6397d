"""Log-rank tests from (noisy, post-processed) per-group counts (docs/mechanisms.md).

Numbers at risk, per group g and bin j: r_gj = R_gj - (1 - a) c_gj, where R_gj is the number followed at the bin's
start and c_gj its censorings. On a public grid a = 1/2: censorings are spread over the bin, so each counts as at risk
for half of it, the actuarial rule of the life table (Cutler and Ederer 1958; Peto and Peto 1972 group the log-rank
test by intervals the same way). Taking every censoring out before the bin's events (a = 0) under-counts the group
censored more, whose expected events then fall short of its observed ones under H0: on 20 bins, groups censored 10%
and 70% rejected a true null in 10% of cohorts at the 5% level (docs/coverage-logrank.md). On an ``event-times`` grid
every censoring of bin j (times in [b_{j-1}, b_j)) precedes its one event time b_j, and a subject censored at b_j
is counted in bin j + 1, so it is at risk at b_j as in R's survdiff: a = 0 there, and the test is the exact one.

Per bin j with r_j = sum_g r_gj and d_j = sum_g d_gj, under H0:
  E_gj = d_j r_gj / r_j,
  V_gh,j = d_j (r_gj / r_j)(delta_gh - r_hj / r_j)(r_j - d_j) / (r_j - 1)   (0 where r_j <= 1).
Overall k-group statistic (O - E)' V^- (O - E) on the first k-1 groups, chi-square with k-1
degrees of freedom; pairwise tests use only the two groups' counts. With the distinct event
times as the grid these equal lifelines' logrank_test / pairwise_logrank_test /
multivariate_logrank_test. Arrays keep leading trial axes. ``shifted``: the share of each bin's censorings that
counts already moved to the next bin (adaptive-km's derived counts carry the actuarial rule in them), so that
a = max(actuarial share - shifted, 0).

A calibrated private test may compare a *noise-adjusted* statistic (O - E)' (V + V_noise)^- (O - E)
with its simulated null law (:func:`noise_adjusted`), where
  V_noise,gh = sigma^2 sum_j (delta_gh - a_gj - a_hj + G a_gj a_hj),   a_gj = r_gj / r_j,
over the bins with someone at risk: the covariance that independent noise of variance sigma^2 on every
group's events in every such bin would add to O - E with the numbers at risk held fixed. Where the noise was drawn
on merged bins B and spread over their public bins j by width (f_j, adaptive-km), one draw eps_gB moves the events
of bin j by f_j eps_gB, so with A_gB = sum_{j in B} f_j a_gj and L_B = sum_{j in B} f_j [r_j > 0]
  V_noise,gh = sigma^2 sum_B (delta_gh L_B^2 - L_B (A_gB + A_hB) + G A_gB A_hB),
which is the formula above when every bin is its own. It is not the
exact noise variance of a release (clamping takes some noise away, the noise that builds up in the
numbers at risk adds some): it is a fixed, public weighting that discounts bins where the noise
outweighs the events, so that the statistic's null law depends far less on the rates a simulation
reads off the noisy counts (docs/coverage-logrank.md).

``p_value`` here is the chi-square tail: exact for exact counts, but it ignores the noise of a private
release (the noise widens the statistic's null distribution). Private p-values come from
:mod:`dpsurv_core.curves.logrank_test`, which calibrates the same statistic for the noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.kaplan_meier import actuarial_share


@dataclass(frozen=True)
class LogRankResult:
    """A log-rank test (Mantel-Haenszel chi-square) between two groups, or overall between all groups.

    Parameters
    ----------
    group_a : str
        The first group (or the first of all, for the overall test).
    group_b : str or None
        The second group; None for the overall k-group test.
    statistic, p_value : numpy.ndarray
        The chi-square statistic and its p-value, one per trial.
    dof : int
        Degrees of freedom (groups - 1).
    observed, expected : numpy.ndarray
        Observed and expected events per group, one row per trial.

    References
    ----------
    .. [1] Mantel N. (1966), Evaluation of survival data and two new rank order statistics arising in its
       consideration, Cancer Chemotherapy Reports 50(3), 163-170.
    """

    group_a: str
    group_b: str | None  # None for the overall k-group test
    statistic: np.ndarray
    p_value: np.ndarray
    dof: int
    observed: np.ndarray
    expected: np.ndarray


def _components(r: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """O - E per group (..., G) and covariance (..., G, G) from at-risk and events (..., G, J)."""
    rt = r.sum(-2)
    dt = d.sum(-2)
    live = rt > 0
    frac = np.where(live[..., None, :], r / np.where(live, rt, 1.0)[..., None, :], 0.0)
    expected = (dt[..., None, :] * frac).sum(-1)
    observed = d.sum(-1)
    factor = np.where(rt > 1, dt * (rt - dt) / np.where(rt > 1, rt - 1, 1.0), 0.0)
    g = r.shape[-2]
    eye = np.eye(g)
    cov = np.einsum("...j,...aj,ab->...abj", factor, frac, eye).sum(-1) - np.einsum("...j,...aj,...bj->...ab", factor, frac, frac)
    return observed, expected, cov


def _statistic(observed: np.ndarray, expected: np.ndarray, cov: np.ndarray) -> np.ndarray:
    diff = (observed - expected)[..., :-1]
    v = cov[..., :-1, :-1]
    k = diff.shape[-1]
    if k == 1:
        var = v[..., 0, 0]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(var > 0, diff[..., 0] ** 2 / np.where(var > 0, var, 1.0), np.nan)
    sol = np.linalg.pinv(v) @ diff[..., None]
    return (diff[..., None, :] @ sol)[..., 0, 0]


def censored_at_risk(counts: BinnedCounts, shifted: float = 0.0) -> float:
    """a: the share of a bin's released censorings counted at risk for its events, the grid's actuarial share
    (1/2 on a public grid, 0 on the event-time grid) less what the counts already moved to the next bin."""
    return max(actuarial_share(counts.grid) - float(shifted), 0.0)


def _at_risk_events(counts: BinnedCounts, shifted: float = 0.0, exposure: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
    """r_gj = R_gj - (1 - a) c_gj (at least 0) and the events, at most r_gj.

    ``exposure``: r_gj = R_gj x / -log(1 - x), x = c_gj / R_gj, instead: the mean number not yet censored over the bin
    when a group's censorings come at a constant rate within it (the exposure of the piecewise-exponential model:
    Holford 1980; Laird and Olivier 1981), events counted at risk as the life table counts them. For a bin where a group
    loses few of R to censoring it is the life table's R - c / 2; for a wide bin that a heavily censored group mostly
    leaves early (adaptive-km's merged bins) R - c / 2 overstates its time at risk, and with it its expected events.
    (Taking the events' own exits into x too made the number at risk depend on each group's noisy events, which broke
    the level with 30 patients per group: 7.3-8.7% at epsilon 0.5 and 1.)"""
    if exposure:
        left = np.maximum(counts.censored.astype(float), 0.0)
        big = np.maximum(counts.at_risk().astype(float) + left, 0.0)  # R: at_risk() has the bin's censorings out
        x = np.clip(np.divide(left, big, out=np.zeros_like(big), where=big > 0), 0.0, 1.0 - 1e-3)
        safe = np.where(x > 1e-9, x, 0.5)
        r = big * np.where(x > 1e-9, safe / -np.log1p(-safe), 1.0)
    else:
        a = censored_at_risk(counts, shifted)
        r = counts.at_risk().astype(float)
        if a > 0:
            r = r + a * counts.censored.astype(float)
        r = np.maximum(r, 0.0)
    d = np.clip(counts.events_total.astype(float), 0.0, r)
    return r, d


def _merged_sums(x: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """Sums of x (..., J) over each merged bin, at the bin's last public bin (kept[..., j]: bin j ends a merged bin;
    broadcast against x), 0 elsewhere."""
    j_count = x.shape[-1]
    idx = np.arange(j_count)
    kept = np.broadcast_to(kept, x.shape)
    cum = np.cumsum(x, -1)
    last = np.maximum.accumulate(np.where(kept, idx, -1), axis=-1)  # last end at or before j
    prev = np.concatenate([np.full(x.shape[:-1] + (1,), -1), last[..., :-1]], axis=-1)  # the end before j's bin
    before = np.where(prev >= 0, np.take_along_axis(cum, np.maximum(prev, 0), -1), 0.0)
    return np.where(kept, cum - before, 0.0)


def width_shares(widths: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """f_j (..., J): each public bin's share of its merged bin's width (1 where every bin is its own)."""
    w = np.broadcast_to(np.asarray(widths, float), kept.shape)
    total = _merged_sums(w, kept)
    j_count = kept.shape[-1]
    nxt = np.minimum.accumulate(np.where(kept, np.arange(j_count), j_count - 1)[..., ::-1], axis=-1)[..., ::-1]
    return w / np.take_along_axis(total, nxt, -1)


def noise_covariance(r: np.ndarray, cell_variance: float, kept: np.ndarray | None = None,
                     share: np.ndarray | None = None) -> np.ndarray:
    """V_noise (..., G, G) = sigma^2 sum_B (delta_gh L_B^2 - L_B (A_gB + A_hB) + G A_gB A_hB): one independent draw
    per group and bin (``kept`` None), or per merged bin (``kept`` (..., J), spread by ``share`` f_j (..., J))."""
    rt = r.sum(-2)
    live = rt > 0
    a = np.where(live[..., None, :], r / np.where(live, rt, 1.0)[..., None, :], 0.0)  # (..., G, J)
    weight = live.astype(float)
    if kept is not None:
        f = np.ones(rt.shape) if share is None else np.broadcast_to(share, rt.shape)
        weight = _merged_sums(weight * f, kept)
        a = _merged_sums(a * f[..., None, :], kept[..., None, :])
    g = a.shape[-2]
    cross = np.einsum("...aj,...j->...a", a, weight)
    cov = (np.eye(g) * (weight * weight).sum(-1)[..., None, None] - cross[..., :, None] - cross[..., None, :]
           + g * np.einsum("...aj,...bj->...ab", a, a))
    return cell_variance * cov


def noise_adjusted(counts: BinnedCounts, cell_variance: float, shifted: float = 0.0, kept: np.ndarray | None = None,
                   at_ends: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(noise-adjusted statistic, plain statistic) over all groups of ``counts``; NaN where the counts leave the
    plain statistic no variance (no events, or nobody at risk in a group), as the test is undefined there. ``kept``
    (..., J): the merged bins the noise was drawn on (:func:`noise_covariance`), spread over their public bins by
    width, or, ``at_ends``, all at each merged bin's last public bin (f_j = 1 there, 0 elsewhere), whose numbers at
    risk then follow the exposure rule of :func:`_at_risk_events`."""
    r, d = _at_risk_events(counts, shifted, exposure=at_ends)
    o, e, v = _components(r, d)
    plain = _statistic(o, e, v)
    if cell_variance <= 0:
        return plain, plain
    if kept is None:
        share = None
    elif at_ends:
        share = np.asarray(kept, float)
    else:
        share = width_shares(np.diff(counts.grid.edges), kept)
    v_noise = noise_covariance(r, cell_variance, kept, share)
    return np.where(np.isnan(plain), np.nan, _statistic(o, e, v + v_noise)), plain


def degrees_of_freedom(counts: BinnedCounts, expected: np.ndarray | None = None, shifted: float = 0.0,
                       exposure: bool = False) -> np.ndarray:
    """R's survdiff rule, per leading trial (...,): the groups with a positive expected count, less one (a group with
    nobody at risk at any event time adds nothing to the statistic). ``expected``: E per group, when already known."""
    if expected is None:
        expected = _components(*_at_risk_events(counts, shifted, exposure))[1]
    return np.maximum((expected > 0).sum(-1) - 1, 0)


def chdtrc(dof: np.ndarray | int, statistic: np.ndarray) -> np.ndarray:
    """SciPy's upper chi-square tail (``scipy.special.chdtrc``), imported when first used: SciPy's special functions
    take a while to import, and a release without a test never needs them."""
    from scipy.special import chdtrc as tail

    return tail(dof, statistic)


def chi_square_p(dof: np.ndarray | int, statistic: np.ndarray) -> np.ndarray:
    """Upper chi-square tail; no p-value (NaN) without a degree of freedom."""
    dof = np.broadcast_to(np.asarray(dof), np.shape(statistic))
    with np.errstate(invalid="ignore"):
        return np.where(dof > 0, chdtrc(np.maximum(dof, 1), statistic), np.nan)


def overall(counts: BinnedCounts, shifted: float = 0.0) -> LogRankResult:
    """k-group log-rank test over all groups of ``counts``, on R's degrees of freedom (:func:`degrees_of_freedom`),
    by R's survdiff rule for groups without expected events (:func:`_r_test`).

    Parameters
    ----------
    counts : BinnedCounts
        Exact or released counts of two or more groups.
    shifted : float, default 0.0
        The share of each bin's censorings the counts already moved to the next bin.

    Returns
    -------
    LogRankResult
        The k-group test.

    References
    ----------
    .. [1] Mantel N. (1966), Evaluation of survival data and two new rank order statistics arising in its
       consideration, Cancer Chemotherapy Reports 50(3), 163-170.
    """
    r, d = _at_risk_events(counts, shifted)
    return _r_test(", ".join(counts.groups), None, r, d)


def pairwise(counts: BinnedCounts, shifted: float = 0.0) -> list[LogRankResult]:
    """Two-group log-rank test for every pair of groups, by R's survdiff rule for a group without expected events
    (:func:`_r_test`).

    Parameters
    ----------
    counts : BinnedCounts
        Exact or released counts.
    shifted : float, default 0.0
        The share of each bin's censorings the counts already moved to the next bin.

    Returns
    -------
    list of LogRankResult
        One test per pair of groups, in group order.
    """
    r, d = _at_risk_events(counts, shifted)
    return [_r_test(counts.groups[a], counts.groups[b], r[..., [a, b], :], d[..., [a, b], :])
            for a, b in combinations(range(len(counts.groups)), 2)]


def _r_test(group_a: str, group_b: str | None, r: np.ndarray, d: np.ndarray) -> LogRankResult:
    """The log-rank test of the groups of ``r``, ``d`` (..., G, J) as R's survdiff (survival 3.5) computes it: the
    groups with expected events E_g > 0 are tested, on (their number - 1) degrees of freedom; where fewer than two
    have expected events but some group has events, the statistic is 0 on 0 degrees of freedom and
    ``pchisq(0, 0, lower.tail = FALSE)`` = 1, p = 1; with no events at all there is no test (NaN; R's p is NA)."""
    o, e, v = _components(r, d)
    dof = np.maximum((e > 0).sum(-1) - 1, 0)
    with np.errstate(invalid="ignore"):
        stat = np.where(dof > 0, _statistic(o, e, v), np.nan)
    p = chi_square_p(dof, stat)
    one_group = (dof == 0) & (o.sum(-1) > 0)
    stat, p = np.where(one_group, 0.0, stat), np.where(one_group, 1.0, p)
    return LogRankResult(group_a, group_b, stat, p, int(dof.max(initial=0)), o, e)
