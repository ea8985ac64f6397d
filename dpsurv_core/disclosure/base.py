"""What every statistical-disclosure-control (SDC) method shares: it alters the exact count table and publishes it.

The released table is the same one the DP count mechanisms release (docs/mechanisms.md): per group g on the public
bins, n_g, the events d_gj and the censorings c_gj (so the number-at-risk table and the log-rank inputs follow from
it). An SDC method changes those cells by a rule (suppress, round, perturb by a cell key, merge steps) and the curves
and tests are computed from the altered cells, like a DP release. None has an epsilon: the cost is "no formal
guarantee" (:data:`~dpsurv_core.privacy.ledger.NO_FORMAL`), shown as none, never as 0 or infinity.

For the audit, a method also says how the released cells change when one privacy unit is removed
(:meth:`DisclosureControl.leave_one_out`), so the share of subjects it exposes is exact over every subject.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core.curves.bootstrap import bootstrap_curves, with_bootstrap_bands
from dpsurv_core.curves.counts import BinnedCounts, post_process
from dpsurv_core.curves.kaplan_meier import actuarial_share, estimate, incidence_variance
from dpsurv_core.curves.memory import check_release
from dpsurv_core.curves.result import CURVE_PARAMETERS, CurveResult, drawn, exact_counts, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.privacy.ledger import DISCLOSURE_CONTROL, NO_FORMAL, NO_NEIGHBOURS, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism
from dpsurv_core.privacy.noise import NoiseSource

NOT_DP = "not DP: statistical disclosure control ({what}); no formal guarantee."


class DisclosureControl(Mechanism):
    """Base class of the SDC curve methods: ``alter`` maps exact counts (trials axis first) to the released counts."""

    name = "disclosure-control"
    analysis = "survival curves"
    deterministic = True  # the same data always gives the same table (random rounding is the exception)
    what = "disclosure control"
    interval_includes_noise = False  # True for the random perturbations: their bands redraw the perturbation
    noise_in_bands = True  # the audit and the trade-off explorer switch the bootstrap off: they never read the bands
    engines: tuple[str, ...] = ("pandas", "duckdb", "spark")  # ``alter`` reads exact counts only (cell-key overrides: subject keys)

    def __init__(self, rows_per_subject: int = 1) -> None:
        self.rows_per_subject = int(rows_per_subject)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(None, neighbouring=NO_NEIGHBOURS, protects=DISCLOSURE_CONTROL, guarantee=NO_FORMAL)

    def parameters(self) -> dict[str, Any]:
        return {"rows_per_subject": self.rows_per_subject, "guarantee": NO_FORMAL}

    # ------------------------------------------------------------------------------------------- the rule
    def alter(self, exact: BinnedCounts, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None,
              trials: int) -> tuple[BinnedCounts, dict[str, Any]]:
        """The released counts (trials, ...) and extra arrays (e.g. the suppression mask)."""
        raise NotImplementedError

    def leave_one_out(self, cohort: Cohort, public: PublicParameters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Released cells on D (C,), on D minus each privacy unit (U, C), and the first row of each unit.

        Count-based rules see a unit only through its cells: the leave-one-out counts are the exact counts minus the
        unit's contribution (vectorised over units), then the rule is applied to all of them at once."""
        from dpsurv_core.curves.leave_one_out import _first_rows, leave_one_out_counts

        if not self.deterministic:
            raise NotImplementedError(f"{self.name} is random: exposure is about its output distribution.")
        exact, _, loo, unit = leave_one_out_counts(cohort, public)
        base, _ = self.alter(tile_trials(exact, 1), cohort, public, None, 1)
        out, _ = self.alter(loo, cohort, public, None, loo.n.shape[0])
        return base.cells()[0], out.cells(), _first_rows(unit, loo.n.shape[0])

    def null_alter(self, exact: BinnedCounts, noise: NoiseSource) -> BinnedCounts:
        """The rule applied to simulated counts (leading axis N) for a calibrated log-rank test: the same rule, with
        random stand-ins for anything tied to the real records (the cell keys)."""
        out, _ = self.alter(exact, None, None, noise, int(exact.n.shape[0]))  # type: ignore[arg-type]
        return out

    def noise_law(self, extra: dict[str, Any] | None = None, debiased: bool = False) -> Any:
        """The release's law for :mod:`dpsurv_core.curves.logrank_test` (its tests are calibrated by simulation)."""
        from dpsurv_core.curves.logrank_test import NoiseLaw

        return NoiseLaw(self.name, f"{self.what} of every count cell (no formal guarantee), then clamping", True,
                        lambda exact, rows, noise: post_process(self.null_alter(exact, noise)))

    # ------------------------------------------------------------------------------------------- release
    def draw(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None = None, trials: int = 1,
             competing: bool = False) -> dict[str, Any]:
        """The altered table as published: its cells, and which cells were suppressed where the rule suppresses (the
        "<k" marks); a cell key method's per-record keys stay secret and are not part of it."""
        exact = exact_counts(cohort, public.grid, public, competing)
        reps = max(int(trials), 1)
        altered, extra = self.alter(tile_trials(exact, reps), cohort, public, noise, reps)
        out: dict[str, Any] = {"counts": altered.released(),
                               "noise": "none" if noise is None or self.deterministic else noise.describe()}
        if "suppressed" in extra:
            out["suppressed"] = {k: np.asarray(m, bool).tolist() for k, m in extra["suppressed"].items()}
        return out

    def compute(self, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None = None, trials: int = 1,
                competing: bool = False) -> CurveResult:
        check_release(self, cohort, public, trials, competing)  # the memory it would take, before any work
        return drawn(self, self.draw(cohort, public, noise, trials, competing), public, competing)

    def read(self, released: dict[str, Any], public: PublicParameters, competing: bool = False) -> CurveResult:
        """Curves, bands and the printable table from the altered table alone."""
        altered = BinnedCounts.from_released(released["counts"], public.grid)
        extra: dict[str, Any] = {}
        if "suppressed" in released:
            extra["suppressed"] = {k: np.array(m, bool) for k, m in released["suppressed"].items()}
        released_counts = post_process(altered)
        a = actuarial_share(public.grid)
        curves = estimate(released_counts, actuarial=a, noisy=True)
        if self.interval_includes_noise and self.noise_in_bands:  # a random perturbation: the bands redraw it, and
            # their error about the release includes the draws' offset (random rounding late in follow-up: 94.0% at
            # n = 200, against 87.6% from their spread alone; docs/coverage-curves.md)
            curves = with_bootstrap_bands(curves, bootstrap_curves(self, released_counts, a), offset=True)
        elif not self.interval_includes_noise:  # a deterministic rule: the exact-count formulas on the altered counts,
            # as its Greenwood band (both ignore what the rule did, and its releases say so)
            curves = replace(curves, incidence_variance=incidence_variance(released_counts, a))
        extra["table"] = released_table(altered, extra.get("suppressed"), getattr(self, "threshold", None))
        discl = [*public.disclosures(CURVE_PARAMETERS), Disclosure("release", NOT_DP.format(what=self.what), dp=False)]
        notes = [f"{self.what}: no epsilon and no formal guarantee; a subject whose removal changes this table is "
                 "revealed with certainty to an attacker who knows everyone else (see the audit's exposed share)."]
        return CurveResult(self.name, self.cost, self.parameters(), discl, curves, altered,
                            str(released.get("noise", "none")), notes, extra)


