"""Calibrated private log-rank tests: the null distribution of the statistic simulated with the public noise.

A log-rank statistic computed from noisy counts is not chi-square under H0: the noise widens its
null distribution, so the chi-square tail ``chdtrc(dof, T)`` ("naive p") rejects far too often. The
noise law is public, so the statistic's null law can be simulated from the release alone
(post-processing, no extra budget; the parametric-bootstrap calibration of private tests, e.g.
Gaboardi et al. 2016 for chi-square tests; Wang, Kifer and Lee 2019):

1. From the released (post-processed) counts of the groups in the test, read the *pooled* hazard
   per public bin h_j = sum_g d_gj / sum_g r_gj (H0: one hazard for every group; r_gj the statistic's
   numbers at risk, with the actuarial rule on a public grid: :mod:`dpsurv_core.curves.logrank`), each
   group's own size n_g (rounded) and its own censoring share per bin
   q_gj = c_gj / (R_gj (1 - p_j)), R_gj the group's number followed at the bin's start.
2. Draw B null cohorts on the public grid, bin by bin, each group from its own m_g1 = n_g: k_gj ~ Bin(m_gj, q_gj)
   are due to be censored in the bin, and of these an event comes first to Bin(k_gj, p_j), to the others
   to Bin(m_gj - k_gj, h_j); m_{g,j+1} = m_gj - c_gj - d_gj. On a public grid a censoring falls uniformly in
   the bin and the hazard is constant inside it, so an event precedes it with probability
   p_j = 1 - h_j / H_j, H_j = -log(1 - h_j) (about h_j / 2, the life table's half bin at risk; Cutler and
   Ederer 1958); on an event-time grid every censoring of a bin precedes its event time (p_j = 0).
3. Pass every null cohort through the mechanism's own noise and post-processing (:class:`NoiseLaw`,
   drawn from a :class:`~dpsurv_core.privacy.noise.SimulationNoise` seeded from the released
   values, so the same release always gets the same p-value) and compute the same statistic T*_b.
   Disclosure-control methods give their own rule through their ``noise_law()``; randomized
   response on the raw reported groups needs none (label swaps leave the null law unchanged).
4. Calibrated p = (1 + #{b : T*_b >= T}) / (B + 1) (Davison & Hinkley 1997, a Monte Carlo test).

Where the law states the noise variance on one count cell (Laplace noise: laplace-counts on every cell,
adaptive-km on each merged bin's cells, spread over its public bins), T is the noise-adjusted
statistic (O - E)' (V + V_noise)^- (O - E) of :func:`~dpsurv_core.curves.logrank.noise_adjusted`
rather than the plain log-rank chi-square. The plain statistic's null law grows with the noise, so
the test leaned on the rates read off the clamped noisy counts, whose simulated cohorts die out too
fast, and rejected 7-8% of true nulls at epsilon 0.5 and below with heavy late censoring; the
adjusted statistic discounts the bins where noise outweighs the events and its null law moves far
less with the plug-in rates (resampling a statistic that depends less on the unknowns is what keeps a
parametric bootstrap's level: Hall 1992). adaptive-km's plain statistic did the same (14.9% at epsilon 0.5 with
groups censored 10% and 70%; 12.2% with groups of 1:9). Measured in docs/coverage-logrank.md.

Pairwise tests simulate the pair's groups only with the pair's pooled hazard; the overall test all
groups. Everything is vectorised over release trials and null draws (one (trials x B) axis); the
only Python loop is over the public bins. Without noise (epsilon = inf) the test is the exact
log-rank on the same grid (chi-square tail), equal to R's ``survdiff`` on the binned times.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np

from dpsurv_core.curves import grid_timing, logrank
from dpsurv_core.curves.counts import BinnedCounts, post_process
from dpsurv_core.curves.kaplan_meier import actuarial_share
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import SimulationNoise

ALPHA = 0.05
DEFAULT_DRAWS = 999
EXACT_METHOD = "log-rank chi-square on exact counts (no noise: not private)"
CALIBRATED_METHOD = ("Monte Carlo test: the statistic's null distribution simulated from the released pooled hazard "
                     "and the public noise law ({draws} draws)")
ADJUSTED_METHOD = ("Monte Carlo test of the noise-adjusted log-rank statistic (O - E)' (V + V_noise)^-1 (O - E): its "
                   "null distribution simulated from the released pooled hazard and the public noise law ({draws} draws)")
LABEL_METHOD = ("log-rank chi-square on the reported groups: randomizing labels does not change the statistic's null "
                "distribution (every group has the same survival under H0), so no calibration is needed")

# Simulated null tables are built in blocks of at most this many cells (trials x draws x groups x bins).
MAX_CELLS = 8_000_000
# With many release trials (simulations) the default number of null draws shrinks to keep to this budget.
DRAW_BUDGET = 6_000_000


@dataclass(frozen=True)
class NoiseLaw:
    """How a mechanism turns exact counts into released counts, for simulating null releases.

    ``apply(exact, rows, noise)``: exact counts with a leading axis N (one null cohort per row) and
    ``rows`` (N,) the release trial each row belongs to (the adaptive bins differ by trial) -> the
    released counts as the mechanism computes them. ``noisy`` False: no noise, the chi-square tail is
    exact. ``separable``: groups are released independently, so a pairwise test may simulate its
    pair alone (False for randomized response, whose de-biasing mixes the groups). ``cell_variance``:
    the variance of the noise on one count cell when every cell gets the same independent noise; the
    test then uses the noise-adjusted statistic (0: the plain log-rank statistic). ``kept`` (R, J): the merged
    bins the noise was drawn on, per release trial (None: every public bin). ``shifted``: the share of each bin's
    censorings the released counts already moved to the next bin (the statistic counts at risk the rest of the
    grid's actuarial share: :func:`dpsurv_core.curves.logrank.censored_at_risk`).
    """

    mechanism: str
    description: str
    noisy: bool
    apply: Callable[[BinnedCounts, np.ndarray, SimulationNoise], BinnedCounts]
    separable: bool = True
    method: str = CALIBRATED_METHOD
    cell_variance: float = 0.0
    kept: np.ndarray | None = None
    shifted: float = 0.0
    test_view: Callable[[BinnedCounts], BinnedCounts] | None = None
    test_apply: Callable[[BinnedCounts, np.ndarray, SimulationNoise], BinnedCounts] | None = None


@dataclass(frozen=True)
class CalibratedTest:
    """One test over the release trials: statistic, calibrated p, and the chi-square tail that ignores the noise.

    ``statistic`` is the statistic the test compares with its null law (noise-adjusted where the law says
    so); ``statistic_ignoring_noise`` the plain log-rank chi-square of the released counts, whose tail
    ``chi2_tail_ignoring_noise`` is, and ``plain_critical_value`` its simulated null 95% point (how far the
    noise spreads the plain statistic: chi-square's 3.84 for a pair without noise).
    """

    group_a: str
    group_b: str | None  # None for the overall k-group test
    dof: int
    statistic: np.ndarray  # (trials,)
    p_value: np.ndarray  # calibrated (equal to the chi-square tail without noise)
    chi2_tail_ignoring_noise: np.ndarray  # NOT a p-value when there is noise
    critical_value: np.ndarray  # the test's 95% point: simulated null quantile (chi-square without noise)
    null_draws: int
    method: str
    statistic_ignoring_noise: np.ndarray
    plain_critical_value: np.ndarray
    dofs: np.ndarray | None = None  # (trials,) R's degrees of freedom in each trial (``dof`` is the largest)

    def dof_of(self, trial: int) -> int:
        """The degrees of freedom of one trial's test (R's rule on its released counts)."""
        return self.dof if self.dofs is None else int(self.dofs[trial])

    @property
    def label(self) -> str:
        return f"{self.group_a} vs {self.group_b}" if self.group_b is not None else f"overall ({self.group_a})"


# ------------------------------------------------------------------------------------------ noise laws
def laplace_law(mech: Any) -> NoiseLaw:
    """Laplace (or discrete Laplace) noise of the mechanism's scale on every count cell, then clamping."""
    scale, discrete = float(mech.scale), bool(mech.discrete)

    def apply(exact: BinnedCounts, rows: np.ndarray, noise: SimulationNoise) -> BinnedCounts:
        cells = exact.cells().astype(float, copy=False)  # a new array already: converted, not copied again
        draw = noise.discrete_laplace if discrete else noise.laplace
        return post_process(exact.from_cells(cells + draw(scale, cells.shape)))

    kind = "discrete Laplace" if discrete else "Laplace"
    if scale <= 0:  # epsilon = inf
        return NoiseLaw(mech.name, "none (epsilon = inf: exact counts)", False, lambda e, r, n: e)
    return NoiseLaw(mech.name, f"{kind} noise of scale {scale:.4g} on every count cell, then clamping", True, apply,
                    cell_variance=cell_noise_sd(mech) ** 2)


def adaptive_law(mech: Any, extra: dict[str, Any]) -> NoiseLaw:
    """adaptive-km's noise on the released merged bins (``extra['kept']``), then its constant-hazard fine counts.

    Its fine counts already hold the life-table rule (a share ``extra['actuarial']`` of each bin's censorings moved to
    the next bin). The test itself reads the merged bins, not the fine counts (``test_counts``, ``test_apply``): each
    merged bin's counts at its last public bin (:func:`~dpsurv_core.curves.adaptive_km.block_counts`), one noise draw
    of the mechanism's cell variance per group and merged bin, every released 0 read as what it stood for on average
    (so that the numbers at risk, sums of many cells, carry no clamping bias) and the numbers at risk of the exposure
    rule (:func:`~dpsurv_core.curves.logrank._at_risk_events`). Read off the fine counts, which spread a merged bin's
    censorings evenly over its public bins and keep clamping's bias in their tail sums, a heavily censored group
    kept too many at risk, a bias the null cohorts did not share: groups censored 10% and 70% rejected 11-15% of true
    nulls at epsilon 0.5 (6.6% now, Monte Carlo s.e. 0.8; docs/coverage-logrank.md)."""
    from dpsurv_core.curves import adaptive_km as ak
    from dpsurv_core.curves.clamping import clamped_mean, unclamped_blocks

    kept_all = np.asarray(extra["kept"], bool)
    a = float(extra["actuarial"])
    scale = float(mech.counts_scale)

    def blocks(exact: BinnedCounts, rows: np.ndarray, noise: SimulationNoise, unclamp: bool = True
               ) -> tuple[BinnedCounts | None, tuple[Any, ...]]:
        kept = kept_all[rows]
        starts, ends = ak._block_bounds(kept)
        valid = ak._valid_blocks(kept)

        def block(x: np.ndarray) -> np.ndarray:  # (N, ..., J) summed over each row's merged bins
            cum = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, -1)], axis=-1)
            shape = (x.shape[0],) + (1,) * (x.ndim - 2) + (x.shape[-1],)
            hi = np.broadcast_to((ends + 1).reshape(shape), x.shape)
            lo = np.broadcast_to(np.minimum(starts, x.shape[-1]).reshape(shape), x.shape)
            return np.take_along_axis(cum, hi, -1) - np.take_along_axis(cum, lo, -1)

        ev = block(exact.events.astype(float)) * valid[:, None, None, :]
        ce = block(exact.censored.astype(float)) * valid[:, None, :]
        s = (exact.n - exact.events_total.sum(-1) - exact.censored.sum(-1)).astype(float)
        ev = ev + mech._draw(noise, scale, ev.shape) * valid[:, None, None, :]
        ce = ce + mech._draw(noise, scale, ce.shape) * valid[:, None, :]
        s = s + mech._draw(noise, scale, s.shape)
        ev, ce, s = np.maximum(ev, 0.0), np.maximum(ce, 0.0), np.maximum(s, 0.0)
        if not unclamp:
            return None, (kept, ev, ce, s)
        ev, ce, s = unclamped_blocks(ev, ce, s, kept, scale, mech.discrete)  # read as the release reads them
        return ak.derive_fine_counts(exact, kept, ev, ce, s, a, mech.merged_rule), (kept, ev, ce, s)

    def fine(exact: BinnedCounts, rows: np.ndarray, noise: SimulationNoise) -> BinnedCounts:
        out = blocks(exact, rows, noise)[0]
        assert out is not None
        return out

    def merged(exact: BinnedCounts, rows: np.ndarray, noise: SimulationNoise) -> BinnedCounts:
        kept, *clamped = blocks(exact, rows, noise, unclamp=False)[1]
        return ak.block_counts(exact, kept, *unbiased_cells(kept, *clamped))

    def unbiased_cells(kept: np.ndarray, ev: np.ndarray, ce: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, ...]:
        """Every released 0 of a merged bin (and of the rows past the grid) read as what it stood for on average
        (:func:`~dpsurv_core.curves.clamping.clamped_mean`), so each cell, and every number at risk summed from
        them, is unbiased."""
        valid = ak._valid_blocks(kept)
        return (np.where((ev <= 0) & valid[:, None, None, :], fill, ev), np.where((ce <= 0) & valid[:, None, :], fill, ce),
                np.where(s <= 0, fill, s))

    fill = clamped_mean(scale, mech.discrete)

    kind = "discrete Laplace" if mech.discrete else "Laplace"
    description = (f"{kind} noise of scale {scale:.4g} on the one-cell-per-subject counts of the released merged bins, "
                   "then clamping and the constant-hazard fine counts")
    if scale <= 0:
        return NoiseLaw(mech.name, description, False, fine, shifted=a)
    if "released_blocks" not in extra:  # the merged bins without their counts (a bootstrap's law): the fine counts
        return NoiseLaw(mech.name, description, True, fine, cell_variance=cell_noise_sd(mech) ** 2, kept=kept_all,
                        shifted=a)
    released = unbiased_cells(kept_all, *(np.asarray(x, float) for x in extra["released_blocks"]))

    def view(counts: BinnedCounts) -> BinnedCounts:  # the release's own merged-bin counts, its first trials
        rows = counts.n.shape[0]
        return ak.block_counts(counts, kept_all[:rows], *(x[:rows] for x in released))

    return NoiseLaw(mech.name, description, True, fine, cell_variance=cell_noise_sd(mech) ** 2, kept=kept_all,
                    test_view=view, test_apply=merged)


