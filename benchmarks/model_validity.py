"""Coverage of the Weibull and regression intervals off the tuned path: truths that are not Weibull, heavy censoring,
small cohorts, unbalanced groups and hazards that are not proportional.

``python -m benchmarks.model_validity [--cohorts N] [--seed S] [--only NAMES] [--epsilons E ...] [--jobs J]
[--markdown]``

Every private Weibull mechanism of the catalogue and every private regression mechanism, at epsilon 0.5, 1 and 2, on
the cells of :data:`SCENARIOS`. One seeded simulated release per simulated cohort (``SimulationNoise``, as the other
coverage studies), read the way a release is read: its record's ``released`` and ``public_inputs`` go through the
family's reader (:func:`dpsurv_core.weibull.readout.read`, :func:`dpsurv_core.regression.readout.read`), so the
intervals and warnings are the ones the record's ``derived`` part holds (what ``budget rederive`` recomputes). The
declared values are the scenario's: n, the censoring share it was built with, the horizon (the censoring limit).

Two targets per release:

* the pseudo-true value: the parameter of the model fitted without privacy to one cohort of :data:`TRUTH_N`
  subjects from the same truth (Weibull: the maximum-likelihood fit on the normalised times, as the mechanisms read
  them; regression: the discrete-time model with Lambda = 0, the x coefficient in its own unit). Under a truth
  that is not Weibull (not proportional) this is the best approximation within the model, the value the
  non-private fit converges to (Huber 1967; White 1982);
* the non-private estimate on the same cohort (the same fits on the cohort itself).

Per cell: the coverage of each (with its Monte Carlo standard error sqrt(c (1 - c) / N)), the mean width against
the mean width of the non-private Wald interval on the same cohorts, how often each warning fires, and the
coverage over the releases that carry no warning. Target: 93% to 97.5% in every cell, or the release carries a
warning that says the interval cannot be read there.

The default of 1,000 cohorts per cell is the documented full run (docs/coverage-models.md says how long it took and
what was run); tests and quick checks pass a few.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.truths import HazardTruth, Law, bathtub, lognormal
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

EPSILONS = (0.5, 1.0, 2.0)
COHORTS = 1000
TRUTH_N = 200_000
LAMBDA = 0.01  # the regression mechanisms' ridge (the catalogue's default)
WEIBULL_MECHANISMS = tuple(catalogue.ids(catalogue.WEIBULL, private=True))
REGRESSION_MECHANISMS = tuple(catalogue.ids(catalogue.REGRESSION, private=True))


@dataclass(frozen=True)
class WeibullLaw:
    """A Weibull event-time law S(t) = exp(-(t / scale)^shape), with the interface of :class:`benchmarks.truths.Law`."""

    shape: float = 1.3
    scale: float = 1000.0

    def survival(self, t: np.ndarray) -> np.ndarray:
        return np.exp(-(np.asarray(t, float) / self.scale) ** self.shape)

    def quantile(self, p: float) -> float:
        return float(self.scale * (-math.log1p(-p)) ** (1.0 / self.shape))

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return self.scale * rng.exponential(size=n) ** (1.0 / self.shape)


def piecewise_sample(law: Law, n: int, rng: np.random.Generator) -> np.ndarray:
    """Event times of a piecewise-constant hazard by inversion of the cumulative hazard (vectorised)."""
    target = rng.exponential(size=n)
    edges = np.concatenate([[0.0], law.breaks])
    at = np.concatenate([[0.0], np.cumsum(np.diff(np.concatenate([edges, [np.inf]]))[:-1] * law.rates[:-1])])
    k = np.searchsorted(at, target, side="right") - 1
    return edges[k] + (target - at[k]) / np.asarray(law.rates)[k]


@dataclass(frozen=True)
class FastLaw:
    """A :class:`benchmarks.truths.Law` whose piecewise-constant sampler is vectorised (the truth's cohort has
    200,000 subjects)."""

    law: Law

    def survival(self, t: np.ndarray) -> np.ndarray:
        return self.law.survival(t)

    def quantile(self, p: float) -> float:
        return self.law.quantile(p)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.law.lognormal is not None:
            return self.law.sample(n, rng)
        return piecewise_sample(self.law, n, rng)


@dataclass(frozen=True)
class Scenario:
    """One cell's truth: the family it serves, the cohort size, the groups' laws and sizes and the censoring share
    (uniform censoring on (0, c_g) per group, c_g censoring about ``share`` of group g: :class:`HazardTruth`)."""

    name: str
    family: str
    n: int
    laws: tuple[Any, ...]
    share: float = 0.3
    fractions: tuple[float, ...] = (1.0,)  # group sizes as fractions of n (regression: A then B, x = 1 in B)
    what: str = ""
    mechanisms: tuple[str, ...] = ()  # the mechanisms measured on it (default: every private one of its family)

    def truth(self, n: int) -> HazardTruth:
        return _truth_of(self, n)

    @property
    def horizon(self) -> float:
        """The declared horizon: the latest censoring limit (as the other coverage studies declare it)."""
        return self.truth(1000).censoring_limit

    def cohort(self, n: int, rng: np.random.Generator) -> Cohort:
        c = self.truth(n).sample(rng)
        x = (c.group == "B").astype(float)
        return Cohort(c.time, c.event, c.group, covariates=pd.DataFrame({"x": x}))


@lru_cache(maxsize=64)
def _truth_of(scenario: Scenario, n: int) -> HazardTruth:
    """The scenario's :class:`HazardTruth` for n subjects (kept: its censoring limits are solved once)."""
    sizes = [int(round(f * n)) for f in scenario.fractions]
    sizes[-1] = n - sum(sizes[:-1])
    names = ("A", "B")[: len(scenario.laws)]
    return HazardTruth(names, tuple(sizes), tuple(scenario.laws), (scenario.share,) * len(scenario.laws))


