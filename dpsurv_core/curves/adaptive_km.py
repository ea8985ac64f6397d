"""Adaptive private Kaplan-Meier (``adaptive-km``): one-cell-per-subject histogram on DP-merged bins.

Design (four ideas, each measured against ``laplace-counts``; see benchmarks/km_lung.py)

1. **One cell per subject.** Per group g and bin B the counts are released as a histogram in
   which every row lies in exactly one cell: ``d_gkB`` (an event of type k in B), ``c_gB``
   (censored in B) or ``s_g`` (still followed at the end of the grid, time past b_J). The group
   size is *not* released: n_g = s_g + sum d + sum c is derived. One subject therefore moves
   the histogram by at most m in L1 (m = rows per subject), half of the 2m of the classic
   release of n_g plus every cell, so the noise scale halves. The at-risk counts become tail
   sums r_gB = s_g + sum_{B' >= B} d_gB' + sum_{B' > B} c_gB', so late bins, where few are at
   risk, carry the noise of few cells instead of every earlier one.
2. **Bins with similar numbers of events, chosen with a small DP share of the budget.** A share
   rho (``selection_share``; by default 0.2 for epsilon <= 2 and 0 above, see below) of epsilon
   releases a noisy histogram of the events (all groups and types pooled) on the public grid's bins. Walking along the grid, consecutive public bins are
   merged until their noisy event count reaches ``events_per_bin`` x m / epsilon_2, so every
   released bin holds a few noise scales' worth of events: few cells (little noise) where events
   are sparse, the full public resolution where they are dense. The candidate edges are the
   public grid's edges only, never the data's times.
3. **Life-table at-risk and constant-hazard interpolation** (post-processing). Censorings are
   spread over a bin, so half of a bin's censorings count as at risk for its events
   (r*_B = r_B + c_B / 2; ``actuarial``); on an ``event-times`` grid every censoring in a bin
   precedes its event time, so none count (exact Kaplan-Meier). On a long merged bin that rule's first
   order reads the curve high (0.121 at a true S of 0.100), so there h_B solves its premise exactly (constant
   hazard, censorings spread evenly in time; :func:`uniform_censoring_drop`). Inside a merged bin the hazard is
   constant: a fraction f of the way through bin B, S = S(start of B) (1 - h_B)^f. The curves are returned at the
   public grid's points through derived counts on the public grid (fine events d_j = r_j (1 - (1 - h_B)^{f_j}),
   censorings where the premise puts them), so Kaplan-Meier, Greenwood bands, Nelson-Aalen, cumulative
   incidence and log-rank all come from one set of counts via :mod:`dpsurv_core.curves.kaplan_meier`.
4. **Bands that know about the noise** (post-processing; ``noise_in_bands``, ``band_method``). By
   default the larger of two variances of log S: the parametric bootstrap of
   :mod:`dpsurv_core.curves.uncertainty` (cohorts redrawn from the released counts go through the same
   merged bins, noise and derivation; as for laplace-counts and rrr) and Greenwood's variance plus a
   delta-method variance due to the noise (:func:`noise_log_variance`; ``band_method = "delta"`` uses
   this one alone). Alone, the bootstrap under-covers small cohorts at low epsilon (90% at n = 200,
   epsilon 0.5) and the delta method large ones (91.5% at n = 2,000, epsilon 0.5); the larger of the
   two covers 94-98.5% in both. The curve inside a merged bin is an interpolation (its truth may bend
   anywhere between the bin's ends), so there the band runs from the lower limit at the bin's end to
   the upper limit at its start (:func:`dpsurv_core.curves.uncertainty.widen_between`). The RMST's error bar
   likewise takes the larger of the bootstrap's and the delta method's, whose noise part carries the curve's noise
   covariance (:func:`noise_covariance`) to the area. Coverage: docs/coverage-curves.md.

Privacy (add/remove one subject, m rows per subject; epsilon_1 = rho epsilon, epsilon_2 = epsilon - epsilon_1)

* Part 1, selection: H1(D) = (e_1, ..., e_J), e_j = number of event rows (of any type, in any
  declared group) in public bin j. A subject's m rows lie in at most m cells, one each, so
  ||H1(D) - H1(D')||_1 <= m. Adding discrete Laplace noise of scale m / epsilon_1 (P(k) ~
  exp(-|k| epsilon_1 / m); continuous Laplace with ``discrete=False``) to each cell is
  epsilon_1-DP. The merged bins are a function of the noisy H1 and the public grid only:
  post-processing.
* Part 2, counts: for every fixed choice of bins beta, H2(D; beta) = (d_gkB, c_gB, s_g) over
  groups g, types k, bins B. Every row is in exactly one cell (rows with a time at or before b_0
  are in the first bin, rows past b_J in s_g, rows outside the declared groups in none), so
  ||H2(D; beta) - H2(D'; beta)||_1 <= m and noise of scale m / epsilon_2 makes it epsilon_2-DP for
  each beta.
* Part 2 runs on bins chosen from part 1's output, so by adaptive sequential composition the
  pair is (epsilon_1 + epsilon_2)-DP = epsilon-DP. Everything after (clamping at 0, n_g as the
  sum, at-risk, hazards, interpolation, derived counts, bands, log-rank) reads only the noisy
  outputs and public parameters: free post-processing. The ledger charges epsilon_1 + epsilon_2.

Default share (a rule on the public epsilon only, so it costs nothing): rho = 0.2 for epsilon <= 2, where merging
removes noisy cells and clamping's bias; rho = 0 above, where the noise is small and a merged bin's spread drop costs
more (measured on seven bundled data sets; docs/mechanisms.md gives the figures and where merging does not pay).

With epsilon = inf there is no noise and no selection (every public bin is its own bin); on an
``event-times`` grid the curves then equal lifelines' KaplanMeierFitter.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from dpsurv_core.curves.bootstrap import bootstrap_curves, monotone_band, widen_between, with_bootstrap_bands
from dpsurv_core.curves.clamping import unclamped_blocks
from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.kaplan_meier import DeferredArray, estimate, greenwood_bands
from dpsurv_core.curves.life_table import uniform_censoring_drop
from dpsurv_core.curves.memory import check_release
from dpsurv_core.curves.result import CURVE_PARAMETERS, CurveResult, drawn, exact_counts
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource

DELTA_METHOD = ("Greenwood's variance plus the noise's variance of log S by the delta method over the released "
                "one-cell-per-subject counts")
MERGED_NOTE = "inside a merged bin the band runs from its value at the bin's end to its value at the bin's start"
BAND_METHODS = ("bootstrap", "delta")
MERGED_RULES = ("premise", "life-table")  # how a merged bin's drop is read: :func:`derive_fine_counts`


class AdaptiveKM(Mechanism):
    """One-cell-per-subject noisy histogram on bins merged at DP event counts; see the module docstring.

    Parameters
    ----------
    epsilon : float
        The privacy budget, positive; ``math.inf`` adds no noise.
    rows_per_subject : int, default 1
        m, the most rows one subject contributes (the L1 sensitivity of each part); at least 1.
    selection_share : float or None, default None
        rho, the share of epsilon choosing the bins, in [0, 1) (0: the public bins); None: 0.2 if epsilon <= 2, else 0.
    events_per_bin : float, default 4.0
        Merge public bins until the noisy event count reaches this many noise scales; finite, at least 0.
    actuarial : bool, default True
        Half of a bin's censorings at risk for its events (ignored on event-times grids).
    discrete : bool, default True
        Discrete Laplace on the integer counts; False: continuous Laplace.
    noise_in_bands : bool, default True
        Bands that carry the noise (see ``band_method``).
    band_method : {"bootstrap", "delta"}, default "bootstrap"
        "bootstrap": the larger of the parametric bootstrap's and the delta method's variance of log S;
        "delta": the delta method's alone (Greenwood's variance plus the noise's).

    Privacy
    -------
    Cost: epsilon, composed sequentially: rho epsilon to choose the merged bins, (1 - rho) epsilon on the histogram;
    rho = ``selection_share`` (by default 0.2 for epsilon <= 2, else 0).
    Neighbours: add/remove one subject.
    Protects: one subject's rows (one cell per subject: L1 sensitivity m).
    Source: dpsurv's own design, building on Gondara L. & Wang K. (2020).
    """

    name = "adaptive-km"
    analysis = "survival curves"
    interval_includes_noise = True
    engines = ("pandas", "duckdb", "spark")  # reads exact counts only (dpsurv_core/engines)

    AUTO_SHARE = 0.2
    AUTO_MAX_EPSILON = 2.0
    merged_rule = "premise"  # a reading rule, not a release parameter (:data:`MERGED_RULES`)

    def __init__(self, epsilon: float, rows_per_subject: int = 1, selection_share: float | None = None,
                 events_per_bin: float = 4.0, actuarial: bool = True, discrete: bool = True,
                 noise_in_bands: bool = True, band_method: str = "bootstrap") -> None:
        self.epsilon = check_epsilon(epsilon)
        if int(rows_per_subject) < 1:
            raise ParameterError(f"rows_per_subject must be at least 1, got {rows_per_subject}.")
        self.rows_per_subject = int(rows_per_subject)
        self.share_rule = "auto" if selection_share is None else "given"
        if selection_share is None:
            rho = self.AUTO_SHARE if self.epsilon <= self.AUTO_MAX_EPSILON else 0.0
        else:
            rho = float(selection_share)
        if not 0.0 <= rho < 1.0:
            raise ParameterError(f"selection_share must be in [0, 1) (for example 0.2), got {selection_share}.")
        self.selection_share = rho
        t = float(events_per_bin)
        if not (t >= 0 and math.isfinite(t)):
            raise ParameterError(f"events_per_bin must be a non-negative number (for example 4), got {events_per_bin}.")
        self.events_per_bin = t
        self.actuarial = bool(actuarial)
        self.discrete = bool(discrete)
        self.noise_in_bands = bool(noise_in_bands)
        if band_method not in BAND_METHODS:
            raise ParameterError(f"band_method must be one of {', '.join(BAND_METHODS)}, got {band_method!r}.")
        self.band_method = band_method

    # ---- the budget split -------------------------------------------------------------------
    @property
    def selects(self) -> bool:
        """Whether part 1 (the DP choice of bins) runs: finite epsilon and a positive share."""
        return not math.isinf(self.epsilon) and self.selection_share > 0

    @property
    def selection_epsilon(self) -> float:
        return self.selection_share * self.epsilon if self.selects else 0.0

    @property
    def counts_epsilon(self) -> float:
        return self.epsilon - self.selection_epsilon

    @property
    def sensitivity(self) -> float:
        """L1 sensitivity of each part (the selection histogram and the counts histogram): m."""
        return float(self.rows_per_subject)

    @property
    def selection_scale(self) -> float:
        return self.sensitivity / self.selection_epsilon if self.selects else 0.0

    @property
    def counts_scale(self) -> float:
        return 0.0 if math.isinf(self.counts_epsilon) else self.sensitivity / self.counts_epsilon

    @property
    def threshold(self) -> float:
        """Noisy events a merged bin must reach: events_per_bin noise scales of part 2."""
        return self.events_per_bin * self.counts_scale

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(self.selection_epsilon + self.counts_epsilon, neighbouring=ADD_REMOVE, protects=SUBJECT)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "selection_share": self.selection_share, "selection_share_rule": self.share_rule,
                "selection_epsilon": self.selection_epsilon, "counts_epsilon": self.counts_epsilon,
                "split": f"{self.selection_epsilon:g} (choice of bins) + {self.counts_epsilon:g} (counts), "
                         "sequential composition",
                "sensitivity_l1_selection": self.sensitivity, "sensitivity_l1_counts": self.sensitivity,
                "selection_scale": self.selection_scale, "counts_scale": self.counts_scale,
                "events_per_bin": self.events_per_bin, "merge_threshold": self.threshold,
                "actuarial": self.actuarial, "noise_in_bands": self.noise_in_bands, "band_method": self.band_method,
                "rows_per_subject": self.rows_per_subject,
                "noise": "discrete Laplace" if self.discrete else "Laplace"}

    # ---- exact histograms (what the noise is added to) ----------------------------------------
    @staticmethod
    def selection_histogram(exact: BinnedCounts) -> np.ndarray:
        """H1: event rows per public bin, all groups and types pooled, (J,)."""
        return exact.events_total.sum(axis=0).astype(float)

    @staticmethod
    def block_histogram(exact: BinnedCounts, kept: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """H2 on the bins ``kept`` defines (kept[r, j]: public edge b_{j+1} ends a bin; last always True).

        Returns block events (R, G, K, J), block censorings (R, G, J) (bins padded to J with zeros)
        and s (R, G), the rows past the grid's end.
        """
        kept = np.asarray(kept, bool)
        starts, ends = _block_bounds(kept)
        ev = _block_sums(exact.events.astype(float), starts, ends)
        ce = _block_sums(exact.censored.astype(float), starts, ends)
        s = (exact.n - exact.events_total.sum(-1) - exact.censored.sum(-1)).astype(float)
        return ev, ce, np.broadcast_to(s, (kept.shape[0], *s.shape)).copy()

    # ---- the two parts ------------------------------------------------------------------------
    @property
    def cell_variance(self) -> float:
        """Variance of the noise on one part-2 cell."""
        scale = self.counts_scale
        return discrete_laplace_variance(scale) if self.discrete else 2.0 * scale * scale

    def _draw(self, noise: NoiseSource, scale: float, shape: tuple[int, ...]) -> np.ndarray:
        if scale == 0:
            return np.zeros(shape)
        return (noise.discrete_laplace(scale, shape) if self.discrete else noise.laplace(scale, shape)).astype(float)

    def noise_law(self, extra: dict[str, Any] | None = None, debiased: bool = False) -> Any:
        """The counts noise on the release's merged bins (``extra["kept"]``), then the fine counts."""
        from dpsurv_core.curves.logrank_test import adaptive_law

        if not extra or "kept" not in extra:
            raise ParameterError("adaptive-km's calibrated test needs the release's merged bins.")
        return adaptive_law(self, extra)

    def select(self, exact: BinnedCounts, noise: NoiseSource, trials: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Part 1: (kept (R, J), noisy selection histogram (R, J) or None when no selection runs)."""
        j_count = exact.grid.bins
        if not self.selects:
            return np.ones((trials, j_count), bool), None
        noisy = noise.snap(self.selection_histogram(exact)[None, :]
                           + self._draw(noise, self.selection_scale, (trials, j_count)))
        return merge_bins(noisy, self.threshold), noisy

    def draw(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
             competing: bool = False) -> dict[str, Any]:
        """The noisy output: the bins chosen from the noisy selection histogram (and that histogram), then the noisy
        events and censorings of each merged bin and the noisy count of rows past the grid's end, clamped at 0."""
        trials = int(trials)
        if trials < 1:
            raise ParameterError(f"trials must be at least 1, got {trials}.")
        exact = exact_counts(cohort, public.grid, public, competing)
        kept, selection_noisy = self.select(exact, noise, trials)
        ev, ce, s = self.block_histogram(exact, kept)
        valid = _valid_blocks(kept)  # (R, J)
        scale = self.counts_scale
        ev = ev + self._draw(noise, scale, ev.shape) * valid[:, None, None, :]
        ce = ce + self._draw(noise, scale, ce.shape) * valid[:, None, :]
        s = s + self._draw(noise, scale, s.shape)
        ev, ce, s = np.maximum(ev, 0.0), np.maximum(ce, 0.0), np.maximum(s, 0.0)  # post-processing from here on
        ev, ce, s = noise.snap(ev), noise.snap(ce), noise.snap(s)  # the release grid (continuous Laplace: reals)
        return {"groups": list(exact.groups), "event_types": list(exact.event_types), "kept": kept.tolist(),
                "selection_counts": None if selection_noisy is None else np.asarray(selection_noisy, float).tolist(),
                "block_events": ev.tolist(), "block_censored": ce.tolist(), "beyond_grid": s.tolist(),
                "noise": noise.describe()}

    def compute(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
                competing: bool = False) -> CurveResult:
        check_release(self, cohort, public, trials, competing)  # the memory it would take, before any work
        return drawn(self, self.draw(cohort, public, noise, trials, competing), public, competing)

    def read(self, released: dict[str, Any], public: PublicParameters, competing: bool = False) -> CurveResult:
        """Counts on the public grid, curves and bands from the released merged bins and their noisy counts alone."""
        grid = public.grid
        kept = np.array(released["kept"], bool)
        ev, ce = np.array(released["block_events"], float), np.array(released["block_censored"], float)
        s = np.array(released["beyond_grid"], float)
        selection_noisy = (None if released.get("selection_counts") is None
                           else np.array(released["selection_counts"], float))
        groups, types = tuple(str(g) for g in released["groups"]), tuple(str(t) for t in released["event_types"])
        g, k, j = len(groups), len(types), grid.bins
        exact = BinnedCounts(grid, groups, np.zeros(g), np.zeros((g, k, j)), np.zeros((g, j)), types)  # a template
        valid = _valid_blocks(kept)
        a = 0.5 if (self.actuarial and grid.kind != "event-times") else 0.0
        released_blocks = (ev, ce, s)
        ev, ce, s = unclamped_blocks(ev, ce, s, kept, self.counts_scale, self.discrete)  # clamping's bias taken out
        fine = derive_fine_counts(exact, kept, ev, ce, s, a, self.merged_rule)
        curves = estimate(fine, exact_incidence_variance=self.counts_scale <= 0)  # fine counts carry the noise
        widths = np.diff(grid.edges)
        noise_var = noise_log_variance(ev, ce, s, kept, widths, a, self.cell_variance)
        if self.noise_in_bands and self.counts_scale > 0:
            known = np.broadcast_to(kept[:, None, :], curves.survival.shape)
            if self.band_method == "bootstrap":
                boot = with_bootstrap_bands(curves, bootstrap_curves(self, fine, 0.0, extra={"kept": kept,
                                                                                             "actuarial": a}))
                assert boot.interval_variance is not None and boot.interval_method is not None  # set by the bootstrap
                v = np.maximum(boot.interval_variance, curves.greenwood + noise_var)
                lo, up, lo_lin, up_lin = bands(curves.survival, v, curves.alpha)
                lo, up = monotone_band(lo, up)
                lo_lin, up_lin = monotone_band(lo_lin, up_lin)
                # its plug-in world spreads each merged bin's counts evenly over the fine bins, which by itself
                # offsets the draws' mean RMST: their spread alone is the RMST's error bar
                curves = replace(boot, interval_variance=v, draws_offset_is_error=False)
                method = (boot.interval_method + ", or the delta method's variance where it is larger; "
                          + MERGED_NOTE)
            else:
                lo, up, lo_lin, up_lin = bands(curves.survival, curves.greenwood + noise_var, curves.alpha)
                lo, up = monotone_band(lo, up)
                lo_lin, up_lin = monotone_band(lo_lin, up_lin)
                curves = replace(curves, interval_variance=curves.greenwood + noise_var)
                method = DELTA_METHOD + "; " + MERGED_NOTE
            lo, up = widen_between(lo, up, known)
            lo_lin, up_lin = widen_between(lo_lin, up_lin, known)
            curves = replace(curves, lower=lo, upper=up, lower_linear=lo_lin, upper_linear=up_lin,
                             interval_method=method, known_at=known,
                             noise_covariance=DeferredArray(partial(noise_covariance, fine, kept, ev, ce, s, a, self.cell_variance,
                                                                    merged_rule=self.merged_rule)))
        starts, ends = _block_bounds(kept)
        notes = [f"Charged epsilon {self.cost.epsilon:g} = {self.selection_epsilon:g} (choice of bins) + "
                 f"{self.counts_epsilon:g} (one-cell-per-subject counts).",
                 "Inside a merged bin the hazard is taken as constant in time; "
                 + ("half of each bin's censorings count as at risk (life-table)." if a else
                    "censorings leave before the bin's events (Kaplan-Meier).")]
        if self.noise_in_bands and self.counts_scale > 0:
            notes.append(f"The bands carry the noise: {curves.interval_method}.")
        disclosures = list(public.disclosures(CURVE_PARAMETERS))
        if self.selects:
            disclosures.append(Disclosure("bins", f"The bins were merged from the public grid at noisy event counts "
                                                  f"(epsilon {self.selection_epsilon:g} of the budget; DP)."))
        extra = {"kept": kept, "selection_counts": selection_noisy, "released_blocks": released_blocks,
                 "block_events": ev, "block_censored": ce,
                 "beyond_grid": s, "block_start": grid.edges[np.minimum(starts, grid.bins)],
                 "block_end": grid.edges[ends + 1], "blocks": valid.sum(-1), "actuarial": a,
                 "widths": widths, "noise_log_variance": noise_var,
                 # the number at risk at t (time >= t): at a merged bin's ends n minus the released counts before
                 # it, linear in time inside it (the curve's derived counts shift half a bin's censorings)
                 "risk_counts": spread_counts(fine, kept, ev, ce, s)}
        return CurveResult(self.name, self.cost, self.parameters(), disclosures, curves, fine,
                            str(released.get("noise", "")), notes, extra)


# ---- helpers (vectorised over trials; loops only over the public bins) --------------------------
def merge_bins(noisy_events: np.ndarray, threshold: float) -> np.ndarray:
    """Greedy merge along the grid: a bin ends at public edge j once its accumulated noisy events
    reach ``threshold``; the grid's last edge always ends a bin. (R, J) -> kept (R, J) bool."""
    x = np.asarray(noisy_events, float)
    kept = np.zeros(x.shape, bool)
    acc = np.zeros(x.shape[:-1])
    for j in range(x.shape[-1]):
        acc = acc + x[..., j]
        k = acc >= threshold
        kept[..., j] = k
        acc = np.where(k, 0.0, acc)
    kept[..., -1] = True
    return kept


def _valid_blocks(kept: np.ndarray) -> np.ndarray:
    """valid[r, b]: bin b exists in trial r (there are kept[r].sum() bins)."""
    return np.arange(kept.shape[-1])[None, :] < kept.sum(-1, keepdims=True)


def _block_bounds(kept: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First and last public bin (0-based) of each merged bin, (R, J); padded bins get start J, end J-1."""
    r_count, j_count = kept.shape
    blk = np.cumsum(kept, -1) - kept
    ends = np.full((r_count, j_count), j_count - 1)
    rr, jj = np.nonzero(kept)
    ends[rr, blk[rr, jj]] = jj
    starts = np.concatenate([np.zeros((r_count, 1), int), ends[:, :-1] + 1], axis=-1)
    return starts, ends


def _block_sums(x: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sums of x (..., J) over each trial's merged bins: (R, ..., J), zeros on padded bins."""
    cum = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, -1)], axis=-1)
    out = cum[..., ends + 1] - cum[..., starts]  # (..., R, J)
    return np.moveaxis(out, -2, 0)


