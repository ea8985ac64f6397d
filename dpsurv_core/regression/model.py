"""Non-private discrete-time survival regression and its Cox baseline (docs/mechanisms.md, Nguyen & Hui 2017, regression sections 3 and 6.4).

The fit minimises the regularised logistic loss over the person-period rows

    J(w) = (1/n) sum_i L_i(w) + (Lambda / 2) ||w||^2,   L_i(w) = sum_{j <= k_i} log(1 + exp(-(2 y_ij - 1) w . z_ij)),

by L-BFGS (scipy), with n the public normaliser of the design. Lambda = 0 gives the maximum
likelihood fit of the logit model h(j | x) = beta . x + alpha . s(j). Coefficients are reported
in the covariates' original units (beta_original = f * beta_normalised, see
:class:`~dpsurv_core.regression.person_period.Encoding`) with odds ratios exp(beta) and Wald 95% intervals.
The Cox baseline (:mod:`dpsurv_core.regression.cox`: Newton-Raphson on the partial likelihood as R's coxph, Efron
or Breslow ties) is fitted on the same covariates (same reference levels, same censoring at the horizon); the paper's
Table 3 compares them by the relative error
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
from dpsurv_core.regression.cox import CoxModel, check_ties, coxph

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
    (the inverse observed information when Lambda = 0).

    Parameters
    ----------
    pp : PersonPeriod
        The person-period design.
    lam : float, default 0.0
        The ridge penalty Lambda.

    Returns
    -------
    Fit
        The coefficients and their standard errors.
    """
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


def _cox_frame(cohort: Cohort, pp: PersonPeriod) -> pd.DataFrame:
    """Cox input on the same covariates in original units (same dummies), same complete cases, censored at H; the
    subject id of each row in ``_id`` when the cohort has one."""
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
    if cohort.subject is not None:  # the subject of each row: the cluster of the robust variance
        df["_id"] = np.asarray(cohort.subject)[complete]
    return df


@dataclass
class CoxResult:
    """The Cox fit as the CLI and the pages read it: ``table`` (covariate, coefficient, odds_ratio (the hazard
    ratio), se, lower, upper, p_value, and with a cluster robust_se, robust_lower, robust_upper, robust_p_value; NaN
    for a coefficient that was not estimated), the coefficients, the fit's
    global tests (:class:`~dpsurv_core.regression.cox.CoxModel`), the sentences about left-out coefficients and the
    seconds it took."""

    coefficients: dict[str, float]
    table: pd.DataFrame
    seconds: float
    model: CoxModel | None = None
    warnings: list[str] = field(default_factory=list)
    not_estimated: list[str] = field(default_factory=list)


def _no_event_levels(df: pd.DataFrame, pp: PersonPeriod) -> tuple[list[str], list[str]]:
    """The indicator columns whose category had no event (the partial likelihood then increases without bound as
    that coefficient goes to minus infinity: R's coxph reports a huge negative coefficient or NA), and a sentence
    for each. A reference level with no event would send every other level of its covariate to plus infinity: that
    is refused with a sentence naming another reference level."""
    names, sentences = [], []
    events = df["_event"].to_numpy() > 0
    for source, levels in pp.encoding.levels:
        cols = [c for c in pp.encoding.columns if c.source == source and c.kind == "categorical"]
        in_level = {c.name: df[c.name].to_numpy() > 0 for c in cols}
        reference = ~np.any(np.column_stack(list(in_level.values())), axis=1) if cols else np.ones(len(df), bool)
        if not events[reference].any() and any(events[v].any() for v in in_level.values()):
            raise ParameterError(f"No subject in the reference level {levels[0]!r} of {source!r} had an event, so no "
                                 f"hazard ratio against it can be estimated: choose a reference level with events "
                                 f"(--categorical {source}:LEVEL).")
        for c in cols:
            if not events[in_level[c.name]].any():
                names.append(c.name)
                sentences.append(f"No subject in level {c.level!r} of {source!r} ({c.name}) had an event, so its "
                                 "hazard ratio cannot be estimated (R's coxph sends it towards zero): its coefficient "
                                 "is NA, and the other coefficients are those R's coxph converges to, the fit without "
                                 "that level's subjects (who then weigh nothing in any risk set).")
    return names, sentences


