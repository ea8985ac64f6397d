"""Non-private discrete-time survival regression and its Cox baseline (docs/mechanisms.md, Nguyen & Hui 2017, regression sections 3 and 6.4).

The fit minimises the regularised logistic loss over the person-period rows

    J(w) = (1/n) sum_i L_i(w) + (Lambda / 2) ||w||^2,   L_i(w) = sum_{j <= k_i} log(1 + exp(-(2 y_ij - 1) w . z_ij)),

by L-BFGS (scipy), with n the public normaliser of the design. Lambda = 0 gives the maximum
likelihood fit of the logit model h(j | x) = beta . x + alpha . s(j). Coefficients are reported
in the covariates' original units (beta_original = f * beta_normalised, see
:class:`~dpsurv_core.regression.person_period.Encoding`) with odds ratios exp(beta) and Wald 95% intervals.
The Cox baseline is lifelines' ``CoxPHFitter`` on the same covariates (same reference levels,
same censoring at the horizon); the paper's Table 3 compares them by the relative error
|beta_dt - beta_cox| / |beta_cox| per coefficient.
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import optimize, special

from dpsurv_core.errors import ParameterError

if TYPE_CHECKING:  # types only: the fits take the design as built, so a record's reader can import them data-free
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.regression.person_period import PersonPeriod

Z95 = 1.959963984540054


def check_lambda(lam: float, allow_zero: bool = True) -> float:
    """Lambda >= 0 (> 0 for the private fits, whose sensitivity is 2 c1 / (n Lambda))."""
    try:
        lam = float(lam)
    except (TypeError, ValueError):
        raise ParameterError(f"Lambda must be a number, got {lam!r}.") from None
    if not math.isfinite(lam) or lam < 0 or (lam == 0 and not allow_zero):
        need = "non-negative" if allow_zero else "positive (for example 0.01)"
        raise ParameterError(f"Lambda (the ridge penalty) must be {need}, got {lam!r}.")
    return lam


def objective(w: np.ndarray, pp: PersonPeriod, lam: float, b: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """J(w) + b . w / n and its gradient: (1/n) sum_rows (sigma(z.w) - y) z + Lambda w + b / n."""
    Z, y, c = pp.compressed
    eta = Z @ w
    n = pp.n_public
    f = c @ np.logaddexp(0.0, -(2.0 * y - 1.0) * eta) / n + 0.5 * lam * (w @ w)
    g = Z.T @ (c * (special.expit(eta) - y)) / n + lam * w
    if b is not None:
        f += b @ w / n
        g = g + b / n
    return float(f), g


def minimise(pp: PersonPeriod, lam: float, b: np.ndarray | None = None, w0: np.ndarray | None = None) -> np.ndarray:
    """argmin_w J(w) + b . w / n by L-BFGS (tight tolerances: the minimiser is accurate to ~1e-8)."""
    x0 = np.zeros(pp.dim) if w0 is None else np.asarray(w0, dtype=float)
    res = optimize.minimize(objective, x0, args=(pp, lam, b), jac=True, method="L-BFGS-B",
                            options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15, "maxcor": 20})
    if not np.all(np.isfinite(res.x)):
        raise ParameterError("The regression did not converge (the covariates may separate events from non-events): "
                             "raise Lambda or remove a covariate.")
    return res.x


def maximum_likelihood(pp: PersonPeriod) -> np.ndarray:
    """``minimise(pp, 0.0)``, the maximum-likelihood w (no ridge), found once per design and kept on it: the
    non-private fit and every private fit without noise (epsilon = inf) return it, so they agree bit for bit."""
    w = pp.__dict__.get("_maximum_likelihood")
    if w is None:
        w = minimise(pp, 0.0)
        pp.__dict__["_maximum_likelihood"] = w
    return w.copy()


def hessian(w: np.ndarray, pp: PersonPeriod) -> np.ndarray:
    """sum_rows sigma (1 - sigma) z z^T (the observed information of the unpenalised sum of losses)."""
    Z, _, c = pp.compressed
    p = special.expit(Z @ w)
    return (Z * (c * p * (1 - p))[:, None]).T @ Z


def subject_losses(W: np.ndarray, pp: PersonPeriod) -> np.ndarray:
    """L_i(w) for every subject; W is (dim,) or (R, dim) -> (n,) or (R, n)."""
    W2 = np.atleast_2d(W)
    eta = pp.Z @ W2.T
    rows = np.logaddexp(0.0, -(2.0 * pp.y - 1.0)[:, None] * eta)
    out = np.add.reduceat(rows, pp.offsets[:-1], axis=0).T
    return out[0] if W.ndim == 1 else out


def subject_gradients(w: np.ndarray, pp: PersonPeriod) -> np.ndarray:
    """grad L_i(w) for every subject, shape (n, dim)."""
    rows = (special.expit(pp.Z @ w) - pp.y)[:, None] * pp.Z
    return np.add.reduceat(rows, pp.offsets[:-1], axis=0)


def subject_hessian_traces(w: np.ndarray, pp: PersonPeriod) -> np.ndarray:
    """tr grad^2 L_i(w) = sum_j sigma (1 - sigma) ||z_ij||^2 for every subject."""
    p = special.expit(pp.Z @ w)
    return np.add.reduceat(p * (1 - p) * np.sum(pp.Z ** 2, axis=1), pp.offsets[:-1])


@dataclass
class Fit:
    """A coefficient vector w = (beta, alpha) with names, and the covariate part in original units."""

    w: np.ndarray
    pp: PersonPeriod = field(repr=False)
    se: np.ndarray | None = None  # standard errors of w (normalised scale), when available

    @property
    def beta(self) -> np.ndarray:
        """Covariate coefficients on the normalised (unit-ball) scale."""
        return self.w[: self.pp.p]

    @property
    def coefficients(self) -> dict[str, float]:
        """Covariate coefficients in original units (log odds ratio per unit, or vs the reference level)."""
        return dict(zip(self.pp.encoding.names, (self.beta * self.pp.encoding.to_original).tolist()))

    def table(self) -> pd.DataFrame:
        """Coefficient, odds ratio, Wald 95% interval and Wald p-value per covariate (original units)."""
        f = self.pp.encoding.to_original
        coef = self.beta * f
        out = pd.DataFrame({"covariate": self.pp.encoding.names, "coefficient": coef, "odds_ratio": np.exp(coef)})
        if self.se is not None:
            se = self.se[: self.pp.p] * f
            out["se"] = se
            out["lower"] = np.exp(coef - Z95 * se)
            out["upper"] = np.exp(coef + Z95 * se)
            with np.errstate(divide="ignore", invalid="ignore"):
                out["p_value"] = 2.0 * special.ndtr(-np.abs(coef / se))  # Wald test of beta = 0
        else:
            out["se"], out["lower"], out["upper"], out["p_value"] = np.nan, np.nan, np.nan, np.nan
        return out


def fit_nonprivate(pp: PersonPeriod, lam: float = 0.0) -> Fit:
    """Minimiser w* of J by L-BFGS, with sandwich standard errors (H + n Lambda I)^-1 H (H + n Lambda I)^-1
    (the inverse observed information when Lambda = 0)."""
    lam = check_lambda(lam)
    return wald_fit(pp, maximum_likelihood(pp) if lam == 0 else minimise(pp, lam), lam)


def wald_fit(pp: PersonPeriod, w: np.ndarray, lam: float = 0.0) -> Fit:
    """The fit at ``w`` (the minimiser of J with ridge ``lam``) with its sandwich standard errors
    (H + n Lambda I)^-1 H (H + n Lambda I)^-1, H the observed information at w."""
    H = hessian(w, pp)
    A = H + pp.n_public * lam * np.eye(pp.dim)
    try:
        Ainv = np.linalg.inv(A)
        cov = Ainv @ H @ Ainv
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = None
    return Fit(w, pp, se)


def cox_frame(cohort: Cohort, pp: PersonPeriod) -> pd.DataFrame:
    """Cox input on the same covariates in original units (same dummies), same complete cases, censored at H."""
    frame = cohort.covariates
    complete = frame[list(dict.fromkeys(c.source for c in pp.encoding.columns))].notna().all(axis=1).to_numpy()
    sub = frame.loc[complete].reset_index(drop=True)
    cols = {}
    for c in pp.encoding.columns:
        cols[c.name] = sub[c.source].to_numpy(dtype=float) if c.kind == "numeric" else \
            (sub[c.source].astype(str).to_numpy() == c.level).astype(float)
    df = pd.DataFrame(cols)
    t = cohort.time[complete]
    df["_time"] = np.minimum(t, pp.horizon)
    df["_event"] = np.where(t <= pp.horizon, cohort.event[complete], 0)
    df.loc[df["_time"] <= 0, "_time"] = 1e-9 * pp.horizon
    return df


@dataclass
class CoxResult:
    coefficients: dict[str, float]
    table: pd.DataFrame
    seconds: float


def fit_cox(cohort: Cohort, pp: PersonPeriod) -> CoxResult:
    """lifelines ``CoxPHFitter`` (Efron ties) on the same covariates: log hazard ratios, HR and 95% CI. Newton's
    iterations run to a step of 1e-10 (lifelines' default 1e-7 stopped ovarian's rx at -0.814453, R's coxph at
    -0.814585)."""
    from lifelines import CoxPHFitter

    df = cox_frame(cohort, pp)
    t0 = _time.perf_counter()
    cph = CoxPHFitter()
    try:
        cph.fit(df, duration_col="_time", event_col="_event", fit_options={"precision": 1e-10})
    except Exception as exc:  # lifelines raises ConvergenceError and friends
        raise ParameterError(f"The Cox model could not be fitted ({type(exc).__name__}): remove a covariate that "
                             "separates the events or is nearly constant.") from None
    seconds = _time.perf_counter() - t0
    s = cph.summary
    names = pp.encoding.names
    table = pd.DataFrame({"covariate": names, "coefficient": s.loc[names, "coef"].to_numpy(),
                          "odds_ratio": s.loc[names, "exp(coef)"].to_numpy(),
                          "se": s.loc[names, "se(coef)"].to_numpy(),
                          "lower": s.loc[names, "exp(coef) lower 95%"].to_numpy(),
                          "upper": s.loc[names, "exp(coef) upper 95%"].to_numpy(),
                          "p_value": s.loc[names, "p"].to_numpy()})
    return CoxResult(dict(zip(names, table["coefficient"].tolist())), table, seconds)


def relative_errors(estimate: dict[str, float], reference: dict[str, float]) -> dict[str, float]:
    """|beta - beta_ref| / |beta_ref| per coefficient (Nguyen & Hui 2017, regression, Table 3)."""
    return {k: abs(estimate[k] - v) / abs(v) if v != 0 else math.inf for k, v in reference.items()}


def mean_relative_error(B: np.ndarray, beta_star: np.ndarray) -> float:
    """MRE = mean over draws of ||beta - beta*|| / ||beta*|| (docs/mechanisms.md); B is (draws, p)."""
    B = np.atleast_2d(B)
    return float(np.mean(np.linalg.norm(B - beta_star, axis=1)) / np.linalg.norm(beta_star))
