"""Private Weibull parameters (docs/mechanisms.md, Nguyen & Hui 2017, Weibull): LSP + TLL, and the Laplace and
sample-and-aggregate baselines. Each spends eps/2 on the shape and eps/2 on the scale; the ledger
charges eps (sequential composition).

Every mechanism takes a :class:`~dpsurv_core.privacy.noise.NoiseSource`: ``ReleaseNoise`` for a release,
``SimulationNoise(seed)`` for repeated trials. ``release_many`` draws R independent releases at once
(arrays with a leading trials axis); for LSP + TLL the ladder is computed once and reused.
All work is on normalised times t <- clip(t / T_max, e^-omega, 1); scales are reported both
normalised and in the data's time unit (times T_max).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource, SimulationNoise, snap_to_grid
from dpsurv_core.weibull.lsp import Ladder, compute_ladder
from dpsurv_core.weibull.model import (
    GAMMA,
    OMEGA,
    RUNGS,
    WeibullSample,
    check_hyper,
    sample_from_cohort,
    scale_at,
    shape_root,
    subject_sample,
)

# types only: the release reader (dpsurv_core.weibull.readout) runs these mechanisms on simulated samples, and imports
# this module without the data layer
if TYPE_CHECKING:
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.data.public import Disclosure

BLOCK_SIZE = 500
MECHANISMS = ("mle", "clipped-mle", "lsp-tll", "laplace", "saa")


@dataclass
class WeibullEstimates:
    """R released (shape, scale) pairs; ``scale`` is in the data's time unit, ``scale_normalised`` in units of T_max."""

    mechanism: str
    shape: np.ndarray
    scale_normalised: np.ndarray
    horizon: float
    clamped: np.ndarray | None = None  # TLL: a noisy sum was non-positive and was clamped
    rung: np.ndarray | None = None  # LSP: the rung drawn; internal, never released (see records)
    notes: list[str] = field(default_factory=list)
    snapped: bool = False  # a release: the shape and both scales lie on the 2^-20 grid (:func:`_released_by`)

    @property
    def scale(self) -> np.ndarray:
        """The scale in the data's time unit (on a release snapped again: the product leaves the grid)."""
        scale = self.scale_normalised * self.horizon
        return snap_to_grid(scale) if self.snapped else scale

    @property
    def trials(self) -> int:
        return int(self.shape.size)

    def records(self) -> list[dict[str, Any]]:
        """One dict per trial: trial, shape, scale, scale_normalised (+ clamped for TLL). LSP's rung index is left
        out: the guarantee covers the shape alone, and the pair (shape, rung) can occur for one data set and never
        for its neighbour, whose ladder puts that shape in the next rung."""
        out = []
        for i in range(self.trials):
            r: dict[str, Any] = {"trial": i, "shape": float(self.shape[i]), "scale": float(self.scale[i]),
                                 "scale_normalised": float(self.scale_normalised[i])}
            if self.clamped is not None:
                r["clamped"] = bool(self.clamped[i])
            out.append(r)
        return out


