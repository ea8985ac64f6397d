"""Log-rank tests from (noisy, post-processed) per-group counts (docs/mechanisms.md).

Per bin j with r_j = sum_g r_gj and d_j = sum_g d_gj, under H0:
  E_gj = d_j r_gj / r_j,
  V_gh,j = d_j (r_gj / r_j)(delta_gh - r_hj / r_j)(r_j - d_j) / (r_j - 1)   (0 where r_j <= 1).
Overall k-group statistic (O - E)' V^- (O - E) on the first k-1 groups, chi-square with k-1
degrees of freedom; pairwise tests use only the two groups' counts. With the distinct event
times as the grid these equal lifelines' logrank_test / pairwise_logrank_test /
multivariate_logrank_test. Arrays keep leading trial axes.

A calibrated private test may compare a *noise-adjusted* statistic (O - E)' (V + V_noise)^- (O - E)
with its simulated null law (:func:`noise_adjusted`), where
  V_noise,gh = sigma^2 sum_j (delta_gh - a_gj - a_hj + G a_gj a_hj),   a_gj = r_gj / r_j,
over the bins with someone at risk: the covariance that independent noise of variance sigma^2 on every
group's events in every such bin would add to O - E with the numbers at risk held fixed. It is not the
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
from scipy.special import chdtrc

from dpsurv_core.curves.counts import BinnedCounts


@dataclass(frozen=True)
class LogRankResult:
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


def _at_risk_events(counts: BinnedCounts) -> tuple[np.ndarray, np.ndarray]:
    r = np.maximum(counts.at_risk().astype(float), 0.0)
    d = np.minimum(counts.events_total.astype(float), r)
    return r, d


def noise_covariance(r: np.ndarray, cell_variance: float) -> np.ndarray:
    """V_noise (..., G, G) = sigma^2 sum_j (delta_gh - a_gj - a_hj + G a_gj a_hj) over the bins with someone at risk."""
    rt = r.sum(-2)
    live = rt > 0
    a = np.where(live[..., None, :], r / np.where(live, rt, 1.0)[..., None, :], 0.0)  # (..., G, J)
    g = a.shape[-2]
    weight = live.astype(float)
    share = np.einsum("...aj,...j->...a", a, weight)
    cov = (np.eye(g) * weight.sum(-1)[..., None, None] - share[..., :, None] - share[..., None, :]
           + g * np.einsum("...aj,...bj->...ab", a, a))
    return cell_variance * cov


def noise_adjusted(counts: BinnedCounts, cell_variance: float) -> tuple[np.ndarray, np.ndarray]:
    """(noise-adjusted statistic, plain statistic) over all groups of ``counts``; NaN where the counts leave the
    plain statistic no variance (no events, or nobody at risk in a group), as the test is undefined there."""
    r, d = _at_risk_events(counts)
    o, e, v = _components(r, d)
    plain = _statistic(o, e, v)
    if cell_variance <= 0:
        return plain, plain
    return np.where(np.isnan(plain), np.nan, _statistic(o, e, v + noise_covariance(r, cell_variance))), plain


def degrees_of_freedom(counts: BinnedCounts, expected: np.ndarray | None = None) -> np.ndarray:
    """R's survdiff rule, per leading trial (...,): the groups with a positive expected count, less one (a group with
    nobody at risk at any event time adds nothing to the statistic). ``expected``: E per group, when already known."""
    if expected is None:
        expected = _components(*_at_risk_events(counts))[1]
    return np.maximum((expected > 0).sum(-1) - 1, 0)


def chi_square_p(dof: np.ndarray | int, statistic: np.ndarray) -> np.ndarray:
    """Upper chi-square tail; no p-value (NaN) without a degree of freedom."""
    dof = np.broadcast_to(np.asarray(dof), np.shape(statistic))
    with np.errstate(invalid="ignore"):
        return np.where(dof > 0, chdtrc(np.maximum(dof, 1), statistic), np.nan)


def overall(counts: BinnedCounts) -> LogRankResult:
    """k-group log-rank test over all groups of ``counts``, on R's degrees of freedom (:func:`degrees_of_freedom`;
    no test where no two groups have expected events)."""
    r, d = _at_risk_events(counts)
    o, e, v = _components(r, d)
    dof = degrees_of_freedom(counts, e)
    stat = np.where(dof > 0, _statistic(o, e, v), np.nan)
    return LogRankResult(", ".join(counts.groups), None, stat, chi_square_p(dof, stat), int(dof.max(initial=0)), o, e)


def pairwise(counts: BinnedCounts) -> list[LogRankResult]:
    """Two-group log-rank test for every pair of groups."""
    r, d = _at_risk_events(counts)
    out = []
    for a, b in combinations(range(len(counts.groups)), 2):
        o, e, v = _components(r[..., [a, b], :], d[..., [a, b], :])
        stat = _statistic(o, e, v)
        out.append(LogRankResult(counts.groups[a], counts.groups[b], stat, chdtrc(1, stat), 1, o, e))
    return out
