"""The privacy-utility trade-off: utility against epsilon for every applicable mechanism (docs/mechanisms.md).

A SIMULATION on the data holder's own data, never a release: every trial draws its noise from a
seeded :class:`~dpsurv_core.privacy.noise.SimulationNoise`, nothing is published and nothing is charged.

For each (mechanism, epsilon) cell, R trials go through the mechanism's vectorised release
(one call, a leading trials axis) and one utility figure per trial is summarised:

* ``curves``     RMSE_r = sqrt( (1 / (G J)) sum_{g, j} (S~_rgj - S_gj)^2 ) over the G group curves on the
                 J public grid points, S = the non-private Kaplan-Meier curve (every event time) read there.
* ``logrank``    flip_r = 1 if, for any test (every pair; plus the overall test with > 2 groups),
                 [p~_r < 0.05] != [p < 0.05], like with like on the same public grid: p = the exact
                 non-private test on the public grid's counts, p~_r = the private test calibrated for the
                 noise (:mod:`dpsurv_core.curves.logrank_test`: the statistic against its null law simulated
                 from the release and the public noise law, ``TEST_DRAWS`` draws); the rate is the mean of
                 flip_r (95% Wilson interval as the band). The non-private reference flips 0% by construction.
* ``weibull``    |p~_r - p^| and |lambda~_r - lambda^| (scale in the data's time unit) against the
                 maximum-likelihood fit; the figure is their median (MdAE).
* ``regression`` ||beta~_r - beta*|| / ||beta*|| with beta* the non-private MLE (Lambda = 0); the figure is
                 their mean (MRE).

Each cell reports the headline figure, the median and mean over the trials and a band: the 10% and
90% quantiles of the trials (for the flip rate, its 95% Wilson interval). ``rrr-debiased`` is
randomized response read through its de-biased counts (free post-processing of the same kind of
release); its epsilon, like ``rrr``'s, protects the group label only (the ``protects`` column).

Everything that depends only on the data is computed once in :func:`prepare` and reused across
epsilons and mechanisms: the non-private curves and tests, the LSP ladder and the MLE, the
person-period design with its non-private fits. Each cell has its own seed
``[seed, crc32(analysis:mechanism), round(1e6 epsilon)]``, so a cell's numbers do not depend on
which other cells are run (a page may cache cells one by one).

The reference (``TradeoffResult.reference``) is the metric of the non-private analysis under the
same public settings: for curves the binning error (exact counts on the public grid), for log-rank
0 (the private tests are compared with the exact test on the same grid; whether binning alone changes
the conclusion against the test on every event time is in ``reference_values``), 0 for Weibull and
regression. The
non-private numbers themselves are in ``reference_values``.
"""

from __future__ import annotations

import math
import time as _time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core import limits
from dpsurv_core.curves import logrank, logrank_test
from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.kaplan_meier import actuarial_share, estimate
from dpsurv_core.curves.result import context, exact_counts, tile_trials
from dpsurv_core.curves.summary import SURVIVAL, curve_errors
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.ledger import GROUP_LABEL
from dpsurv_core.privacy.noise import SimulationNoise

CURVES, LOGRANK, WEIBULL, REGRESSION = "curves", "logrank", "weibull", "regression"
ANALYSES = (CURVES, LOGRANK, WEIBULL, REGRESSION)
METRICS = {CURVES: ("rmse",), LOGRANK: ("flip_rate",), WEIBULL: ("mdae_shape", "mdae_scale"), REGRESSION: ("mre",)}
# each analysis studies the private mechanisms the catalogue offers for its command
FAMILY = {CURVES: catalogue.CURVES, LOGRANK: catalogue.CURVES, WEIBULL: catalogue.WEIBULL,
          REGRESSION: catalogue.REGRESSION}
