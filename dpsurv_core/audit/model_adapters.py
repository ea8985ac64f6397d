"""Audit adapters of the fitted models: Weibull parameters (shape, normalised scale) and discrete-time regression
(the coefficient vector), with the non-private regularised fit used to calibrate the audit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from dpsurv_core.audit.adapters import Adapter, Progress, Released, _broadcast, _noises, _tick
from dpsurv_core.audit.record import Publisher, reader_publisher
from dpsurv_core.audit.targets import Target, select_regression_target, select_weibull_target
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import EXACT, PrivacyCost
from dpsurv_core.privacy.noise import SimulationNoise


class WeibullAdapter(Adapter):
    """Weibull mechanisms: the released (shape, normalised scale); curves S(t) on the grid."""

    analysis = "weibull"

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        self.mechanism, self.cohort, self.public = mechanism, cohort, public
        self.mechanism_name = mechanism.name
        self.sample = mechanism.prepare(cohort)

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def default_target(self) -> Target:
        return select_weibull_target(self.cohort, self.sample)

    def disclosures(self) -> list:
        return [*self.public.disclosures(("horizon",)), *self.mechanism.disclosures(self.sample)]

    def _run(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> tuple[np.ndarray, np.ndarray]:
        from dpsurv_core.weibull.model import survival_curve

        est = self.mechanism.compute_many(self.mechanism.prepare(cohort), noise, trials)
        q = np.column_stack([est.shape, est.scale_normalised]).astype(float)
        curves = survival_curve(self.public.grid.points, est.shape, est.scale).reshape(trials, 1, -1)
        return _broadcast(q, trials), _broadcast(curves, trials)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        _tick(progress, 0.1, f"{trials} Weibull releases on D")
        a, ca = self._run(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} Weibull releases on D'")
        b, cb = self._run(self.neighbour(target), n_out, trials)
        return Released(a, b, {"shape and scale": np.arange(2)}, ca, cb, int(self.public.grid.bins),
                        fields=["output.shape", "output.scale_normalised"], notes=["Influential points compare the released Weibull curves S(t) = exp(-(t/scale)^shape) "
                               "on the public grid."])


class NonPrivateRegression:
    """The non-private regularised fit w*(Lambda), repeated: for calibrating the audit only."""

    name = "nonprivate"

    def __init__(self, lam: float) -> None:
        self.lam = lam

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(math.inf, protects="nothing (non-private)", neighbouring="none")

    def compute(self, pp: Any, noise: Any, trials: int = 1) -> Any:
        from dpsurv_core.regression.model import minimise

        w = minimise(pp, self.lam)
        return type("Fit", (), {"W": np.repeat(w[None, :], trials, axis=0)})()


class _Design(TypedDict):
    """The public design a regression audit keeps for D and D' (keywords of ``person_period``)."""

    horizon: float
    intervals: int
    knots: int


