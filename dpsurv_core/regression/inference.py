"""Intervals and Wald tests for private regression coefficients that carry the privacy noise
(docs/mechanisms.md, section 8; Wang, Kifer and Lee 2019 for the idea).

For a released w~ the error w~ - w has two parts, added by simulation (seeded from the release, so the
same release always gets the same interval). Only public quantities enter (n, Lambda, the noise law):
the data's information matrix would leak what epsilon protects, so wherever the exact formula needs it
the bound that holds for every information matrix is used instead, and the intervals are conservative.

* sampling: the ridge fit's sandwich A^-1 H A^-1, A = H + n Lambda I, is at most 1 / (4 n Lambda) per
  coordinate whatever H (each eigenvalue h gives h / (h + n Lambda)^2 <= 1 / (4 n Lambda));
* noise, from its public law:
  - output perturbation: w~ = w*(Lambda) + b, b with norm ~ Gamma(d, Delta/eps) and uniform direction
    (Chaudhuri et al. 2011), drawn exactly;
  - objective perturbation: to first order w~ - w*(Lambda') = -(H + n Lambda' I)^-1 b, b isotropic with
    norm ~ Gamma(d, 2 c1/eps'), Lambda' = Lambda + the extra ridge: each coordinate spreads at most as
    b / (n Lambda') does, which is drawn;
  - pSGLD with one draw: the released draw is a sample of the tempered posterior, whose covariance
    (tau H + I/s^2)^-1 is at most the prior's s^2 I: the only public bound, so a one-draw interval is as wide
    as the prior; with k > 1 draws (each at epsilon/k, charged epsilon in total by sequential composition)
    the interval uses the draws' own spread and a t distribution with k - 1 degrees of freedom instead.

Interval of coefficient j: [w~_j - q_975(e_j), w~_j - q_025(e_j)] from the simulated errors e; the
noise-calibrated Wald test of beta_j = 0 is the share of simulated errors at least as large as |w~_j|
(a simulated null, so the heavy tails of the noise are kept). Everything is reported in the
covariates' original units, with odds ratios exp(beta).

Objective perturbation with an information share rho (Wang, Kifer and Lee 2019) also releases a noisy
information matrix H~ = H(w~) + E at rho epsilon (dpsurv_core.regression.mechanisms); the interval then draws
H_r = H~ - E_r (E_r from the public noise law: H's flat-prior posterior), floors its eigenvalues at 0, and uses
A_r = H_r + n Lambda' I in the noise Jacobian -A_r^-1 b_r and the sandwich A_r^-1 H_r A_r^-1 in place of the bounds.
That flat-prior posterior is honest but far too wide at n = 2,000 (docs/coverage-models.md): the noise on the
off-diagonal entries couples each covariate with the baseline's weakly identified spline directions, and the
posterior carries that noise twice (once in H~, once in E_r). The level is therefore calibrated (Beran 1987,
prepivoting) in the plug-in world whose information matrix is H~ floored at 0: there the error's law is known, a
noisy matrix of that world is drawn K times, each gets its own posterior interval, and the nominal level is the
smallest whose intervals cover the plug-in world's error in 95% of the worlds; the released interval (errors,
p-values, sign flips) is the posterior's at that level, never wider than the public bound's. Post-processing:
H~, w~ and the public noise laws only, seeded from the release.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special, stats

from dpsurv_core.plain_numbers import format_ratio, format_ratio_ci, plain_number
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.regression.mechanisms import (
    PSGLD,
    ObjectivePerturbation,
    OutputPerturbation,
    RegressionResult,
    _RegressionMechanism,
    sphere_noise,
    symmetric_from_vector,
    symmetric_size,
)
from dpsurv_core.regression.model import Fit, fit_nonprivate

if TYPE_CHECKING:  # types only: a record's reader imports this module with no data module in reach
    from dpsurv_core.regression.person_period import PersonPeriod

LEVEL = 0.95
SIMULATIONS = 4000
EPOCHS_PER_DRAW = 6  # pSGLD: kept epochs per released draw (5 draws on the default 30 covered 93-95%, 10 on 30 90-92%, 10 on 90 97%)
RATIO_KIND = "odds ratio"  # the discrete-time model is a logistic regression on the person-period rows
FLIP_SHARE = 0.2  # a sign flipping in at least this share of noise draws is reported
WIDE_RATIO = 4.0  # an OR/HR interval with upper / lower above this is "wide"
# an OR/HR interval that excludes 1 with upper / lower above this says nothing of the effect's size: at n = 2,000 the
# output perturbation releases whose interval excluded 1 were the noise's tail (ends e^60 apart) and all of them missed
# the coefficient the non-private fit converges to (benchmarks/model_validity.py)
SIZE_RATIO = 100.0
SAMPLING_NOTE = ("only public quantities enter: the sampling part is the bound 1/(4 n Lambda) on the ridge sandwich, "
                 "which holds for every data set (conservative)")
METHODS = {
    OutputPerturbation: "public bound on the sandwich variance plus the output noise drawn from its public law "
                        "(norm Gamma(d, Delta/eps), uniform direction); {n} simulated errors, percentile {level:.0%} "
                        "interval; Wald p-values from the simulated null; " + SAMPLING_NOTE,
    ObjectivePerturbation: "public bound on the sandwich variance plus the objective noise to first order, "
                           "bounded by b / (n Lambda') with b from its public law; {n} simulated errors, percentile "
                           "{level:.0%} interval; Wald p-values from the simulated null; " + SAMPLING_NOTE,
    PSGLD: "one draw: the tempered posterior's covariance bounded by the prior's s^2 I (the only public bound; release "
           "several draws with --draws for an interval from their spread); {n} simulated errors, percentile {level:.0%} "
           "interval; Wald p-values from the simulated null",
}
METHOD_INFORMATION = ("objective noise to first order, -(H + n Lambda' I)^-1 b, and the ridge sandwich, with H drawn from its "
                      "posterior given the released noisy information matrix (share {rho:g} of epsilon: {eh:.3g} on H, "
                      "{eo:.3g} on the coefficients) and its public noise law, eigenvalues floored at 0; {n} simulated "
                      "errors, percentile interval at the level calibrated (Beran 1987) to cover {level:.0%} in the "
                      "plug-in world of the released matrix ({worlds} worlds of {inner} draws; levels {alpha}), never "
                      "wider than the public bound's; Wald p-values from the same calibrated simulated null")
CALIBRATION_WORLDS = 200  # noisy information matrices drawn in the plug-in world
CALIBRATION_DRAWS = 200   # posterior draws of H per world
CALIBRATION_GRID = np.linspace(0.5, 0.999, 500)  # candidate nominal levels
METHOD_DRAWS = ("posterior interval from the {k} released draws (each at epsilon/{k}, epsilon charged in total): their "
                "mean, with variance S (1/k + tau_k) from their covariance S (posterior spread over k plus the sampling "
                "variance, tau_k = eps/(2 m B k)); t interval with {df} degrees of freedom; Wald p-values from the same "
                "t law")


def _seed(W: np.ndarray) -> int:
    return int.from_bytes(hashlib.sha256(np.ascontiguousarray(W, dtype=float).tobytes()).digest()[:8], "little")


def information(w: np.ndarray, pp: PersonPeriod) -> np.ndarray:
    """H(w) = sum_rows sigma (1 - sigma) z z^T on the compressed design (the unpenalised observed information)."""
    Z, _, c = pp.compressed
    p = special.expit(Z @ w)
    return (Z * (c * p * (1 - p))[:, None]).T @ Z


@dataclass
class CoefficientInference:
    """Per covariate (original units): estimate, noise-aware interval, p-value, share of sign flips, warnings."""

    names: list[str]
    estimate: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    se: np.ndarray            # standard deviation of the total error (sampling + noise)
    noise_se: np.ndarray      # the noise part alone
    p_value: np.ndarray       # noise-calibrated Wald test of beta = 0
    sign_flip: np.ndarray     # share of noise draws in which the sign is the other one
    method: str
    ratio_kind: str = RATIO_KIND
    p_value_nonprivate: np.ndarray | None = None
    warnings: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)  # covariate -> as readers say it (sex: Female vs Male)

    def label(self, j: int) -> str:
        """Covariate j as the page, the report and the warnings name it: a category against its reference level
        (``sex: Female vs Male``), a numeric covariate by its column (``age``)."""
        return self.labels.get(self.names[j], self.names[j])

    def records(self) -> list[dict[str, Any]]:
        out = []
        for j, name in enumerate(self.names):
            r = {"covariate": name, "coefficient": float(self.estimate[j]), "lower": float(self.lower[j]),
                 "upper": float(self.upper[j]), "ratio": _exp(self.estimate[j]), "ratio_lower": _exp(self.lower[j]),
                 "ratio_upper": _exp(self.upper[j]), "se": float(self.se[j]), "noise_se": float(self.noise_se[j]),
                 "p_value": float(self.p_value[j]), "sign_flip_share": float(self.sign_flip[j])}
            if self.p_value_nonprivate is not None:
                r["p_value_nonprivate"] = float(self.p_value_nonprivate[j])
            out.append(r)
        return out


def _exp(x: float) -> float:
    return float(math.exp(min(float(x), 700.0)))


def sandwich(w: np.ndarray, pp: PersonPeriod, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """(H, A^-1 H A^-1) at w, A = H + n Lambda I (a tiny ridge keeps A invertible when Lambda = 0)."""
    H = information(w, pp)
    A = H + (pp.n_public * lam + 1e-9) * np.eye(pp.dim)
    Ainv = np.linalg.inv(A)
    return H, Ainv @ H @ Ainv


def _sampling_bound(pp: PersonPeriod | PublicDesign, lam: float) -> float:
    """A public bound on the ridge fit's sampling variance per coordinate (normalised scale): the sandwich
    A^-1 H A^-1 with A = H + n Lambda I has eigenvalues h / (h + n Lambda)^2 <= 1 / (4 n Lambda) whatever the
    information H, so the bound needs only n and Lambda. Tight when h is near n Lambda, conservative otherwise."""
    return 1.0 / (4.0 * pp.n_public * lam)


def _psd_floor(H: np.ndarray, floor: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Eigen-decomposition of symmetric matrices (..., d, d) with the eigenvalues raised to ``floor``: (h, V) with
    H_floored = V diag(h) V^T (post-processing that makes a noisy information matrix PSD)."""
    h, V = np.linalg.eigh(0.5 * (H + np.swapaxes(H, -1, -2)))
    return np.maximum(h, floor), V


