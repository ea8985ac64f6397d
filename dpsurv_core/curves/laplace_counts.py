"""Mechanism 1: Laplace noise on per-group counts on public bins (Gondara & Wang 2020).

Released cells per group g: n_g, d_gj (per event type), c_gj (see :mod:`dpsurv_core.curves.counts`).
Sensitivity: a subject is in exactly one group and changes n_g by 1 and one d/c cell by 1, so
the L1 norm of the change over all cells is 2, or 2m with m rows per subject. Adding
Laplace(2m/eps) to every cell (discrete Laplace of the same scale on the integer counts in
releases) is eps-DP for add/remove-one-subject neighbours; the groups are disjoint, so the whole
release costs eps (parallel composition). Everything after is post-processing and free.

Reading (post-processing of the released counts and the public noise law): the curve reads the counts without the
bias clamping at 0 put in them (:func:`dpsurv_core.curves.clamping.unclamped_counts`: each released 0 as the noise's
mean below 0, running sums kept non-decreasing, and nobody at risk from where the release cut the events to the number
at risk), so a grid finer than the noise no longer drags the curve down (100 bins of 200 subjects at epsilon 1: 0.50
at the true median of 0.50, where the clamped counts read 0.32). Bands: with noise, the intervals carry it
(:func:`dpsurv_core.curves.bootstrap.world_bootstrap`: a parametric bootstrap of the curve's error over the worlds the
release leaves plausible, each redrawn release read the same way). Measured: docs/coverage-curves.md.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from dpsurv_core.curves.bootstrap import WORLDS_METHOD, with_bootstrap_bands, world_bootstrap
from dpsurv_core.curves.clamping import (
    laplace_clamping,
    noise_sd,
    opened_at_cut,
    risk_table_counts,
    stopped_where_cut,
    unclamped_counts,
    unclamped_noise,
)
from dpsurv_core.curves.counts import BinnedCounts, post_process
from dpsurv_core.curves.kaplan_meier import actuarial_share, estimate
from dpsurv_core.curves.memory import check_release
from dpsurv_core.curves.result import CURVE_PARAMETERS, CurveResult, drawn, exact_counts, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource


class LaplaceCounts(Mechanism):
    """Discrete Laplace (or continuous, ``discrete=False``) noise of scale 2m/eps on every count cell.

    Parameters
    ----------
    epsilon : float
        The privacy budget, positive; ``math.inf`` adds no noise (for exactness checks).
    rows_per_subject : int, default 1
        m, the most rows one subject contributes; the L1 sensitivity over the cells is 2m.
    discrete : bool, default True
        Discrete Laplace noise (whole numbers); False draws continuous Laplace noise.
    noise_in_bands : bool, default True
        Bands that carry the noise (a bootstrap over the noise law, post-processing); False gives the bands of
        the noisy counts read as exact.

    Privacy
    -------
    Cost: epsilon, all of it on the count cells (Laplace(2m/epsilon) each); the groups are disjoint, so they compose
    in parallel, and every curve and test after is post-processing.
    Neighbours: add/remove one subject.
    Protects: one subject's rows (all m of them: the L1 sensitivity over the cells is 2m).
    Source: Gondara L. & Wang K. (2020), Differentially Private Survival Function Estimation.
    """

    name = "laplace-counts"
    analysis = "survival curves"
    interval_includes_noise = True
    engines = ("pandas", "duckdb", "spark")  # reads exact counts only (dpsurv_core/engines)

    def __init__(self, epsilon: float, rows_per_subject: int = 1, discrete: bool = True,
                 noise_in_bands: bool = True) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.rows_per_subject = int(rows_per_subject)
        self.discrete = discrete
        self.noise_in_bands = bool(noise_in_bands)

    @property
    def sensitivity(self) -> float:
        return 2.0 * self.rows_per_subject

    @property
    def scale(self) -> float:
        return 0.0 if math.isinf(self.epsilon) else self.sensitivity / self.epsilon

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon, neighbouring=ADD_REMOVE, protects=SUBJECT)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sensitivity_l1": self.sensitivity, "scale": self.scale,
                "rows_per_subject": self.rows_per_subject, "noise": "discrete Laplace" if self.discrete else "Laplace"}

    @staticmethod
    def clamping(rel: CurveResult) -> Any:
        """The noise on the first trial's cells and numbers at risk (:func:`unclamped_noise`: the curve reads the
        counts without clamping's bias); a release read as it is, clamped (``rel.extra`` without "unclamped"): what
        clamping at 0 adds to its event and censoring cells."""
        if rel.counts is None or not rel.parameters.get("scale"):
            return None
        scale, discrete = float(rel.parameters["scale"]), rel.parameters.get("noise") == "discrete Laplace"
        if rel.extra.get("unclamped"):
            return unclamped_noise(rel.counts.events[:1], scale, discrete)
        return laplace_clamping(rel.counts.events[:1], scale, discrete, rel.counts.censored[:1])

    def noise_law(self, extra: dict[str, Any] | None = None, debiased: bool = False) -> Any:
        """Discrete Laplace of scale 2m/epsilon on every cell, then clamping: what the log-rank null redraws."""
        from dpsurv_core.curves.logrank_test import laplace_law

        return laplace_law(self)

    def noisy_counts(self, exact: BinnedCounts, noise: NoiseSource, trials: int = 1) -> BinnedCounts:
        """Raw noisy counts (before post-processing), (trials, ...) arrays."""
        tiled = tile_trials(exact, trials)
        cells = tiled.cells().astype(float)
        if self.scale > 0:
            draw = noise.discrete_laplace if self.discrete else noise.laplace
            cells = cells + draw(self.scale, cells.shape)
        return tiled.from_cells(cells)

    def draw(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
             competing: bool = False) -> dict[str, Any]:
        """The noisy output: every count cell plus discrete Laplace noise, clamped (:func:`post_process`), on the
        release grid (``noise.snap``)."""
        exact = exact_counts(cohort, public.grid, public, competing)
        counts = post_process(self.noisy_counts(exact, noise, trials)).snapped(noise.snap)
        return {"counts": counts.released(), "noise": noise.describe()}

    def compute(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource, trials: int = 1,
                competing: bool = False) -> CurveResult:
        check_release(self, cohort, public, trials, competing)  # the memory it would take, before any work
        return drawn(self, self.draw(cohort, public, noise, trials, competing), public, competing)

    def read(self, released: dict[str, Any], public: PublicParameters, competing: bool = False) -> CurveResult:
        """Curves and noise-aware bands from the released counts and the public noise law alone."""
        released_counts = BinnedCounts.from_released(released["counts"], public.grid)
        a = actuarial_share(public.grid)
        # the curve reads the counts without clamping's bias (each released 0 as the noise's mean below 0)
        reading = partial(unclamped_counts, scale=self.scale, discrete=self.discrete)
        counts = reading(released_counts)
        curves = estimate(counts, actuarial=a, noisy=self.scale > 0)
        if self.scale > 0:
            curves = stopped_where_cut(curves, released_counts)
        notes = []
        if self.noise_in_bands and self.scale > 0:
            # the plug-in world's hazard pooled over runs of bins with twice one cell's noise s.d. in events
            pool = 2.0 * noise_sd(self.scale, self.discrete)
            boot = world_bootstrap(self, counts, a, reading, pool)
            curves = opened_at_cut(with_bootstrap_bands(curves, boot, offset=True, lower_tail=True,
                                                        method=WORLDS_METHOD.format(draws=boot.draws)),
                                   released_counts)
            notes.append(f"The bands carry the noise: {curves.interval_method}.")
        extra = {"risk_counts": risk_table_counts(counts, released_counts), "unclamped": True} if self.scale > 0 else {}
        return CurveResult(self.name, self.cost, self.parameters(), public.disclosures(CURVE_PARAMETERS), curves,
                            released_counts, str(released.get("noise", "")), notes, extra)
