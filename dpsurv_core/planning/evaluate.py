"""Simulated releases of a declared study at one epsilon, read exactly as a release is read.

A *profile* is one mechanism on one scenario of the study (:mod:`dpsurv_core.planning.study`): ``count`` cohorts
simulated once (cached per declaration), each released at any epsilon asked with the mechanism's own code path and a
:class:`~dpsurv_core.privacy.noise.SimulationNoise` seeded by the cohort's index (the same seed at every epsilon:
common random numbers, so the precision moves smoothly with epsilon), and each release read as a published one:

* curves (:class:`CurveProfile`): ``compute(cohort, public, noise, trials=1)`` then
  :func:`dpsurv_core.curves.readout.released_numbers` (the log band at the landmarks, the median with its limits, the
  RMST with its interval);
* the log-rank test (:class:`PowerProfile`): each cohort's release (its counts; the bands are not needed), stacked
  along one trials axis and tested by :func:`dpsurv_core.curves.logrank_test.calibrated_tests` with the mechanism's
  noise law, as ``logrank`` reads a release, with 99 null draws each (a release uses 999); the simulated test rejects
  at p <= 0.05 (4 of 99 null statistics as large or fewer), the level of the published rule p < 0.05 with 999 draws
  (measured: power within 2 points of the 999-draw test's at 40-84%);
* Weibull (:class:`WeibullProfile`): ``compute_many`` then the Weibull reader's intervals
  (:func:`dpsurv_core.weibull.readout.intervals_of`) from the declared n and censoring share;
* regression (:class:`RegressionProfile`): the group as a 0/1 covariate (declared range [0, 1], declared n) in the
  discrete-time model, ``compute`` with several trials per cohort, each trial read by the regression reader
  (:func:`dpsurv_core.publication.derive`).

``values(targets, eps)`` gives per target an array (units, groups) of half-widths, or (units, 1) of 0/1 rejections
for a power target; results are cached per epsilon and *reading* (:attr:`Target.reading`: the target without its
goal), so a target whose goal changes (``survival:365:0.08`` to ``0.07``, a power of 0.8 to 0.9, the margins of a
budget split) is judged on numbers already released and read.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dpsurv_core.planning.study import Cohorts, Study, simulate
from dpsurv_core.planning.targets import CURVES, POWER, REGRESSION, WEIBULL, Target
from dpsurv_core.privacy.noise import SimulationNoise

NULL_DRAWS = 99  # null draws of each simulated test (a release uses 999: docs/planning.md measures the difference)
REGRESSION_TRIALS = 6  # releases per simulated cohort for regression (its interval is mostly the noise's)
LAMBDA = 0.01  # the regression command's default ridge penalty
DEFAULT_COHORTS = {CURVES: 16, POWER: 240, WEIBULL: 8, REGRESSION: 4}
STREAM = {CURVES: 11, POWER: 12, WEIBULL: 13, REGRESSION: 14}  # noise streams kept apart per family


def noise_for(seed: int, family: str, r: int) -> SimulationNoise:
    """The simulation noise of cohort ``r``'s release: the same at every epsilon (common random numbers)."""
    return SimulationNoise(np.random.SeedSequence([int(seed), STREAM[family], int(r)]))


def half_width(lower: float | None, upper: float | None, low: float = 0.0, high: float = math.inf) -> float:
    """(upper - lower) / 2 of a published interval; a missing limit is the range's end (``low``, ``high``)."""
    lo = low if lower is None or not math.isfinite(lower) else float(lower)
    up = high if upper is None or not math.isfinite(upper) else float(upper)
    return (up - lo) / 2.0


