"""Posterior sampling by preconditioned SGLD (Li et al. 2016; Nguyen & Hui 2017, regression Alg. 3-4): the
regression mechanism with an approximate (MCMC) guarantee.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC
from dpsurv_core.privacy.noise import NoiseSource
from dpsurv_core.regression.mechanism_base import DesignBounds, RegressionResult, _RegressionMechanism
from dpsurv_core.regression.model import maximum_likelihood, mean_relative_error

if TYPE_CHECKING:  # types only: a record's reader builds these mechanisms from public values, with no data module
    from dpsurv_core.regression.person_period import PersonPeriod


class PSGLD(_RegressionMechanism):
    """Posterior sampling by preconditioned SGLD (Li et al. 2016; Nguyen & Hui 2017, regression Alg. 3-4), approximate DP (MCMC).

    Target: exp(-(eps / (2 m B)) sum_i phi(L_i(w))) N(w; 0, s^2 I), phi(x) = B tanh(x / B). Chain:
    U~ = (N / |batch|) sum_batch (eps/(2 m B)) phi'(L_i) grad L_i + w / s^2 (a stochastic gradient of -log target),
    V <- alpha V + (1 - alpha) (U~/N)^2, G = 1 / (delta + sqrt(V)),
    w <- w - (step_t / 2) G U~ + sqrt(step_t G) xi,  step_t = a (1 + t / b)^(-gamma) / (N sqrt(N eps / (2 m B))):
    since G ~ 1/|U~/N|, a step moves w by about a / sqrt(N eps/(2 m B)), a multiple of the posterior's spread.
    An epoch is N / |batch| steps; the first ``burn_in`` epochs are discarded; the release is one draw: the
    state at the end of an epoch picked uniformly among epochs burn_in + 1 .. epochs. The correction term Gamma(w) of Li et al. is dropped, as in the paper.

    Parameters
    ----------
    epsilon : float
        The privacy budget (approximate: the chain only approximates the target); positive, ``math.inf`` gives the
        non-private maximum-likelihood fit.
    bounds : DesignBounds
        The public constants of the person-period design (intervals T, the public n N, rows per subject m, ...);
        a design with other constants is refused.
    bound_B : float or None, default None
        B, the sanitizer bound of phi(x) = B tanh(x / B) on each subject's loss; positive. None: T log 2.
    prior_sd : float, default 20.0
        s, the standard deviation of the N(0, s^2 I) prior on the normalised coefficients; positive.
    epochs : int, default 60
        The length of the chain in epochs (N / |batch| steps each); at least 1.
    burn_in : int, default 30
        The epochs discarded first; 0 <= burn_in < epochs.
    batch : int or None, default None
        The minibatch size in subjects, at least 1; None: a tenth of the public n, from 1 to 512.
    step : float, default 8.0
        a, the scale of step_t: a step moves w by about a / sqrt(N eps / (2 m B)), a multiple of the posterior's
        spread; positive.
    step_decay : float, default 100.0
        b, the steps t over which step_t decays (the factor (1 + t / b)^(-gamma)); positive.
    step_gamma : float, default 0.55
        gamma, the exponent of the step size's decay; from 0 to 1.
    rms_decay : float, default 0.99
        alpha, the RMSprop decay of the preconditioner's running mean square V; strictly between 0 and 1.
    draws : int, default 1
        k, the number of posterior draws released, each at epsilon / k (their mean is the estimate, their spread a
        posterior interval); a whole number from 1 to 100.

    Privacy
    -------
    Cost: epsilon, approximate (MCMC): the chain only approximates the eps-DP target; k draws spend epsilon/k each.
    Neighbours: add/remove one subject.
    Protects: one subject's rows (utility sensitivity m B).
    Source: Nguyen T. T. & Hui S. C. (2017), regression Alg. 3-4, with the sampler of Li et al. (2016).
    """

    name = "pSGLD posterior sampling"
    interval_includes_noise = True  # dpsurv_core.regression.inference
    guarantee = APPROXIMATE_MCMC

    def __init__(self, epsilon: float, bounds: DesignBounds, bound_B: float | None = None, prior_sd: float = 20.0,
                 epochs: int = 60, burn_in: int = 30, batch: int | None = None, step: float = 8.0, step_decay: float = 100.0,
                 step_gamma: float = 0.55, rms_decay: float = 0.99, draws: int = 1) -> None:
        super().__init__(epsilon, bounds)
        self.draws = 1
        self.set_draws(draws)
        self.bound_B = float(bounds.intervals * math.log(2.0)) if bound_B is None else float(bound_B)
        checks = [(self.bound_B > 0, "The sanitizer bound B must be positive (for example T log 2)."),
                  (prior_sd > 0, "The prior standard deviation s must be positive (for example 20)."),
                  (int(epochs) >= 1, "The chain needs at least one epoch."),
                  (0 <= int(burn_in) < int(epochs), "The burn-in must be shorter than the chain (0 <= burn-in < epochs)."),
                  (batch is None or int(batch) >= 1, "The minibatch needs at least one subject."),
                  (step > 0 and step_decay > 0 and 0 <= step_gamma <= 1,
                   "The step schedule needs a > 0, b > 0 and 0 <= gamma <= 1."),
                  (0 < rms_decay < 1, "The RMSprop decay alpha must be between 0 and 1.")]
        for ok, msg in checks:
            if not ok:
                raise ParameterError(msg)
        # default minibatch: a tenth of the public n (at least 1, at most 512), so an epoch is >= 10 steps
        self.batch = int(batch) if batch is not None else int(min(512, max(1, bounds.n_public // 10)))
        self.prior_sd, self.epochs, self.burn_in = float(prior_sd), int(epochs), int(burn_in)
        self.step, self.step_decay, self.step_gamma, self.rms_decay = float(step), float(step_decay), float(step_gamma), \
            float(rms_decay)

    def set_draws(self, draws: int) -> None:
        """Release k draws, each from the posterior at epsilon/k (sequential composition: epsilon in total); their
        mean is the point estimate and their spread gives a posterior interval that costs nothing more."""
        if int(draws) != draws or not 1 <= draws <= 100:
            raise ParameterError(f"The number of posterior draws must be a whole number from 1 to 100, got {draws}.")
        self.draws = int(draws)

    @property
    def utility_sensitivity(self) -> float:
        """m B: one subject (m records) changes sum phi(L_i) by less than m B."""
        return self.bounds.rows_per_subject * self.bound_B

    @property
    def temperature(self) -> float:
        """eps / (2 m B k), the factor on sum phi(L_i) in the log target of each of the k draws (k = 1 by default)."""
        return self.epsilon / (2.0 * self.utility_sensitivity * self.draws)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "sanitizer_B": self.bound_B, "prior_sd": self.prior_sd, "epochs": self.epochs,
                "burn_in": self.burn_in, "batch": self.batch, "step_a": self.step, "step_b": self.step_decay,
                "step_gamma": self.step_gamma, "rms_decay": self.rms_decay, "guarantee": "approximate DP (MCMC)",
                "draws": self.draws, "epsilon_per_draw": self.epsilon / self.draws,
                **self.bounds.to_dict()}

    def compute(self, pp: PersonPeriod, noise: NoiseSource, trials: int = 1, w_star: np.ndarray | None = None,
                beta_ref: np.ndarray | None = None, progress: Any = None) -> RegressionResult:
        """Run ``trials`` x k independent chains at once (vectorised: each chain draws its own minibatches and its own
        Langevin noise, so the trials are independent draws). With k = ``draws`` > 1 each trial releases the mean
        of its k draws (``diagnostics["draws_W"]`` keeps them, shape (trials, k, dim)); the trace keeps the first
        chain of each trial."""
        self._check(pp)
        k = self.draws
        out_trials = trials
        trials = trials * k
        if math.isinf(self.epsilon):
            w = maximum_likelihood(pp)
            return RegressionResult(self.name, np.repeat(w[None, :], out_trials, axis=0), pp, self.cost, self.parameters(),
                                     {"note": "epsilon = inf: no sampling, the non-private MLE"})
        N, d = pp.n, pp.dim
        nb = min(self.batch, N)
        steps_per_epoch = max(1, int(math.ceil(N / nb)))
        temp, B, s2 = self.temperature, self.bound_B, self.prior_sd ** 2
        W = np.zeros((trials, d))  # the chain starts at 0, a data-free point (never at the non-private w*)
        V = np.zeros((trials, d))
        trace = np.empty((self.epochs + 1, trials, d))
        trace[0] = W
        chain = np.arange(trials)
        t = 0
        for epoch in range(self.epochs):
            for _ in range(steps_per_epoch):
                # every chain samples its own minibatch of nb subjects (with replacement), uniform on 0..N-1
                S = noise.integers(N, (trials, nb)).ravel()
                rows = pp.subject_rows(S)
                Zb, yb = pp.Z[rows], pp.y[rows].astype(float)
                counts = pp.k[S]
                starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
                owner = np.repeat(np.repeat(chain, nb), counts)    # chain of each row
                eta = np.einsum("ij,ij->i", Zb, W[owner])           # (rows,)
                L = np.add.reduceat(np.logaddexp(0.0, -(2 * yb - 1) * eta), starts)  # per sampled subject
                wt = 1.0 / np.cosh(np.minimum(L / B, 350.0)) ** 2  # phi'(L) = sech^2(L / B)
                coef = (special.expit(eta) - yb) * np.repeat(wt, counts)
                gsum = np.add.reduceat(coef[:, None] * Zb, starts[::nb], axis=0)  # (trials, d)
                gbar = temp * gsum / nb + W / (s2 * N)   # mean per-subject gradient of -log target
                U = N * gbar
                V = self.rms_decay * V + (1 - self.rms_decay) * gbar ** 2
                G = 1.0 / (1e-8 + np.sqrt(V))
                eps_t = self.step * (1.0 + t / self.step_decay) ** (-self.step_gamma) / (N * math.sqrt(temp * N))
                W = W - 0.5 * eps_t * G * U + np.sqrt(eps_t * G) * noise.standard_normal((trials, d))
                t += 1
            trace[epoch + 1] = W
            if progress is not None:
                progress((epoch + 1) / self.epochs)
        # the release: one state per chain, drawn uniformly from the epoch ends after the burn-in
        pick = self.burn_in + 1 + noise.integers(self.epochs - self.burn_in, trials)
        W = noise.snap(trace[pick, np.arange(trials)])  # the chain's float arithmetic, snapped (Mironov 2012)
        diag: dict[str, Any] = {"steps_per_epoch": steps_per_epoch, "steps": t, "draws": k}
        if k > 1:
            diag["draws_W"] = W.reshape(out_trials, k, d)
            W = noise.snap(diag["draws_W"].mean(axis=1))  # the mean leaves the grid: snapped again
            trace, pick = trace[:, ::k], pick[::k]
        diag.update({"trace": trace, "picked_epoch": pick})
        if beta_ref is not None:
            p = pp.p
            diag["mre_by_epoch"] = np.array([mean_relative_error(trace[e][:, :p], beta_ref) for e in range(self.epochs + 1)])
        return RegressionResult(self.name, W, pp, self.cost, self.parameters(), diag)
