"""Private Weibull parameters (docs/mechanisms.md, Nguyen & Hui 2017, Weibull): LSP + TLL, the non-private clipped and
survreg fits, and :func:`make_mechanism`, which builds any of them or the Laplace and sample-and-aggregate baselines
(:mod:`dpsurv_core.weibull.baselines`) by id. Each private one spends eps/2 on the shape and eps/2 on the scale; the
ledger charges eps (sequential composition).

Every mechanism takes a :class:`~dpsurv_core.privacy.noise.NoiseSource`: ``ReleaseNoise`` for a release,
``SimulationNoise(seed)`` for repeated trials. ``release_many`` draws R independent releases at once
(arrays with a leading trials axis); for LSP + TLL the ladder is computed once and reused.
All work is on normalised times t <- clip(t / T_max, e^-omega, 1); scales are reported both
normalised and in the data's time unit (times T_max).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import PrivacyCost
from dpsurv_core.privacy.noise import NoiseSource, SimulationNoise
from dpsurv_core.weibull.baselines import (  # noqa: F401 (re-exported: the catalogue and callers name them here)
    LaplaceWeibull,
    SampleAggregateWeibull,
    block_mle,
    clipped_mle,
)
from dpsurv_core.weibull.lsp import Ladder, compute_ladder
from dpsurv_core.weibull.mechanism_base import (  # noqa: F401 (re-exported)
    BLOCK_SIZE,
    MECHANISMS,
    WeibullEstimates,
    WeibullMechanism,
    released_by,
    whole_trials,
)
from dpsurv_core.weibull.model import (
    GAMMA,
    OMEGA,
    RUNGS,
    WeibullSample,
    check_hyper,
    sample_from_cohort,
)

# types only: the release reader (dpsurv_core.weibull.readout) runs these mechanisms on simulated samples, and imports
# this module without the data layer
if TYPE_CHECKING:
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.data.public import Disclosure


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
        r = whole_trials(trials)
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
        r = whole_trials(trials)
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
        return released_by(WeibullEstimates(self.name, p, lam, self.horizon, clamped, rung, notes), noise)


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