def rrr_law(mech: Any, debiased: bool) -> NoiseLaw:
    """Randomized response on the label: none for the reported-label counts, the swaps then de-biasing otherwise."""
    p_matrix = mech.matrix
    noisy = bool(mech.p < 1.0)

    def apply(exact: BinnedCounts, rows: np.ndarray, noise: SimulationNoise) -> BinnedCounts:
        # every cell's subjects report their labels independently: a multinomial split per true group and cell
        ev = exact.events_total.astype(np.int64)  # (N, G, J)
        ce = exact.censored.astype(np.int64)
        s = exact.n.astype(np.int64) - ev.sum(-1) - ce.sum(-1)  # (N, G)
        g = p_matrix.shape[0]
        rng = noise.rng
        split = lambda x: rng.multinomial(x, p_matrix.reshape((1, g) + (1,) * (x.ndim - 2) + (g,))  # noqa: E731
                                          * np.ones(x.shape + (1,))).sum(1)  # (N, ..., G reported) summed over true
        ev_r = np.moveaxis(split(ev), -1, 1)
        ce_r = np.moveaxis(split(ce), -1, 1)
        s_r = split(s)
        n_r = s_r + ev_r.sum(-1) + ce_r.sum(-1)
        reported = replace(exact, n=n_r, events=ev_r[:, :, None, :], censored=ce_r, event_types=("event",))
        return mech.debias(reported)

    if not debiased:
        return NoiseLaw(mech.name, "randomized response on the group label", False, lambda e, r, n: e, True,
                        LABEL_METHOD)
    return NoiseLaw(mech.name + "-debiased", f"randomized response (keep probability {mech.p:.4g}), then de-biasing "
                                             "with the inverse response matrix and clamping", noisy, apply,
                    separable=False)