_WEIBULL = WeibullLaw(1.3, 1000.0)
_HR15 = WeibullLaw(1.3, 1000.0 * 1.5 ** (-1.0 / 1.3))  # hazard ratio 1.5 against _WEIBULL
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("weibull", "weibull", 2000, (_WEIBULL,), what="Weibull shape 1.3, scale 1000 days (the tuned path)"),
    Scenario("lognormal-1", "weibull", 2000, (FastLaw(lognormal(700.0, 1.0)),),
             what="log-normal, median 700 days, sigma 1 (mild misspecification)"),
    Scenario("lognormal-2", "weibull", 2000, (FastLaw(lognormal(700.0, 2.0)),),
             what="log-normal, median 700 days, sigma 2 (strong misspecification)"),
    Scenario("bathtub", "weibull", 2000, (FastLaw(bathtub(1000.0)),),
             what="piecewise-constant bathtub hazard (4, 0.3 and 1.6 per 1000 days, breaks at 50 and 600)"),
    Scenario("censored-70", "weibull", 2000, (_WEIBULL,), share=0.7, what="Weibull 1.3, 70% censored"),
    Scenario("small-60", "weibull", 60, (_WEIBULL,), what="Weibull 1.3, n = 60"),
    Scenario("reference", "regression", 2000, (_WEIBULL, _HR15), fractions=(0.5, 0.5),
             what="two equal groups, Weibull 1.3, hazard ratio 1.5 (the tuned path)"),
    Scenario("groups-1-9", "regression", 2000, (_WEIBULL, _HR15), fractions=(0.9, 0.1),
             what="hazard ratio 1.5, 10% of the subjects in group B"),
    Scenario("non-ph", "regression", 2000, (_WEIBULL, WeibullLaw(0.7, 1000.0)), fractions=(0.5, 0.5),
             what="crossing hazards: group B Weibull shape 0.7 against 1.3, same scale"),
    Scenario("lognormal-2-groups", "regression", 2000, (FastLaw(lognormal(700.0, 2.0)), FastLaw(lognormal(450.0, 2.0))),
             fractions=(0.5, 0.5), what="log-normal sigma 2, group B's median 450 against 700 days (not proportional)"),
    Scenario("censored-70-groups", "regression", 2000, (_WEIBULL, _HR15), share=0.7, fractions=(0.5, 0.5),
             what="hazard ratio 1.5, 70% censored"),
    Scenario("small-60-groups", "regression", 60, (_WEIBULL, _HR15), fractions=(0.5, 0.5),
             what="hazard ratio 1.5, n = 60"),
    Scenario("groups-1-9-large", "regression", 100_000, (_WEIBULL, _HR15), fractions=(0.9, 0.1),
             mechanisms=("output", "objective"),
             what="hazard ratio 1.5, 10% in group B, n = 100,000: where the intervals become narrow enough to read "
                  "(pSGLD left out: its one-draw interval is the prior's at every n, and a release takes 8 seconds)"),
)
BY_NAME = {s.name: s for s in SCENARIOS}