class Profile:
    """One mechanism on one scenario: simulated cohorts, their releases at each epsilon asked, and their reading."""

    family = ""

    def __init__(self, study: Study, mechanism: str, count: int, seed: int, hazard_ratio: float = 1.0) -> None:
        self.study, self.mechanism, self.count, self.seed = study, mechanism, int(count), int(seed)
        self.hazard_ratio = float(hazard_ratio)
        self._values: dict[tuple[float, Any], np.ndarray] = {}  # (epsilon, target reading) -> per-unit values
        self.evaluations = 0  # epsilons released (for the record of how a plan was made)

    @property
    def cohorts(self) -> Cohorts:
        return simulate(self.study, self.count, self.seed, self.hazard_ratio)

    @property
    def evaluated(self) -> list[float]:
        return sorted({eps for eps, _ in self._values})

    def has(self, targets: Sequence[Target], eps: float) -> bool:
        """Are ``targets`` read at ``eps`` already (no release or reading needed)?"""
        return all((eps, t.reading) in self._values for t in targets)

    def describe(self) -> str:
        """The profile in words: its mechanism, family and scenario."""
        return f"{self.mechanism} ({self.family}{'' if self.hazard_ratio == 1 else f', HR {self.hazard_ratio:g}'})"

    def values(self, targets: Sequence[Target], eps: float) -> dict[str, np.ndarray]:
        """Each target's per-unit values at ``eps`` (module docstring), released and read where not cached yet."""
        missing = list({t.reading: t for t in targets if (eps, t.reading) not in self._values}.values())
        if missing:
            got = self._evaluate(missing, float(eps))
            for t in missing:
                self._values[(eps, t.reading)] = got[t.key]
        return {t.key: self._values[(eps, t.reading)] for t in targets}

    def _evaluate(self, targets: Sequence[Target], eps: float) -> dict[str, np.ndarray]:
        raise NotImplementedError


# ------------------------------------------------------------------------------------------------ curves
class CurveProfile(Profile):
    family = CURVES

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._releases: dict[float, list[Any]] = {}

    def build(self, eps: float, cohort: Any) -> Any:
        from dpsurv_core.curves.result import context
        from dpsurv_core.privacy import catalogue

        public = self.study.public()
        extra: dict[str, Any] = {}
        if self.mechanism == "time-indexed":  # its band simulates the declared sizes and censoring share
            extra = {"sample_size": tuple(self.study.sizes), "censoring": self.study.censoring}
        return catalogue.get(catalogue.CURVES, self.mechanism).build(eps, **context(cohort, public), **extra)

    @property
    def released(self) -> set[float]:
        """The epsilons at which the simulated cohorts were released (and are kept)."""
        return set(self._releases)

    def releases(self, eps: float) -> list[Any]:
        """One release per simulated cohort at ``eps`` (kept: new targets are read from them without redrawing)."""
        if eps not in self._releases:
            from dpsurv_core.curves.result import with_follow_up_end

            public = self.study.public()
            sim = self.cohorts
            out = []
            for r in range(sim.count):
                cohort = sim.cohort(r)
                mech = self.build(eps, cohort)
                rel = mech.compute(cohort, public, noise_for(self.seed, CURVES, r), trials=1)
                out.append(with_follow_up_end(rel, cohort, public))
            self._releases[eps] = out
            self.evaluations += 1
        return self._releases[eps]

    def _evaluate(self, targets: Sequence[Target], eps: float) -> dict[str, np.ndarray]:
        from dpsurv_core.curves.readings import rmst_curves, rmst_entries
        from dpsurv_core.curves.readout import released_numbers

        marks = sorted({_given(t.time) for t in targets if t.kind == "survival"})
        rmsts = sorted({_given(t.time) for t in targets if t.kind == "rmst"})
        g = len(self.study.sizes)
        out = {t.key: np.full((self.count, g), np.inf) for t in targets}
        for r, rel in enumerate(self.releases(eps)):
            read = released_numbers(rel, "log", landmarks=marks or None, rmst=rmsts[0] if rmsts else None,
                                    rmst_coarse=True)
            lm = {(e["group"], float(e["time_requested"])): e for e in read.get("landmarks", [])}
            med = {e["group"]: e for e in read["medians"]}
            rm = {(e["group"], rmsts[0]): e for e in read.get("rmst", [])}
            for extra in rmsts[1:]:  # more RMST times: the same reading as released_numbers makes for the first
                rm.update({(e["group"], extra): e for e in rmst_entries(rmst_curves(rel), extra, True)})
            for k, group in enumerate(rel.curves.groups):
                for t in targets:
                    if t.kind == "survival":
                        e = lm[(group, _given(t.time))]
                        out[t.key][r, k] = half_width(e["lower"], e["upper"], 0.0, 1.0)
                    elif t.kind == "median":
                        e = med[group]
                        reached = e["median"] is not None and math.isfinite(e["median"])
                        out[t.key][r, k] = half_width(e["median_lower"], e["median_upper"]) if reached else math.inf
                    elif t.kind == "rmst":
                        e = rm[(group, _given(t.time))]
                        out[t.key][r, k] = half_width(e["lower"], e["upper"], -math.inf, math.inf)
        return out