NO_NOISE_LAW = "none"


def no_noise_law(name: str) -> NoiseLaw:
    """Exact counts: nothing to calibrate."""
    return NoiseLaw(name, NO_NOISE_LAW, False, lambda e, r, n: e)


def noise_law(mech: Any, extra: dict[str, Any] | None = None, debiased: bool = False) -> NoiseLaw:
    """The noise law of a curve mechanism that releases counts, which the mechanism states itself (its
    ``noise_law(extra, debiased)``; ``extra``: the release's ``extra``, which holds adaptive-km's merged bins). A
    mechanism that states none is refused in one sentence."""
    if hasattr(mech, "noise_law"):
        return mech.noise_law(extra, debiased)
    name = getattr(mech, "name", "") or "this mechanism"
    raise ParameterError(f"There is no calibrated log-rank test for {name} yet: its noise law is not modelled, so its "
                         "counts cannot be tested honestly.")


# ------------------------------------------------------------------------------------------ null simulation
DRAW_LADDER = (999, 499, 199, 99, 39)
# a "weak test" once pure noise moves the plain statistic's 95% point beyond this multiple of chi-square's (noise
# with about twice the variance of the data's own on O - E)
WEAK_FACTOR = 3.0
# fewer merged bins than this in an adaptive-km release: the test's p-value is not reliable (validation: groups
# censored 10%, 40% and 70% at epsilon 0.5 rejected 88%, 33% and 13% of true nulls with 1, 2 and 3 merged bins, 5.4%
# with 4 or more: 4,000 cohorts, docs/coverage-logrank.md)
MIN_TEST_BINS = 4
# adaptive-km below this epsilon with groups whose released censoring shares differ by at least this much: its test
# rejected 9.2% (groups censored 10% and 70%) and 11.2% (10%, 40% and 70%) of true nulls at epsilon 0.5 among the
# releases with no other sentence, 4,000 cohorts each (4.3-5.8% at epsilon 1 and 2; docs/inference.md)
UNEQUAL_EPSILON = 1.0
UNEQUAL_CENSORING = 0.3
MIN_GROUP = 10  # released subjects a group needs for its censoring share to count
# the bins a grid too wide for its groups' censoring is told to use: on 20 equal bins every validation design kept
# the level (3.3-6.7% of true nulls rejected, groups censored up to 10% and 70%; docs/coverage-logrank.md)
MIN_EVEN_BINS = 20
# below this many bins, calibrated releases with groups censored unequally say their p-value is suggestive only: with
# groups censored 10% and 70%, or 10%, 40% and 70%, at epsilon 1 and 2 (1,000 cohorts per cell), the releases the
# timing shift did not flag rejected 8.1-10.5% of true nulls on 8 bins (laplace-counts) and adaptive-km 6-12% on 5
# and 8 bins in another sample; the non-private binned test rejected 5.5% and 4.6% on 10 bins
COARSE_BINS = 10