def _se(c: float, r: int) -> float:
    return math.sqrt(max(c * (1.0 - c), 0.0) / r) if r else math.nan


# ------------------------------------------------------------------------------------------------ warnings by kind

_KINDS = (
    (r"before the earliest time the fit reads", "floor: shape read two ways"),
    (r"not positive, so it describes no Weibull", "release not positive"),
    (r"error is larger than the", "error larger than the estimate"),
    (r"lies above the largest value", "release above gamma"),
    (r"shape's interval reaches gamma", "shape interval reaches gamma"),
    (r"scale's interval reaches gamma", "scale interval reaches gamma"),
    (r"interval .* includes 1, so this release cannot tell", "shape interval includes 1"),
    (r"unusual for every true shape", "release unusual for every shape"),
    (r"ridge-penalised fit converges to", "interval of the ridge-penalised coefficient"),
    (r"could be anywhere from", "ratio interval spans 1 widely"),
    (r"excludes 1, but its ends are more than", "ratio interval excludes 1 but is too wide to read"),
    (r"includes 1 \(no effect\), so this", "ratio interval includes 1"),
    (r"sign of the coefficient flips", "sign flips"),
    (r"privacy noise .* is larger than the effect", "noise larger than the effect"),
    (r"keeps .* epochs of its chain", "pSGLD: too few epochs per draw"),
    (r"one released draw has no public interval", "pSGLD: one draw"),
)


def warning_kind(text: str) -> str:
    """A short stable name for a warning sentence (its numbers vary from release to release)."""
    for pattern, name in _KINDS:
        if re.search(pattern, text):
            return name
    return re.sub(r"\d[\d,.]*", "#", text)[:60]


# ------------------------------------------------------------------------------------------------ truths

def weibull_truth(scenario: Scenario, n: int = TRUTH_N, seed: int = 20261123) -> dict[str, float]:
    """The pseudo-true Weibull parameters: the non-private fit (maximum likelihood on the normalised times, as every
    mechanism reads them) on one cohort of ``n`` subjects from the scenario's truth."""
    from dpsurv_core.weibull.model import sample_from_cohort, weibull_mle

    s = sample_from_cohort(scenario.cohort(n, np.random.default_rng(seed)), scenario.horizon)
    fit = weibull_mle(s)
    return {"shape": float(fit.shape), "scale_normalised": float(fit.scale_normalised)}


def _design(scenario: Scenario, cohort: Cohort, n_public: int) -> Any:
    from dpsurv_core.regression.person_period import person_period

    return person_period(cohort, ["x"], horizon=scenario.horizon, ranges={"x": (0.0, 1.0)}, n_public=n_public)


def regression_truth(scenario: Scenario, n: int = TRUTH_N, seed: int = 20261123) -> float:
    """The pseudo-true coefficient of x: the non-private discrete-time fit (Lambda = 0) on one cohort of ``n``
    subjects from the scenario's truth, in x's own unit."""
    from dpsurv_core.regression.model import minimise

    pp = _design(scenario, scenario.cohort(n, np.random.default_rng(seed)), n)
    return float(minimise(pp, 0.0)[0] * pp.encoding.to_original[0])


