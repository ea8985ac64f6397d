"""Cox proportional hazards by Newton-Raphson on the partial likelihood, iterated as R's ``coxph`` (Therneau &
Grambsch 2000, sections 3.2 and 3.3; Efron 1977 and Breslow 1974 for tied times).

For subjects i with time t_i, event d_i and covariates x_i, r_i = exp(x_i . beta). At each distinct event time with
m tied deaths D, risk set R (every subject with t >= that time), S_k = sum_{i in R} r_i x_i^{(k)} (k = 0, 1, 2 for
the weight, the vector and the outer product) and A_k the same sums over D alone, the log partial likelihood is

    Breslow:  l(beta) = sum_times [ sum_{i in D} x_i . beta - m log S_0 ],
    Efron:    l(beta) = sum_times [ sum_{i in D} x_i . beta - sum_{j=0}^{m-1} log(S_0 - (j/m) A_0) ],

(Breslow is Efron with every j/m replaced by 0). With denominators s_j = S_0 - f_j A_0, means e_j = (S_1 - f_j A_1)
/ s_j and f_j = j/m (Efron) or 0 (Breslow), the score and the information are

    U(beta) = sum_times [ sum_{i in D} x_i - sum_j e_j ],
    I(beta) = sum_times sum_j [ (S_2 - f_j A_2) / s_j - e_j e_j^T ].

The iteration is coxph's (Therneau & Grambsch 2000, section 3.3; R survival's ``coxph.fit``): start at beta = 0,
step beta + I^-1 U, halve a step that lowers the log likelihood, and stop when the relative change of the log
likelihood is at most 1e-9; dpsurv then takes up to three more Newton steps until a step no longer moves beta (a
stricter rule, so the numbers are those of coxph with ``eps`` tightened, not the ones its default rule happens to stop
at). The variance is I^-1 at
the estimate; the three global tests are R's: likelihood ratio 2 (l(beta) - l(0)), Wald beta^T I beta and score
U(0)^T I(0)^-1 U(0), each chi-square on p degrees of freedom. Covariates are centred at their means first, as coxph
does (the partial likelihood is unchanged, the arithmetic better conditioned).

With several rows per subject (a ``cluster`` id for each row) the robust variance is R's ``coxph(..., cluster = id)``
(Lin & Wei 1989; Therneau & Grambsch 2000, sections 7.2 and 8.2): the score residual of row i (Efron's, which is
Breslow's with every f_j = 0) is

    L_i = d_i [ x_i - (1/m) sum_j e_j + r_i sum_j f_j (x_i - e_j) / s_j ]      (j over the deaths at t_i)
          - r_i sum_{deaths j with t_j <= t_i} (x_i - e_j) / s_j,

so that sum_i L_i = U(beta); the dfbeta residuals are D_i = L_i I^-1, summed within each cluster c to D_c, and the
robust variance is V = sum_c D_c^T D_c (the sandwich I^-1 B I^-1, B the cluster sum of score outer products). As in
R, the robust Wald test is beta^T V^-1 beta and each coefficient's robust z is beta / sqrt(V_kk); the robust score
test is U(0)^T B_0^-1 U(0), B_0 = sum_c L_c(0)^T L_c(0) with the score residuals at beta = 0 summed within cluster.
The likelihood-ratio and score tests and I^-1 are those of the fit that treats the rows as independent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special, stats

from dpsurv_core.errors import ParameterError

TIES = ("efron", "breslow")
EPS = 1e-9  # coxph's default convergence rule on the relative change of the log likelihood
MAX_ITER = 60


@dataclass(frozen=True)
class GlobalTest:
    """A chi-square test of beta = 0 on ``df`` degrees of freedom."""

    statistic: float
    df: int

    @property
    def p_value(self) -> float:
        return float(stats.chi2.sf(self.statistic, self.df)) if self.df > 0 else 1.0

    def to_dict(self) -> dict[str, float | int]:
        return {"statistic": self.statistic, "df": self.df, "p_value": self.p_value}


@dataclass
class CoxModel:
    """A converged fit: coefficients beta, their variance I^-1, the log partial likelihood at 0 and at beta, the
    three global tests and the iterations used."""

    coef: np.ndarray
    var: np.ndarray
    loglik: tuple[float, float]
    score_test: GlobalTest
    wald_test: GlobalTest
    likelihood_ratio_test: GlobalTest
    iterations: int
    ties: str
    n: int
    events: int
    notes: list[str] = field(default_factory=list)
    robust_var: np.ndarray | None = None  # V = D^T D over clusters (module docstring), with a cluster only
    robust_wald_test: GlobalTest | None = None
    robust_score_test: GlobalTest | None = None
    clusters: int | None = None

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.var))

    @property
    def z(self) -> np.ndarray:
        return self.coef / self.se

    @property
    def p_values(self) -> np.ndarray:
        """Wald p-value of each coefficient, 2 Phi(-|beta / se|)."""
        return 2.0 * special.ndtr(-np.abs(self.z))

    @property
    def robust_se(self) -> np.ndarray | None:
        """sqrt(diag V), the robust (cluster) standard errors; None without a cluster."""
        return None if self.robust_var is None else np.sqrt(np.diag(self.robust_var))

    @property
    def robust_p_values(self) -> np.ndarray | None:
        """2 Phi(-|beta / robust se|), the p-values R's coxph reports with a cluster; None without one."""
        se = self.robust_se
        if se is None:
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return 2.0 * special.ndtr(-np.abs(self.coef / se))


