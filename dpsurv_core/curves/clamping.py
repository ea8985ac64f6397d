"""What clamping noisy counts at 0 does, and how a reader undoes it: the bias it adds to each event and censoring
cell (for the sentence on rrr's de-biased counts), and laplace-counts' counts read back without that bias
(:func:`unclamped_counts`; post-processing of the released counts and the public noise law only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts, post_process
from dpsurv_core.curves.kaplan_meier import SurvivalCurves


def clamping_bias(counts: np.ndarray, scale: float, discrete: bool = True) -> np.ndarray:
    """E[max(0, d + N)] - d, what clamping a noisy count at 0 adds on average to a true count d: p^(d+1) / (1 - p^2)
    for discrete Laplace noise of ``scale`` (P(N = k) proportional to p^|k|, p = exp(-1/scale)), (scale / 2)
    exp(-d / scale) for continuous Laplace."""
    d = np.maximum(np.asarray(counts, float), 0.0)
    if scale <= 0:
        return np.zeros_like(d)
    if not discrete:
        return scale / 2.0 * np.exp(-d / scale)
    p = math.exp(-1.0 / scale)
    return p ** (d + 1.0) / (1.0 - p * p)


def noise_sd(scale: float, discrete: bool = True) -> float:
    """The standard deviation of Laplace noise of ``scale`` on one cell: sqrt(2p) / (1 - p), p = exp(-1/scale), for
    discrete Laplace (Inusah and Kozubowski 2006), sqrt(2) scale for continuous; 0 without noise."""
    if scale <= 0:
        return 0.0
    if not discrete:
        return math.sqrt(2.0) * scale
    p = math.exp(-1.0 / scale)
    return math.sqrt(2.0 * p) / (1.0 - p)


@dataclass(frozen=True)
class ClampingBias:
    """What the noise does to the counts a band stands behind, for the sentences beside it: what setting negative
    released event counts to 0 adds on average to each (..., G, J) event cell (:func:`laplace_clamping`,
    :func:`rrr_clamping`; zeros where the curve reads the counts without that bias, :func:`unclamped_noise`), with the
    sentence's words (what was clamped) and the size of the noise on one cell, and on the number at risk."""

    events: np.ndarray
    what: str
    noise_sd: np.ndarray  # (..., G, J): the standard deviation of the noise on one event cell there
    # (..., G, J): what clamping adds to each censoring cell; the number at risk falls by the events' and censorings'
    # biases of the bins before, which on a fine grid inflates the hazard more than the events' own bias
    censored: np.ndarray | None = None
    # (..., G, J): the standard deviation of the noise on the number at risk the curve reads at each point (None: not
    # stated); where that number is within a few of these the curve and its band are the noise's (:func:`few_at_risk`)
    risk_sd: np.ndarray | None = None


def laplace_risk_sd(events_shape: tuple[int, ...], scale: float, discrete: bool = True) -> np.ndarray:
    """laplace-counts: the noise's standard deviation (..., G, J) on the number at risk in bin j (0-based),
    r_j = n - sum_{i<j} d_i - sum_{i<=j} c_i, a sum of 1 + K j + j + 1 independent noisy cells (K event types):
    sd sqrt(2 + (K + 1) j) (:func:`noise_sd`). Unclamping a cell leaves it a little less spread than its noise, so
    this errs high."""
    *lead, k, j = events_shape
    sd = noise_sd(scale, discrete) * np.sqrt(2.0 + (k + 1) * np.arange(j))
    return np.broadcast_to(sd, (*lead, j)).copy()


def adaptive_risk_sd(kept: np.ndarray, groups: int, types: int, scale: float, discrete: bool = True) -> np.ndarray:
    """adaptive-km: the noise's standard deviation (R, G, J) on the number at risk at the start of the merged bin
    holding public bin j, a tail sum r_B = s + sum_{B' >= B} d + sum_{B' > B} c over the released cells
    (1 + K (L + 1) + L cells, L merged bins after B)."""
    kept = np.asarray(kept, bool)
    blocks = kept.sum(-1, keepdims=True)
    block = np.cumsum(kept, -1) - kept  # the merged bin of each public bin
    later = np.clip(blocks - 1 - block, 0, None)
    sd = noise_sd(scale, discrete) * np.sqrt(1.0 + types * (later + 1) + later)
    return np.repeat(sd[:, None, :], groups, axis=1).astype(float)


def unclamped_noise(events: np.ndarray, scale: float, discrete: bool = True) -> ClampingBias:
    """A curve read from counts without clamping's bias (:func:`unclamped_counts`): no clamping sentence, the noise on
    one cell and on the number at risk (:func:`laplace_risk_sd`) for the sentence on few at risk."""
    g_shape = events.shape[:-2] + events.shape[-1:]
    return ClampingBias(np.zeros(g_shape), "", np.full(g_shape, noise_sd(scale, discrete)), None,
                        laplace_risk_sd(events.shape, scale, discrete))