COMMAND = {CURVES: "km", LOGRANK: "logrank", WEIBULL: "weibull", REGRESSION: "regression"}
# randomized response is also read through its de-biased counts (free post-processing of the same release)
DEBIASED = {"rrr": "rrr-debiased"}
SLOW = ("psgld",)  # a Markov chain per simulated release: studied only on request
RIDGE = ("output", "objective")  # fit a ridge-penalised model even before any noise


def _studied(analysis: str) -> tuple[str, ...]:
    out: list[str] = []
    for m in catalogue.ids(FAMILY[analysis], COMMAND[analysis], private=True):
        out += [m, DEBIASED[m]] if m in DEBIASED else [m]
    return tuple(out)


CURVE_MECHANISMS = _studied(CURVES)
TEST_MECHANISMS = _studied(LOGRANK)
WEIBULL_MECHANISMS = _studied(WEIBULL)
REGRESSION_MECHANISMS = _studied(REGRESSION)
QUANTILES = (0.1, 0.9)
OBJECTIVE_BLOCK = 50
ALPHA = 0.05
TEST_DRAWS = 99  # null draws per simulated release for the calibrated log-rank test (an exact-level Monte Carlo test)
COLUMNS = ["analysis", "mechanism", "epsilon", "metric", "value", "median", "mean", "lower", "upper", "trials",
           "protects", "guarantee"]

DEFAULT_EPSILONS = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)  # log-like 1-2-3-5 steps from 0.05 to 10

Progress = Callable[[float, str], None]


def epsilon_grid(low: float = 0.05, high: float = 10.0, points: int = 10) -> np.ndarray:
    """A log-spaced grid from ``low`` to ``high`` (``points`` values, 3 significant digits)."""
    if not (0 < low < high and math.isfinite(high)):
        raise ParameterError(f"The epsilon grid needs 0 < low < high, got {low} and {high}.")
    if int(points) < 2:
        raise ParameterError(f"The epsilon grid needs at least 2 points, got {points}.")
    g = np.geomspace(low, high, int(points))
    return np.array([float(f"{v:.3g}") for v in g])


def cell_seed(seed: int, analysis: str, mechanism: str, epsilon: float) -> list[int]:
    """Entropy of one cell: the user's seed, the mechanism and epsilon (independent of the other cells)."""
    return [int(seed), zlib.crc32(f"{analysis}:{mechanism}".encode()), int(round(float(epsilon) * 1e6))]


def cell_noise(seed: int, analysis: str, mechanism: str, epsilon: float) -> SimulationNoise:
    """Seeded simulation noise for one cell (the first child of the cell's seed sequence, as the
    Weibull and regression study helpers spawn theirs)."""
    return SimulationNoise(np.random.SeedSequence(cell_seed(seed, analysis, mechanism, epsilon)).spawn(1)[0])


def mechanisms(analysis: str) -> tuple[str, ...]:
    """Every mechanism the ``analysis`` trade-off can study, in the catalogue's order."""
    if analysis not in FAMILY:
        raise ParameterError(f"Unknown analysis {analysis!r}: choose one of {', '.join(ANALYSES)}.")
    return _studied(analysis)


def base(mechanism: str) -> str:
    """The catalogue id behind a studied mechanism (``rrr-debiased`` is a reading of ``rrr``)."""
    return next((m for m, variant in DEBIASED.items() if variant == mechanism), mechanism)


def entry(mechanism: str, analysis: str | None = None) -> Entry:
    """The catalogue entry of a studied mechanism (searched in every family when no analysis is given)."""
    families = [FAMILY[analysis]] if analysis in FAMILY else list(catalogue.FAMILIES)
    for family in families:
        if base(mechanism) in catalogue.ids(family, private=True):
            return catalogue.get(family, base(mechanism))
    raise ParameterError(f"Unknown mechanism {mechanism!r}: choose one of "
                         f"{', '.join(dict.fromkeys(m for a in ANALYSES for m in _studied(a)))}.")