def information_errors(mech: ObjectivePerturbation, H_released: np.ndarray, pp: PersonPeriod | PublicDesign, m: int, seed: int
                       ) -> tuple[np.ndarray, np.ndarray]:
    """(total errors, noise errors) of objective perturbation with a released noisy information matrix H~.

    The unknown H is drawn from its flat-prior posterior given H~ and the public noise law, H_r = H~ - E_r, and
    made PSD by flooring its eigenvalues at 0 (post-processing). With A_r = H_r + n Lambda' I the first-order noise
    error is -A_r^-1 b_r (b_r from the objective noise's law) and the sampling error N(0, A_r^-1 H_r A_r^-1) (the
    ridge sandwich). Since A_r >= n Lambda' I no draw is wider than the public bound. Measured alternatives
    (docs/coverage-models.md): the plug-in H~ (floored) covered 90% with a type-I error of 7.5% at n = 200,
    epsilon 1; a 95% lower confidence bound H~ - q I was honest but no narrower than the public bound at n = 200."""
    noise = SimulationNoise(seed)
    d = pp.dim
    c = pp.n_public * (mech.lam + mech.extra_ridge)
    b = sphere_noise(noise, d, mech.noise_scale, m)
    E = symmetric_from_vector(sphere_noise(noise, symmetric_size(d), mech.information_noise_scale, m), d)
    h, V = _psd_floor(H_released[None] - E)
    Vt_b = np.einsum("rji,rj->ri", V, b)  # V_r^T b_r
    e_noise = -np.einsum("rij,rj->ri", V, Vt_b / (h + c))
    z = noise.standard_normal((m, d))
    e_samp = np.einsum("rij,rj->ri", V, z * np.sqrt(h) / (h + c))
    return e_noise + e_samp, e_noise