def released_table(counts: BinnedCounts, suppressed: dict[str, np.ndarray] | None = None,
                   threshold: int | None = None) -> list[dict[str, Any]]:
    """The released count table of the first trial as printable rows: per group and bin, the number at risk at the
    bin's start, events and censorings; suppressed cells (and numbers at risk from 1 to threshold - 1 under
    suppression) print as "<k"."""
    at_risk = counts.at_risk()[0] + counts.censored[0]  # at risk at the bin's start: before its censorings
    ev, ce = counts.events_total[0], counts.censored[0]
    sup_e = None if suppressed is None else suppressed["events"][0].any(axis=-2)
    sup_c = None if suppressed is None else suppressed["censored"][0]
    edges = counts.grid.edges
    label = f"<{threshold}" if threshold else None

    def show(v: float, hidden: bool) -> Any:
        if hidden:
            return label
        return int(round(float(v))) if float(v).is_integer() else float(v)

    rows = []
    for g, name in enumerate(counts.groups):
        for j in range(edges.size - 1):
            r = float(at_risk[g, j])
            small_r = suppressed is not None and 0 < r < (threshold or 0)
            rows.append({"group": name, "from": float(edges[j]), "to": float(edges[j + 1]),
                         "at_risk": show(max(r, 0.0), small_r),
                         "events": show(ev[g, j], sup_e is not None and bool(sup_e[g, j])),
                         "censored": show(ce[g, j], sup_c is not None and bool(sup_c[g, j]))})
    return rows