class WeibullMechanism(Mechanism):
    """Shared parameters: total epsilon, public horizon T_max, omega, gamma, rows per subject m."""

    analysis = "weibull"
    private = True
    # the MLE, LSP + TLL and the Laplace baseline read only the table of distinct times with their counts and
    # events (an engine's GROUP BY): they run where the data live
    engines: tuple[str, ...] = ("pandas", "duckdb", "spark")

    def __init__(self, epsilon: float, horizon: float, omega: float = OMEGA, gamma: float = GAMMA,
                 rows_per_subject: int = 1) -> None:
        self.epsilon = check_epsilon(epsilon)
        if not (math.isfinite(horizon) and horizon > 0):
            raise ParameterError(f"The horizon must be a positive time, got {horizon}.")
        self.horizon = float(horizon)
        self.omega, self.gamma, _ = check_hyper(omega, gamma, 1)
        if int(rows_per_subject) < 1:
            raise ParameterError(f"Rows per subject must be at least 1, got {rows_per_subject}.")
        self.rows_per_subject = int(rows_per_subject)

    @property
    def epsilon_shape(self) -> float:
        return self.epsilon / 2.0

    @property
    def epsilon_scale(self) -> float:
        return self.epsilon / 2.0

    @property
    def cost(self) -> PrivacyCost:
        """eps/2 for the shape + eps/2 for the scale, composed sequentially: eps."""
        return PrivacyCost(self.epsilon_shape + self.epsilon_scale, neighbouring=ADD_REMOVE, protects=SUBJECT)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "epsilon_shape": self.epsilon_shape, "epsilon_scale": self.epsilon_scale,
                "horizon": self.horizon, "omega": self.omega, "gamma": self.gamma,
                "rows_per_subject": self.rows_per_subject}

    def disclosures(self, sample: WeibullSample | None = None) -> list[Disclosure]:
        return []

    def prepare(self, cohort: Cohort) -> WeibullSample:
        """The cohort's times normalised with this mechanism's public horizon and omega (for a cohort kept in an
        engine: its table of distinct times, computed there)."""
        self._check_rows(cohort)
        return sample_from_cohort(cohort, self.horizon, self.omega)

    def _check_rows(self, cohort: Cohort) -> None:
        if cohort.rows_per_subject > self.rows_per_subject:
            raise ParameterError(f"The data keep up to {cohort.rows_per_subject} rows per subject but the mechanism was "
                                 f"built for {self.rows_per_subject}: build it with rows_per_subject="
                                 f"{cohort.rows_per_subject}.")

    def _check(self, sample: WeibullSample) -> None:
        if not (math.isclose(sample.horizon, self.horizon) and math.isclose(sample.omega, self.omega)):
            raise ParameterError("The sample was normalised with another horizon or omega than the mechanism's: "
                                 "prepare it with mechanism.prepare(cohort).")
        if sample.rows_per_subject > self.rows_per_subject:
            raise ParameterError(f"The data keep up to {sample.rows_per_subject} rows per subject; build the mechanism "
                                 f"with rows_per_subject={sample.rows_per_subject}.")

    def compute(self, sample: WeibullSample, noise: NoiseSource) -> WeibullEstimates:
        """One release (R = 1)."""
        return self.compute_many(sample, noise, 1)

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        raise NotImplementedError


def _released_by(est: WeibullEstimates, noise: NoiseSource | None) -> WeibullEstimates:
    """The estimates as a mechanism releases them: shape and scale through ``noise.snap``, so that a release's reals lie
    on the 2^-20 grid (Mironov 2012's snapping of floating-point arithmetic on the draws; post-processing). Simulation
    noise (and none) leaves them as they are."""
    if noise is None:
        return est
    return replace(est, shape=noise.snap(est.shape), scale_normalised=noise.snap(est.scale_normalised),
                   snapped=bool(noise.is_release))


def _trials(trials: int) -> int:
    if int(trials) != trials or trials < 1:
        raise ParameterError(f"The number of trials must be a whole number of at least 1, got {trials}.")
    return int(trials)


