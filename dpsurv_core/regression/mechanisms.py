"""Private discrete-time survival regression (docs/mechanisms.md, Nguyen & Hui 2017, regression sections 4-5).

Setting. w* minimises J(w) = (1/n) sum_i L_i(w) + (Lambda/2) ||w||^2 over the person-period rows
(:mod:`dpsurv_core.regression.model`), where n is a PUBLIC normaliser (declared, or the cohort size
shown as a disclosure) so the objective has the same form on neighbouring data sets.
Neighbours: add/remove one subject (the bounds below also cover replacing one subject).

Bounds (derived here, tested in tests/test_regression_dp.py). Each row has ||z_ij|| <= R
(R = sqrt(2), see :mod:`dpsurv_core.regression.person_period`); a subject has k_i <= T rows (m T rows if the
data has up to m records per subject; every bound below is then multiplied by m).

* Gradient. grad L_i(w) = sum_j (sigma(w.z_ij) - y_ij) z_ij and |sigma - y| <= 1, so by the
  triangle inequality ||grad L_i(w)|| <= k_i R <= T R =: c1, for every w.
* Hessian. grad^2 L_i(w) = sum_j sigma(1 - sigma) z_ij z_ij^T is PSD (sum of PSD rank-one terms) and
  tr grad^2 L_i = sum_j sigma(1 - sigma) ||z_ij||^2 <= k_i R^2 / 4 <= T R^2 / 4 =: c2.
* Minimiser (output perturbation). J is Lambda-strongly convex. Chaudhuri et al. (2011, Lemma 7):
  if G and G + g are Lambda-strongly convex, their minimisers differ by at most
  max_w ||grad g(w)|| / Lambda. Removing subject s: g = -(1/n) L_s, so ||w*_D - w*_D'|| <= c1/(n Lambda);
  replacing s by s': g = (L_s' - L_s)/n, so the shift is <= 2 c1/(n Lambda). Sensitivity
  Delta = 2 c1 / (n Lambda) covers both.
* Jacobian (objective perturbation). With Lambda' = Lambda + Delta_ridge, the noisy minimiser w
  satisfies b = -(sum_i grad L_i(w) + n Lambda' w), a bijection with Jacobian
  A_D(w) = sum_i grad^2 L_i(w) + n Lambda' I. Adding subject s: det A_D' / det A_D =
  det(I + A_D^-1 H_s) = det(I + H_s^1/2 A_D^-1 H_s^1/2) <= exp(tr(H_s^1/2 A_D^-1 H_s^1/2))
  <= exp(tr H_s / (n Lambda')) <= exp(c2 / (n Lambda')), using det(I + A) <= exp(tr A) for PSD A
  (1 + lambda <= e^lambda per eigenvalue) and A_D^-1 <= I / (n Lambda'). The reverse ratio is <= 1.
  The noise part: b_D(w) - b_D'(w) = grad L_s(w) (or grad L_s - grad L_s' when replacing), norm
  <= 2 c1, so with density proportional to exp(-eps' ||b|| / (2 c1)) its ratio is <= exp(eps').
  Total: eps' + c2/(n Lambda') <= eps when eps' = eps - c2/(n Lambda); if that is <= 0 the extra
  ridge Delta_ridge = 2 c2/(n eps) - Lambda makes c2/(n Lambda') = eps/2 and eps' = eps/2.
* Information matrix (objective perturbation with an information share rho > 0; Wang, Kifer and Lee 2019
  release a noisy Hessian for their intervals in the same way). The budget is split by sequential
  composition: eps_H = rho eps on H, eps_obj = (1 - rho) eps on the objective perturbation above (its eps'
  and extra ridge computed from eps_obj), eps_H + eps_obj = eps. After w~ is released, H(w~) = sum_i H_i(w~),
  H_i(w) = sum_{j <= k_i} p_ij (1 - p_ij) z_ij z_ij^T, p_ij = sigma(w.z_ij), is released with noise; w~ is
  public by then, so neighbours differ by one subject's H_s(w~) (adaptive composition). Sensitivity: with
  a_j = p_j (1 - p_j) in [0, 1/4] and z_j = (x, s(j)), ||x||^2 = t in [0, 1] (the same x on every row of a
  subject), ||H_i||_F^2 = sum_{j,l <= k_i} a_j a_l (z_j.z_l)^2 <= (1/16) max_{t in {0, 1}}
  sum_{j,l <= T} (t + s(j).s(l))^2 =: h1^2 (every term is >= 0 and the sum is convex in t, so its maximum
  over [0, 1] is at an end); h1 <= T R^2 / 4 = c2 by Cauchy-Schwarz, and h1 = 5.61 against c2 = 10 at
  T = 20, q = 5. Removing a subject changes H by H_s (norm <= h1); replacing s by s' by H_s - H_s', and
  ||H_s - H_s'||_F^2 = ||H_s||_F^2 + ||H_s'||_F^2 - 2 tr(H_s H_s') <= 2 h1^2 (tr of a product of PSD
  matrices is >= 0); with m records per subject, m times as much. Delta_H = sqrt(2) m h1 covers both.
  The d(d+1)/2 distinct entries, off-diagonals times sqrt(2) (so the vector norm is the Frobenius norm),
  get noise of density proportional to exp(-eps_H ||v|| / Delta_H): eps_H-DP, the same sampler as b.
  The released H~ is symmetric but may be indefinite; making it PSD (eigenvalue floor at 0) is
  post-processing (dpsurv_core.regression.inference).
* Noise with density proportional to exp(-||b|| / scale) in d dimensions: its norm has density
  proportional to r^(d-1) exp(-r/scale), i.e. Gamma(d, scale); its direction is uniform on the
  sphere (a standard normal vector, normalised).
* pSGLD (exponential mechanism, Li et al. 2016 sampler). Utility u(w; D) = -sum_i phi(L_i(w)) with
  phi(x) = B tanh(x/B) in [0, B): one subject changes u by less than B, so sampling exactly from
  exp(-(eps/(2B)) sum_i phi(L_i(w))) N(w; 0, s^2 I) would be eps-DP. The chain only approximates
  that density: the guarantee is "approximate (MCMC)", never exact.

epsilon = inf switches the noise off, and with it the ridge: Lambda exists only to bound one subject's influence
for the noise (the sensitivities above divide by it), so without noise every mechanism (output and objective
perturbation, pSGLD) returns the non-private maximum-likelihood fit (Lambda = 0), the very w that
``regression --mechanism nonprivate`` gives (:func:`~dpsurv_core.regression.model.maximum_likelihood`, the same
L-BFGS call, so bit for bit). With an information share the released H at epsilon = inf is the exact H of that fit.

The parts the mechanisms share (the design bounds, the information matrix helpers, the result and the base
class) are in :mod:`dpsurv_core.regression.mechanism_base`, posterior sampling (:class:`PSGLD`) in
:mod:`dpsurv_core.regression.psgld`; this module re-exports them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import NoiseSource
from dpsurv_core.regression.mechanism_base import (  # noqa: F401 (re-exported: readout, inference, tests)
    ANALYSIS,
    DesignBounds,
    RegressionResult,
    _RegressionMechanism,
    information_bound,
    information_many,
    symmetric_from_vector,
    symmetric_size,
)
from dpsurv_core.regression.model import check_lambda, maximum_likelihood, minimise
from dpsurv_core.regression.psgld import PSGLD

if TYPE_CHECKING:  # types only: a record's reader builds these mechanisms from public values, with no data module
    from dpsurv_core.regression.person_period import PersonPeriod


def sphere_noise(noise: NoiseSource, dim: int, scale: float, trials: int) -> np.ndarray:
    """Draws b with density proportional to exp(-||b|| / scale): norm ~ Gamma(dim, scale), direction uniform.

    The norm is ``gamma_sum`` (on a release, the sum of dim exponentials, each |Laplace| from OpenDP), the direction
    normalised standard normals (OpenDP's Gaussian on a release). Returns shape (trials, dim); scale 0 gives zeros."""
    if scale == 0:
        return np.zeros((trials, dim))
    r = noise.gamma_sum(int(dim), float(scale), trials)
    u = noise.standard_normal((trials, dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return r[:, None] * u


class OutputPerturbation(_RegressionMechanism):
    """Chaudhuri et al. (2011) Alg. 1, extended to sums of logistic losses (Nguyen & Hui 2017, regression Alg. 1):
    w* + b, ||b|| ~ Gamma(d, Delta/eps) with uniform direction, Delta = 2 c1 / (n Lambda).

    Parameters
    ----------
    epsilon : float
        The privacy budget, positive; ``math.inf`` releases the non-private maximum-likelihood fit.
    lam : float
        Lambda, the ridge penalty of J(w); positive and finite (for example 0.01). The sensitivity falls as 1 / Lambda.
    bounds : DesignBounds
        The public constants of the person-period design (intervals T, knots, horizon, R, the public n, rows per
        subject m) the noise is calibrated with (``DesignBounds.of(pp)``); a design with other constants is refused.

    Privacy
    -------
    Cost: epsilon, all of it on one noise vector b added to the ridge fit (Delta = 2 c1 / (n Lambda)).
    Neighbours: add/remove one subject (the sensitivity also covers replacing one).
    Protects: one subject's rows (all person-period rows; bounds times m records per subject).
    Source: Nguyen T. T. & Hui S. C. (2017), regression Alg. 1, after Chaudhuri et al. (2011).
    """

    name = "output perturbation"
    interval_includes_noise = True  # dpsurv_core.regression.inference

    def __init__(self, epsilon: float, lam: float, bounds: DesignBounds) -> None:
        super().__init__(epsilon, bounds)
        self.lam = check_lambda(lam, allow_zero=False)

    @property
    def sensitivity(self) -> float:
        """Delta = 2 c1 / (n Lambda): the L2 sensitivity of the minimiser w*."""
        return 2.0 * self.bounds.c1 / (self.bounds.n_public * self.lam)

    @property
    def noise_scale(self) -> float:
        """Delta / eps: the Gamma scale of the noise norm (0 when eps is infinite)."""
        return 0.0 if math.isinf(self.epsilon) else self.sensitivity / self.epsilon

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "lambda": self.lam, "sensitivity": self.sensitivity,
                "noise_norm": f"Gamma({self.bounds.dim}, {self.noise_scale:.4g})", **self.bounds.to_dict()}

    def compute(self, pp: PersonPeriod, noise: NoiseSource, trials: int = 1, w_star: np.ndarray | None = None
                ) -> RegressionResult:
        """``trials`` draws of w*(Lambda) + b (``w_star``: w*(Lambda) when already found). Without noise (epsilon =
        inf) every draw is the maximum-likelihood fit (no ridge, no noise: the non-private fit itself)."""
        self._check(pp)
        if math.isinf(self.epsilon):
            return RegressionResult(self.name, np.repeat(maximum_likelihood(pp)[None, :], trials, axis=0), pp,
                                     self.cost, self.parameters())
        w = minimise(pp, self.lam) if w_star is None else w_star
        W = noise.snap(w[None, :] + sphere_noise(noise, pp.dim, self.noise_scale, trials))  # Mironov (2012)
        return RegressionResult(self.name, W, pp, self.cost, self.parameters())


class ObjectivePerturbation(_RegressionMechanism):
    """Chaudhuri et al. (2011) Alg. 2, extended (Nguyen & Hui 2017, regression Alg. 2): minimise J(w) + b.w/n + (Delta/2)||w||^2,
    ||b|| ~ Gamma(d, 2 c1 / eps'), eps' = eps_obj - c2/(n Lambda), or eps_obj/2 with the extra ridge Delta.

    The spec adds the ridge only when eps' <= 0; we add it whenever eps' would fall below eps_obj/2. The
    proof is the same in both cases (eps' + log Jacobian bound = eps_obj), but without it an eps' just above 0
    makes the noise term huge and the error *rise* with epsilon (lung, Lambda = 0.01: MRE 113 at eps 5
    against 22 at eps 1).

    With an information share rho > 0 (Wang, Kifer and Lee 2019) eps_obj = (1 - rho) eps and the remaining
    eps_H = rho eps buys a noisy information matrix H~ = H(w~) + E released after w~ (module docstring:
    Delta_H = sqrt(2) m h1, ||E||_F ~ Gamma(d (d + 1)/2, Delta_H / eps_H)); the intervals then use the data's
    curvature instead of the bound 1/(n Lambda'). rho = 0 (the default) is the mechanism of the paper.

    Parameters
    ----------
    epsilon : float
        The privacy budget, positive; ``math.inf`` releases the non-private maximum-likelihood fit.
    lam : float
        Lambda, the ridge penalty of J(w); positive and finite (for example 0.01). The sensitivity falls as 1 / Lambda.
    bounds : DesignBounds
        The public constants of the person-period design (intervals T, knots, horizon, R, the public n, rows per
        subject m) the noise is calibrated with (``DesignBounds.of(pp)``); a design with other constants is refused.
    information_share : float, default 0.0
        rho, the share of epsilon spent on the noisy information matrix, from 0 to 0.9; 0 releases the coefficients
        only.

    Privacy
    -------
    Cost: epsilon = eps_obj + eps_H, composed sequentially: (1 - rho) epsilon on the objective's noise term, rho epsilon
    on the noisy information matrix (rho = ``information_share``, 0 by default: all on the objective).
    Neighbours: add/remove one subject (the bounds also cover replacing one).
    Protects: one subject's rows (all person-period rows; bounds times m records per subject).
    Source: Nguyen T. T. & Hui S. C. (2017), regression Alg. 2; Wang, Kifer & Lee (2019) for the information matrix.
    """

    name = "objective perturbation"
    interval_includes_noise = True  # dpsurv_core.regression.inference

    def __init__(self, epsilon: float, lam: float, bounds: DesignBounds, information_share: float = 0.0) -> None:
        super().__init__(epsilon, bounds)
        self.lam = check_lambda(lam, allow_zero=False)
        self.information_share = 0.0
        self.set_information_share(information_share)

    def set_information_share(self, share: float) -> None:
        """Spend the share rho of epsilon on a noisy information matrix and 1 - rho on the objective perturbation
        (sequential composition: epsilon in total); 0 releases the coefficients only."""
        try:
            rho = float(share)
        except (TypeError, ValueError):
            raise ParameterError(f"The information share must be a number from 0 to 0.9, got {share!r}.") from None
        if not 0.0 <= rho <= 0.9:
            raise ParameterError(f"The information share must be a number from 0 to 0.9 (for example 0.2), got {share!r}.")
        self.information_share = rho

    @property
    def epsilon_information(self) -> float:
        """eps_H = rho eps, spent on the information matrix (0 when rho = 0)."""
        return 0.0 if self.information_share == 0 else self.epsilon * self.information_share

    @property
    def epsilon_objective(self) -> float:
        """eps_obj = (1 - rho) eps, spent on the perturbed objective (eps itself when rho = 0)."""
        return self.epsilon if self.information_share == 0 else self.epsilon * (1.0 - self.information_share)

    @property
    def jacobian_log_bound(self) -> float:
        """log of the Jacobian ratio bound exp(c2 / (n Lambda)) before any extra ridge."""
        return self.bounds.c2 / (self.bounds.n_public * self.lam)

    @property
    def extra_ridge(self) -> float:
        """Delta = 2 c2 / (n eps_obj) - Lambda when eps_obj - c2/(n Lambda) < eps_obj/2, else 0; with it the log
        Jacobian bound c2/(n (Lambda + Delta)) is exactly eps_obj/2."""
        e = self.epsilon_objective
        if math.isinf(e) or e - self.jacobian_log_bound >= e / 2.0:
            return 0.0
        return 2.0 * self.bounds.c2 / (self.bounds.n_public * e) - self.lam

    @property
    def epsilon_prime(self) -> float:
        """The budget left for the noise term b: eps_obj - c2/(n Lambda) (at least eps_obj/2), or eps_obj/2 with the
        extra ridge."""
        e = self.epsilon_objective
        if math.isinf(e):
            return math.inf
        rest = e - self.jacobian_log_bound
        return rest if rest >= e / 2.0 else e / 2.0

    @property
    def noise_scale(self) -> float:
        """2 c1 / eps': the Gamma scale of ||b||."""
        return 0.0 if math.isinf(self.epsilon) else 2.0 * self.bounds.c1 / self.epsilon_prime

    @property
    def information_sensitivity(self) -> float:
        """Delta_H = sqrt(2) m h1 (the Frobenius sensitivity of H, see :class:`DesignBounds`)."""
        return self.bounds.information_sensitivity

    @property
    def information_noise_scale(self) -> float:
        """Delta_H / eps_H: the Gamma scale of ||E||_F (0 without noise or without an information share)."""
        if self.information_share == 0 or math.isinf(self.epsilon):
            return 0.0
        return self.information_sensitivity / self.epsilon_information

    def parameters(self) -> dict[str, Any]:
        out = {"epsilon": self.epsilon, "lambda": self.lam, "epsilon_prime": self.epsilon_prime,
               "extra_ridge": self.extra_ridge, "jacobian_log_bound": self.jacobian_log_bound,
               "noise_norm": f"Gamma({self.bounds.dim}, {self.noise_scale:.4g})", **self.bounds.to_dict(),
               "information_share": self.information_share}
        if self.information_share > 0:
            D = symmetric_size(self.bounds.dim)
            out.update({"epsilon_objective": self.epsilon_objective, "epsilon_information": self.epsilon_information,
                        "information_sensitivity": self.information_sensitivity,
                        "information_noise_norm": f"Gamma({D}, {self.information_noise_scale:.4g})",
                        "charged": {"objective perturbation": self.epsilon_objective,
                                    "information matrix": self.epsilon_information}})
        return out

    def compute(self, pp: PersonPeriod, noise: NoiseSource, trials: int = 1, w_star: np.ndarray | None = None
                ) -> RegressionResult:
        """``trials`` draws; with an information share ``diagnostics["information"]`` holds each draw's noisy
        H~ (trials, d, d), released after (and evaluated at) its w~. ``w_star`` (w*(Lambda), when already found)
        starts the Newton iterations. Without noise (epsilon = inf) every draw is the maximum-likelihood fit (no
        ridge, no noise: the non-private fit itself)."""
        self._check(pp)
        if math.isinf(self.epsilon):
            W = np.repeat(maximum_likelihood(pp)[None, :], trials, axis=0)
        else:
            b = sphere_noise(noise, pp.dim, self.noise_scale, trials)
            W = noise.snap(minimise_many(pp, self.lam + self.extra_ridge, b, w0=w_star))  # Mironov (2012)
        diag: dict[str, Any] = {}
        if self.information_share > 0:
            H = information_many(pp, W)
            if not math.isinf(self.epsilon):
                E = sphere_noise(noise, symmetric_size(pp.dim), self.information_noise_scale, trials)
                H = noise.snap(H + symmetric_from_vector(E, pp.dim))
            diag["information"] = H
        return RegressionResult(self.name, W, pp, self.cost, self.parameters(), diag)


def minimise_many(pp: PersonPeriod, lam: float, b: np.ndarray, w0: np.ndarray | None = None,
                  tol: float = 1e-11, max_iter: int = 100) -> np.ndarray:
    """argmin_w (1/n) sum L_i(w) + (lam/2)||w||^2 + b_r.w/n for every row b_r at once: damped Newton,
    vectorised over the trials (the objective is lam-strongly convex, so Newton with backtracking converges)."""
    Z, y, c = pp.compressed
    n = pp.n_public
    R, d = b.shape
    W = np.zeros((R, d)) if w0 is None else np.repeat(np.asarray(w0, float)[None, :], R, axis=0)

    def f(W: np.ndarray) -> np.ndarray:
        eta = Z @ W.T
        return (c @ np.logaddexp(0.0, -(2.0 * y - 1.0)[:, None] * eta)) / n + 0.5 * lam * np.sum(W * W, 1) + \
            np.sum(b * W, 1) / n

    fW = f(W)
    eye = np.eye(d)
    for _ in range(max_iter):
        eta = Z @ W.T
        p = special.expit(eta)
        G = ((c[:, None] * (p - y[:, None])).T @ Z) / n + lam * W + b / n
        H = np.einsum("ur,ui,uj->rij", c[:, None] * p * (1 - p), Z, Z) / n + lam * eye
        step = np.linalg.solve(H, G[..., None])[..., 0]
        t = np.ones(R)
        active = np.ones(R, dtype=bool)
        for _ in range(40):
            Wn = W - t[:, None] * step
            fn = f(Wn)
            ok = fn <= fW + 1e-4 * t * (-np.sum(G * step, 1)) + 1e-15 * np.abs(fW)
            active = ~ok
            if not active.any():
                break
            t = np.where(active, t / 2, t)
        W, fW = W - t[:, None] * step, f(W - t[:, None] * step)
        if np.max(np.abs(t[:, None] * step)) < tol * (1 + np.max(np.abs(W))):
            break
    return W


MECHANISMS = {"output": OutputPerturbation, "objective": ObjectivePerturbation, "psgld": PSGLD}


def build_mechanism(kind: str, epsilon: float, pp: PersonPeriod, lam: float = 0.01, information_share: float = 0.0,
                    **psgld: Any) -> _RegressionMechanism:
    """One of ``output``, ``objective`` (with ``information_share`` rho of epsilon on a noisy information matrix),
    ``psgld`` calibrated for the public constants of ``pp``.

    Parameters
    ----------
    kind : {"output", "objective", "psgld"}
        The mechanism.
    epsilon : float
        Its total epsilon.
    pp : PersonPeriod
        The person-period design, whose public constants (bounds) calibrate the noise.
    lam : float, default 0.01
        The ridge penalty Lambda.
    information_share : float, default 0.0
        Objective perturbation only: the share rho of epsilon spent on a noisy information matrix.
    **psgld
        PSGLD's options (epochs, burn-in, ...).

    Returns
    -------
    OutputPerturbation, ObjectivePerturbation or PSGLD
        The mechanism.

    Raises
    ------
    dpsurv_core.errors.ParameterError
        For an unknown ``kind`` or an information share outside objective perturbation.

    References
    ----------
    .. [1] Chaudhuri K., Monteleoni C. & Sarwate A. D. (2011), Differentially private empirical risk minimization,
       JMLR 12, 1069-1109.
    .. [2] Nguyen T. T. & Hui S. C. (2017b), Differentially Private Regression for Discrete-Time Survival Analysis,
       CIKM.
    """
    bounds = DesignBounds.of(pp)
    if information_share and kind != "objective":
        raise ParameterError("The information share applies to objective perturbation only.")
    if kind == "output":
        return OutputPerturbation(epsilon, lam, bounds)
    if kind == "objective":
        return ObjectivePerturbation(epsilon, lam, bounds, information_share)
    if kind == "psgld":
        return PSGLD(epsilon, bounds, **psgld)
    raise ParameterError(f"Unknown mechanism {kind!r}: choose output, objective or psgld.")


def mre_study(pp: PersonPeriod, epsilons: list[float], lam: float = 0.01, trials: int = 20, seed: int = 0,
              mechanisms: tuple[str, ...] = ("output", "objective", "psgld"), psgld: dict[str, Any] | None = None,
              progress: Any = None) -> list[dict[str, Any]]:
    """MRE of each private fit against the non-private MLE (Lambda = 0), per epsilon, from ``trials`` seeded draws.

    A simulation on the data (SimulationNoise(seed)), never a release: nothing is charged. Rows:
    mechanism, epsilon, lambda, mre, mre_se (standard error over the draws), trials.
    """
    from dpsurv_core.privacy.noise import SimulationNoise

    beta_star = maximum_likelihood(pp)[: pp.p]
    w_lam = minimise(pp, lam)
    rows: list[dict[str, Any]] = []
    total = len(epsilons) * len(mechanisms)
    seeds = np.random.SeedSequence(seed).spawn(total)
    for i, (kind, eps) in enumerate((k, e) for k in mechanisms for e in epsilons):
        mech = build_mechanism(kind, eps, pp, lam=lam, **(psgld or {} if kind == "psgld" else {}))
        rel = mech.compute(pp, SimulationNoise(seeds[i]), trials=trials, **({} if kind == "psgld" else {"w_star": w_lam}))
        err = np.linalg.norm(rel.betas - beta_star, axis=1) / np.linalg.norm(beta_star)
        rows.append({"mechanism": kind, "epsilon": float(eps), "lambda": lam if kind != "psgld" else None,
                     "mre": float(err.mean()), "mre_se": float(err.std(ddof=1) / math.sqrt(trials)) if trials > 1 else None,
                     "trials": trials, "guarantee": mech.cost.guarantee})
        if progress is not None:
            progress((i + 1) / total, f"{kind} at epsilon {eps:g}")
    return rows


def lambda_study(pp: PersonPeriod, lambdas: list[float], epsilons: list[float], trials: int = 20, seed: int = 0,
                 mechanisms: tuple[str, ...] = ("output", "objective")) -> list[dict[str, Any]]:
    """The Lambda trade-off (Nguyen & Hui 2017, regression, Table 2): MRE against the non-private MLE for each Lambda and epsilon.

    Larger Lambda shrinks the noise (sensitivity 2 c1 / (n Lambda)) but pulls w* towards 0. Simulation only."""
    rows: list[dict[str, Any]] = []
    for j, lam in enumerate(lambdas):
        for r in mre_study(pp, epsilons, lam, trials, seed + 1000 * j, mechanisms):
            rows.append(r)
    return rows


def _release_table(release: RegressionResult, trial: int = 0) -> Any:
    """Coefficient and odds ratio per covariate (original units) of one draw, as a pandas DataFrame with the
    columns of :meth:`Fit.table`; no interval (an honest one would need the data again)."""
    import pandas as pd

    coef = release.betas[trial] * release.pp.encoding.to_original
    return pd.DataFrame({"covariate": release.pp.encoding.names, "coefficient": coef,
                         "odds_ratio": np.exp(np.clip(coef, -700, 700)), "se": np.nan, "lower": np.nan, "upper": np.nan})