def default_draws(trials: int, groups: int, bins: int) -> int:
    """999 null draws for one release; fewer when many trials are simulated at once (999, 499, 199, 99 or 39: the
    largest within ``DRAW_BUDGET`` cells). Any B keeps the level; a larger B gives finer p-values and a little
    more power."""
    per_draw = max(1, int(trials) * int(groups) * int(bins))
    return next((b for b in DRAW_LADDER if b * per_draw <= DRAW_BUDGET), DRAW_LADDER[-1])


def release_seed(counts: BinnedCounts) -> np.random.SeedSequence:
    """A seed derived from the released values only (same release -> same null draws -> same p-value)."""
    digest = hashlib.sha256(np.ascontiguousarray(np.round(counts.cells().astype(float), 9)).tobytes()).digest()
    return np.random.SeedSequence([int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)])


def _first_event_share(h: np.ndarray, spread: float) -> np.ndarray:
    """p = 2 a (1 - h / H), H = -log(1 - h): for a censoring uniform in a bin of constant hazard (a = 1/2), the chance
    that an event comes before it (0 when every censoring precedes the bin's events, a = 0)."""
    if spread <= 0:
        return np.zeros_like(h)
    with np.errstate(divide="ignore", invalid="ignore"):
        big = -np.log1p(-np.minimum(h, 1.0))
        p = np.where(h >= 1.0, 1.0, np.where(h > 1e-8, 1.0 - h / np.where(h > 1e-8, big, 1.0), h / 2.0))
    return 2.0 * spread * np.clip(p, 0.0, 1.0)