class RegressionAdapter(Adapter):
    """Discrete-time regression mechanisms: the released coefficient vector W (R, dim).

    D' keeps D's public design: the same horizon, intervals, knots, covariate encoding and public
    normaliser n, so the mechanism (calibrated on those constants) is the same object on both."""

    analysis = "regression"

    def __init__(self, kind: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                 covariates: tuple[str, ...], lam: float = 0.01, intervals: int | None = None,
                 knots: int | None = None, ranges: dict[str, tuple[float, float]] | None = None,
                 n_public: int | None = None, **psgld: Any) -> None:
        from dpsurv_core.regression.person_period import DEFAULT_INTERVALS, DEFAULT_KNOTS, person_period

        if not covariates:
            raise ParameterError("A regression audit needs covariates: pass --covariates, for example age,sex.")
        self.cohort, self.public, self.covariates = cohort, public, tuple(covariates)
        self.design = _Design(horizon=public.horizon, intervals=intervals or DEFAULT_INTERVALS,
                              knots=knots or DEFAULT_KNOTS)
        self.pp = person_period(cohort, self.covariates, ranges=ranges, n_public=n_public, **self.design)
        enc = self.pp.encoding
        self.ranges = {c.source: (c.centre - c.half_range, c.centre + c.half_range)
                       for c in enc.columns if c.kind == "numeric"}
        levels: dict[str, list[str]] = {}
        for c in enc.columns:
            if c.kind == "categorical":
                levels.setdefault(c.source, []).append(str(c.level))
        frame = cohort.covariates
        self.levels = {}
        for src, levs in levels.items():  # the reference level (dropped from the encoding) comes first
            allv = sorted(frame[src].dropna().astype(str).unique())
            ref = [v for v in allv if v not in levs][:1]
            self.levels[src] = tuple(ref + levs)
        self.lam = lam
        if not catalogue.get(catalogue.REGRESSION, kind).private:
            self.mechanism: Any = NonPrivateRegression(lam)
        else:
            self.mechanism = catalogue.get(catalogue.REGRESSION, kind).build(epsilon, pp=self.pp, lam=lam, **psgld)
        self.kind = kind
        self.mechanism_name = kind

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def _complete(self) -> np.ndarray:
        return self.cohort.covariates[list(self.covariates)].notna().all(axis=1).to_numpy()

    def disclosures(self) -> list:
        return [*self.public.disclosures(("horizon",)), *self.pp.disclosures]  # its design's own ranges and levels

    def check_target(self, row: int) -> None:
        if not self._complete()[row]:
            missing = [c for c in self.covariates if pd.isna(self.cohort.covariates[c].iloc[row])]
            raise ParameterError(f"Row {row} has no value of {missing[0]!r}, so the regression drops it and it cannot be "
                                 "audited: choose another row.")

    def default_target(self) -> Target:
        return select_regression_target(self.cohort, self.pp, self.lam, self._complete())

    def _pp(self, cohort: Cohort) -> Any:
        from dpsurv_core.regression.person_period import person_period

        return person_period(cohort, self.covariates, ranges=self.ranges, levels=self.levels,
                             n_public=self.pp.n_public, **self.design)

    def _run(self, pp: Any, noise: SimulationNoise, trials: int, progress: Callable[[float], None] | None) -> np.ndarray:
        from dpsurv_core.regression.mechanisms import PSGLD

        if isinstance(self.mechanism, PSGLD):
            # The sampler's vectorised path shares one minibatch sequence among the chains of a call, so
            # its chains are not independent draws; the binomial bounds need independent runs, so every
            # run here is its own chain with its own spawned seed (a loop over runs, ~0.1 s per chain).
            seq = noise.rng.bit_generator.seed_seq
            assert isinstance(seq, np.random.SeedSequence)  # simulation generators are seeded (SimulationNoise)
            seeds = seq.spawn(trials)
            out = np.empty((trials, pp.dim))
            for i, s in enumerate(seeds):
                out[i] = self.mechanism.compute(pp, SimulationNoise(s), 1).W[0]
                if progress is not None:
                    progress((i + 1) / trials)
            return out
        rel = self.mechanism.compute(pp, noise, trials)
        info = getattr(rel, "diagnostics", {}).get("information")  # the non-private fit has none
        if info is None:
            return np.asarray(rel.W, float)
        iu = np.triu_indices(pp.dim)  # objective perturbation with an information share also releases H~
        return np.hstack([np.asarray(rel.W, float), np.asarray(info, float)[:, iu[0], iu[1]]])

    def record_publisher(self) -> Publisher | None:
        """The record a ``regression`` release of this mechanism would make (:mod:`dpsurv_core.regression.readout`):
        one run on the data set's person-period design (D' keeps D's public design), its noisy output as released,
        and the regression reader with the public inputs of D's design. None without noise or without a reader."""
        try:
            from dpsurv_core.regression import readout
        except ImportError:
            return None
        if not catalogue.get(catalogue.REGRESSION, self.kind).private or not self.cost.private:
            return None
        mech = self.mechanism
        inputs = readout.public_inputs(self.kind, mech, self.pp)
        designs: dict[int, tuple[Cohort, Any]] = {id(self.cohort): (self.cohort, self.pp)}

        def draw(cohort: Cohort, noise: Any) -> dict[str, Any]:
            if id(cohort) not in designs:
                designs[id(cohort)] = (cohort, self._pp(cohort))
            return readout.released_part(mech.compute(designs[id(cohort)][1], noise, 1))

        return reader_publisher(readout.KIND, draw, inputs, REGRESSION_RECORD_TRIALS,
                                source="the regression release's public inputs (regression.readout.public_inputs of "
                                       "D's design) and its reader")

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        pp_out = self._pp(self.neighbour(target))
        _tick(progress, 0.1, f"{trials} regression releases on D")
        a = self._run(self.pp, n_in, trials, None if progress is None else
                      lambda f: _tick(progress, 0.1 + 0.35 * f, f"pSGLD chains on D: {f:.0%}"))
        _tick(progress, 0.45, f"{trials} regression releases on D'")
        b = self._run(pp_out, n_out, trials, None if progress is None else
                      lambda f: _tick(progress, 0.45 + 0.35 * f, f"pSGLD chains on D': {f:.0%}"))
        notes = ["The released quantity is the coefficient vector (covariates and baseline spline); no curve is "
                 "released, so there are no influential points."]
        stats = {"coefficients": np.arange(self.pp.p), "all": np.arange(a.shape[1])}
        if a.shape[1] > self.pp.dim:
            stats["information matrix"] = np.arange(self.pp.dim, a.shape[1])
            notes.append("With an information share the release is the coefficients and the noisy information matrix: "
                         "the attack scores both (the 'all' statistic) as well as each alone.")
        if self.cost.guarantee != EXACT:
            notes.append("pSGLD is approximate DP (MCMC): its epsilon holds only if the chain samples the exponential "
                         "mechanism's density exactly, so the audit may exceed it without a bug in the accounting. "
                         "Each run is an independent chain (about 0.1 s each on lung).")
        names = [f"output.w[{j}]" for j in range(self.pp.dim)]
        names += [f"output.information[{j}]" for j in range(a.shape[1] - self.pp.dim)]
        return Released(a, b, stats, notes=notes, fields=names)


REGRESSION_RECORD_TRIALS = 60  # its reader simulates the intervals (about 0.4 s a record with an information share)