class ClippedMLE(WeibullMechanism):
    """The clipped maximum-likelihood fit (Equations 4 and 5 on t <- clip(t / T_max, e^-omega, 1)): the estimator the
    private mechanisms estimate, and their reference. Not differentially private, for comparison only.

    Parameters
    ----------
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Normalised times are raised to at least e^-omega; positive.
    gamma : float, default 10.0
        Checked (positive) and recorded: the bound of the private mechanisms, not applied to this fit.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).

    Privacy
    -------
    Cost: nothing charged; epsilon = inf (no noise): the private mechanisms' reference, for comparison only.
    Neighbours: none (not differentially private).
    Protects: nothing.
    Source: Nguyen T. T. & Hui S. C. (2017), the clipped MLE their Weibull mechanisms estimate.
    """

    name = "clipped-mle"
    private = False

    def __init__(self, horizon: float, omega: float = OMEGA, gamma: float = GAMMA, rows_per_subject: int = 1) -> None:
        super().__init__(math.inf, horizon, omega, gamma, rows_per_subject)

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(math.inf, protects="nothing (not differentially private)")

    def parameters(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "omega": self.omega}

    def disclosures(self, sample: WeibullSample | None = None) -> list[Disclosure]:
        from dpsurv_core.data.public import Disclosure

        return [Disclosure("mechanism", "not DP: the maximum-likelihood estimates are computed from the data "
                                        "without noise; for the data holder's eyes only.", dp=False)]

    def compute_many(self, sample: WeibullSample, noise: NoiseSource | None, trials: int = 1) -> WeibullEstimates:
        from dpsurv_core.weibull.model import weibull_mle

        self._check(sample)
        fit = weibull_mle(sample)
        r = _trials(trials)
        return WeibullEstimates(self.name, np.full(r, fit.shape), np.full(r, fit.scale_normalised), self.horizon)


NonPrivateMLE = ClippedMLE  # the name this class had before the unclipped MLE took the id "mle"


class SurvregMLE(ClippedMLE):
    """The Weibull maximum-likelihood fit as R's survreg gives it: Equations 4 and 5 on the times as they are (follow-up
    ends at the horizon; no time is raised to a floor), so shape = 1 / survreg's scale and scale = exp(survreg's
    intercept) (Kalbfleisch & Prentice 2002, section 3.2). A time of 0 has no Weibull likelihood: such data are
    refused with a sentence, as survreg refuses them. Not differentially private.

    Parameters
    ----------
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Ignored (accepted for a signature like the others'): no time is raised to a floor.
    gamma : float, default 10.0
        Checked (positive), not applied to this fit.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).

    Privacy
    -------
    Cost: nothing charged; epsilon = inf (no noise): for comparison only.
    Neighbours: none (not differentially private).
    Protects: nothing.
    Source: Kalbfleisch & Prentice (2002); R survival's survreg.
    """

    name = "mle"

    def __init__(self, horizon: float, omega: float = OMEGA, gamma: float = GAMMA, rows_per_subject: int = 1) -> None:
        super().__init__(horizon, OMEGA, gamma, rows_per_subject)
        self.omega = math.inf  # no floor: normalise() clips at e^-inf = 0, i.e. not at all

    def parameters(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "clipping": "none (R's survreg on the times as they are)"}

    def prepare(self, cohort: Cohort) -> WeibullSample:
        """The cohort's times divided by the horizon, censored there, not clipped; a time of 0 is refused."""
        self._check_rows(cohort)
        with np.errstate(divide="ignore"):  # a time of 0 has log -inf: counted and refused below
            sample = sample_from_cohort(cohort, self.horizon, self.omega)
        zero = int(round(float(sample.c_u[np.isneginf(sample.lt_u)].sum())))
        if zero:
            raise ParameterError(f"{zero} record(s) have time 0, where the Weibull likelihood is not defined (R's "
                                 "survreg refuses them too): drop them, or use --mechanism clipped-mle, which counts "
                                 "times near 0 as e^-omega of the horizon.")
        return sample