def _block_of(kept: np.ndarray) -> np.ndarray:
    return np.cumsum(kept, -1) - kept


def block_counts(template: BinnedCounts, kept: np.ndarray, ev: np.ndarray, ce: np.ndarray, s: np.ndarray
                 ) -> BinnedCounts:
    """The released merged-bin counts as counts on the public grid, each merged bin's events and censorings at its last
    public bin (nothing in the others), n = s + sum d + sum c: a log-rank test on them is the test on the merged bins
    themselves, with no interpolation inside a merged bin (post-processing)."""
    starts, ends = _block_bounds(kept)
    valid = _valid_blocks(kept)
    r_count, j_count = kept.shape
    rows = np.broadcast_to(np.arange(r_count)[:, None], ends.shape)[valid]
    cols = ends[valid]
    blocks = np.broadcast_to(np.arange(j_count)[None, :], ends.shape)[valid]
    events = np.zeros(ev.shape[:-1] + (j_count,))
    censored = np.zeros(ce.shape[:-1] + (j_count,))
    events[rows, ..., cols] = ev[rows, ..., blocks]
    censored[rows, ..., cols] = ce[rows, ..., blocks]
    n = s + ev.sum((-2, -1)) + ce.sum(-1)
    return BinnedCounts(template.grid, template.groups, n, events, censored, template.event_types)