def null_parameters(counts: BinnedCounts, shifted: float = 0.0, exposure: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n (R, G) integers, pooled hazard h (R, J), censoring share q (R, G, J)) from released counts (R, G, K, J).

    h_j = sum_g d_gj / sum_g r_gj on the statistic's numbers at risk (:func:`logrank._at_risk_events`); each group
    keeps its own size n_g and censoring q_gj = c_gj / (R_gj (1 - p_j)), R_gj = r_gj + (1 - a) c_gj followed at the
    bin's start and p_j the share of the bin's censorings an event precedes (:func:`_first_event_share`), so that
    :func:`simulate_null` gives c_gj = q_gj R_gj (1 - p_j) on average."""
    r, d = logrank._at_risk_events(counts, shifted, exposure)
    d = np.maximum(d, 0.0)
    c = np.maximum(counts.censored.astype(float), 0.0)
    rt, dt = r.sum(-2), d.sum(-2)
    h = np.clip(np.divide(dt, rt, out=np.zeros_like(dt), where=rt > 0), 0.0, 1.0)
    start = np.maximum(counts.at_risk().astype(float), 0.0) + c  # R_gj
    start = start * (1.0 - _first_event_share(h, actuarial_share(counts.grid)))[..., None, :]
    q = np.clip(np.divide(c, start, out=np.zeros_like(c), where=start > 0), 0.0, 1.0)
    n = np.rint(np.maximum(counts.n.astype(float), 0.0)).astype(np.int64)
    return n, h, q


def simulate_null(template: BinnedCounts, n: np.ndarray, h: np.ndarray, q: np.ndarray, draws: int,
                  rng: np.random.Generator) -> BinnedCounts:
    """``draws`` null cohorts per release trial: rows (R * draws) ordered trial-major, counts on the public grid.

    n (R, G), h (R, J), q (R, G, J) from :func:`null_parameters`. Per group and bin, k ~ Bin(m, q) are due to be
    censored there, an event comes first to Bin(k, p_j) of them (p_j from :func:`_first_event_share` on the grid's
    actuarial share: 0 on the event-time grid, where censorings leave before the bin's events) and to
    Bin(m - k, h_j) of the others.
    """
    rows, g = n.shape
    j_count = h.shape[-1]
    spread = actuarial_share(template.grid)
    left = np.repeat(n, draws, axis=0)  # (N, G)
    hh = np.repeat(h, draws, axis=0)[:, None, :]
    first = np.repeat(_first_event_share(h, spread), draws, axis=0)[:, None, :]  # per trial, then repeated
    qq = np.repeat(q, draws, axis=0)
    ev = np.zeros((rows * draws, g, j_count), np.int64)
    ce = np.zeros_like(ev)
    for j in range(j_count):  # a loop over public bins only, vectorised over trials, draws and groups
        due = rng.binomial(left, qq[..., j])
        d = rng.binomial(left - due, hh[..., j])
        if spread > 0:
            early = rng.binomial(due, first[..., j])
            d, due = d + early, due - early
        left = left - due - d
        ce[..., j], ev[..., j] = due, d
    n_rep = np.repeat(n, draws, axis=0)
    return BinnedCounts(template.grid, template.groups, n_rep, ev[:, :, None, :], ce, ("event",))


def _single(counts: BinnedCounts) -> BinnedCounts:
    """Counts with one event type (log-rank pools the types)."""
    if counts.events.shape[-2] == 1:
        return counts
    return replace(counts, events=counts.events_total[..., None, :], event_types=("event",))


def _trials(counts: BinnedCounts, rows: Any) -> BinnedCounts:
    """The trials ``rows`` (a slice or indices) of counts with one leading trials axis, keeping the axis."""
    return replace(counts, n=counts.n[rows], events=counts.events[rows], censored=counts.censored[rows])


def _subset(counts: BinnedCounts, idx: list[int]) -> BinnedCounts:
    return replace(counts, groups=tuple(counts.groups[i] for i in idx), n=counts.n[..., idx],
                   events=counts.events[..., idx, :, :], censored=counts.censored[..., idx, :])


def _stat(counts: BinnedCounts, idx: list[int], law: NoiseLaw, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(test statistic, plain statistic) of the groups ``idx`` under ``law``; ``rows`` (N,): each row's release trial
    (the merged bins the noise was drawn on differ by trial)."""
    sub = counts if idx == list(range(len(counts.groups))) else _subset(counts, idx)
    kept = None if law.kept is None else np.asarray(law.kept, bool)[rows]
    variance = law.cell_variance if law.noisy else 0.0
    at_ends = law.test_view is not None  # each merged bin's noise sits at its last public bin
    return tuple(np.asarray(a, float)  # type: ignore[return-value]
                 for a in logrank.noise_adjusted(sub, variance, law.shifted, kept, at_ends))


def _monte_carlo(observed: np.ndarray, null: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(p (R,), 95% critical value (R,)) from T (R,) and null draws (R, B); undefined statistics count as 0.

    p = (1 + #{T* >= T}) / (B + 1), and the critical value is the value T must exceed for p <= alpha: the (m + 1)-th
    largest draw, m = floor(alpha (B + 1)) - 1 (with ties among the draws, as a rule's rounded counts give, a statistic
    equal to it is not significant; a quantile between draws would say it was)."""
    t = np.nan_to_num(null, nan=0.0)
    b = t.shape[-1]
    p = (1.0 + (t >= observed[:, None] - 1e-12 * np.abs(observed[:, None])).sum(-1)) / (b + 1.0)
    p = np.where(np.isfinite(observed), p, np.nan)
    m = max(int(np.floor(ALPHA * (b + 1) + 1e-9)) - 1, 0)
    return p, np.sort(t, axis=-1)[:, b - 1 - m]


def calibrated_tests(released: BinnedCounts, law: NoiseLaw, draws: int = DEFAULT_DRAWS, overall: bool = True,
                     seed: np.random.SeedSequence | int | None = None) -> list[CalibratedTest]:
    """Every pairwise test, then the overall k-group test (``overall``), calibrated for the noise of ``law``.

    ``released``: the released, post-processed counts with a leading trials axis (R, G, K, J). ``seed``
    defaults to one derived from the released values (:func:`release_seed`).
    """
    counts = _single(released)
    if counts.n.ndim != 2:
        raise ParameterError("calibrated_tests needs counts with one leading trials axis.")
    merged = law.test_view is not None and law.noisy  # the test reads merged bins (adaptive-km)
    if merged:
        assert law.test_view is not None  # merged implies a test view
        counts = _single(law.test_view(counts))
    simulate_noise = law.test_apply if (law.test_apply is not None and law.noisy) else law.apply
    draws = int(draws)
    if draws < 19:
        raise ParameterError(f"A calibrated test needs at least 19 null draws (for example 999), got {draws}.")
    trials, g = counts.n.shape
    j_count = counts.grid.bins
    if law.noisy:  # the null tables' memory, before any is simulated
        from dpsurv_core.curves.memory import check_null

        check_null(trials, draws, g, j_count)
    groups = counts.groups
    tests: list[tuple[tuple[int, int] | None, list[int]]] = [(pair, list(pair)) for pair in combinations(range(g), 2)]
    if overall:
        tests.append((None, list(range(g))))
    rng = SimulationNoise(release_seed(counts) if seed is None else seed)
    out: list[CalibratedTest] = []
    cache: dict[tuple[int, ...], np.ndarray] = {}
    for pair, idx in tests:
        if pair is None and g == 2 and out:  # two groups: the overall test is the pair's test
            out.append(replace(out[0], group_a=", ".join(groups), group_b=None))
            continue
        stat, plain = _stat(counts, idx, law, np.arange(trials))
        # R's: groups with a positive expected count, less one
        dofs = logrank.degrees_of_freedom(_subset(counts, idx), shifted=law.shifted, exposure=merged)
        dof = int(dofs.max(initial=0))
        # no two groups with expected events: no test (a pseudo-inverse would give a statistic of 0 and p = 1)
        stat, plain = np.where(dofs > 0, stat, np.nan), np.where(dofs > 0, plain, np.nan)
        chi = logrank.chi_square_p(dofs, plain)
        label_a = groups[pair[0]] if pair is not None else ", ".join(groups)
        label_b = groups[pair[1]] if pair is not None else None
        if not law.noisy:
            # R's survdiff where the groups have events but only one group has expected events: chisq 0 on 0 degrees
            # of freedom, p = 1 (no events at all: no test, as R's p is NA)
            one_group = (dofs == 0) & (_subset(counts, idx).events_total.sum(axis=(-2, -1)) > 0)
            stat, plain = np.where(one_group, 0.0, stat), np.where(one_group, 0.0, plain)
            chi = np.where(one_group, 1.0, chi)
            with np.errstate(invalid="ignore"):
                from scipy.special import chdtri  # imported where used: SciPy's special functions are slow to import

                crit = np.where(dofs > 0, chdtri(np.maximum(dofs, 1), ALPHA), np.nan)
            out.append(CalibratedTest(label_a, label_b, dof, stat, chi, chi, crit, 0,
                                      law.method if law.method != CALIBRATED_METHOD else EXACT_METHOD, plain, crit,
                                      dofs))
            continue
        sim_idx = idx if law.separable else list(range(g))
        key = tuple(sim_idx) if law.separable else (-1, *idx)
        if key not in cache:
            base = _subset(counts, sim_idx)
            params = null_parameters(base if law.separable else _subset(counts, idx), law.shifted, merged)
            if not law.separable:  # one hazard (the tested groups' pooled hazard) for every group
                full = null_parameters(base, law.shifted, merged)
                params = (full[0], params[1], full[2])
            chunk = max(1, MAX_CELLS // (draws * len(sim_idx) * j_count))  # bounded memory: blocks of trials
            parts = []
            for lo in range(0, trials, chunk):
                hi = min(trials, lo + chunk)
                sim = simulate_null(base, params[0][lo:hi], params[1][lo:hi], params[2][lo:hi], draws, rng.rng)
                rows = np.repeat(np.arange(lo, hi), draws)
                noisy = simulate_noise(sim, rows, rng)
                parts.append(np.stack(_stat(noisy, [sim_idx.index(i) for i in idx], law, rows)))
            cache[key] = np.concatenate(parts, axis=1).reshape(2, trials, draws)
        p, crit = _monte_carlo(stat, cache[key][0])
        crit = np.where(np.isfinite(stat), crit, np.nan)  # an undefined test has no value to exceed
        plain_crit = np.quantile(np.nan_to_num(cache[key][1], nan=0.0), 1.0 - ALPHA, axis=-1)
        method = ADJUSTED_METHOD if law.cell_variance > 0 else law.method
        out.append(CalibratedTest(label_a, label_b, dof, stat, p, chi, crit, draws, method.format(draws=draws), plain,
                                  plain_crit, dofs))
    return out


# ------------------------------------------------------------------------------------------ plain sentences
def with_group_names(tests: list[CalibratedTest], names: dict[str, str]) -> list[CalibratedTest]:
    """The tests with their groups named by ``names`` (code -> label), for sentences a reader can follow."""
    name = lambda g: names.get(str(g), str(g))  # noqa: E731
    return [replace(t, group_a=name(t.group_a), group_b=name(t.group_b)) if t.group_b is not None
            else replace(t, group_a=", ".join(name(g) for g in t.group_a.split(", "))) for t in tests]


def weak_trials(law: NoiseLaw, test: CalibratedTest) -> np.ndarray:
    """(R,) bool: the trials in which ``test`` is weak, its plain statistic's simulated 95% point beyond
    ``WEAK_FACTOR`` times chi-square's (the noise outweighs the data)."""
    from scipy.special import chdtri  # imported where used: SciPy's special functions are slow to import

    crit = np.asarray(test.plain_critical_value, float)
    if not (law.noisy and test.null_draws):
        return np.zeros(crit.shape, bool)
    return np.isfinite(np.asarray(test.statistic, float)) & (crit > WEAK_FACTOR * float(chdtri(test.dof, ALPHA)))


def merged_bins(law: NoiseLaw) -> np.ndarray | None:
    """(R,) the number of merged bins the test reads in each trial (adaptive-km's release), None when it reads the
    public grid."""
    if law.test_view is None or not law.noisy or law.kept is None:
        return None
    return np.asarray(law.kept, bool).sum(-1)


def censoring_shares(counts: BinnedCounts) -> np.ndarray:
    """(R, G): each group's released censorings over its released size (0 for an empty group)."""
    n = np.asarray(counts.n, float)
    c = np.asarray(counts.censored, float).sum(-1)
    return np.divide(c, n, out=np.zeros_like(c), where=n > 0)


def _sized(counts: BinnedCounts) -> np.ndarray:
    """(R, G) bool: the groups with at least ``MIN_GROUP`` released subjects (a declared category with (almost)
    nobody in it has no censoring share to compare)."""
    return np.asarray(counts.n, float) >= MIN_GROUP


def unequal_censoring_trials(counts: BinnedCounts, law: NoiseLaw, epsilon: float | None) -> np.ndarray:
    """(R,) bool: adaptive-km releases below epsilon ``UNEQUAL_EPSILON`` in which two groups of at least ``MIN_GROUP``
    released subjects have released censoring shares at least ``UNEQUAL_CENSORING`` apart (where its calibrated test is
    liberal: :data:`UNEQUAL_EPSILON`)."""
    if law.test_view is None or not law.noisy or epsilon is None or not epsilon < UNEQUAL_EPSILON:
        return np.zeros(np.shape(counts.n)[0], bool)
    return _unequal(counts)


def _unequal(counts: BinnedCounts) -> np.ndarray:
    """(R,) bool: two groups of at least ``MIN_GROUP`` released subjects whose released censoring shares are at least
    ``UNEQUAL_CENSORING`` apart."""
    sized = _sized(counts)
    shares = censoring_shares(counts)
    high = np.where(sized, shares, -np.inf).max(-1)
    low = np.where(sized, shares, np.inf).min(-1)
    return (sized.sum(-1) >= 2) & (high - low >= UNEQUAL_CENSORING)


def coarse_unequal_trials(counts: BinnedCounts, law: NoiseLaw) -> np.ndarray:
    """(R,) bool: calibrated releases on a public grid of fewer than ``COARSE_BINS`` bins whose groups are censored
    unequally (:func:`_unequal`), at any epsilon (the private tests rejected up to 12% of true nulls there, also where
    the grid's timing shift stayed small: :data:`COARSE_BINS`)."""
    if not law.noisy or counts.grid.kind == "event-times" or counts.grid.bins >= COARSE_BINS:
        return np.zeros(np.shape(counts.n)[0], bool)
    return _unequal(counts)


def too_wide_trials(counts: BinnedCounts, law: NoiseLaw) -> np.ndarray:
    """(R,) bool: the releases whose grid is too wide for how differently their groups are censored: a timing shift of
    ``GRID_SHIFT`` or more read off the released counts (:func:`dpsurv_core.curves.grid_timing.timing_shift`), on a
    grid of fewer than ``MIN_EVEN_BINS`` bins whose groups are censored unequally (:func:`_unequal`; noise alone moves
    the shift of groups censored alike at small epsilons)."""
    return _grid_shifts(counts, law) >= grid_timing.GRID_SHIFT


def _grid_shifts(counts: BinnedCounts, law: NoiseLaw) -> np.ndarray:
    """(R,) the timing shift where a grid can be too wide (fewer than ``MIN_EVEN_BINS`` bins, groups censored
    unequally), 0 elsewhere: the shift's fixed point is only solved where its answer can matter."""
    counts = _single(counts)
    out = np.zeros(np.shape(counts.n)[0])
    if counts.grid.kind == "event-times" or counts.grid.bins >= MIN_EVEN_BINS:
        return out
    unequal = _unequal(counts)
    if unequal.any():
        out[unequal] = timing_shifts(_trials(counts, np.flatnonzero(unequal)), law)
    return out


def timing_shifts(counts: BinnedCounts, law: NoiseLaw) -> np.ndarray:
    """(R,) the timing shift of the released counts on the public grid."""
    return np.asarray(grid_timing.timing_shift(_single(counts), law.shifted), float)


def level_warned(law: NoiseLaw, test: CalibratedTest, counts: BinnedCounts | None = None,
                 epsilon: float | None = None) -> np.ndarray:
    """(R,) bool: the trials whose sentences (:func:`warnings_for`) say that ``test``'s p-value is approximate: a weak
    test, fewer than ``MIN_TEST_BINS`` merged bins, or (given the released ``counts`` and ``epsilon``) a grid too wide
    for how differently the groups are censored, or groups censored unequally on fewer than ``COARSE_BINS`` bins, or
    adaptive-km at a small epsilon with groups censored unequally."""
    out = weak_trials(law, test)
    bins = merged_bins(law)
    if bins is not None:
        out = out | (bins[: out.size] < MIN_TEST_BINS)
    if counts is not None:
        out = out | too_wide_trials(counts, law)[: out.size] | coarse_unequal_trials(_single(counts), law)[: out.size]
        out = out | unequal_censoring_trials(_single(counts), law, epsilon)[: out.size]
    return out


def warnings_for(released: BinnedCounts, law: NoiseLaw, tests: list[CalibratedTest], epsilon: float | None,
                 mech: Any = None, general: bool = True) -> list[str]:
    """Plain sentences for results that cannot be read as they stand (trial 0 of the release of ``mech``, whose noise
    and rows per patient they speak of); ``general``: with the sentences that hold for any reading of the release
    (several pairwise tests, several rows per patient), False for a second reading such as rrr's de-biased counts.
    A mechanism read by rules older than the level sentences (``mech.test_level_warnings`` False) or the grid's
    sentence (``mech.test_grid_warnings`` False) gets the sentences of its record's version."""
    out: list[str] = []
    counts = _single(released)
    pairs = [t for t in tests if t.group_b is not None]
    shown = pairs if len(pairs) == 1 else tests  # with two groups the overall test is the pair's
    from scipy.special import chdtri  # imported where used: SciPy's special functions are slow to import

    chi95 = {t.dof: float(chdtri(t.dof, ALPHA)) for t in shown}
    weak = [t for t in shown if bool(weak_trials(law, t)[0])]
    level = bool(getattr(mech, "test_level_warnings", True))
    first = _trials(counts, slice(0, 1))  # the sentences speak of trial 0; a --repeat simulation may hold thousands
    # a weak test's sentence already says its p-value is approximate; the grid's sentences would read noise there
    grid_rules = level and bool(getattr(mech, "test_grid_warnings", True)) and not weak
    shift = float(_grid_shifts(first, law)[0]) if grid_rules else 0.0
    wide = shift >= grid_timing.GRID_SHIFT
    coarse = grid_rules and not wide and bool(coarse_unequal_trials(first, law)[0])
    shares = ", ".join(f"{g} {100 * q:.0f}%" for g, q, big in zip(counts.groups, censoring_shares(counts)[0],
                                                                   _sized(counts)[0], strict=True) if big)
    if wide or coarse:  # wider bins would make the grid's own bias worse
        fix = "a larger epsilon" if epsilon is not None else "a milder rule"
    else:
        fix = "a larger epsilon or fewer, wider bins" if epsilon is not None else "fewer, wider bins or a milder rule"
    if wide:
        out.append(f"Bins too wide for groups censored this differently ({shares} censored, read off the release): "
                   f"the test's expected events move by {shift:.1f} standard errors with when in a bin the censorings "
                   "fall, so its p-value is not reliable (on such grids the test rejected 12% to 71% of true nulls in "
                   f"validation, not 5%); use {MIN_EVEN_BINS} or more bins.")
    if weak:
        eps = "" if epsilon is None else f" at epsilon {epsilon:g}"
        if law.mechanism.endswith("-debiased"):
            eps += " for the tests on the de-biased counts"
        # the plain statistic's simulated 95% point over chi-square's is about 1 + noise variance / the data's own
        share = {t.label: chi95[t.dof] / float(t.plain_critical_value[0]) for t in weak}
        points = "; ".join(f"{label}: noise {1 / f - 1:.0f} times the data's own variation, power as with about "
                           f"{100 * f:.0f}% of the patients" for label, f in share.items())
        approximate = (", and the p-value is approximate (its null is simulated from rates read off the noisy "
                       "release): read one between 0.035 and 0.05 as borderline" if level else "")
        out.append(f"Weak test{eps}: the noise outweighs the data in these comparisons ({points}), so only a large "
                   f"difference will be detected{approximate}; use {fix}.")
    bins = merged_bins(law)
    if level and bins is not None and int(bins[0]) < MIN_TEST_BINS:
        k = int(bins[0])
        out.append(f"The noise merged the grid into {'one bin' if k == 1 else f'{k} bins'}: on so few bins the test "
                   "cannot tell a difference in survival from a difference in follow-up, so its p-value is not "
                   "reliable (with groups censored unequally it fell below 0.05 for 11% to 88% of true nulls); use a "
                   "larger epsilon.")
    elif level and bool(unequal_censoring_trials(counts, law, epsilon)[0]):
        out.append(f"Groups censored this differently ({shares} censored, read off the release) at epsilon "
                   f"{epsilon:g}: in validation this test rejected 9% to 11% of true nulls in such releases, not 5%; "
                   "read a p-value below 0.05 as suggestive only, or use epsilon 1 or more.")
    elif coarse:
        out.append(f"Groups censored this differently ({shares} censored, read off the release) on {counts.grid.bins} "
                   "bins: in validation the private tests rejected up to 12% of true nulls on grids of 5 to 8 bins, "
                   f"not 5% (about 5% on 20); read a p-value below 0.05 as suggestive only, or use {MIN_EVEN_BINS} or "
                   "more bins.")
    cell_sd = cell_noise_sd(mech) if (law.noisy and mech is not None) else 0.0
    if cell_sd > 0 and not weak:
        ev = np.asarray(counts.events_total, float)[0].sum(-1)  # (G,)
        noise_sd = cell_sd * math.sqrt(counts.grid.bins)
        few = [grp for grp, e in zip(counts.groups, ev, strict=True) if e < 3.0 * noise_sd]
        if few:
            out.append(f"Too few events for the noise in {', '.join(few)}: the noise on a group's total events (a "
                       f"standard deviation of about {noise_sd:.0f} events) is more than a third of the events "
                       f"released, so the test can hardly detect anything; use {fix}.")
    defined_pairs = [t for t in pairs if not np.isnan(t.statistic[0])]
    if general and len(defined_pairs) > 1:
        k = len(defined_pairs)
        out.append(f"{k} pairwise tests, each at the 5% level: even when no group differs, the chance that at least "
                   f"one of them falls below 0.05 is more than 1 in 20; read them after the overall test, or against "
                   f"0.05 / {k} = {ALPHA / k:.2g} (Bonferroni).")
    rows = int(getattr(mech, "rows_per_subject", 1) or 1)
    if general and rows > 1:
        out.append(f"Up to {rows} rows per patient: the test treats the rows as independent patients, as R's survdiff "
                   "does, so its p-values are too small when a patient's rows tend to end alike.")
    undefined = [t.label for t in shown if np.isnan(t.statistic[0])]
    if undefined:
        where = " on the de-biased counts" if law.mechanism.endswith("-debiased") else ""
        out.append(f"No p-value{where} for {', '.join(undefined)}: the released counts leave the statistic no variance "
                   "(no events or no one at risk in the compared groups).")
    return out


def cell_noise_sd(mech: Any) -> float:
    """Standard deviation of the noise on one released count cell (0 without count noise)."""
    from dpsurv_core.curves.adaptive_km import discrete_laplace_variance

    scale = float(getattr(mech, "counts_scale", getattr(mech, "scale", 0.0)) or 0.0)
    if scale <= 0:
        return 0.0
    return math.sqrt(discrete_laplace_variance(scale) if getattr(mech, "discrete", True) else 2.0 * scale * scale)