def label(mechanism: str, analysis: str | None = None) -> str:
    """The catalogue's display name; a mechanism read two ways says which reading (raw or de-biased)."""
    e = entry(mechanism, analysis)
    name = f"{e.name} (approximate DP)" if e.guarantee.startswith("approximate") else e.name
    if mechanism in DEBIASED.values():
        return f"{name}, de-biased"
    return f"{name}, raw" if mechanism in DEBIASED else name


def no_epsilon(mechanism: str) -> bool:
    """True for statistical disclosure control: no epsilon, so its line is the same at every epsilon."""
    e = entry(mechanism)
    return not getattr(e, "formal", True)


def defaults(applicable_mechanisms: Sequence[str]) -> list[str]:
    """The mechanisms studied unless asked: every applicable one but the slow Markov-chain sampler and the
    disclosure-control methods (no epsilon: a flat line, studied on request and side by side in the audit)."""
    return [m for m in applicable_mechanisms if m not in SLOW and not no_epsilon(m)]


def applicable(analysis: str, cohort: Cohort, public: PublicParameters | None = None,
               covariates: Sequence[str] = (), by_group: bool = True) -> list[str]:
    """Mechanisms that apply to ``analysis`` on these data (randomized response needs >= 2 groups; log-rank
    needs groups and released counts; regression needs covariates)."""
    studied = mechanisms(analysis)
    groups = _groups(cohort, public, by_group or analysis == LOGRANK)
    grouped = groups is not None and len(groups) >= 2
    if analysis == CURVES:  # randomizing the group label needs groups
        return [m for m in studied if grouped or entry(m, analysis).protects != GROUP_LABEL]
    if analysis == LOGRANK:
        return list(studied) if grouped else []
    if analysis == REGRESSION:
        return list(studied) if covariates else []
    return list(studied)


def _groups(cohort: Cohort, public: PublicParameters | None, by_group: bool) -> tuple[str, ...] | None:
    if cohort.group is None or not by_group:
        return None
    if public is not None and public.group_categories:
        return tuple(public.group_categories)
    return tuple(cohort.groups)


@dataclass
class Context:
    """What depends only on the data and the public settings, computed once (see :func:`prepare`)."""

    analysis: str
    cohort: Cohort = field(repr=False)
    public: PublicParameters = field(repr=False)
    settings: dict[str, Any]
    reference: dict[str, float]
    reference_values: dict[str, float]
    reference_label: str
    data: dict[str, Any] = field(default_factory=dict, repr=False)


def prepare(analysis: str, cohort: Cohort, public: PublicParameters, *, by_group: bool = True,
            covariates: Sequence[str] = (), lam: float = 0.01, intervals: int | None = None,
            knots: int | None = None, psgld: dict[str, Any] | None = None, omega: float | None = None,
            gamma: float | None = None, rungs: int | None = None) -> Context:
    """The data-only part of a trade-off study: non-private reference and reusable pieces."""
    if analysis == CURVES:
        return _prepare_curves(cohort, public, by_group)
    if analysis == LOGRANK:
        return _prepare_logrank(cohort, public)
    if analysis == WEIBULL:
        return _prepare_weibull(cohort, public, omega, gamma, rungs)
    if analysis == REGRESSION:
        return _prepare_regression(cohort, public, covariates, lam, intervals, knots, psgld)
    raise ParameterError(f"Unknown analysis {analysis!r}: choose one of {', '.join(ANALYSES)}.")


# ------------------------------------------------------------------------------------------ curves
def _curve_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters) -> Any:
    """A curve mechanism at ``epsilon`` from the catalogue's factory, with its default options (time-indexed:
    fixed total), without noise-aware bands (:func:`without_bands`)."""
    return without_bands(catalogue.get(catalogue.CURVES, base(name)).build(epsilon, **context(cohort, public)))


def without_bands(mechanism: Any) -> Any:
    """``mechanism`` with its noise-aware bands switched off (laplace-counts, adaptive-km: ``noise_in_bands``): the
    simulations read the curves and counts only, so they need not pay for bands they never use. The curves and
    counts drawn are the same (the bands are post-processing)."""
    if getattr(mechanism, "noise_in_bands", False):
        mechanism.noise_in_bands = False
    return mechanism