# ------------------------------------------------------------------------------------------------ log-rank power
def stack(parts: Sequence[Any]) -> Any:
    """Counts of several releases along one leading trials axis."""
    from dpsurv_core.curves.counts import BinnedCounts

    p0 = parts[0]
    cat = lambda name: np.concatenate([np.asarray(getattr(p, name), float) for p in parts])  # noqa: E731
    return BinnedCounts(p0.grid, p0.groups, cat("n"), cat("events"), cat("censored"), p0.event_types)


def _leading(counts: Any) -> Any:
    """Counts of one cohort with a leading trials axis of length 1."""
    from dataclasses import replace

    return replace(counts, n=counts.n[None], events=counts.events[None], censored=counts.censored[None])


class PowerProfile(Profile):
    """The calibrated log-rank test of ``count`` cohorts under the alternative ``hazard_ratio``."""

    family = POWER
    null_draws = NULL_DRAWS

    def exact_counts(self) -> Any:
        """Every simulated cohort's exact counts on the public grid, stacked (counted once per profile)."""
        if not hasattr(self, "_exact"):
            from dpsurv_core.curves.result import exact_counts

            public, sim = self.study.public(), self.cohorts
            self._exact = stack([_leading(exact_counts(sim.cohort(r), public.grid, public)) for r in range(sim.count)])
        return self._exact

    def released_counts(self, eps: float) -> tuple[Any, Any]:
        """(each cohort's released counts stacked along the trials axis, the mechanism's noise law)."""
        from dpsurv_core.curves import logrank_test
        from dpsurv_core.curves.counts import BinnedCounts
        from dpsurv_core.curves.result import context
        from dpsurv_core.privacy import catalogue

        public = self.study.public()
        sim = self.cohorts
        entry = catalogue.get(catalogue.CURVES, self.mechanism)
        first = sim.cohort(0)
        # the catalogue's mechanism without bands (a test reads the released counts only)
        mech: Any = (entry.build(eps, **context(first, public)) if self.mechanism == "rrr"
                else entry.mechanism_class()(eps, noise_in_bands=False))
        if self.mechanism == "laplace-counts":
            # its release draws discrete Laplace noise on every count cell and clamps (laplace_counts.draw): exactly
            # its noise law, applied to all cohorts' exact counts at once
            law = logrank_test.noise_law(mech)
            exact = self.exact_counts()
            self.evaluations += 1
            return law.apply(exact, np.arange(sim.count), noise_for(self.seed, POWER, 0)), law
        counts, kept, extra = [], [], {}
        for r in range(sim.count):
            cohort, noise = sim.cohort(r), noise_for(self.seed, POWER, r)
            if self.mechanism == "rrr":  # the counts per reported label, as the release publishes them
                counts.append(BinnedCounts.from_released(mech.draw(cohort, public, noise)["counts"], public.grid))
                continue
            rel = mech.compute(cohort, public, noise, trials=1)
            counts.append(rel.counts)
            if "kept" in rel.extra:  # adaptive-km's merged bins, which its noise law reads
                kept.append({k: rel.extra[k] for k in ("kept", "released_blocks")})
                extra = {"actuarial": rel.extra["actuarial"]}
        if kept:
            extra["kept"] = np.concatenate([x["kept"] for x in kept])
            extra["released_blocks"] = tuple(np.concatenate([x["released_blocks"][i] for x in kept]) for i in range(3))
        self.evaluations += 1
        return stack(counts), logrank_test.noise_law(mech, extra, False)

    def _evaluate(self, targets: Sequence[Target], eps: float) -> dict[str, np.ndarray]:
        from dpsurv_core.curves import logrank_test

        released, law = self.released_counts(eps)
        test = logrank_test.calibrated_tests(released, law, draws=self.null_draws,
                                             seed=np.random.SeedSequence([self.seed, STREAM[POWER], 999]))[-1]
        # 99 draws give p-values in steps of 0.01: p <= 0.05 (at most 4 of 99 null statistics as large) is the level
        # of the published test, p < 0.05 with 999 draws (0.049); p < 0.05 here would test at 0.04
        p = np.nan_to_num(test.p_value, nan=1.0)
        reject = (p <= logrank_test.ALPHA + 1e-9).astype(float)[:, None]
        return {t.key: reject for t in targets}