def _scales(h: np.ndarray, V: np.ndarray, c: float) -> tuple[np.ndarray, np.ndarray]:
    """Per coordinate j, for H = V diag(h) V^T and A = H + c I (batched over leading axes): a_j = ||A^-1 e_j|| (the
    first-order noise error -(A^-1 b)_j of an isotropic b has the law of a_j b_1) and s_j = sqrt((A^-1 H A^-1)_jj)."""
    V2 = V ** 2
    a = np.sqrt(np.einsum("...ji,...i->...j", V2, 1.0 / (h + c) ** 2))
    s = np.sqrt(np.einsum("...ji,...i->...j", V2, h / (h + c) ** 2))
    return a, s


def _calibrated_level(mech: ObjectivePerturbation, H_released: np.ndarray, pp: PersonPeriod | PublicDesign, m: int, seed: int,
                     level: float = LEVEL, worlds: int = CALIBRATION_WORLDS, draws: int = CALIBRATION_DRAWS,
                     grid: np.ndarray = CALIBRATION_GRID) -> np.ndarray:
    """Per coordinate, the nominal level at which :func:`information_errors`' interval covers ``level`` of the
    plug-in world (Beran 1987).

    World: H0 = H~ floored at 0 is the information matrix, so the error of coordinate j is a0_j b_1 + s0_j z
    (:func:`_scales`; b_1 one coordinate of the objective noise, z standard normal). A release of that world gives
    H0 + E'_k (k = 1..``worlds``); its interval draws H_kl = floor(H0 + E'_k - E''_kl) (l = 1..``draws``), as
    :func:`information_errors` does. Its coverage at nominal level g is the mean over k of
    P(|a0 b_1 + s0 z| <= the g quantile of |a_kl b_kl + s_kl z_kl| over l); the smallest g on ``grid`` reaching
    ``level`` is returned (the grid's top when none does)."""
    noise = SimulationNoise(np.random.SeedSequence([seed, 1]))
    d = pp.dim
    c = pp.n_public * (mech.lam + mech.extra_ridge)
    D = symmetric_size(d)
    sc = mech.information_noise_scale
    h0, V0 = _psd_floor(H_released)
    H0 = (V0 * h0) @ V0.T
    a0, s0 = _scales(h0, V0, c)
    b1 = sphere_noise(noise, d, mech.noise_scale, m)[:, :1]  # one coordinate of the isotropic objective noise
    truth = np.sort(np.abs(a0 * b1 + s0 * noise.standard_normal((m, 1))), axis=0)  # (m, d): the world's |error|
    E1 = symmetric_from_vector(sphere_noise(noise, D, sc, worlds), d)
    E2 = symmetric_from_vector(sphere_noise(noise, D, sc, worlds * draws), d).reshape(worlds, draws, d, d)
    hk, Vk = _psd_floor(H0[None, None] + E1[:, None] - E2)
    ak, sk = _scales(hk, Vk, c)  # (worlds, draws, d)
    bk = sphere_noise(noise, d, mech.noise_scale, worlds * draws)[:, :1].reshape(worlds, draws, 1)
    ek = np.abs(ak * bk + sk * noise.standard_normal((worlds, draws, 1)))
    Q = np.quantile(ek, grid, axis=1)  # (levels, worlds, d): each world's interval half-width per level
    cover = np.stack([np.searchsorted(truth[:, j], Q[..., j], side="right") for j in range(d)], -1).mean(1) / m
    ok = cover >= level
    return grid[np.where(ok.any(0), ok.argmax(0), len(grid) - 1)]