def tll(sample: WeibullSample, shape: np.ndarray, epsilon_scale: float, noise: NoiseSource,
        sensitivity: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """TLL (Algorithm 3) for an array of shapes: delta = sum d + Lap(2s/eps_scale), tau = sum t^p + Lap(2s/eps_scale).

    With eps_scale = eps/2 the scales are the paper's 4/eps. Returns (lambda normalised, clamped): a noisy
    delta below 1 is clamped to 1 (one event) and a noisy tau below e^(-omega p) (one subject at the
    earliest time) to that value; ``clamped`` says where this happened.
    """
    p = np.asarray(shape, dtype=float)
    delta = np.full(p.shape, float(sample.n_events))
    tau = sample.sum_tp(p)
    if not math.isinf(epsilon_scale):
        noise_draw = noise.laplace(2.0 * sensitivity / epsilon_scale, (2, p.size)).reshape((2, *p.shape))
        delta = delta + noise_draw[0]
        tau = tau + noise_draw[1]
    tau_floor = np.exp(-sample.omega * p)
    clamped = (delta < 1.0) | (tau < tau_floor)
    delta = np.maximum(delta, 1.0)
    tau = np.maximum(tau, tau_floor)
    with np.errstate(over="ignore"):  # a shape near 0 gives an astronomically large (inf) scale
        return (tau / delta) ** (1.0 / p), clamped


class LspTll(WeibullMechanism):
    """LSP for the shape (exponential mechanism over the ladder, eps/2) and TLL for the scale (eps/2).

    Parameters
    ----------
    epsilon : float
        The privacy budget, half on the shape, half on the scale; positive (``math.inf``: no noise).
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Normalised times are raised to at least e^-omega; positive.
    gamma : float, default 10.0
        The public bound on the shape and the scale (in horizons); positive.
    rungs : int, default 500
        K, the number of rungs of the LSP ladder of candidate shapes; at least 1.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).

    Privacy
    -------
    Cost: epsilon, split evenly and composed sequentially: epsilon/2 for the shape (exponential mechanism over the LSP
    ladder) and epsilon/2 for the scale (Laplace on the TLL sums).
    Neighbours: add/remove one subject.
    Protects: one subject's rows (sensitivities times m rows per subject).
    Source: Nguyen T. T. & Hui S. C. (2017), Privacy-Preserving Mechanisms for Parametric Survival Analysis.
    """

    name = "lsp-tll"
    interval_includes_noise = True  # dpsurv_core.weibull.inference: parametric bootstrap, inverted

    def __init__(self, epsilon: float, horizon: float, omega: float = OMEGA, gamma: float = GAMMA,
                 rungs: int = RUNGS, rows_per_subject: int = 1) -> None:
        super().__init__(epsilon, horizon, omega, gamma, rows_per_subject)
        _, _, self.rungs = check_hyper(self.omega, self.gamma, rungs)

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "rungs": self.rungs}

    def ladder(self, sample: WeibullSample) -> Ladder:
        """The rungs (depend only on the data, omega, gamma and K, never on epsilon)."""
        self._check(sample)
        return compute_ladder(sample, self.rungs, self.gamma)

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int,
                     ladder: Ladder | None = None) -> WeibullEstimates:
        """R releases reusing one ladder: R rung draws, R uniforms, then TLL vectorised over the R shapes."""
        self._check(sample)
        r = _trials(trials)
        lad = ladder if ladder is not None else self.ladder(sample)
        if lad.rungs != self.rungs or lad.gamma != self.gamma:
            raise ParameterError("The ladder was built with other rungs or gamma than the mechanism's.")
        m = float(self.rows_per_subject)
        p, rung = lad.sample(self.epsilon_shape, noise, r, sensitivity=m)
        lam, clamped = tll(sample, p, self.epsilon_scale, noise, sensitivity=m)
        notes = []
        if clamped.any():
            notes.append(f"{int(clamped.sum())} trial(s): a noisy sum in TLL was below its floor (1 event, or one "
                         "subject at the earliest time) and was clamped to it.")
        return _released_by(WeibullEstimates(self.name, p, lam, self.horizon, clamped, rung, notes), noise)


def clipped_mle(sample: WeibullSample, gamma: float) -> tuple[float, float]:
    """(p*, lambda*) with the shape root searched in (0, gamma] and the scale clipped to [0, gamma]."""
    p = shape_root(sample, upper=gamma)
    return p, min(scale_at(sample, p), gamma)