def declamped(released: np.ndarray, scale: float, discrete: bool = True) -> np.ndarray:
    """The true count d >= 0 whose clamped noisy count has mean ``released``: d + clamping_bias(d) = y (0 where y is
    at most the bias of an empty cell), by bisection; the clamping bias at the released counts themselves, which
    clamping has already pulled up, understates it most in the sparse cells where it matters."""
    y = np.maximum(np.asarray(released, float), 0.0)
    if scale <= 0:
        return y
    lo, hi = np.zeros_like(y), y.copy()
    for _ in range(40):  # the mean d + bias(d) rises with d: bisection to about 1e-12 of a count
        mid = (lo + hi) / 2.0
        above = mid + clamping_bias(mid, scale, discrete) > y
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    return lo


def laplace_clamping(events: np.ndarray, scale: float, discrete: bool = True, censored: np.ndarray | None = None
                     ) -> ClampingBias:
    """laplace-counts: every event type's cell (..., G, K, J) and censoring cell (..., G, J) clamped on its own; the
    bias of each (:func:`clamping_bias`) is read at the count that clamping would have pulled up to the released one
    (:func:`declamped`)."""
    sd = noise_sd(scale, discrete)
    bias = clamping_bias(declamped(events, scale, discrete), scale, discrete).sum(-2)
    cens = None if censored is None else clamping_bias(declamped(censored, scale, discrete), scale, discrete)
    return ClampingBias(bias, "clamping the noisy counts at 0", np.full(bias.shape, sd), cens)


def rrr_clamping(debiased_events: np.ndarray, matrix: np.ndarray, debiased_censored: np.ndarray | None = None
                 ) -> ClampingBias:
    """rrr: de-biasing solves P^T x = reported, x = A r with A = (P^T)^-1, and sets negative cells to 0. With x_h
    true subjects of group h in a cell reporting by row h of P (a multinomial), Var(x_g) = (A S A^T)_gg, S = sum_h x_h
    (diag(p_h) - p_h p_h^T); x_g is about normal, so clamping adds sd (phi(z) - z Phi(-z)), z = x_g / sd (Johnson,
    Kotz and Balakrishnan 1994), evaluated at the released (clamped) cells: an underestimate (more so with several
    rows per subject, whose rows report one label together)."""
    bias, var = _rrr_cell_bias(debiased_events, matrix)
    cens = None if debiased_censored is None else _rrr_cell_bias(np.asarray(debiased_censored)[..., None, :],
                                                                 matrix)[0][..., 0, :]
    return ClampingBias(bias.sum(-2), "de-biasing the randomized labels and setting negative counts to 0",
                        np.sqrt(var.sum(-2)), cens)