def _prepare_curves(cohort: Cohort, public: PublicParameters, by_group: bool) -> Context:
    work = cohort if (by_group and cohort.group is not None) else replace(cohort, group=None)
    exact_km: Any = catalogue.entries(catalogue.CURVES, "km", private=False)[0].build()  # a curve mechanism
    exact = exact_km.compute(work, public).curves  # the exact KM (every event time) read at the grid points
    binned = estimate(tile_trials(exact_counts(work, public.grid, public), 1), actuarial=actuarial_share(public.grid))
    floor = _pooled_rmse(binned, exact)[0]
    values = {f"survival at {t:g} ({g})": float(exact.survival[0, gi, j])
              for gi, g in enumerate(exact.groups) for j, t in enumerate(exact.time)}
    return Context(CURVES, work, public, {"by_group": work.group is not None},
                   {"rmse": float(floor)}, values,
                   "exact counts on the public grid (binning only)", {"exact": exact})


def _pooled_rmse(private: Any, exact: Any) -> np.ndarray:
    """RMSE over every group curve and grid point, per trial: sqrt(mean_g RMSE_g^2)."""
    rmse_g, _ = curve_errors(private, exact, SURVIVAL)
    return np.sqrt(np.mean(rmse_g ** 2, axis=-1))


def _curves_cell(ctx: Context, name: str, epsilon: float, trials: int, noise: SimulationNoise) -> tuple[dict, Any]:
    mech = _curve_mechanism(name, epsilon, ctx.cohort, ctx.public)
    rel = mech.compute(ctx.cohort, ctx.public, noise, trials=trials)
    curves = rel.extra["debiased_curves"] if name in DEBIASED.values() else rel.curves
    return {"rmse": _pooled_rmse(curves, ctx.data["exact"])}, mech.cost


# ------------------------------------------------------------------------------------------ log-rank
def _tests(counts: BinnedCounts) -> list[logrank.LogRankResult]:
    """Every pairwise test, and the overall test when there are more than two groups."""
    out = logrank.pairwise(counts)
    return out + [logrank.overall(counts)] if len(counts.groups) > 2 else out


def _significant(results: list[Any]) -> np.ndarray:
    """(trials, tests) significance at 0.05; an undefined p-value counts as not significant."""
    p = np.stack([np.asarray(r.p_value, float) for r in results], axis=-1)
    return np.nan_to_num(p, nan=1.0) < ALPHA


def _prepare_logrank(cohort: Cohort, public: PublicParameters) -> Context:
    groups = _groups(cohort, public, True)
    if groups is None or len(groups) < 2:
        raise ParameterError("The log-rank trade-off needs a group column with at least two groups: map one on the "
                             "Data page.")
    fine = tile_trials(count(cohort, TimeGrid.event_times(cohort), groups), 1)
    exact = _tests(fine)
    on_grid = _tests(tile_trials(exact_counts(cohort, public.grid, public), 1))
    sig = _significant(on_grid)[0]  # like with like: the private tests are read on the same public grid
    binning = float(np.any(sig != _significant(exact)[0]))
    label = lambda r: f"{r.group_a} vs {r.group_b}" if r.group_b is not None else f"overall ({r.group_a})"  # noqa: E731
    values = {f"p {label(r)}": float(np.asarray(r.p_value).reshape(-1)[0]) for r in exact}
    values.update({f"chi2 {label(r)}": float(np.asarray(r.statistic).reshape(-1)[0]) for r in exact})
    values.update({f"p on the public grid {label(r)}": float(np.asarray(r.p_value).reshape(-1)[0]) for r in on_grid})
    values["binning alone changes a conclusion (1 = yes)"] = binning
    return Context(LOGRANK, cohort, public, {"tests": [label(r) for r in exact], "null_draws": TEST_DRAWS},
                   {"flip_rate": 0.0}, values, "exact test on the same public grid", {"significant": sig})