class LaplaceWeibull(WeibullMechanism):
    """Baseline: p* + Lap(gamma / (eps/2)) and lambda* + Lap(gamma / (eps/2)), both clipped to [0, gamma] first.

    Parameters
    ----------
    epsilon : float
        The privacy budget, half on the shape, half on the scale; positive (``math.inf``: no noise).
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Normalised times are raised to at least e^-omega; positive.
    gamma : float, default 10.0
        The public bound on the shape and the scale (in horizons); positive.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).

    Privacy
    -------
    Cost: epsilon, split evenly and composed sequentially: epsilon/2 on the shape, epsilon/2 on the scale.
    Neighbours: add/remove one subject.
    Protects: one subject's rows (the noise covers each parameter's whole range [0, gamma]).
    Source: Nguyen T. T. & Hui S. C. (2017), the paper's Laplace baseline.
    """

    name = "laplace"
    interval_includes_noise = True  # dpsurv_core.weibull.inference: parametric bootstrap, inverted

    def caveat(self, time_unit: str = "") -> str:
        """Why its error is large whatever the data: noise sized to the global sensitivity gamma on each parameter,
        Laplace scale b = gamma / (epsilon/2), median absolute error b ln 2 (the scale's in horizons: the scale is
        fitted on times divided by the horizon)."""
        if math.isinf(self.epsilon):
            return ""
        b = self.gamma / self.epsilon_shape
        typical = b * math.log(2)
        unit = f" {time_unit}" if time_unit else ""
        return (f"**Why the Laplace baseline is so far off.** It adds noise sized for the worst case over every "
                f"possible data set (its *global sensitivity*): one patient could, in some cohort, move the fitted shape "
                f"or the scale (in horizons: times divided by the horizon) anywhere in [0, gamma = {self.gamma:g}], so "
                f"the noise must cover that whole range. Its spread is gamma / (epsilon/2) = {b:.3g} at epsilon "
                f"{self.epsilon:g}, so the typical (median) error is {b:.3g} x ln 2 = {typical:.3g} on the shape and "
                f"{typical:.3g} horizons ({typical * self.horizon:,.0f}{unit}) on the scale, however many patients there "
                "are. A shape "
                "near 1 with an error of that size says nothing. LSP + TLL and sample and aggregate size their noise "
                "from this cohort (how far its own fit can move), which is why they are far closer. What to do: use "
                "LSP + TLL; the Laplace row is there only as the textbook comparison.")

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        self._check(sample)
        r = _trials(trials)
        p, lam = clipped_mle(sample, self.gamma)
        shape = np.full(r, p)
        scale = np.full(r, lam)
        if not math.isinf(self.epsilon):
            z = noise.laplace(np.array([[self.gamma / self.epsilon_shape], [self.gamma / self.epsilon_scale]]), (2, r))
            shape, scale = shape + z[0], scale + z[1]
        return _released_by(WeibullEstimates(self.name, shape, scale, self.horizon), noise)