def fit_cox(cohort: Cohort, pp: PersonPeriod, ties: str = "efron", robust: bool | None = None) -> CoxResult:
    """The Cox model on the same covariates (:func:`_cox_frame`) by coxph's Newton-Raphson
    (:func:`dpsurv_core.regression.cox.coxph`, Efron or Breslow ties): log hazard ratios, hazard ratios with Wald
    95% intervals exp(beta -/+ 1.96 se), Wald p-values 2 Phi(-|beta / se|) (Therneau & Grambsch 2000). A category
    with no event gets NA with a sentence, and the rest is R's coxph's limit as that coefficient goes to minus infinity:
    the fit without that category's subjects (and its column), whose global tests are reported.

    With a subject id (``robust`` True, or None and some subject has several rows) the model also carries R's
    ``coxph(..., cluster = id)`` robust variance V = D^T D, D the dfbeta residuals summed within subject (Lin & Wei
    1989; Therneau & Grambsch 2000, section 8.2), and the table its standard errors sqrt(V_kk), Wald intervals
    exp(beta -/+ 1.96 sqrt(V_kk)) and p-values 2 Phi(-|beta| / sqrt(V_kk)).

    Parameters
    ----------
    cohort : Cohort
        The data set.
    pp : PersonPeriod
        Its person-period design (for the covariates and their encoding).
    ties : {"efron", "breslow"}, default "efron"
        The handling of tied event times.
    robust : bool, optional
        Add the robust (cluster) variance; default when some subject has several rows.

    Returns
    -------
    CoxResult
        The fit's table, coefficients and global tests.

    References
    ----------
    .. [1] Therneau T. M. & Grambsch P. M. (2000), Modeling Survival Data: Extending the Cox Model, Springer.
    """
    ties = check_ties(ties)
    df = _cox_frame(cohort, pp)
    names = pp.encoding.names
    t0 = _time.perf_counter()
    dropped, warnings = _no_event_levels(df, pp)
    kept = [n for n in names if n not in dropped]
    if not kept:
        raise ParameterError("No covariate is left to fit: every category of the chosen covariates that is not the "
                             "reference had no event.")
    # as that coefficient goes to minus infinity the level's subjects weigh nothing in any risk set: the other
    # coefficients R's coxph converges to are those of the fit without them
    rows = ~df[dropped].to_numpy(dtype=float).any(axis=1) if dropped else np.ones(len(df), dtype=bool)
    cluster = df["_id"].to_numpy()[rows] if "_id" in df else None
    if cluster is not None and robust is None:
        robust = bool(pd.Series(cluster).duplicated().any())
    model = coxph(df["_time"].to_numpy()[rows], df["_event"].to_numpy()[rows], df.loc[rows, kept].to_numpy(dtype=float),
                  ties, cluster=cluster if robust else None)
    seconds = _time.perf_counter() - t0
    est = dict(zip(kept, range(len(kept))))
    coef = np.array([model.coef[est[n]] if n in est else np.nan for n in names])
    se = np.array([model.se[est[n]] if n in est else np.nan for n in names])
    p = np.array([model.p_values[est[n]] if n in est else np.nan for n in names])
    with np.errstate(over="ignore"):
        table = pd.DataFrame({"covariate": names, "coefficient": coef, "odds_ratio": np.exp(coef), "se": se,
                              "lower": np.exp(coef - Z95 * se), "upper": np.exp(coef + Z95 * se), "p_value": p})
        if model.robust_se is not None and model.robust_p_values is not None:
            rse = np.array([model.robust_se[est[n]] if n in est else np.nan for n in names])
            table["robust_se"] = rse
            table["robust_lower"], table["robust_upper"] = np.exp(coef - Z95 * rse), np.exp(coef + Z95 * rse)
            table["robust_p_value"] = [model.robust_p_values[est[n]] if n in est else np.nan for n in names]
    return CoxResult(dict(zip(names, coef.tolist())), table, seconds, model, [*warnings, *model.notes], dropped)


def relative_errors(estimate: dict[str, float], reference: dict[str, float]) -> dict[str, float]:
    """|beta - beta_ref| / |beta_ref| per coefficient (Nguyen & Hui 2017, regression, Table 3)."""
    return {k: abs(estimate[k] - v) / abs(v) if v != 0 else math.inf for k, v in reference.items()}


def mean_relative_error(B: np.ndarray, beta_star: np.ndarray) -> float:
    """MRE = mean over draws of ||beta - beta*|| / ||beta*|| (docs/mechanisms.md); B is (draws, p)."""
    B = np.atleast_2d(B)
    return float(np.mean(np.linalg.norm(B - beta_star, axis=1)) / np.linalg.norm(beta_star))
