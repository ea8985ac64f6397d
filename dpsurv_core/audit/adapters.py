"""Audit adapters: what the audit needs from an analysis (:class:`Adapter`: a mechanism, its cost, a default target
and R seeded releases on D and on D'), the releases' container (:class:`Released`), and the adapters of the
survival curves (released counts, the mechanism's raw histograms and the curves) and of the log-rank tests
(post-processing of released counts). The Weibull and regression adapters are in
:mod:`dpsurv_core.audit.model_adapters`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsurv_core.audit.record import Publisher
from dpsurv_core.audit.targets import (
    Target,
    check_row,
    relabelled,
    select_curve_target,
    select_logrank_target,
    user_target,
    without,
)
from dpsurv_core.curves import logrank
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.result import CURVE_PARAMETERS, exact_counts, groups_of, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import CHANGE_LABEL, GROUP_LABEL, PrivacyCost
from dpsurv_core.privacy.noise import SimulationNoise

Progress = Callable[[float, str], None]


# ------------------------------------------------------------------------------------------- adapters
@dataclass
class Released:
    """R releases on D and on D' as (R, q) arrays, the coordinates nearest the target, optional curves."""

    released_in: np.ndarray
    released_out: np.ndarray
    focus: dict[str, np.ndarray]
    curves_in: np.ndarray | None = None
    curves_out: np.ndarray | None = None
    grid_points: int | None = None
    notes: list[str] = field(default_factory=list)
    fields: list[str] | None = None  # a name per column of the released arrays (``output.counts[3]``)


class Adapter:
    """What the audit needs from an analysis: a mechanism, its cost, a default target and the releases; and, when a
    reader makes its release record, the :class:`~dpsurv_core.audit.record.Publisher` that makes it again."""

    analysis: str = ""
    mechanism_name: str = ""
    cohort: Cohort
    public: PublicParameters
    publisher: Publisher | None = None

    @property
    def cost(self) -> PrivacyCost:
        raise NotImplementedError

    @property
    def label_only(self) -> bool:
        return self.cost.protects == GROUP_LABEL or self.cost.neighbouring == CHANGE_LABEL

    def default_target(self) -> Target:
        raise NotImplementedError

    def disclosures(self) -> list:
        """What the release discloses besides its output (the public parameters a curve release uses, read off the
        data, ...)."""
        return list(self.public.disclosures(CURVE_PARAMETERS))

    def target(self, row: int | None) -> Target:
        if row is None:
            return self.default_target()
        row, _ = check_row(self.cohort, int(row))
        self.check_target(row)
        cats = (tuple(self.public.group_categories) or tuple(self.cohort.groups)) if self.label_only else None
        return user_target(self.cohort, row, cats)

    def check_target(self, row: int) -> None:
        """Refuse a row the analysis never sees (e.g. dropped for a missing covariate)."""

    def neighbour(self, target: Target) -> Cohort:
        return relabelled(self.cohort, target) if self.label_only else without(self.cohort, target)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        raise NotImplementedError


def _noises(seed: int) -> tuple[SimulationNoise, SimulationNoise]:
    a, b = np.random.SeedSequence(int(seed)).spawn(2)
    return SimulationNoise(a), SimulationNoise(b)


def _tick(progress: Progress | None, frac: float, text: str) -> None:
    if progress is not None:
        progress(float(min(max(frac, 0.0), 1.0)), text)


def _broadcast(a: np.ndarray, trials: int) -> np.ndarray:
    return np.broadcast_to(a, (trials, *a.shape[1:])).copy() if a.shape[0] == 1 and trials > 1 else a