def _rrr_cell_bias(debiased: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bias, variance) (..., G, K, J) of rrr's clamped de-biased cells (:func:`rrr_clamping`)."""
    from scipy.stats import norm

    x = np.maximum(np.asarray(debiased, float), 0.0)  # (..., G, K, J)
    a = np.linalg.inv(matrix.T)
    p = np.asarray(matrix, float)
    outer = np.einsum("ha,hb->hab", p, p)
    diag = np.einsum("ha,ab->hab", p, np.eye(p.shape[0]))
    cov = np.einsum("...hkj,hab->...kjab", x, diag - outer)  # (..., K, J, G, G) of the reported counts
    var = np.einsum("ga,...kjab,gb->...gkj", a, cov, a)
    sd = np.sqrt(np.maximum(var, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, x / sd, np.inf)
        bias = np.where(sd > 0, sd * (norm.pdf(z) - z * norm.sf(z)), 0.0)
    return bias, var


# ------------------------------------------------------------------------------------------ reading clamped counts
def clamped_mean(scale: float, discrete: bool = True) -> float:
    """E[d + N | d + N <= 0] for any true count d >= 0 (whole d for discrete noise): what a released 0 stood for.

    Laplace noise's tail below the true count is memoryless: given d + N <= 0, -(d + N) is geometric with
    P(k) = (1 - p) p^k, p = exp(-1/scale), for discrete Laplace (Inusah and Kozubowski 2006), and exponential of mean
    ``scale`` for continuous Laplace, whatever d is. So replacing every released 0 by -p / (1 - p) (discrete) or
    -scale (continuous) gives back the unclamped noisy count's mean, d, exactly: E[max(0, d + N)] + P(d + N <= 0) x
    that mean = E[d + N] = d (:func:`clamping_bias` is the part this removes). 0 without noise."""
    if scale <= 0:
        return 0.0
    if not discrete:
        return -float(scale)
    p = math.exp(-1.0 / scale)
    return -p / (1.0 - p)


def released_stop(counts: BinnedCounts) -> np.ndarray:
    """Bool (..., G, J): from the first bin that the released counts enter with nobody at risk (n less the events and
    censorings of the bins before is 0 or less) to the end. laplace-counts' post-processing cut each bin's noisy
    events to the number at risk read off the clamped counts (:func:`dpsurv_core.curves.counts.post_process`); the
    bins after a bin so cut are entered with 0 or less, and their events are released as 0 whatever happened. (The cut
    bin itself keeps its released events, all those at risk: a lower bound of its noisy events, and exactly its
    events where everyone at risk had one.)"""
    entering = counts.at_risk() + counts.censored
    return np.logical_or.accumulate(entering <= 1e-9, axis=-1)


def monotone_increments(x: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Increments (..., J) >= 0 of the least-squares non-decreasing fit, from 0 up, to the running sum of ``x`` over
    the bins ``keep`` marks (a prefix of each row; 0 elsewhere): the pool-adjacent-violators algorithm (Barlow et al.
    1972) on the cumulative counts, which pools neighbouring bins where the noise made the running sum fall. (Reading
    each pool linearly between the pools' middles instead spread a steep first bin over the flat bins after it: an
    exponential curve at 0.31 after its first bin read 0.47 at n = 60, epsilon 0.5.) Rows already non-decreasing
    from 0 are returned as they are; the others are fitted together (:func:`dpsurv_core.curves.isotonic.isotonic_rows`,
    SciPy's fit bit for bit)."""
    from dpsurv_core.curves.isotonic import isotonic_rows

    x = np.where(keep, np.asarray(x, float), 0.0)
    out = x.copy()
    bad = ((x < 0) & keep).any(axis=-1)
    if not bad.any():
        return out
    width = x.shape[-1]
    flat_out, flat_keep = out.reshape(-1, width), keep.reshape(-1, width)
    rows = np.flatnonzero(bad.reshape(-1))  # the rows that need it (trials x groups x types)
    m = flat_keep[rows].sum(axis=-1)
    inside = np.arange(width) < m[:, None]
    fit = np.maximum.accumulate(np.maximum(isotonic_rows(np.cumsum(flat_out[rows], axis=-1), m), 0.0), axis=-1)
    flat_out[rows] = np.where(inside, np.diff(fit, axis=-1, prepend=0.0), flat_out[rows])
    return out


def unclamped_counts(released: BinnedCounts, scale: float, discrete: bool = True) -> BinnedCounts:
    """laplace-counts' released counts as the curve reads them, without the bias clamping put in them.

    Clamping each noisy cell at 0 adds clamping_bias(d) to it on average (about 1 event per empty cell at epsilon
    1), and the number at risk n - sum d - sum c loses the sum of those biases: on 100 bins of 200 subjects the
    curve at the true median read 0.29 (0.10 at epsilon 0.5) against 0.50. Here, from the released counts and the
    public noise law only:

    1. every released 0 event or censoring cell becomes :func:`clamped_mean` (-1.54 at epsilon 1), so each cell and
       every running sum, hence the number at risk, is unbiased;
    2. the running sums of events (per type) and of censorings are made non-decreasing from 0 by
       :func:`monotone_increments`, so no bin has negative counts and the curve never rises;
    3. from the bin where the release had cut the events to the number at risk (:func:`released_stop`) the events are
       unknown: everyone still at risk there leaves as censored, so the curve stops (:func:`stopped_where_cut`: its
       band runs from 0 to the last upper limit, and a sentence says that nobody is left at risk);
    4. post-processing as the release's (:func:`~dpsurv_core.curves.counts.post_process`): events at most the number
       at risk.

    Without noise (``scale`` 0) the counts are returned as they are, and counts with no 0 cell and no cut are
    unchanged."""
    if scale <= 0:
        return released
    fill = clamped_mean(scale, discrete)
    stop = released_stop(released)  # (..., G, J)
    keep = ~stop
    ev = np.where(released.events <= 0, fill, released.events.astype(float))
    ce = np.where(released.censored <= 0, fill, released.censored.astype(float))
    ev = monotone_increments(ev, np.broadcast_to(keep[..., None, :], ev.shape))
    ce = monotone_increments(ce, keep)
    n = np.maximum(released.n.astype(float), 0.0)
    first = stop & ~np.concatenate([np.zeros(stop.shape[:-1] + (1,), bool), stop[..., :-1]], axis=-1)
    left = np.maximum(n - ev.sum((-2, -1)) - ce.sum(-1), 0.0)  # (..., G): still at risk where the events stop
    ce = np.where(first, left[..., None], ce)
    return post_process(replace(released, n=n, events=ev, censored=ce))


def stopped_where_cut(curves: SurvivalCurves, released: BinnedCounts) -> SurvivalCurves:
    """Curves read from :func:`unclamped_counts` with nobody at risk from the bin where the release cut the events
    (:func:`released_stop`) on: there the curve carries no information, so, as for any noisy curve that runs out of
    subjects, its band is [0, 1] (the bootstrap's band then runs from 0 to the last upper limit before). The
    life-table rule would otherwise keep half of that bin's leavers at risk."""
    stop = np.broadcast_to(released_stop(released), curves.survival.shape)
    if not stop.any():
        return curves
    open_ = stop & (curves.survival > 0)
    return replace(curves, at_risk=np.where(stop, 0.0, curves.at_risk),
                   lower=np.where(open_, 0.0, curves.lower), upper=np.where(open_, 1.0, curves.upper),
                   lower_linear=np.where(open_, 0.0, curves.lower_linear),
                   upper_linear=np.where(open_, 1.0, curves.upper_linear))


def unclamped_blocks(events: np.ndarray, censored: np.ndarray, beyond: np.ndarray, kept: np.ndarray, scale: float,
                     discrete: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """adaptive-km's released merged-bin counts (events (R, G, K, J), censorings (R, G, J), rows past the grid (R, G);
    ``kept`` (R, J) its merged bins) as its curve reads them, without clamping's bias: every released 0 becomes
    :func:`clamped_mean` and the running sums over the merged bins are made non-decreasing
    (:func:`monotone_increments`), as :func:`unclamped_counts` does for laplace-counts. Its numbers at risk are tail
    sums, s + the events and censorings of the merged bins after, so each clamped cell after a bin inflated them
    (at S = 0.1, 0.176 against 0.135 on average): unclamped, they lose that bias. The one cell s of the rows past the
    grid stays as released (a 0 read as below 0 would leave fewer than nobody at risk in the last bin), so the number
    at risk keeps at most one cell's clamping bias, clamping_bias(0) (0.56 at epsilon 1). Without noise the counts
    are returned as they are."""
    if scale <= 0:
        return events, censored, beyond
    fill = clamped_mean(scale, discrete)
    valid = np.arange(kept.shape[-1])[None, :] < np.asarray(kept, bool).sum(-1, keepdims=True)  # (R, J)
    ev = np.where(events <= 0, fill, np.asarray(events, float))
    ce = np.where(censored <= 0, fill, np.asarray(censored, float))
    ev = monotone_increments(ev, np.broadcast_to(valid[:, None, None, :], ev.shape))
    ce = monotone_increments(ce, np.broadcast_to(valid[:, None, :], ce.shape))
    return ev, ce, np.asarray(beyond, float)


def risk_table_counts(read: BinnedCounts, released: BinnedCounts) -> BinnedCounts:
    """The counts a number-at-risk table (R's n.risk, time >= t) reads beside a curve read by
    :func:`unclamped_counts`: the same, except that those still at risk where the release stopped leave at the end
    of the bin before, so that nobody is counted at risk from the start of the bin the released counts enter with
    nobody at risk, as the sentence beside the curve says (the curve itself keeps them at risk through that bin's
    start, for the life-table rule of the bin before)."""
    stop = released_stop(released)
    first = stop & ~np.concatenate([np.zeros(stop.shape[:-1] + (1,), bool), stop[..., :-1]], axis=-1)
    first[..., 0] = False  # stopped from the first bin: nobody to move before it
    if not first.any():
        return read
    moved = np.where(first, read.censored, 0.0)
    before = np.concatenate([moved[..., 1:], np.zeros(moved.shape[:-1] + (1,))], axis=-1)
    return replace(read, censored=read.censored - moved + before)


def opened_at_cut(curves: SurvivalCurves, released: BinnedCounts) -> SurvivalCurves:
    """The band of a curve read by :func:`unclamped_counts` with no lower limit (0) in the bin just before the one the
    released counts enter with nobody at risk (:func:`released_stop`): the release cut that bin's noisy events to the
    number at risk the clamped counts left, so its released events are a lower bound and the curve there is an upper
    bound of the reading's. (Its upper limit stays: the curve never rises.) The variance of log S there is 10^6,
    which puts every band type's lower limit at 0 (an infinite one would be R's NA), so everything read off the band
    (the median's limits) agrees."""
    stop = np.broadcast_to(released_stop(released), curves.survival.shape)
    cut = np.concatenate([stop[..., 1:], np.zeros(stop.shape[:-1] + (1,), bool)], axis=-1) & ~stop
    cut &= curves.survival > 0
    if not cut.any():
        return curves
    variance = None if curves.interval_variance is None else np.where(cut, 1e6, curves.interval_variance)
    return replace(curves, lower=np.where(cut, 0.0, curves.lower),
                   lower_linear=np.where(cut, 0.0, curves.lower_linear), interval_variance=variance)