def _logrank_cell(ctx: Context, name: str, epsilon: float, trials: int, noise: SimulationNoise) -> tuple[dict, Any]:
    mech = _curve_mechanism(name, epsilon, ctx.cohort, ctx.public)
    rel = mech.compute(ctx.cohort, ctx.public, noise, trials=trials)
    debiased = name in DEBIASED.values()
    counts = rel.extra["debiased_counts"] if debiased else rel.counts
    law = logrank_test.noise_law(mech, rel.extra, debiased)
    results = logrank_test.calibrated_tests(counts, law, draws=ctx.settings.get("null_draws", TEST_DRAWS),
                                            overall=len(counts.groups) > 2)
    flips = np.any(_significant(results) != ctx.data["significant"][None, :], axis=-1)
    return {"flip_rate": flips.astype(float)}, mech.cost


# ------------------------------------------------------------------------------------------ Weibull
def _prepare_weibull(cohort: Cohort, public: PublicParameters, omega: float | None, gamma: float | None,
                     rungs: int | None) -> Context:
    from dpsurv_core.weibull.lsp import compute_ladder
    from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS, weibull_mle

    omega = OMEGA if omega is None else float(omega)
    gamma = GAMMA if gamma is None else float(gamma)
    rungs = RUNGS if rungs is None else int(rungs)
    # the clipped MLE: the estimator the private mechanisms estimate, on the same clipped sample
    fit_entry = catalogue.get(catalogue.WEIBULL, catalogue.reference_id(catalogue.WEIBULL))
    fit_mech: Any = fit_entry.build(horizon=float(public.horizon), omega=omega, gamma=gamma, rungs=rungs,
                                    rows_per_subject=cohort.rows_per_subject)  # a Weibull mechanism
    sample = fit_mech.prepare(cohort)
    fit = weibull_mle(sample)
    ladder = compute_ladder(sample, rungs, gamma)
    return Context(WEIBULL, cohort, public, {"omega": omega, "gamma": gamma, "rungs": rungs},
                   {"mdae_shape": 0.0, "mdae_scale": 0.0},
                   {"shape": float(fit.shape), "scale": float(fit.scale), "scale_normalised": float(fit.scale_normalised)},
                   "clipped maximum-likelihood fit", {"sample": sample, "fit": fit, "ladder": ladder})


def _weibull_cell(ctx: Context, name: str, epsilon: float, trials: int, noise: SimulationNoise) -> tuple[dict, Any]:
    from dpsurv_core.weibull.mechanisms import LspTll

    s, fit, st = ctx.data["sample"], ctx.data["fit"], ctx.settings
    mech: Any = catalogue.get(catalogue.WEIBULL, name).build(epsilon, horizon=s.horizon, omega=s.omega,
                                                             gamma=st["gamma"], rungs=st["rungs"],
                                                             rows_per_subject=s.rows_per_subject)  # a Weibull mechanism
    kw = {"ladder": ctx.data["ladder"]} if isinstance(mech, LspTll) else {}
    est = mech.compute_many(s, noise, trials, **kw)
    return {"mdae_shape": np.abs(est.shape - fit.shape),
            "mdae_scale": np.abs(est.scale_normalised - fit.scale_normalised) * s.horizon}, mech.cost