def calibrated_information_errors(mech: ObjectivePerturbation, H_released: np.ndarray, pp: PersonPeriod | PublicDesign, m: int,
                                  seed: int, level: float = LEVEL) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(total errors, noise errors, calibrated levels): :func:`information_errors`' draws, each coordinate scaled by
    kappa_j = (its |error|'s quantile at the calibrated level) / (its quantile at ``level``), so the ``level``
    percentile interval of the scaled draws is the posterior's interval at the calibrated level; kappa_j is capped
    so that no interval is wider than the public bound's (:func:`simulated_errors`)."""
    err, e_noise = information_errors(mech, H_released, pp, m, seed)
    alpha = _calibrated_level(mech, H_released, pp, m, seed, level)
    absr = np.abs(err)
    q = np.quantile(absr, level, axis=0)
    q_safe = np.where(q > 0, q, 1.0)
    kappa = np.array([np.quantile(absr[:, j], alpha[j]) for j in range(pp.dim)]) / q_safe
    noise = SimulationNoise(np.random.SeedSequence([seed, 2]))
    c = pp.n_public * (mech.lam + mech.extra_ridge)
    public = np.abs(-sphere_noise(noise, pp.dim, mech.noise_scale, m) / c
                    + noise.standard_normal((m, pp.dim)) * math.sqrt(_sampling_bound(pp, mech.lam + mech.extra_ridge)))
    kappa = np.minimum(kappa, np.quantile(public, level, axis=0) / q_safe)
    kappa = np.where(q > 0, kappa, 1.0)  # no error at all (no noise, no information): nothing to scale
    return err * kappa, e_noise * kappa, alpha


def simulated_errors(mech: _RegressionMechanism, w: np.ndarray, pp: PersonPeriod | PublicDesign, m: int, seed: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """(total errors, noise errors), each (m, dim), on the normalised scale, for one released w (see module doc).

    Only public quantities enter (n, Lambda, the noise law): the data's information matrix would leak, so it is
    replaced by the bounds that hold for every information matrix (conservative intervals). Objective perturbation
    with a released information matrix: :func:`information_errors`."""
    noise = SimulationNoise(seed)
    d = pp.dim
    if isinstance(mech, PSGLD):
        # the tempered posterior's covariance (tau H + I/s^2)^-1 is at most the prior's s^2 I; nothing tighter is
        # public for one draw (release several draws for an interval from their spread)
        e_noise = noise.standard_normal((m, d)) * mech.prior_sd
        return e_noise, e_noise
    assert isinstance(mech, (OutputPerturbation, ObjectivePerturbation))  # the other mechanisms with a ridge
    lam = mech.lam
    b = sphere_noise(noise, d, mech.noise_scale, m)
    if isinstance(mech, ObjectivePerturbation):
        lam_total = lam + mech.extra_ridge
        # w~ - w*(Lambda') = -(H + n Lambda' I)^-1 b; b is isotropic, so each coordinate's spread is at most that of
        # b / (n Lambda')
        e_noise = -b / (pp.n_public * lam_total)
        samp = _sampling_bound(pp, lam_total)
    else:
        e_noise = b
        samp = _sampling_bound(pp, lam)
    e_samp = noise.standard_normal((m, d)) * math.sqrt(samp)
    return e_noise + e_samp, e_noise


def nonprivate_fit(pp: PersonPeriod) -> Fit:
    """``fit_nonprivate(pp, 0.0)`` (the maximum-likelihood fit and its Wald standard errors), computed once per design
    and kept on it: it depends on neither the mechanism nor epsilon, so the previews of several fits, and the reruns
    of a page that keeps its design, share one L-BFGS fit (the same call on the same rows, so the same numbers)."""
    fit = pp.__dict__.get("_nonprivate_fit")
    if fit is None:
        fit = fit_nonprivate(pp, 0.0)
        pp.__dict__["_nonprivate_fit"] = fit
    return fit


def report_table(outputs: dict[str, Any]) -> Any:
    """A regression record's ``intervals`` as the report shows them (first trial), in the page's words and numbers:
    each covariate by its label (``sex: Female vs Male``), the ratio named (odds ratio) with its interval by
    :func:`format_ratio_ci` ("below 0.001", "above 1,000", no scientific notation), the coefficient (log ratio) by
    :func:`plain_number`, the calibrated p-value as the page prints it and the share of sign flips in percent."""
    import pandas as pd

    from dpsurv_core.plain_numbers import p_value

    kind = str(outputs.get("ratio_kind") or RATIO_KIND)
    rows = []
    for r in outputs.get("intervals") or []:
        row = {"covariate": r.get("covariate_label", r.get("covariate")),
               f"coefficient (log {kind})": plain_number(r["coefficient"], 4) if "coefficient" in r else "–",
               f"{kind} (95% CI)": format_ratio_ci(r.get("ratio", math.nan), r.get("ratio_lower"), r.get("ratio_upper"))}
        if "p_value" in r:
            row["p (calibrated)"] = p_value(r["p_value"]) if r["p_value"] is not None else "–"
        if "sign_flip_share" in r:
            row["sign flips in draws"] = f"{r['sign_flip_share']:.0%}" if r["sign_flip_share"] is not None else "–"
        rows.append(row)
    return pd.DataFrame(rows)


def labelled_quantities(records: list[dict[str, Any]], outputs: Any) -> list[dict[str, Any]]:
    """The released numbers of a regression record (``coefficients.sex=Female``) with each covariate by the label its
    record keeps (``coefficients.sex: Female vs Male``), as the report's other tables and warnings name it; the
    records of other analyses are returned as they are."""
    intervals = outputs.get("intervals") if isinstance(outputs, dict) else None
    labels = {r["covariate"]: r["covariate_label"] for r in intervals or []
              if isinstance(r, dict) and "covariate" in r and "covariate_label" in r}
    if not labels:
        return records
    rename: dict[Any, str] = {f"coefficients.{k}": f"coefficients.{v}" for k, v in labels.items()}
    return [r | {"quantity": rename.get(r.get("quantity"), r.get("quantity"))} for r in records]


@dataclass(frozen=True)
class PublicDesign:
    """What the intervals of a released draw read about its design, all of it public: the covariate columns'
    ``names``, the ``factors`` to original units (:func:`~dpsurv_core.regression.design.original_factors`), the
    dimension of w (covariates plus spline) and the declared normaliser ``n_public``. A release record's reader
    builds it from the record's public inputs; :meth:`of` takes it from a design."""

    names: tuple[str, ...]
    factors: np.ndarray
    dim: int
    n_public: int

    @property
    def p(self) -> int:
        return len(self.names)

    @classmethod
    def of(cls, pp: PersonPeriod) -> PublicDesign:
        return cls(tuple(pp.encoding.names), pp.encoding.to_original, pp.dim, pp.n_public)


def coefficient_inference(mech: _RegressionMechanism, release: RegressionResult, trial: int = 0,
                          simulations: int = SIMULATIONS, level: float = LEVEL,
                          nonprivate: bool = False, labels: dict[str, str] | None = None) -> CoefficientInference:
    """Noise-aware intervals, calibrated Wald p-values, sign-flip shares and warnings for one released draw.

    ``nonprivate=True`` (previews only: it reads the data) adds the non-private Wald p-value of the MLE. ``labels``
    names the covariates in the warnings as readers say them (``sex: Female vs Male`` for the indicator
    ``sex=Female``; :attr:`~dpsurv_core.data.labels.Categories.names`). Everything but the non-private p-value is
    :func:`draw_inference` of the released draw and public values: what a release record's reader computes.

    Parameters
    ----------
    mech : OutputPerturbation, ObjectivePerturbation or PSGLD
        The mechanism that released.
    release : RegressionResult
        Its release.
    trial : int, default 0
        The draw read.
    simulations : int, default 4000
        Simulated draws of the noise for the intervals.
    level : float, default 0.95
        Confidence level.
    nonprivate : bool, default False
        Add the non-private Wald p-value (reads the data: previews only).
    labels : dict, optional
        Covariate names as readers say them.

    Returns
    -------
    CoefficientInference
        The intervals, p-values, sign-flip shares and warnings.
    """
    pp = release.pp
    draws = release.diagnostics.get("draws_W")
    info = release.diagnostics.get("information")
    out = draw_inference(mech, PublicDesign.of(pp), release.W[trial],
                         None if info is None else info[trial], None if draws is None else draws[trial],
                         simulations, level, labels)
    if nonprivate:
        out.p_value_nonprivate = nonprivate_p_values(pp)
    return out


def nonprivate_p_values(pp: PersonPeriod) -> np.ndarray | None:
    """The ordinary Wald p-values of the non-private maximum-likelihood fit (None when its information matrix is
    singular): they read the data, so a preview or a simulation may show them beside the private ones, never a
    release."""
    fit = nonprivate_fit(pp)
    if fit.se is None:
        return None
    p = pp.p
    z = fit.beta / np.where(fit.se[:p] > 0, fit.se[:p], np.nan)
    return 2 * stats.norm.sf(np.abs(z))


def draw_inference(mech: _RegressionMechanism, design: PublicDesign, w: np.ndarray, information: np.ndarray | None = None,
                   draws: np.ndarray | None = None, simulations: int = SIMULATIONS, level: float = LEVEL,
                   labels: dict[str, str] | None = None) -> CoefficientInference:
    """Noise-aware intervals, calibrated Wald p-values, sign-flip shares and warnings of one released draw ``w``
    (and, objective perturbation with an information share, its released noisy ``information`` matrix; pSGLD with
    several draws, the released ``draws``, shape (k, dim)), from the mechanism's public noise law and the public
    ``design`` only: post-processing, seeded from the released values, so the same release always gets the same
    numbers (:mod:`dpsurv_core.regression.readout` recomputes them from a record)."""
    p = design.p
    f = np.asarray(design.factors, dtype=float)
    a = (1.0 - level) / 2.0
    k_draws = int(np.shape(draws)[0]) if isinstance(mech, PSGLD) and draws is not None else 1
    if k_draws > 1:
        D = np.asarray(draws, dtype=float)  # (k, dim)
        k = D.shape[0]
        w = D.mean(axis=0)
        S = np.cov(D.T)
        assert isinstance(mech, PSGLD)  # k_draws > 1 only for PSGLD
        tau_k = mech.temperature / k
        se_n = np.sqrt(np.diag(S) / k)[:p] * np.abs(f)
        se = np.sqrt(np.diag(S) * (1.0 / k + tau_k))[:p] * np.abs(f)
        est = w[:p] * f
        tq = stats.t.ppf(1 - a, k - 1)
        lower, upper = est - tq * se, est + tq * se
        pv = 2 * stats.t.sf(np.abs(est) / se, k - 1)
        flip = stats.t.sf(np.abs(est) / se, k - 1)
        method = METHOD_DRAWS.format(k=k, df=k - 1)
    else:
        w = np.asarray(w, dtype=float)
        if information is not None and isinstance(mech, ObjectivePerturbation):
            H = np.asarray(information, dtype=float)
            err, e_noise, alpha = calibrated_information_errors(mech, H, design, simulations,
                                                                _seed(np.concatenate([w, H.ravel()])), level)
            method = METHOD_INFORMATION.format(n=simulations, level=level, rho=mech.information_share,
                                               eh=mech.epsilon_information, eo=mech.epsilon_objective,
                                               worlds=CALIBRATION_WORLDS, inner=CALIBRATION_DRAWS,
                                               alpha=", ".join(f"{a:.3g}" for a in alpha[:p]))
        else:
            err, e_noise = simulated_errors(mech, w, design, simulations, _seed(w))
            method = METHODS[type(mech)].format(n=simulations, level=level)
        err, e_noise = err[:, :p] * f, e_noise[:, :p] * f
        est = w[:p] * f
        q_lo, q_hi = np.quantile(err, [a, 1 - a], axis=0)
        lower, upper = est - q_hi, est - q_lo
        se, se_n = err.std(axis=0), e_noise.std(axis=0)
        pv = (np.sum(np.abs(err) >= np.abs(est), axis=0) + 1) / (simulations + 1)
        flip = np.mean(np.sign(est - err) != np.sign(est), axis=0)
    out = CoefficientInference(list(design.names), est, lower, upper, se, se_n, pv, flip, method,
                               labels=dict(labels or {}))
    out.warnings = coefficient_warnings(out)
    if isinstance(mech, (OutputPerturbation, ObjectivePerturbation)):
        out.warnings += _ridge_warning(out, mech.lam + (mech.extra_ridge if isinstance(mech, ObjectivePerturbation)
                                                       else 0.0))
    if isinstance(mech, PSGLD):
        kept = mech.epochs - mech.burn_in
        if k_draws > 1 and kept < EPOCHS_PER_DRAW * k_draws:
            fewer = f"release at most {kept // EPOCHS_PER_DRAW} draws, or " if kept // EPOCHS_PER_DRAW >= 2 else ""
            out.warnings.append(f"pSGLD with {k_draws} draws keeps {kept} epochs of its chain after burn-in: each "
                                f"draw's posterior at epsilon/{k_draws} is flatter than such a chain explores, so the "
                                "draws' spread understates it and the interval is too narrow (10 draws on the default "
                                f"chain covered 90-92% at n = 200); {fewer}keep at least {EPOCHS_PER_DRAW * k_draws} "
                                "epochs after burn-in (for 10 draws --epochs 180 --burn-in 90 covered 97%).")
        if k_draws == 1:
            out.warnings.append("pSGLD with one released draw has no public interval narrower than its prior: release "
                                "two or more draws (--draws, epsilon split between them) to get an interval from their "
                                "spread, or prefer objective perturbation.")
    return out


_ratio = format_ratio  # the name the warnings used


def coefficient_warnings(inf: CoefficientInference) -> list[str]:
    """Plain sentences for coefficients that cannot be read, each saying what to do next."""
    out: list[str] = []
    kind = inf.ratio_kind
    todo = ("spend more epsilon, use a larger cohort (the noise shrinks as 1/n), or fewer covariates and intervals")
    for j in range(len(inf.names)):
        name = inf.label(j)
        lo, hi, est = _exp(inf.lower[j]), _exp(inf.upper[j]), inf.estimate[j]
        said = False
        if lo <= 1.0 <= hi and (lo == 0 or hi / max(lo, 1e-300) > WIDE_RATIO):
            out.append(f"{name}: the {kind} could be anywhere from {_ratio(lo)} to {_ratio(hi)}, which includes 1 (no effect), "
                       f"so this release cannot say whether {name} raises or lowers the risk; {todo}.")
            said = True
        elif lo <= 1.0 <= hi:  # narrow per unit of the covariate, but still compatible with no effect
            out.append(f"{name}: the 95% interval of the {kind}, {_ratio(lo)} to {_ratio(hi)}, includes 1 (no effect), so this "
                       f"release does not show whether {name} raises or lowers the risk.")
            said = True
        elif lo == 0 or hi / lo > SIZE_RATIO:  # excludes 1, but so wide that only the noise's tail lands there
            out.append(f"{name}: the 95% interval of the {kind}, {_ratio(lo)} to {_ratio(hi)}, excludes 1, but its ends are "
                       f"more than a factor of {SIZE_RATIO:g} apart, so this release does not pin down the effect's size; "
                       "with noise this large the releases that land this far from 1 are mostly the noise's tail (the 1 in "
                       f"20 the interval misses), so do not read its direction either without other evidence; {todo}.")
            said = True
        if inf.sign_flip[j] >= FLIP_SHARE:
            out.append(f"{name}: the sign of the coefficient flips in {inf.sign_flip[j]:.0%} of plausible noise draws, "
                       f"so do not read its direction{'' if said else '; ' + todo}.")
        if inf.noise_se[j] > abs(est):
            out.append(f"{name}: the privacy noise (standard deviation {plain_number(inf.noise_se[j])} on the log {kind} "
                       f"scale) is larger than the effect itself ({plain_number(est)}): the number is mostly noise.")
    return out


def _ridge_warning(inf: CoefficientInference, lam: float) -> list[str]:
    """The sentence for the coefficients whose interval is narrow enough to read (no other sentence names them): it is
    an interval of the ridge-penalised coefficient. The ridge Lambda' bounds one subject's influence for the noise, and
    it moves the coefficient away from the unpenalised model's by an amount that does not shrink as n grows while the
    interval does, so at a large n the interval misses the unpenalised coefficient. Measured (benchmarks/model_validity.py,
    group sizes 1:9, n = 100,000, hazard ratio 1.5): objective perturbation at epsilon 2 covered it in 0 of 100
    releases, output perturbation in 12, none with a warning. Nothing public bounds the shift (it needs the data's
    information matrix, which has no public lower bound), so the sentence says it rather than widening the interval."""
    readable = [inf.label(j) for j in range(len(inf.names))
                if not any(w.startswith(f"{inf.label(j)}: ") for w in inf.warnings)]
    if not readable:
        return []
    which = ", ".join(readable)
    return [f"{which}: {'these intervals are' if len(readable) > 1 else 'the interval is'} of the coefficient the "
            f"ridge-penalised fit converges to (Lambda' = {lam:.3g}, which bounds one subject's influence for the noise), "
            "not of the unpenalised model's. The penalty moves a coefficient by an amount that does not shrink with more "
            "subjects and that nothing public bounds: towards 0, and away from it when most subjects sit far from the "
            "middle of the covariate's declared range (10% of the subjects in one group, range 0 to 1: 0.90 against "
            "0.40 unpenalised; the same group declared as a category with the larger group as reference: 0.22). Declare "
            "the range centred on the covariate's typical value, and at this size consider a smaller Lambda (the noise "
            "grows as 1 / (n Lambda))."]


def inference_table(inf: CoefficientInference) -> Any:
    """The columns of :meth:`Fit.table` (coefficient, odds ratio, se, ratio interval) plus the noise-calibrated
    p-value and, in previews, the non-private one."""
    import pandas as pd

    out = pd.DataFrame({"covariate": inf.names, "coefficient": inf.estimate,
                        "odds_ratio": [_exp(v) for v in inf.estimate], "se": inf.se,
                        "lower": [_exp(v) for v in inf.lower], "upper": [_exp(v) for v in inf.upper],
                        "p_value": inf.p_value})
    out["p_value_nonprivate"] = inf.p_value_nonprivate if inf.p_value_nonprivate is not None else np.nan
    return out
