"""Private discrete-time survival regression as a lifelines-style fitter:
``PrivateDiscreteTimeRegression(...).release(df, ...)``.

The numbers are those of ``python -m dpsurv_core regression ... --json`` (:mod:`dpsurv_core.api._command`): a
release's coefficients and intervals are read from its record's derived part.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpsurv_core.api._command import Fitter

__all__ = ["PrivateDiscreteTimeRegression"]

COLUMNS = ["coef", "exp(coef)", "se(coef)", "coef lower 95%", "coef upper 95%", "exp(coef) lower 95%",
           "exp(coef) upper 95%", "p"]


def _rows(out: dict[str, Any], derived: dict[str, Any] | None) -> dict[str, list[Any]]:
    """Per covariate, the summary's columns: from the release's derived intervals, else the first printed trial."""
    if derived is not None:
        return {i["covariate"]: [i.get("coefficient"), i.get("ratio"), i.get("se"), i.get("lower"), i.get("upper"),
                                 i.get("ratio_lower"), i.get("ratio_upper"), i.get("p_value")]
                for i in derived.get("intervals") or []}
    est = next(e for e in out.get("estimates") or [] if e.get("trial", 0) == 0)

    def get(key: str, cov: str) -> Any:
        return (est.get(key) or {}).get(cov)

    return {cov: [coef, get("ratios", cov), get("se", cov), get("coefficient_lower", cov),
                  get("coefficient_upper", cov), get("lower", cov), get("upper", cov), get("p_value", cov)]
            for cov, coef in est["coefficients"].items()}


class PrivateDiscreteTimeRegression(Fitter):
    """Covariate effects on the hazard of a discrete-time (logistic) survival model, released privately.

    Privacy: a release charges ``epsilon`` to the data set's ledger (``objective``: objective perturbation;
    ``output``: output perturbation; ``psgld``: posterior sampling). Neighbouring data sets differ by adding or
    removing one subject (all of that subject's person-period rows), so what is protected is whether any one subject
    is in the cohort. Covariate ranges, the horizon and the number of subjects are declared from the study design
    (a value read off the data is refused unless accepted). ``nonprivate`` (and ``cox``) are exact fits, never a
    release.

    Parameters
    ----------
    mechanism : str, default "objective"
        A regression mechanism of the catalogue: ``objective``, ``output``, ``psgld``, ``nonprivate``, ``cox``.
    epsilon : float, default 1.0
        The release's total privacy budget.
    covariates : list of str
        The covariate columns.
    horizon : float, optional
        The public horizon.
    **options
        Any other option of the ``regression`` command by its Python name, e.g. ``range={"age": (30, 90)}``,
        ``n_public=228``, ``intervals=10``, ``categorical="ph.ecog"``.

    Attributes
    ----------
    params_ : pandas.Series
        The coefficients (log odds ratios of the discrete-time hazard), indexed by covariate.
    summary : pandas.DataFrame
        Per covariate: ``coef``, ``exp(coef)``, ``se(coef)``, their 95% limits and ``p`` (noise-aware in a private
        release), lifelines' column names.
    record_id_, publishable_, result_
        As for :class:`~dpsurv_core.api.curves.PrivateKaplanMeier`.

    Examples
    --------
    >>> from dpsurv_core import PrivateDiscreteTimeRegression, load_dataset
    >>> lung = load_dataset("lung")
    >>> model = PrivateDiscreteTimeRegression(epsilon=1.0, covariates=["age", "sex"], horizon=1000,
    ...                                       range={"age": (30, 90), "sex": (1, 2)}, n_public=228)
    >>> list(model.simulate(lung, seed=3).params_.index)
    ['age', 'sex']
    >>> model.record_id_ is None
    True

    References
    ----------
    .. [1] Allison P. D. (1982), Discrete-time methods for the analysis of event histories, Sociological
       Methodology 13: 61-98.
    .. [2] Chaudhuri K., Monteleoni C. & Sarwate A. D. (2011), Differentially private empirical risk minimization,
       JMLR 12: 1069-1109.
    """

    command = "regression"

    def __init__(self, mechanism: str = "objective", epsilon: float = 1.0, covariates: Any = (),
                 horizon: float | None = None, **options: Any) -> None:
        super().__init__(mechanism, epsilon, **options)
        self.covariates = list(covariates)
        self.horizon = horizon
        self.params_ = pd.Series(dtype=float)
        self.summary = pd.DataFrame(columns=COLUMNS)

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "covariates": self.covariates or None, "horizon": self.horizon}

    def _read(self, out: dict[str, Any]) -> None:
        rows = _rows(out, self._derived())
        self.summary = pd.DataFrame.from_dict(rows, orient="index", columns=COLUMNS, dtype=float)
        self.summary.index.name = "covariate"
        self.params_ = self.summary["coef"].rename(None)