# ------------------------------------------------------------------------------------------------ one cell

def _seeds(seed: int, scenario: Scenario, cohorts: int) -> list[np.random.SeedSequence]:
    """The cohorts' seeds: the same cohorts for every mechanism and epsilon of a scenario (paired comparisons)."""
    return np.random.SeedSequence([seed, SCENARIOS.index(scenario)]).spawn(cohorts)


def _noise_seed(cohort_seed: np.random.SeedSequence, mechanism: str, epsilon: float) -> np.random.SeedSequence:
    names = WEIBULL_MECHANISMS + REGRESSION_MECHANISMS
    return np.random.SeedSequence([*cohort_seed.generate_state(2), names.index(mechanism), int(round(epsilon * 1000))])


def _summary(scenario: Scenario, mechanism: str, epsilon: float, truth: float, hits_t: list[bool], hits_e: list[bool],
             widths: list[float], np_widths: list[float], warned: list[list[str]], label: str) -> dict[str, Any]:
    r = len(hits_t)
    ct, ce = float(np.mean(hits_t)), float(np.mean(hits_e))
    quiet = [h for h, w in zip(hits_t, warned) if not w]
    kinds: dict[str, int] = {}
    for w in warned:
        for k in dict.fromkeys(warning_kind(x) for x in w):
            kinds[k] = kinds.get(k, 0) + 1
    cq = float(np.mean(quiet)) if quiet else math.nan
    return {"family": scenario.family, "scenario": scenario.name, "n": scenario.n, "mechanism": mechanism,
            "epsilon": float(epsilon), "cohorts": r, "parameter": label, "pseudo_true": truth,
            "coverage_truth": ct, "coverage_truth_se": _se(ct, r), "coverage_estimate": ce,
            "coverage_estimate_se": _se(ce, r), "width": float(np.mean(widths)),
            "width_nonprivate": float(np.nanmean(np_widths)),
            "width_ratio": float(np.mean(widths) / np.nanmean(np_widths)),
            "warned": float(np.mean([bool(w) for w in warned])),
            "warnings": {k: v / r for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
            "quiet": len(quiet), "coverage_quiet": cq, "coverage_quiet_se": _se(cq, len(quiet))}


def weibull_cell(scenario: Scenario, mechanism: str, epsilon: float, cohorts: int, truth: dict[str, float],
                 seed: int = 0, compare: bool = False) -> list[dict[str, Any]]:
    """Two rows (shape, then scale normalised) for one mechanism and epsilon on ``cohorts`` cohorts of the scenario.
    With ``compare`` each row also counts the releases whose interval Weibull reader version 1 (the rules of records
    published before version 2) reads differently (``changed_from_reader_v1``)."""
    from dpsurv_core.weibull import readout
    from dpsurv_core.weibull.inference import wald_intervals
    from dpsurv_core.weibull.model import sample_from_cohort, weibull_mle

    horizon, n = scenario.horizon, scenario.n
    entry = catalogue.get(catalogue.WEIBULL, mechanism)
    mech = entry.build(epsilon, horizon=horizon, n_public=n)
    inputs = readout.public_inputs(mech, n, scenario.share)
    out = {k: ([], [], [], [], []) for k in ("shape", "scale_normalised")}
    changed = {"shape": 0, "scale_normalised": 0}
    for cs in _seeds(seed, scenario, cohorts):
        cohort = scenario.cohort(n, np.random.default_rng(cs))
        s = mech.prepare(cohort)
        est = mech.compute(s, SimulationNoise(_noise_seed(cs, mechanism, epsilon)))
        with _shared_curves():
            derived = readout.read(readout.released_of(est), inputs)
            old = readout.read(readout.released_of(est), {**inputs, "reader_version": 1}) if compare else None
        iv = derived["intervals"][0]
        for key in changed:
            if old is not None and old["intervals"][0][key] != iv[key]:
                changed[key] += 1
        fs = sample_from_cohort(cohort, horizon)
        fit = weibull_mle(fs)
        wald = wald_intervals(fs, fit.shape, fit.scale_normalised, horizon)
        for key, mle in (("shape", fit.shape), ("scale_normalised", fit.scale_normalised)):
            ht, he, w, nw, warned = out[key]
            lo, hi = iv[key]["lower"], iv[key]["upper"]
            ht.append(lo <= truth[key] <= hi)
            he.append(lo <= mle <= hi)
            w.append(hi - lo)
            p = getattr(wald, key) if wald is not None else None
            nw.append(p.upper - p.lower if p is not None else math.nan)
            warned.append(list(derived["warnings"]))
    rows = [_summary(scenario, mechanism, epsilon, truth[k], *out[k], label=k) for k in out]
    if compare:
        for r in rows:
            r["changed_from_reader_v1"] = changed[r["parameter"]]
    return rows


@contextlib.contextmanager
def _shared_curves() -> Iterator[None]:
    """Within the block, the Weibull intervals' simulated quantile curves are computed once per set of arguments
    (they are seeded by them): reading one release by two reader versions simulates only where the versions' grids
    differ."""
    from dpsurv_core.weibull import inference

    plain = inference._quantile_curves
    memo: dict[tuple, tuple[np.ndarray, ...]] = {}

    def shared(mech: Any, grid: np.ndarray, lam0: Any, *rest: Any) -> tuple[np.ndarray, ...]:
        key = (type(mech).__name__, mech.epsilon, np.asarray(grid).tobytes(), np.asarray(lam0).tobytes(), *rest)
        if key not in memo:
            memo[key] = plain(mech, grid, lam0, *rest)
        return memo[key]

    inference._quantile_curves = shared
    try:
        yield
    finally:
        inference._quantile_curves = plain


def regression_cell(scenario: Scenario, mechanism: str, epsilon: float, cohorts: int, truth: float,
                    seed: int = 0, compare: bool = False) -> list[dict[str, Any]]:
    """One row (the x coefficient) for one mechanism and epsilon on ``cohorts`` cohorts of the scenario."""
    from dpsurv_core.regression import readout
    from dpsurv_core.regression.model import Z95, fit_nonprivate

    n = scenario.n
    ht, he, w, nw, warned = [], [], [], [], []
    for cs in _seeds(seed, scenario, cohorts):
        pp = _design(scenario, scenario.cohort(n, np.random.default_rng(cs)), n)
        mech = catalogue.get(catalogue.REGRESSION, mechanism).build(epsilon, pp=pp, lam=LAMBDA)
        rel = mech.compute(pp, SimulationNoise(_noise_seed(cs, mechanism, epsilon)))
        derived = readout.read(*readout.publication(mechanism, mech, rel))
        row = derived["intervals"][0]
        fit = fit_nonprivate(pp, 0.0)
        f = pp.encoding.to_original[0]
        est = float(fit.w[0] * f)
        ht.append(row["lower"] <= truth <= row["upper"])
        he.append(row["lower"] <= est <= row["upper"])
        w.append(row["upper"] - row["lower"])
        nw.append(2 * Z95 * fit.se[0] * f if fit.se is not None else math.nan)
        warned.append(list(derived["warnings"]))
    return [_summary(scenario, mechanism, epsilon, truth, ht, he, w, nw, warned, label="x")]


# ------------------------------------------------------------------------------------------------ the run

def cells(only: tuple[str, ...] = (), epsilons: tuple[float, ...] = EPSILONS) -> list[tuple[Scenario, str, float]]:
    """The (scenario, mechanism, epsilon) cells, restricted by ``only``: names of scenarios, mechanisms or families;
    a cell is kept when it matches one given name of each kind given (``lognormal-2 lsp-tll``: LSP + TLL on the
    log-normal sigma 2 truth)."""
    kinds: dict[str, set[str]] = {}
    for name in only:
        if name in BY_NAME:
            kinds.setdefault("scenario", set()).add(name)
        elif name in WEIBULL_MECHANISMS + REGRESSION_MECHANISMS:
            kinds.setdefault("mechanism", set()).add(name)
        elif name in (catalogue.WEIBULL, catalogue.REGRESSION):
            kinds.setdefault("family", set()).add(name)
        else:
            raise SystemExit(f"--only: {name!r} is no scenario ({', '.join(BY_NAME)}), mechanism "
                             f"({', '.join(WEIBULL_MECHANISMS + REGRESSION_MECHANISMS)}) or family (weibull, regression)")
    out = []
    for s in SCENARIOS:
        for m in s.mechanisms or (WEIBULL_MECHANISMS if s.family == catalogue.WEIBULL else REGRESSION_MECHANISMS):
            for eps in epsilons:
                keys = {"scenario": s.name, "mechanism": m, "family": s.family}
                if all(keys[k] in v for k, v in kinds.items()):
                    out.append((s, m, eps))
    return out


def _truth(scenario: Scenario) -> Any:
    return weibull_truth(scenario) if scenario.family == catalogue.WEIBULL else regression_truth(scenario)


def run_cell(scenario_name: str, mechanism: str, epsilon: float, cohorts: int, seed: int, truth: Any,
             compare: bool = False) -> list[dict[str, Any]]:
    s = BY_NAME[scenario_name]
    t0 = time.perf_counter()
    fn = weibull_cell if s.family == catalogue.WEIBULL else regression_cell
    rows = fn(s, mechanism, epsilon, cohorts, truth, seed, compare)
    for r in rows:
        r["seconds"] = time.perf_counter() - t0
    return rows


def run(cohorts: int = COHORTS, seed: int = 0, only: tuple[str, ...] = (), epsilons: tuple[float, ...] = EPSILONS,
        jobs: int = 1, progress: bool = True, compare: bool = False) -> list[dict[str, Any]]:
    todo = cells(only, epsilons)
    truths = {s.name: _truth(s) for s in dict.fromkeys(c[0] for c in todo)}
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def say(part: list[dict[str, Any]]) -> None:
        rows.extend(part)
        if progress:
            for r in part:
                print(f"[{time.perf_counter() - t0:6.0f}s] {json.dumps(r)}", file=sys.stderr, flush=True)

    args = [(s.name, m, eps, cohorts, seed, truths[s.name], compare) for s, m, eps in todo]
    if jobs > 1:
        with ProcessPoolExecutor(jobs) as pool:
            for part in pool.map(run_cell, *zip(*args)):
                say(part)
    else:
        for a in args:
            say(run_cell(*a))
    return rows


# ------------------------------------------------------------------------------------------------ the table

def _pct(c: float, se: float) -> str:
    return "–" if not math.isfinite(c) else f"{c:.1%} (± {se:.1%})"


def _mark(r: dict[str, Any]) -> str:
    """The cell against the target: ``yes`` (93% to 97.5%), ``over`` (above 97.5%: wider than needed), ``warned``
    (below 93% but every release that misses it carries a warning: the releases without one cover at least 93%, or
    there are none), ``low`` (below 93% by less than two Monte Carlo standard errors), ``**no**``."""
    c, q = r["coverage_truth"], r["coverage_quiet"]
    if 0.93 <= c <= 0.975:
        return "yes"
    if c > 0.975:
        return "over"
    if not math.isfinite(q) or q >= 0.93:
        return "warned"
    return "low" if c + 2 * r["coverage_truth_se"] >= 0.93 else "**no**"


def markdown(rows: list[dict[str, Any]], command: str = "") -> str:
    out = []
    if command:
        out += [f"Command: `{command}`", ""]
    for family, title in ((catalogue.WEIBULL, "Weibull"), (catalogue.REGRESSION, "Regression (coefficient of x)")):
        g = [r for r in rows if r["family"] == family]
        if not g:
            continue
        out += [f"#### {title}", "",
                "| scenario | mechanism | epsilon | parameter | cohorts | pseudo-true | covers pseudo-true | covers non-private "
                "estimate | mean width (x non-private) | warned | covers pseudo-true, no warning (releases) | target |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in g:
            out.append(f"| {r['scenario']} | {r['mechanism']} | {r['epsilon']:g} | {r['parameter']} | {r['cohorts']} | "
                       f"{r['pseudo_true']:.4g} | {_pct(r['coverage_truth'], r['coverage_truth_se'])} | "
                       f"{_pct(r['coverage_estimate'], r['coverage_estimate_se'])} | {r['width']:.3g} "
                       f"({r['width_ratio']:.3g}x) | {r['warned']:.0%} | "
                       f"{_pct(r['coverage_quiet'], r['coverage_quiet_se'])} ({r['quiet']}) | "
                       f"{_mark(r)} |")
        out += ["", "Warnings fired (share of releases; one release may carry several):", "",
                "| scenario | mechanism | epsilon | warnings |", "|---|---|---|---|"]
        seen = set()
        for r in g:
            key = (r["scenario"], r["mechanism"], r["epsilon"])
            if key in seen:
                continue
            seen.add(key)
            w = "; ".join(f"{k} {v:.0%}" for k, v in r["warnings"].items()) or "none"
            out.append(f"| {r['scenario']} | {r['mechanism']} | {r['epsilon']:g} | {w} |")
        out.append("")
    out += ["Target column: yes = coverage of the pseudo-true value in 93% to 97.5%; over = above 97.5%; warned = below "
            "93%, but the releases without a warning cover at least 93% (or every release carries one); low = below 93% "
            "by less than two Monte Carlo standard errors; **no** = below by more.", "", "Scenarios:", ""] + [f"- `{s.name}` ({s.family}, n = {s.n:,}, {s.share:.0%} censored): {s.what}"
                                 for s in SCENARIOS if any(r["scenario"] == s.name for r in rows)]
    return "\n".join(out)


def read_rows(paths: list[str]) -> list[dict[str, Any]]:
    """Rows saved by earlier runs: their progress lines on standard error (``[  12s] {...}``) or their JSON output,
    in the order of :data:`SCENARIOS`, a later copy of a row replacing an earlier one (runs of parts of the table,
    or a run cut short, put together)."""
    found: dict[tuple[str, str, float, str], dict[str, Any]] = {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        try:
            rows = json.loads(text)
        except json.JSONDecodeError:
            rows = [json.loads(line.split("] ", 1)[1]) for line in text.splitlines() if line.startswith("[")]
        for r in rows:
            found[(r["scenario"], r["mechanism"], r["epsilon"], r["parameter"])] = r
    order = {(s.name, m, e): i for i, (s, m, e) in enumerate(cells())}
    return sorted(found.values(), key=lambda r: (order.get((r["scenario"], r["mechanism"], r["epsilon"]), 1 << 30),
                                                 r["parameter"] != "shape"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.model_validity", description=__doc__.splitlines()[0])
    ap.add_argument("--cohorts", type=int, default=COHORTS, help=f"simulated cohorts per cell (default {COHORTS})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=(), metavar="NAME",
                    help="scenarios, mechanisms or families to run (each kind given must match)")
    ap.add_argument("--epsilons", type=float, nargs="*", default=EPSILONS)
    ap.add_argument("--jobs", type=int, default=1, help="cells run in parallel processes")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--compare-v1", action="store_true",
                    help="also read every Weibull release by reader version 1 and count the intervals that differ")
    ap.add_argument("--rows", nargs="+", metavar="FILE",
                    help="run nothing: put together the rows of earlier runs (their standard error or JSON output)")
    a = ap.parse_args(argv)
    if a.cohorts < 1:
        ap.error("--cohorts must be at least 1")
    rows = read_rows(a.rows) if a.rows else run(a.cohorts, a.seed, tuple(a.only), tuple(a.epsilons), a.jobs,
                                                compare=a.compare_v1)
    if a.markdown:
        cmd = "" if a.rows else "python -m benchmarks.model_validity " + " ".join(argv if argv is not None else sys.argv[1:])
        print(markdown(rows, cmd.strip()))
    else:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