class CurveAdapter(Adapter):
    """Survival-curve mechanisms: released counts (when the mechanism has them), the
    mechanism's raw histograms in ``extra`` (adaptive-km), and the curves at the public grid points."""

    analysis = "km"
    RAW_EXTRA = ("selection_counts", "block_events", "block_censored", "beyond_grid")

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        self.mechanism, self.cohort, self.public = mechanism, cohort, public
        self.mechanism_name = mechanism.name
        if self.label_only and cohort.group is None:
            raise ParameterError("A label-only mechanism (rrr) randomizes the group label: choose a group column.")

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def exposure(self) -> Any:
        """:func:`dpsurv_core.audit.exposure.exposure` of this release, computed once (the default target and the
        result both read it)."""
        from dpsurv_core.audit.exposure import exposure

        if getattr(self, "_exposure", None) is None:
            self._exposure = exposure(self.mechanism, self.cohort, self.public)
        return self._exposure

    def exposed_units(self) -> np.ndarray | None:
        """For a deterministic disclosure-control rule, the units whose removal changes its released table (None
        otherwise, or when nobody is exposed). Such a rule hides the others: the attack targets an exposed one, else
        the audit would report a safe 0% while others are exposed with certainty."""
        from dpsurv_core.audit.exposure import _is_disclosure_control

        if _is_disclosure_control(self.mechanism) and getattr(self.mechanism, "deterministic", False):
            expo = self.exposure()
            return expo.mask if expo.exposed else None
        return None

    def default_target(self) -> Target:
        return select_curve_target(self.cohort, self.public, self.label_only, self.exposed_units())

    def _run(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        rel = self.mechanism.compute(cohort, self.public, noise, trials)
        R = trials
        parts: dict[str, np.ndarray] = {}
        if rel.counts is not None:
            parts["counts"] = _broadcast(rel.counts.cells().reshape(rel.counts.cells().shape[0], -1).astype(float), R)
        for key in self.RAW_EXTRA:
            v = rel.extra.get(key) if isinstance(rel.extra, dict) else None
            if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == R and np.issubdtype(v.dtype, np.number):
                parts[key] = v.reshape(R, -1).astype(float)
        surv = rel.curves.at_times(self.public.grid.points, "survival")
        surv = _broadcast(surv, R)
        parts["curve"] = surv.reshape(R, -1)
        return parts, surv

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        other = self.neighbour(target)
        _tick(progress, 0.1, f"{trials} releases on D")
        p_in, s_in = self._run(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} releases on D'")
        p_out, s_out = self._run(other, n_out, trials)
        keys = [k for k in p_in if k in p_out and p_in[k].shape == p_out[k].shape]
        offsets = np.cumsum([0] + [p_in[k].shape[1] for k in keys])
        focus: dict[str, np.ndarray] = {}
        exact_in = exact_counts(self.cohort, self.public.grid, self.public)
        exact_out = exact_counts(other, self.public.grid, self.public)
        for i, k in enumerate(keys):
            if k == "counts" and p_in[k].shape[1] == exact_in.cells().size:
                diff = np.flatnonzero(exact_in.cells() != exact_out.cells())
                focus["target's cells"] = offsets[i] + diff
            if k == "curve":
                ref_in = estimate(tile_trials(exact_in, 1)).survival.reshape(-1)
                ref_out = estimate(tile_trials(exact_out, 1)).survival.reshape(-1)
                diff = np.flatnonzero(np.abs(ref_in - ref_out) > 1e-12)
                if diff.size:
                    focus["curve where the target matters"] = offsets[i] + diff
        names = [f"output.{k}[{j}]" for k in keys for j in range(p_in[k].shape[1])]
        return Released(np.concatenate([p_in[k] for k in keys], 1), np.concatenate([p_out[k] for k in keys], 1),
                        focus, s_in, s_out, int(self.public.grid.bins), fields=names)


class LogrankAdapter(CurveAdapter):
    """Log-rank tests computed from a curve mechanism's released counts (post-processing): the pairwise
    and overall chi-square statistics and the overall observed-minus-expected per group."""

    analysis = "logrank"

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        super().__init__(mechanism, cohort, public)
        if cohort.group is None or len(groups_of(cohort, public) or ()) < 2:
            raise ParameterError("A log-rank audit needs a group column with two or more groups: pass --group.")

    def default_target(self) -> Target:
        if self.label_only:
            return select_curve_target(self.cohort, self.public, True)
        return select_logrank_target(self.cohort, self.public, self.exposed_units())

    def _stats(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> np.ndarray:
        rel = self.mechanism.compute(cohort, self.public, noise, trials)
        if rel.counts is None:
            raise ParameterError(f"{self.mechanism_name} releases no counts, so there is no log-rank test to audit: "
                                 "choose laplace-counts, rrr or adaptive-km.")
        with np.errstate(all="ignore"):
            pairs = logrank.pairwise(rel.counts)
            cols = [t.statistic for t in pairs]
            ov = logrank.overall(rel.counts)
            cols.append(ov.statistic)
            oe = (ov.observed - ov.expected).reshape(ov.statistic.shape[0], -1)
        self._names = ([f"output.statistic[{t.group_a} vs {t.group_b}]" for t in pairs] + ["output.statistic[overall]"]
                       + [f"output.observed_minus_expected[{j}]" for j in range(oe.shape[1])])
        out = np.column_stack([np.asarray(c, float).reshape(-1, 1) for c in cols] + [oe])
        return _broadcast(np.nan_to_num(out, nan=0.0), trials)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        _tick(progress, 0.1, f"{trials} log-rank releases on D")
        a = self._stats(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} log-rank releases on D'")
        b = self._stats(self.neighbour(target), n_out, trials)
        return Released(a, b, {"all tests": np.arange(a.shape[1])},
                        notes=["Log-rank tests are post-processing of the released counts; no curve is released, so "
                               "there are no influential points."], fields=list(self._names))