def check_ties(ties: str) -> str:
    """'efron' (R's default) or 'breslow'."""
    t = str(ties).strip().lower()
    if t not in TIES:
        raise ParameterError(f"Ties must be efron or breslow, got {ties!r}.")
    return t


class _Design:
    """The data sorted by time with the per-death quantities that do not depend on beta."""

    def __init__(self, time: np.ndarray, event: np.ndarray, X: np.ndarray, ties: str) -> None:
        order = np.lexsort((-np.asarray(event, dtype=float), np.asarray(time, dtype=float)))
        self.order = order
        self.t = np.asarray(time, dtype=float)[order]
        self.d = np.asarray(event, dtype=float)[order] > 0
        X = np.asarray(X, dtype=float)[order]
        self.X = X - X.mean(axis=0) if X.size else X
        n = self.t.size
        # risk set of a time: every subject from the first with that time on (times ascending)
        _, first, counts = np.unique(self.t, return_index=True, return_counts=True)
        self.first = first  # index of each distinct time's first subject
        self.group = np.repeat(np.arange(first.size), counts)  # each subject's distinct-time index
        dead = np.flatnonzero(self.d)
        self.dead = dead
        g = self.group[dead]
        m = np.bincount(g, minlength=first.size)
        rank = np.arange(dead.size) - np.searchsorted(dead, self.first[g])  # 0..m-1 among the deaths at that time
        self.death_group = g
        self.frac = rank / m[g] if ties == "efron" else np.zeros(dead.size)
        self.n = n

    def evaluate(self, beta: np.ndarray, derivatives: bool = True
                 ) -> tuple[float, np.ndarray | None, np.ndarray | None]:
        """l(beta) and, when asked, U(beta) and I(beta) (module docstring)."""
        X, dead, g, f = self.X, self.dead, self.death_group, self.frac
        eta = X @ beta
        r = np.exp(eta)
        # sums over each risk set: reverse cumulative sums read at each distinct time's first subject
        S0 = np.cumsum(r[::-1])[::-1][self.first][g]
        A0 = np.bincount(self.group[dead], weights=r[dead], minlength=self.first.size)[g]
        den = S0 - f * A0
        loglik = float(eta[dead].sum() - np.log(den).sum())
        if not derivatives:
            return loglik, None, None
        rX = r[:, None] * X
        S1 = np.cumsum(rX[::-1], axis=0)[::-1][self.first][g]
        A1 = _group_sum(rX[dead], self.group[dead], self.first.size)[g]
        e = (S1 - f[:, None] * A1) / den[:, None]
        U = X[dead].sum(axis=0) - e.sum(axis=0)
        rXX = rX[:, :, None] * X[:, None, :]
        S2 = np.cumsum(rXX[::-1], axis=0)[::-1][self.first][g]
        A2 = _group_sum(rXX[dead], self.group[dead], self.first.size)[g]
        info = ((S2 - f[:, None, None] * A2) / den[:, None, None]).sum(axis=0) - e.T @ e
        return loglik, U, info


    def score_residuals(self, beta: np.ndarray) -> np.ndarray:
        """The score residual L_i of every row (sorted order), shape (n, p) (module docstring)."""
        X, dead, g, f = self.X, self.dead, self.death_group, self.frac
        size = self.first.size
        r = np.exp(X @ beta)
        S0 = np.cumsum(r[::-1])[::-1][self.first][g]
        A0 = np.bincount(self.group[dead], weights=r[dead], minlength=size)[g]
        den = S0 - f * A0
        rX = r[:, None] * X
        S1 = np.cumsum(rX[::-1], axis=0)[::-1][self.first][g]
        A1 = _group_sum(rX[dead], self.group[dead], size)[g]
        e = (S1 - f[:, None] * A1) / den[:, None]
        m = np.bincount(g, minlength=size)
        # per distinct time: sum_j 1/s_j, sum_j e_j/s_j, sum_j f_j/s_j, sum_j f_j e_j/s_j, sum_j e_j / m
        H = np.bincount(g, weights=1.0 / den, minlength=size)
        G = _group_sum(e / den[:, None], g, size)
        F = np.bincount(g, weights=f / den, minlength=size)
        FG = _group_sum(f[:, None] * e / den[:, None], g, size)
        mean_e = _group_sum(e, g, size) / np.maximum(m, 1)[:, None]
        gi = self.group
        resid = -r[:, None] * (X * np.cumsum(H)[gi][:, None] - np.cumsum(G, axis=0)[gi])
        rd = r[dead][:, None]
        resid[dead] += X[dead] - mean_e[gi[dead]] + rd * (X[dead] * F[gi[dead]][:, None] - FG[gi[dead]])
        return resid