# ------------------------------------------------------------------------------------------------ Weibull
class WeibullProfile(Profile):
    family = WEIBULL

    def _evaluate(self, targets: Sequence[Target], eps: float) -> dict[str, np.ndarray]:
        from dpsurv_core.privacy import catalogue
        from dpsurv_core.weibull import readout

        sim, study = self.cohorts, self.study
        entry = catalogue.get(catalogue.WEIBULL, self.mechanism)
        widths = np.full((sim.count, 1), np.inf)
        for r in range(sim.count):
            cohort = sim.cohort(r)
            mech: Any = entry.build(eps, horizon=study.horizon, n_public=study.n)  # a Weibull mechanism
            sample = mech.prepare(cohort)
            est = mech.compute_many(sample, noise_for(self.seed, WEIBULL, r), 1)
            blocks = mech.n_blocks(sample) if hasattr(mech, "n_blocks") and getattr(mech, "blocks", None) is None \
                else getattr(mech, "blocks", None)
            inputs = readout.public_inputs(mech, study.n, study.censoring, study.unit, blocks=blocks)
            shape = readout.intervals_of(est.records()[0], inputs)["shape"]
            widths[r, 0] = half_width(shape["lower"], shape["upper"], 0.0, math.inf)
        self.evaluations += 1
        return {t.key: widths for t in targets}


# ------------------------------------------------------------------------------------------------ regression
class RegressionProfile(Profile):
    family = REGRESSION
    trials = REGRESSION_TRIALS

    def _evaluate(self, targets: Sequence[Target], eps: float) -> dict[str, np.ndarray]:
        from dpsurv_core.privacy import catalogue
        from dpsurv_core.publication import derive
        from dpsurv_core.regression import readout
        from dpsurv_core.regression.person_period import person_period

        if len(self.study.sizes) != 2:
            from dpsurv_core.errors import ParameterError

            raise ParameterError("The coefficient target is the group's coefficient: declare exactly two groups.")
        sim, study = self.cohorts, self.study
        entry = catalogue.get(catalogue.REGRESSION, self.mechanism)
        widths = []
        for r in range(sim.count):
            pp = person_period(sim.cohort(r, covariate=True), ["group_b"], horizon=study.horizon,
                               ranges={"group_b": (0.0, 1.0)}, n_public=study.n, strict=False)
            mech: Any = entry.build(eps, pp=pp, lam=LAMBDA)  # a regression mechanism
            rel = mech.compute(pp, noise_for(self.seed, REGRESSION, r), trials=self.trials)
            released, public = readout.publication(entry.id, mech, rel)
            for i in range(len(rel.W)):
                row = derive(readout.KIND, {k: v[i:i + 1] for k, v in released.items()}, public)["intervals"][0]
                widths.append(half_width(row["lower"], row["upper"], -math.inf, math.inf))
        self.evaluations += 1
        arr = np.asarray(widths, float)[:, None]
        return {t.key: arr for t in targets}


def _given(value: float | None) -> float:
    """A target's time or hazard ratio, which its kind requires (checked when the target was parsed)."""
    assert value is not None
    return float(value)


PROFILES = {CURVES: CurveProfile, POWER: PowerProfile, WEIBULL: WeibullProfile, REGRESSION: RegressionProfile}


def profile_for(study: Study, target: Target, mechanism: str, cohorts: dict[str, int], seed: int,
                cache: dict[tuple[Any, ...], Profile] | None = None) -> Profile:
    """The profile that reads ``target`` for ``mechanism`` (one per family, and per hazard ratio for power targets),
    from ``cache`` when there."""
    family = target.family
    hr = _given(target.hazard_ratio) if target.is_power else 1.0
    key = (study, mechanism, family, hr, int(cohorts[family]), int(seed))
    if cache is not None and key in cache:
        return cache[key]
    prof = PROFILES[family](study, mechanism, int(cohorts[family]), int(seed), hr)
    if cache is not None:
        cache[key] = prof
    return prof