# ------------------------------------------------------------------------------------------ regression
def _prepare_regression(cohort: Cohort, public: PublicParameters, covariates: Sequence[str], lam: float,
                        intervals: int | None, knots: int | None, psgld: dict[str, Any] | None) -> Context:
    from dpsurv_core.regression.model import check_lambda, fit_nonprivate, minimise
    from dpsurv_core.regression.person_period import DEFAULT_INTERVALS, DEFAULT_KNOTS, person_period

    if not covariates:
        raise ParameterError("The regression trade-off needs at least one covariate: map covariates on the Data page.")
    lam = check_lambda(lam, allow_zero=False)
    pp = person_period(cohort, tuple(covariates), intervals=intervals or DEFAULT_INTERVALS,
                       knots=knots or DEFAULT_KNOTS, public=public)
    fit = fit_nonprivate(pp, 0.0)
    beta_star = fit.beta
    if not np.linalg.norm(beta_star) > 0:
        raise ParameterError("The non-private coefficients are all zero, so relative errors are undefined: choose "
                             "other covariates.")
    w_lam = minimise(pp, lam)
    ridge = float(np.linalg.norm(w_lam[: pp.p] - beta_star) / np.linalg.norm(beta_star))
    values = {f"coefficient {k}": float(v) for k, v in fit.coefficients.items()}
    values["relative error of the ridge fit alone"] = ridge
    # objective perturbation adds extra ridge (and spends eps/2 on the noise) while c2 / (n Lambda) > eps / 2,
    # i.e. below eps = 2 c2 / (n Lambda); above it eps' = eps - c2 / (n Lambda) >= eps / 2 (regression_dp)
    switch = 2.0 * pp.c2 / (pp.n_public * lam)
    return Context(REGRESSION, cohort, public, {"lambda": lam, "covariates": list(covariates),
                                                "intervals": pp.intervals, "knots": pp.knots, "psgld": dict(psgld or {}),
                                                "objective_switch": switch},
                   {"mre": 0.0}, values, "maximum-likelihood fit",
                   {"pp": pp, "beta_star": beta_star, "w_lam": w_lam})


def _regression_cell(ctx: Context, name: str, epsilon: float, trials: int, noise: SimulationNoise,
                     progress: Callable[[float], None] | None = None) -> tuple[dict, Any]:
    pp, beta_star = ctx.data["pp"], ctx.data["beta_star"]
    mech: Any = catalogue.get(catalogue.REGRESSION, name).build(epsilon, pp=pp, lam=ctx.settings["lambda"],
                                                                **ctx.settings["psgld"])  # a regression mechanism
    if name in SLOW:
        betas = mech.compute(pp, noise, trials=trials, progress=progress).betas
    else:
        # objective perturbation solves R Newton problems together until the slowest converges: blocks of
        # OBJECTIVE_BLOCK trials keep that fast (same noise stream, so still reproducible)
        block = OBJECTIVE_BLOCK if name == "objective" else trials
        betas = np.concatenate([mech.compute(pp, noise, trials=min(block, trials - s), w_star=ctx.data["w_lam"]).betas
                                for s in range(0, trials, block)])
    err = np.linalg.norm(betas - beta_star, axis=1) / np.linalg.norm(beta_star)
    return {"mre": err}, mech.cost


# ------------------------------------------------------------------------------------------ reading the chart
# why a line sits where it does, for the mechanisms whose place on the chart surprises
_NOTES = {
    (CURVES, "time-indexed"): "Why is time-indexed noise flat? With a fixed total epsilon each grid point gets only "
                              "total / (n (1 + alpha (n+1)/2)) of it (1/125 on a 20-point grid), so its noise and "
                              "clipping dominate at every epsilon shown; the paper labels its plots by that per-point "
                              "e, not by the total it spends.",
    (CURVES, "adaptive-km"): "Why can adaptive KM fall below the dashed line? The line is the error of the step curve "
                             "from exact counts on the public bins; adaptive KM assumes a constant hazard inside its "
                             "bins, which follows the true curve more closely between bin edges, so with little noise "
                             "it can do better than that step curve.",
    (CURVES, "rrr"): "Why does raw randomized response look good here? Swapping group labels pulls every group's curve "
                     "towards the curve of all patients, which is never far from each group's own curve: the error "
                     "stays small while the *difference between the groups* disappears. The log-rank analysis shows "
                     "that cost.",
}
RIDGE_GUIDE = "ridge penalty alone, no noise"