def block_mle(lt: np.ndarray, d: np.ndarray, blocks: np.ndarray, n_blocks: int, gamma: float,
              iterations: int = 100, start: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """MLE (p, lambda) of every block, vectorised: ``blocks`` is (R, n) block labels 0..M-1 per trial.

    Safeguarded Newton on the increasing h = f - g in (0, gamma] for all R*M blocks at once. A block
    with no events, or whose root lies beyond gamma (e.g. all its times equal), gets the bound gamma;
    scales are clipped to [0, gamma]. ``start`` is only the solver's first guess (the roots do not
    depend on it). Returns two (R, M) arrays.
    """
    R, n = blocks.shape
    idx = (blocks + n_blocks * np.arange(R)[:, None]).ravel()
    size = R * n_blocks
    lt_rep = np.broadcast_to(lt, (R, n)).ravel()
    d_rep = np.broadcast_to(d.astype(float), (R, n)).ravel()
    D = np.bincount(idx, weights=d_rep, minlength=size)
    sd = np.bincount(idx, weights=d_rep * lt_rep, minlength=size)
    has = D > 0
    mean_d = np.where(has, sd / np.where(has, D, 1.0), 0.0)

    def sums(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w = np.exp(p[idx] * lt_rep)
        wl = w * lt_rep
        return (np.bincount(idx, weights=w, minlength=size), np.bincount(idx, weights=wl, minlength=size),
                np.bincount(idx, weights=wl * lt_rep, minlength=size))

    def h(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s0, s1, s2 = sums(p)
        s0 = np.where(s0 > 0, s0, 1.0)
        return s1 / s0 - 1.0 / p - mean_d, (s2 * s0 - s1 * s1) / (s0 * s0) + 1.0 / (p * p), s0

    top = np.full(size, gamma)
    h_top, _, _ = h(top)
    done = ~has | (h_top < 0)
    p = np.where(done, gamma, min(start, gamma))
    lo, hi = np.zeros(size), np.full(size, gamma)
    for _ in range(iterations):
        val, der, _ = h(p)
        lo = np.where(val < 0, p, lo)
        hi = np.where(val >= 0, p, hi)
        new = p - val / der
        bad = ~np.isfinite(new) | (new <= lo) | (new >= hi)
        new = np.where(bad, 0.5 * (lo + hi), new)
        new = np.where(done, p, new)
        conv = np.abs(new - p) <= 1e-12 * np.maximum(p, 1e-3)
        p = new
        done = done | conv
        if done.all():
            break
    s0, _, _ = sums(p)
    with np.errstate(divide="ignore", over="ignore"):
        lam = np.where(has, (s0 / np.where(has, D, 1.0)) ** (1.0 / p), np.inf)
    return np.clip(p, 0.0, gamma).reshape(R, n_blocks), np.clip(lam, 0.0, gamma).reshape(R, n_blocks)


class SampleAggregateWeibull(WeibullMechanism):
    """Baseline (Smith 2008): M disjoint random blocks, MLE per block clipped to [0, gamma], average,
    + Lap(gamma / (M eps/2)) per parameter (times m rows per subject).

    Each record is assigned to a block uniformly at random and independently, so adding or removing one
    subject changes one block. M is public; it may be at most n / 2, n the declared ``n_public`` when there is
    one: a refusal decided by the observed number would itself depend on the data.

    Parameters
    ----------
    epsilon : float
        The privacy budget, half on the shape, half on the scale; positive (``math.inf``: no noise).
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Normalised times are raised to at least e^-omega; positive.
    gamma : float, default 10.0
        The public bound on the shape and the scale (in horizons); positive.
    blocks : int or None, default None
        M, the declared number of blocks, at least 1; None: max(1, round(n / block_size)), which discloses the
        cohort size roughly (listed as a disclosure).
    block_size : int, default 500
        Subjects per block when ``blocks`` is None; at least 1.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).
    n_public : int or None, default None
        The declared (public) number of subjects, at least 1, that bounds M.

    Privacy
    -------
    Cost: epsilon, split evenly and composed sequentially: epsilon/2 on the averaged shape, epsilon/2 on the scale.
    Neighbours: add/remove one subject (it changes one block).
    Protects: one subject's rows (the noise is times m rows per subject).
    Source: Nguyen T. T. & Hui S. C. (2017), after Smith's sample and aggregate (2008).
    """

    name = "saa"
    interval_includes_noise = True  # dpsurv_core.weibull.inference: parametric bootstrap, inverted
    engines = ("pandas",)  # each record is put in a random block: its rows are read in bounded chunks (or refused)

    def prepare(self, cohort: Cohort) -> WeibullSample:
        """Each subject's normalised time and event (an engine cohort's rows through its bounded chunked path)."""
        self._check_rows(cohort)
        return subject_sample(cohort, self.horizon, self.omega)

    def __init__(self, epsilon: float, horizon: float, omega: float = OMEGA, gamma: float = GAMMA,
                 blocks: int | None = None, block_size: int = BLOCK_SIZE, rows_per_subject: int = 1,
                 n_public: int | None = None) -> None:
        super().__init__(epsilon, horizon, omega, gamma, rows_per_subject)
        if n_public is not None and (int(n_public) != n_public or n_public < 1):
            raise ParameterError(f"The declared number of subjects must be a whole number of at least 1, got "
                                 f"{n_public}.")
        self.n_public = None if n_public is None else int(n_public)
        if blocks is not None and (int(blocks) != blocks or blocks < 1):
            raise ParameterError(f"The number of blocks must be a whole number of at least 1, got {blocks}.")
        if int(block_size) != block_size or block_size < 1:
            raise ParameterError(f"The block size must be a whole number of at least 1, got {block_size}.")
        self.blocks = None if blocks is None else int(blocks)
        self.block_size = int(block_size)

    def n_blocks(self, sample: WeibullSample) -> int:
        return self.blocks if self.blocks is not None else max(1, int(round(sample.n / self.block_size)))

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "blocks": self.blocks, "block_size": self.block_size}

    def disclosures(self, sample: WeibullSample | None = None) -> list[Disclosure]:
        if self.blocks is not None:
            return []
        from dpsurv_core.data.public import Disclosure

        m = "" if sample is None else f" ({self.n_blocks(sample)})"
        return [Disclosure("blocks", f"not DP: the number of blocks{m} was derived from the number of records "
                                     f"(n / {self.block_size}, rounded), and it sets the noise scale, so neighbouring "
                                     "cohorts across a rounding step get different noise; declare the number of blocks.",
                           dp=False)]

    def block_statistic(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        """The noiseless statistic: the average of the block MLEs over ``trials`` random block assignments."""
        self._check(sample)
        if not sample.per_subject:
            raise ParameterError("Sample-and-aggregate puts each record in a random block, so it needs each subject's "
                                 "time and event: prepare the sample with mechanism.prepare(cohort).")
        r = _trials(trials)
        M = self.n_blocks(sample)
        n, what = (sample.n, "records") if self.n_public is None else (self.n_public, "declared subjects")
        if M > n // 2:
            raise ParameterError(f"{M} blocks for {n} {what} leaves fewer than two per block: choose at most "
                                 f"{max(n // 2, 1)} blocks (the paper uses blocks of about 500 records).")
        labels = noise.integers(M, (r, sample.n))  # each record's block, uniform on 0..M-1 (exact on a release)
        start = shape_root(sample, upper=self.gamma)  # first guess of the solver only
        assert sample.t is not None and sample.d is not None  # per_subject, checked above
        pb, lb = block_mle(np.log(sample.t), sample.d, labels, M, self.gamma, start=start)
        return WeibullEstimates(self.name, pb.mean(axis=1), lb.mean(axis=1), self.horizon,
                                notes=[f"{M} block(s) of about {sample.n / M:.0f} records."])

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        if math.isinf(self.epsilon):  # no noise: the blocks only bound one record's influence, so one is enough
            self._check(sample)
            p, lam = clipped_mle(sample, self.gamma)
            r = _trials(trials)
            return WeibullEstimates(self.name, np.full(r, p), np.full(r, lam), self.horizon,
                                    notes=["Epsilon inf: no noise, so no blocks either: the fit on every record (the "
                                           "maximum-likelihood estimate)."])
        est = self.block_statistic(sample, noise, trials)
        M, m = self.n_blocks(sample), float(self.rows_per_subject)
        z = noise.laplace(np.array([[m * self.gamma / (M * self.epsilon_shape)],
                                    [m * self.gamma / (M * self.epsilon_scale)]]), (2, est.trials))
        return _released_by(replace(est, shape=est.shape + z[0], scale_normalised=est.scale_normalised + z[1]), noise)


def make_mechanism(name: str, epsilon: float, horizon: float, omega: float = OMEGA, gamma: float = GAMMA,
                   rungs: int = RUNGS, rows_per_subject: int = 1, blocks: int | None = None,
                   block_size: int = BLOCK_SIZE, n_public: int | None = None) -> WeibullMechanism:
    """A Weibull mechanism by its command-line name (mle, clipped-mle, lsp-tll, laplace, saa); ``n_public``: the
    declared number of subjects, which bounds sample and aggregate's blocks.

    Parameters
    ----------
    name : {"mle", "clipped-mle", "lsp-tll", "laplace", "saa"}
        The mechanism's command-line name.
    epsilon : float
        Its total epsilon.
    horizon : float
        The public horizon T_max.
    omega, gamma : float
        The public bounds of the normalised scale and of the shape.
    rungs : int, default 500
        LSP's rungs.
    rows_per_subject : int, default 1
        Rows each subject may have (the sensitivity grows with it).
    blocks, block_size : int
        Sample and aggregate's blocks (default from ``n_public``) and block size.
    n_public : int, optional
        The declared number of subjects.

    Returns
    -------
    WeibullMechanism
        The mechanism.
    """
    if name == "mle":
        return SurvregMLE(horizon, omega, gamma, rows_per_subject)
    if name == "clipped-mle":
        return ClippedMLE(horizon, omega, gamma, rows_per_subject)
    if name == "lsp-tll":
        return LspTll(epsilon, horizon, omega, gamma, rungs, rows_per_subject)
    if name == "laplace":
        return LaplaceWeibull(epsilon, horizon, omega, gamma, rows_per_subject)
    if name == "saa":
        return SampleAggregateWeibull(epsilon, horizon, omega, gamma, blocks, block_size, rows_per_subject, n_public)
    raise ParameterError(f"Unknown Weibull mechanism {name!r}: choose one of {', '.join(MECHANISMS)}.")


STUDY_MECHANISMS = ("lsp-tll", "laplace", "saa")


def mdae_study(sample: WeibullSample, epsilons: list[float] | tuple[float, ...], trials: int, seed: int | list[int],
               mechanisms: tuple[str, ...] = STUDY_MECHANISMS, gamma: float = GAMMA, rungs: int = RUNGS,
               blocks: int | None = None, block_size: int = BLOCK_SIZE, ladder: Ladder | None = None,
               progress: Any = None) -> list[dict[str, Any]]:
    """Median absolute error (docs/mechanisms.md) of shape and scale over ``trials`` simulated releases per
    (mechanism, total epsilon), against the clipped MLE on the same normalised data (the estimator they estimate).

    Simulation only (seeded ``SimulationNoise``; nothing is released or charged). The LSP ladder is
    computed once and reused. ``progress(done, total, label)`` is called after each cell.
    Returns one dict per cell: mechanism, epsilon, epsilon_per_parameter, mdae_shape, mdae_scale
    (data time unit), mdae_scale_normalised, trials.
    """
    from dpsurv_core.weibull.model import weibull_mle

    fit = weibull_mle(sample)
    seqs = np.random.SeedSequence(seed).spawn(len(epsilons) * len(mechanisms))
    rows: list[dict[str, Any]] = []
    total = len(epsilons) * len(mechanisms)
    for j, name in enumerate(mechanisms):
        lad = None
        for i, eps in enumerate(epsilons):
            mech = make_mechanism(name, eps, sample.horizon, sample.omega, gamma, rungs, sample.rows_per_subject,
                                  blocks, block_size)
            kw: dict[str, Any] = {}
            if isinstance(mech, LspTll):
                lad = lad or ladder or mech.ladder(sample)
                kw["ladder"] = lad
            est = mech.compute_many(sample, SimulationNoise(seqs[j * len(epsilons) + i]), trials, **kw)
            err_scale = np.abs(est.scale_normalised - fit.scale_normalised)
            rows.append({"mechanism": name, "epsilon": float(eps), "epsilon_per_parameter": float(eps) / 2,
                         "mdae_shape": float(np.median(np.abs(est.shape - fit.shape))),
                         "mdae_scale": float(np.median(err_scale)) * sample.horizon,
                         "mdae_scale_normalised": float(np.median(err_scale)), "trials": int(trials)})
            if progress is not None:
                progress(len(rows), total, f"{name} at epsilon {eps:g}")
    return rows
