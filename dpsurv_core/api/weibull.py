"""Private Weibull shape and scale as a lifelines-style fitter: ``PrivateWeibull(...).release(df, ...)``.

The numbers are those of ``python -m dpsurv_core weibull ... --json`` (:mod:`dpsurv_core.api._command`): a release's
estimates and intervals are read from its record's derived part.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpsurv_core.api._command import Fitter

__all__ = ["PrivateWeibull"]

# lifelines' WeibullFitter names: S(t) = exp(-(t / lambda_) ** rho_)
PARAMS = {"lambda_": "scale", "rho_": "shape"}


class PrivateWeibull(Fitter):
    """The Weibull shape and scale of survival times, released with differential privacy.

    Privacy: a release charges ``epsilon`` to the data set's ledger (``lsp-tll``, ``laplace`` and ``saa``: pure
    epsilon-DP). Neighbouring data sets differ by adding or removing one subject, so what is protected is whether
    any one subject is in the cohort. The public horizon, censoring share and number of subjects are declared from
    the study design (a value read off the data is refused unless accepted). ``mle`` and ``clipped-mle`` are the
    non-private fits (R's survreg), never a release.

    Parameters
    ----------
    mechanism : str, default "lsp-tll"
        A Weibull mechanism of the catalogue: ``lsp-tll``, ``laplace``, ``saa``, ``mle``, ``clipped-mle``.
    epsilon : float, default 1.0
        The release's total privacy budget.
    horizon : float, optional
        The public horizon (follow-up ends there).
    **options
        Any other option of the ``weibull`` command by its Python name, e.g. ``censoring=0.3``, ``n_public=228``,
        ``omega=...``, ``gamma=...``, ``accept_disclosure="horizon"``.

    Attributes
    ----------
    params_ : pandas.Series
        ``lambda_`` (scale) and ``rho_`` (shape), lifelines' ``WeibullFitter`` names: S(t) = exp(-(t/lambda_)^rho_).
    summary : pandas.DataFrame
        Per parameter: ``coef``, ``se(coef)`` (the error's standard deviation, noise included in a private release),
        ``coef lower 95%``, ``coef upper 95%``.
    record_id_, publishable_, result_
        As for :class:`~dpsurv_core.api.curves.PrivateKaplanMeier`.

    Examples
    --------
    >>> from dpsurv_core import PrivateWeibull, load_dataset
    >>> lung = load_dataset("lung")
    >>> mle = PrivateWeibull("mle", horizon=1000).simulate(lung)
    >>> round(float(mle.params_["rho_"]), 3), round(float(mle.params_["lambda_"]), 1)
    (1.318, 417.5)
    >>> private = PrivateWeibull(epsilon=1.0, horizon=1000, censoring=0.3).release(lung, cap=3.0)
    >>> list(private.summary.columns)
    ['coef', 'se(coef)', 'coef lower 95%', 'coef upper 95%']

    References
    ----------
    .. [1] Kalbfleisch J. D. & Prentice R. L. (2002), The Statistical Analysis of Failure Time Data, 2nd ed.
    .. [2] Dwork C. & Lei J. (2009), Differential privacy and robust statistics, STOC.
    """

    command = "weibull"

    def __init__(self, mechanism: str = "lsp-tll", epsilon: float = 1.0, horizon: float | None = None,
                 **options: Any) -> None:
        super().__init__(mechanism, epsilon, **options)
        self.horizon = horizon
        self.params_ = pd.Series(dtype=float)
        self.summary = pd.DataFrame()

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "horizon": self.horizon}

    def _read(self, out: dict[str, Any]) -> None:
        derived = self._derived()
        intervals = (derived or out).get("intervals") or []
        first = next((i for i in intervals if i.get("trial", 0) == 0), None)
        rows = {}
        for name, key in PARAMS.items():
            if first is not None:
                p = first[key]
                rows[name] = [p.get("estimate"), p.get("error_sd"), p.get("lower"), p.get("upper")]
            else:  # no interval printed: the estimates alone
                est = next(e for e in out["estimates"] if e.get("trial", 0) == 0)
                rows[name] = [est[key], None, None, None]
        self.summary = pd.DataFrame.from_dict(rows, orient="index", dtype=float,
                                              columns=["coef", "se(coef)", "coef lower 95%", "coef upper 95%"])
        self.params_ = self.summary["coef"].rename(None)