def guides(ctx: Context, chosen: Sequence[str]) -> list[tuple[str, str, float]]:
    """Dotted lines worth drawing: (text, metric, value). Regression: the error the ridge penalty alone causes,
    when a mechanism that fits a penalised model is shown."""
    if ctx.analysis == REGRESSION and set(RIDGE) & set(chosen):
        return [(RIDGE_GUIDE, "mre", ctx.reference_values["relative error of the ridge fit alone"])]
    return []


def notes(ctx: Context, chosen: Sequence[str]) -> list[str]:
    """Sentences that explain the chart for the mechanisms shown."""
    out = [text for (analysis, m), text in _NOTES.items() if analysis == ctx.analysis and m in chosen]
    if guides(ctx, chosen):
        out.append("Dotted line: the error that the ridge penalty Lambda alone causes (output and objective "
                   "perturbation fit a penalised model even before any noise).")
    if ctx.analysis == LOGRANK:
        out.append("Like with like: each private p-value is calibrated for the noise (its statistic is compared with the "
                   "null distribution simulated from the release and the public noise law) and compared with the exact "
                   "test on the same public grid, which therefore flips 0% (dashed line). A calibrated test keeps its "
                   "5% false-alarm rate, so where the exact test is significant a flip is a difference the private "
                   "test cannot see at that epsilon (lost power), not a false alarm.")
        if ctx.reference_values.get("binning alone changes a conclusion (1 = yes)"):
            out.append("Binning alone changes a conclusion here: the exact test on the public grid and the exact test "
                       "on every event time disagree at 5% (see the non-private reference below); a finer public grid "
                       "would bring them together.")
    if ctx.analysis == REGRESSION and "objective" in chosen:
        sw = ctx.settings["objective_switch"]
        out.append(f"Objective perturbation changes gear at epsilon {sw:.3g} (= 2 T R²/4 / (n Lambda)): up to there it "
                   "adds extra ridge and spends half of epsilon on the noise; above it no extra ridge is needed and "
                   "more than half of epsilon goes to the noise. (The published rule adds the ridge only below half this "
                   "epsilon, which makes the error jump just above that point; dpsurv's rule has the same guarantee "
                   "without the jump.)")
    return out


