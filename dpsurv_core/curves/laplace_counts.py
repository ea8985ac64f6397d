"""Mechanism 1: Laplace noise on per-group counts on public bins (Gondara & Wang 2020).

Released cells per group g: n_g, d_gj (per event type), c_gj (see :mod:`dpsurv_core.curves.counts`).
Sensitivity: a subject is in exactly one group and changes n_g by 1 and one d/c cell by 1, so
the L1 norm of the change over all cells is 2, or 2m with m rows per subject. Adding
Laplace(2m/eps) to every cell (discrete Laplace of the same scale on the integer counts in
releases) is eps-DP for add/remove-one-subject neighbours; the groups are disjoint, so the whole
release costs eps (parallel composition). Everything after is post-processing and free.

Bands: with noise, the intervals carry it (:mod:`dpsurv_core.curves.uncertainty`: a parametric bootstrap that
redraws the sampling error and the public noise from the released counts; free post-processing).
"""

from __future__ import annotations

import math
from typing import Any

from dpsurv_core.curves.bootstrap import bootstrap_curves, with_bootstrap_bands
from dpsurv_core.curves.clamping import laplace_clamping
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
    """Discrete Laplace (or continuous, ``discrete=False``) noise of scale 2m/eps on every count cell."""

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
        """What clamping at 0 adds to the first trial's event and censoring cells (Laplace noise on every cell)."""
        if rel.counts is None or not rel.parameters.get("scale"):
            return None
        return laplace_clamping(rel.counts.events[:1], float(rel.parameters["scale"]),
                                rel.parameters.get("noise") == "discrete Laplace", rel.counts.censored[:1])

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
        curves = estimate(released_counts, actuarial=a, noisy=self.scale > 0)
        notes = []
        if self.noise_in_bands and self.scale > 0:
            curves = with_bootstrap_bands(curves, bootstrap_curves(self, released_counts, a))
            notes.append("The bands carry the noise: " + curves.interval_method + ".")
        return CurveResult(self.name, self.cost, self.parameters(), public.disclosures(CURVE_PARAMETERS), curves,
                            released_counts, str(released.get("noise", "")), notes)