def _cluster_sums(values: np.ndarray, cluster: np.ndarray) -> np.ndarray:
    _, inverse = np.unique(cluster, return_inverse=True)
    return _group_sum(values, inverse.ravel(), int(inverse.max()) + 1)


def _quadratic(matrix: np.ndarray, u: np.ndarray) -> float:
    """u^T matrix^-1 u (NaN when the matrix is singular, as with fewer clusters than coefficients)."""
    try:
        return float(u @ _solve(matrix, u))
    except ParameterError:
        return math.nan


def _group_sum(values: np.ndarray, groups: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros((size, *values.shape[1:]))
    np.add.at(out, groups, values)
    return out


def _solve(info: np.ndarray, u: np.ndarray) -> np.ndarray:
    try:
        c = np.linalg.cholesky(info)
    except np.linalg.LinAlgError:
        raise ParameterError("The Cox information matrix is singular (two covariates carry the same information, or "
                             "one separates the events): remove a covariate.") from None
    return np.linalg.solve(c.T, np.linalg.solve(c, u))


def coxph(time: np.ndarray, event: np.ndarray, X: np.ndarray, ties: str = "efron", eps: float = EPS,
          max_iter: int = MAX_ITER, cluster: np.ndarray | None = None) -> CoxModel:
    """Maximise the log partial likelihood by coxph's Newton-Raphson (module docstring); ``X`` is (n, p). With
    ``cluster`` (a subject id for each row) the model also carries R's robust variance and robust Wald and score
    tests (module docstring; ``coxph(..., cluster = id)``).

    Parameters
    ----------
    time, event : numpy.ndarray
        Each row's time and event indicator (1 = event).
    X : numpy.ndarray
        Covariates, shape (n, p).
    ties : {"efron", "breslow"}, default "efron"
        The handling of tied event times.
    eps : float, default 1e-09
        Convergence tolerance on the relative change of the log partial likelihood.
    max_iter : int, default 60
        Newton-Raphson iterations at most.
    cluster : numpy.ndarray, optional
        A subject id per row, for the robust variance.

    Returns
    -------
    CoxModel
        Coefficients, variance, log-likelihoods and the global tests.

    References
    ----------
    .. [1] Therneau T. M. & Grambsch P. M. (2000), Modeling Survival Data: Extending the Cox Model, Springer.
    .. [2] Lin D. Y. & Wei L. J. (1989), The robust inference for the Cox proportional hazards model, JASA 84,
       1074-1078.
    """
    ties = check_ties(ties)
    X = np.asarray(X, dtype=float).reshape(len(time), -1)
    p = X.shape[1]
    if np.asarray(event).astype(bool).sum() == 0:
        raise ParameterError("No subject had an event, so the Cox model has nothing to fit.")
    des = _Design(time, event, X, ties)
    beta = np.zeros(p)
    l0, u, info = des.evaluate(beta)
    assert u is not None and info is not None
    step = _solve(info, u)
    score = float(u @ step)
    loglik, it, halving, converged = l0, 0, 0, False
    notes: list[str] = []
    while it < max_iter:
        it += 1
        new = beta + step
        new_lik, new_u, new_info = des.evaluate(new)
        if not math.isfinite(new_lik) or new_lik < loglik:  # coxph: halve the step back towards beta
            halving += 1
            step = step / 2.0
            if halving > 60:
                break
            continue
        change = abs(1.0 - loglik / new_lik) if new_lik != 0 else abs(new_lik - loglik)
        beta, loglik, u, info, halving = new, new_lik, new_u, new_info, 0
        assert u is not None and info is not None
        step = _solve(info, u)
        if change <= eps:
            converged = True
            break
    # past coxph's rule the log likelihood is flat to its last digits (a coefficient error of 1e-9 moves it by
    # ~1e-16 relative), so it can no longer judge a step: Newton steps on the score, whose error shrinks
    # quadratically, finish the job (one is usually enough; at most three)
    for _ in range(3 if converged else 0):
        if np.all(np.abs(step) <= 1e-15 * (1.0 + np.abs(beta))):
            break
        it += 1
        beta = beta + step
        loglik, u, info = des.evaluate(beta)
        assert u is not None and info is not None
        step = _solve(info, u)
    if not converged:
        notes.append(f"The Cox fit did not converge in {max_iter} iterations: a coefficient may be infinite.")
    var = np.linalg.inv(info)
    var = (var + var.T) / 2.0
    wald = float(beta @ _solve(var, beta)) if p else 0.0
    d = int(np.asarray(event).astype(bool).sum())
    model = CoxModel(beta, var, (l0, loglik), GlobalTest(score, p), GlobalTest(wald, p),
                     GlobalTest(2.0 * (loglik - l0), p), it, ties, len(time), d, notes)
    if cluster is not None:
        ids = np.asarray(cluster)[des.order]
        D = _cluster_sums(des.score_residuals(beta) @ var, ids)  # dfbeta residuals summed within cluster
        robust = D.T @ D
        L0 = _cluster_sums(des.score_residuals(np.zeros(p)), ids)
        model.robust_var = robust
        model.robust_wald_test = GlobalTest(_quadratic(robust, beta) if p else 0.0, p)
        model.robust_score_test = GlobalTest(_quadratic(L0.T @ L0, L0.sum(axis=0)) if p else 0.0, p)
        model.clusters = int(D.shape[0])
    return model