def spread_counts(template: BinnedCounts, kept: np.ndarray, ev: np.ndarray, ce: np.ndarray, s: np.ndarray
                  ) -> BinnedCounts:
    """The released block counts spread over the public bins in proportion to their widths (post-processing): every
    cell of a merged bin B split as its public bins' share of B's width, n = s + sum d + sum c. At B's ends the
    number at risk read from them is n minus the released counts before, as R's n.risk (time >= t) would be."""
    w = np.diff(template.grid.edges)
    starts, ends = _block_bounds(kept)
    blk = _block_of(kept)
    cw = np.concatenate([[0.0], np.cumsum(w)])
    wb = np.where(_valid_blocks(kept), cw[ends + 1] - cw[starts], 1.0)
    frac = w[None, :] / np.take_along_axis(wb, blk, -1)  # (R, J)
    events = np.take_along_axis(ev, np.broadcast_to(blk[:, None, None, :], ev.shape), -1) * frac[:, None, None, :]
    censored = np.take_along_axis(ce, np.broadcast_to(blk[:, None, :], ce.shape), -1) * frac[:, None, :]
    n = s + ev.sum((-2, -1)) + ce.sum(-1)
    return BinnedCounts(template.grid, template.groups, n, events, censored, template.event_types)


def derive_fine_counts(exact: BinnedCounts, kept: np.ndarray, ev: np.ndarray, ce: np.ndarray, s: np.ndarray,
                       a: float, merged_rule: str = "premise") -> BinnedCounts:
    """Post-processing: counts on the public grid whose Kaplan-Meier curve is the block curve.

    Block level: n = s + sum d + sum c; r_B = n - sum_{B'<B} d - sum_{B'<=B} c; r*_B = r_B + a c_B;
    h_B = d_B / r*_B on a single public bin, :func:`uniform_censoring_drop` (d_B, c_B, r_B + c_B) on a
    merged one when a > 0. Public bin j inside B (width fraction f_j): censorings c_B f_j (on a merged
    bin with a > 0, c_B ((1 - h_B)^{F_{j-1}} - (1 - h_B)^{F_j}) / h_B, F_j the share of B's time by
    j's end: spread evenly in time among those still event-free), of which a
    fraction a is moved to bin j+1 (so bin j's at-risk is r_j + a c_j); events d_j = r_j h_j with
    h_j = 1 - (1 - h_B)^{f_j}, split over the event types as d_kB / d_B. Where every bin of a trial is
    a single public bin and a = 0 the released counts are used as they are. ``merged_rule`` "life-table" reads
    merged bins as single ones (h_B = d_B / r*_B, censorings c_B f_j): the rule of records made before the premise
    was solved exactly, kept so that they re-derive.
    """
    if merged_rule not in MERGED_RULES:
        raise ParameterError(f"merged_rule must be one of {', '.join(MERGED_RULES)}, got {merged_rule!r}.")
    premise = a > 0 and merged_rule == "premise"
    grid = exact.grid
    r_count, j_count = kept.shape
    w = np.diff(grid.edges)
    starts, ends = _block_bounds(kept)
    blk = _block_of(kept)
    cw = np.concatenate([[0.0], np.cumsum(w)])
    wb = np.where(_valid_blocks(kept), cw[ends + 1] - cw[starts], 1.0)  # width of each merged bin
    frac = w[None, :] / np.take_along_axis(wb, blk, -1)  # (R, J)
    single = np.take_along_axis(ends - starts == 0, blk, -1)  # (R, J)
    dt = ev.sum(-2)  # (R, G, J)
    n = s + dt.sum(-1) + ce.sum(-1)  # (R, G)
    r_blk = n[..., None] - (np.cumsum(dt, -1) - dt) - np.cumsum(ce, -1)
    r_star = r_blk + a * ce
    h = np.where(r_star > 0, np.minimum(dt / np.where(r_star > 0, r_star, 1.0), 1.0), 0.0)
    if premise:  # merged bins: the life table's premise solved exactly, not to first order
        merged = (ends - starts > 0)[:, None, :]
        h = np.where(merged, uniform_censoring_drop(dt, ce, r_blk + ce), h)
    idx = np.broadcast_to(blk[:, None, :], h.shape)
    h_fine = np.take_along_axis(h, idx, -1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h_fine = np.where(single[:, None, :], h_fine, -np.expm1(frac[:, None, :] * np.log1p(-h_fine)))
    h_fine = np.nan_to_num(h_fine, nan=1.0)
    share = np.broadcast_to(frac[:, None, :], h_fine.shape)
    if premise:  # a merged bin's censorings where its premise puts them: evenly in time among those still event-free
        q_fine = np.take_along_axis(h, idx, -1)
        before = np.cumsum(frac, -1) - frac  # (R, J); at a bin's first public bin: where that bin starts
        first = np.take_along_axis(np.minimum(starts, j_count - 1), blk, -1)
        through = np.cumsum(frac, -1) - np.take_along_axis(before, first, -1)  # share of its bin's time by j's end
        with np.errstate(divide="ignore", invalid="ignore"):
            stay = 1.0 - q_fine
            start, end = np.clip(through - frac, 0.0, 1.0), np.clip(through, 0.0, 1.0)  # rounding can leave -1e-17
            spread = (stay ** start[:, None, :] - stay ** end[:, None, :]) / q_fine
        share = np.where(~single[:, None, :] & (q_fine > 0), np.nan_to_num(spread, nan=0.0), share)
    c_fine = np.take_along_axis(ce, idx, -1) * share
    c_eff = (1 - a) * c_fine
    c_eff[..., 1:] += a * c_fine[..., :-1]
    type_share = np.where(dt[..., None, :] > 0, ev / np.where(dt > 0, dt, 1.0)[..., None, :], 0.0)  # (R, G, K, J)
    share_fine = np.take_along_axis(type_share, np.broadcast_to(blk[:, None, None, :], type_share.shape), -1)
    # events bin by bin along the grid (a loop over bins, vectorised over trials and groups)
    d_fine = np.zeros_like(c_eff)
    c_out = np.zeros_like(c_eff)
    remaining = n.copy()
    for j in range(j_count):
        cj = np.minimum(c_eff[..., j], remaining)
        rj = remaining - cj
        dj = rj * h_fine[..., j]
        c_out[..., j] = cj
        d_fine[..., j] = dj
        remaining = np.where(h_fine[..., j] >= 1.0, 0.0, rj - dj)
    exact_path = np.asarray(kept.all(-1) & (a == 0))  # every bin a single public bin, no actuarial shift
    d_fine = np.where(exact_path[:, None, None], dt, d_fine)
    c_out = np.where(exact_path[:, None, None], ce, c_out)
    events = np.where(exact_path[:, None, None, None], ev, d_fine[..., None, :] * share_fine)
    return BinnedCounts(grid, exact.groups, n, events, c_out, exact.event_types)


def discrete_laplace_variance(scale: float) -> float:
    """Variance of the discrete Laplace P(k) ~ exp(-|k| / scale): 2p / (1 - p)^2 with p = exp(-1/scale)."""
    if scale <= 0:
        return 0.0
    p = math.exp(-1.0 / scale)
    return 2.0 * p / (1.0 - p) ** 2


def noise_log_variance(ev: np.ndarray, ce: np.ndarray, s: np.ndarray, kept: np.ndarray, widths: np.ndarray, a: float,
                       cell_variance: float, cap: float = 25.0) -> np.ndarray:
    """Delta-method variance of log S due to the noise, at the public grid points: (R, G, J).

    Per merged bin B: h = d_B / r*_B with r*_B = d_B + rest_B, rest_B = s + sum_{B'>B} (d + c) + a c_B, so
    Var h ~ (rest^2 Var d + d^2 Var rest) / r*^4 with Var d = K v and Var rest = v (1 + (K + 1) L_B + a^2)
    (v = one cell's noise variance, K event types, L_B merged bins after B), and Var log(1 - h) ~
    Var h / (1 - h)^2, capped at ``cap``. At a public point a fraction F of the way through B (in time):
    the sum over earlier bins plus F^2 Var log(1 - h_B), as S there is S(start of B) (1 - h_B)^F.
    """
    k_types = ev.shape[-2]
    dt = ev.sum(-2)
    n = s + dt.sum(-1) + ce.sum(-1)
    r_star = n[..., None] - (np.cumsum(dt, -1) - dt) - np.cumsum(ce, -1) + a * ce
    rest = r_star - dt
    valid = _valid_blocks(kept)[:, None, :]
    later = (valid.sum(-1, keepdims=True) - 1 - np.arange(kept.shape[-1])).clip(0)
    var_rest = cell_variance * (1 + (k_types + 1) * later + a * a)
    with np.errstate(divide="ignore", invalid="ignore"):
        var_h = (rest**2 * k_types * cell_variance + dt**2 * var_rest) / r_star**4
        var_log = var_h / (1 - dt / r_star) ** 2
    var_log = np.where(valid & (r_star > 0), np.nan_to_num(var_log, nan=cap, posinf=cap), 0.0)
    var_log = np.minimum(var_log, cap)
    starts, ends = _block_bounds(kept)
    blk = _block_of(kept)
    cw = np.concatenate([[0.0], np.cumsum(widths)])
    width = np.where(_valid_blocks(kept), cw[ends + 1] - cw[starts], 1.0)
    start_t = cw[np.minimum(starts, widths.size)]
    elapsed = (cw[1:][None, :] - np.take_along_axis(start_t, blk, -1)) / np.take_along_axis(width, blk, -1)  # (R, J)
    idx = np.broadcast_to(blk[:, None, :], dt.shape)
    before = np.take_along_axis(np.cumsum(var_log, -1) - var_log, idx, -1)
    return before + elapsed[:, None, :] ** 2 * np.take_along_axis(var_log, idx, -1)


def noise_covariance(template: BinnedCounts, kept: np.ndarray, ev: np.ndarray, ce: np.ndarray, s: np.ndarray, a: float,
                     cell_variance: float, step: float = 0.5, max_cells: int = 400_000,
                     merged_rule: str = "premise") -> np.ndarray:
    """Delta-method covariance of the survival curve at the public grid points due to the noise: (R, G, J, J).

    S is a function of the released cells (d_gkB, c_gB, s_g; :func:`derive_fine_counts`, then Kaplan-Meier), each
    with independent noise of variance v, so Cov(S_i, S_j) ~ v sum_cells dS_i/dx dS_j/dx. The derivatives are
    central differences of +/- ``step`` (one-sided at a cell clamped to 0), one released cell at a time: only the
    merged bins' cells carry noise (padded positions do not), so a fine grid that merged into few bins costs few
    derivations. A linear functional of the curve (the RMST, ``w . S``) then has noise variance w' Cov w.
    ``template``: the released counts (their grid, groups and event types)."""
    from dpsurv_core.curves.kaplan_meier import estimate

    r_count, g, k, j = ev.shape
    out = np.zeros((r_count, g, j, j))
    blocks = kept.sum(-1).astype(int)  # merged bins per trial: cells 0 .. blocks - 1 are noised
    for r in range(r_count):  # trials one by one (each its own merged bins), the cells of one vectorised
        nb = int(blocks[r])
        cells = ([("e", gg, kk, b) for gg in range(g) for kk in range(k) for b in range(nb)]
                 + [("c", gg, 0, b) for gg in range(g) for b in range(nb)] + [("s", gg, 0, 0) for gg in range(g)])
        m = len(cells)
        grads = np.zeros((m, g, j))
        per = max(1, max_cells // max(1, 2 * g * k * j))  # cells per batch, within the memory bound
        for lo in range(0, m, per):
            batch = cells[lo:lo + per]
            n = len(batch)
            e2 = np.repeat(ev[r:r + 1], 2 * n, axis=0).astype(float)
            c2 = np.repeat(ce[r:r + 1], 2 * n, axis=0).astype(float)
            s2 = np.repeat(s[r:r + 1], 2 * n, axis=0).astype(float)
            width = np.zeros(n)
            for i, (kind, gg, kk, b) in enumerate(batch):
                arr, idx = (e2, (gg, kk, b)) if kind == "e" else (c2, (gg, b)) if kind == "c" else (s2, (gg,))
                x = float(arr[(i, *idx)])
                arr[(i, *idx)] = x + step
                arr[(n + i, *idx)] = max(x - step, 0.0)
                width[i] = x + step - max(x - step, 0.0)
            fine = derive_fine_counts(template, np.repeat(kept[r:r + 1], 2 * n, axis=0), e2, c2, s2, a, merged_rule)
            surv = estimate(fine).survival
            grads[lo:lo + n] = (surv[:n] - surv[n:]) / width[:, None, None]
        out[r] = cell_variance * np.einsum("mgi,mgj->gij", grads, grads)
    return out


def bands(survival: np.ndarray, variance: np.ndarray, alpha: float) -> tuple[np.ndarray, ...]:
    """Log-log and linear bands from a variance of log S (the formulas of kaplan_meier.estimate)."""
    return greenwood_bands(survival, variance, alpha)