# ------------------------------------------------------------------------------------------ running
def _summary(values: np.ndarray, metric: str) -> dict[str, float]:
    """Headline value, median, mean and the band: the 10%-90% range of the trials, or for a rate its
    95% Wilson interval."""
    v = np.asarray(values, float)
    v = v[np.isfinite(v)]
    n = v.size
    if n == 0:
        return {"value": math.nan, "median": math.nan, "mean": math.nan, "lower": math.nan, "upper": math.nan}
    mean = float(v.mean())
    if metric == "flip_rate":
        z = 1.959963984540054
        centre = (mean + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(mean * (1 - mean) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return {"value": mean, "median": math.nan, "mean": mean, "lower": min(mean, max(0.0, centre - half)),
                "upper": max(mean, min(1.0, centre + half))}
    med = float(np.median(v))
    lo, hi = np.quantile(v, QUANTILES)
    return {"value": mean if metric == "mre" else med, "median": med, "mean": mean, "lower": float(lo),
            "upper": float(hi)}


def _check_cost(ctx: Context, trials: int) -> None:
    """trials x bins x groups of one cell within the simulation budget (:mod:`dpsurv_core.limits`), before running."""
    groups = len(ctx.cohort.groups) if ctx.settings.get("by_group", True) else 1
    limits.check_simulation(trials, ctx.public.grid.bins, groups, "simulated releases")


def evaluate(ctx: Context, mechanism: str, epsilon: float, trials: int, seed: int = 0,
             progress: Callable[[float], None] | None = None) -> list[dict[str, Any]]:
    """One cell: ``trials`` simulated releases of ``mechanism`` at ``epsilon``; one tidy row per metric."""
    eps = float(epsilon)
    if not (eps > 0 and math.isfinite(eps)):
        raise ParameterError(f"Every epsilon must be a positive number (for example 1), got {epsilon}.")
    if int(trials) != trials or trials < 1:
        raise ParameterError(f"The number of trials must be a whole number of at least 1, got {trials}.")
    trials = int(trials)
    _check_cost(ctx, trials)
    allowed = applicable(ctx.analysis, ctx.cohort, ctx.public, ctx.settings.get("covariates", ()),
                         by_group=ctx.settings.get("by_group", True))
    if mechanism not in allowed:
        raise ParameterError(f"{mechanism!r} does not apply to the {ctx.analysis} trade-off on these data: choose one of "
                             f"{', '.join(allowed) or 'none (see the message above)'}.")
    noise = cell_noise(seed, ctx.analysis, mechanism, eps)
    if ctx.analysis == CURVES:
        errors, cost = _curves_cell(ctx, mechanism, eps, trials, noise)
    elif ctx.analysis == LOGRANK:
        errors, cost = _logrank_cell(ctx, mechanism, eps, trials, noise)
    elif ctx.analysis == WEIBULL:
        errors, cost = _weibull_cell(ctx, mechanism, eps, trials, noise)
    else:
        errors, cost = _regression_cell(ctx, mechanism, eps, trials, noise, progress)
    return [{"analysis": ctx.analysis, "mechanism": mechanism, "epsilon": eps, "metric": metric,
             **_summary(errors[metric], metric), "trials": trials, "protects": cost.protects,
             "guarantee": cost.guarantee} for metric in METRICS[ctx.analysis]]


@dataclass
class TradeoffResult:
    """The tidy table (one row per mechanism, epsilon and metric) and the non-private reference."""

    analysis: str
    table: pd.DataFrame
    reference: dict[str, float]
    reference_values: dict[str, float]
    reference_label: str
    epsilons: np.ndarray
    trials: int
    seed: int
    seconds: float


def run(ctx: Context, mechanisms: Sequence[str], epsilons: Sequence[float] | np.ndarray, trials: int = 200, seed: int = 0,
        progress: Progress | None = None) -> pd.DataFrame:
    """Every (mechanism, epsilon) cell of a prepared study; ``progress(fraction, message)`` after each cell
    (and within pSGLD chains)."""
    cells = [(m, float(e)) for m in mechanisms for e in epsilons]
    _check_cost(ctx, int(trials))
    rows: list[dict[str, Any]] = []
    for i, (m, e) in enumerate(cells):
        msg = f"{m} at epsilon {e:g} ({i + 1}/{len(cells)})"
        inner = None
        if progress is not None and ctx.analysis == REGRESSION and m in SLOW:
            inner = lambda f, i=i, msg=msg: progress((i + f) / len(cells), msg)  # noqa: E731
        rows += evaluate(ctx, m, e, trials, seed, inner)
        if progress is not None:
            progress((i + 1) / len(cells), msg)
    return pd.DataFrame(rows, columns=COLUMNS)


def tradeoff(analysis: str, cohort: Cohort, public: PublicParameters, mechanisms: Sequence[str] | None = None,
             epsilons: Sequence[float] | None = None, trials: int = 200, seed: int = 0,
             progress: Progress | None = None, **settings: Any) -> TradeoffResult:
    """Utility against epsilon for ``analysis`` on these data; ``mechanisms`` default to every applicable one
    (pSGLD excluded: pass it explicitly, it is slow). ``settings`` go to :func:`prepare`."""
    t0 = _time.perf_counter()
    ctx = prepare(analysis, cohort, public, **settings)
    if mechanisms is None:
        mechanisms = defaults(applicable(analysis, cohort, public, settings.get("covariates", ()),
                                         settings.get("by_group", True)))
    grid = np.asarray(DEFAULT_EPSILONS if epsilons is None else epsilons, float)
    table = run(ctx, list(mechanisms), grid, trials, seed, progress)
    return TradeoffResult(analysis, table, ctx.reference, ctx.reference_values, ctx.reference_label, grid,
                          int(trials), int(seed), _time.perf_counter() - t0)
