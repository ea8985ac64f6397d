"""A membership-inference audit of a mechanism on a data set: ``Audit(...).run(df, ...)``.

The numbers are those of ``python -m dpsurv_core audit ... --json`` (:mod:`dpsurv_core.api._command`). An audit is a
seeded simulation for the data holder or an ethics board, never a release: nothing is charged or recorded.
"""

from __future__ import annotations

from typing import Any, Self

import pandas as pd

from dpsurv_core.api._command import data_options, grid_text, run

__all__ = ["Audit"]

SUMMARY = ("epsilon_charged", "empirical_epsilon_lower", "advantage", "advantage_lower", "advantage_upper", "auc",
           "exposed_share", "within_charge")


class Audit:
    """The strongest membership attack on a mechanism's releases, and an empirical epsilon beside the charged one.

    Privacy: an audit charges nothing and records nothing: it reruns the mechanism with seeded simulation noise on
    the data D and on D' (D without the most exposed subject; for ``rrr``, that subject's group label changed, the
    mechanism's neighbouring relation), and attacks every field of the record a release would make. Its numbers are
    for the data holder and must not be published. What it measures is how well an attacker holding everyone
    else's data could tell whether that subject is in the cohort.

    Parameters
    ----------
    analysis : str, default "km"
        ``km``, ``logrank``, ``weibull`` or ``regression``.
    mechanism : str, default "adaptive-km"
        The mechanism to audit (any of the analysis's catalogue entries, disclosure control included).
    epsilon : float, default 1.0
        The mechanism's epsilon.
    trials : int, default 1000
        Runs per data set (at least 4).
    grid : tuple of (float, float, int) or str, optional
        The public time grid of a curve mechanism.
    horizon : float, optional
        The public horizon.
    **options
        Any other option of the ``audit`` command by its Python name, e.g. ``record_trials=0`` (attack the
        mechanism's output only), ``target=12`` (the row to audit), ``covariates=["age"]``.

    Attributes
    ----------
    empirical_epsilon_ : float
        The empirical epsilon lower bound (95% confidence), to compare with ``epsilon``.
    advantage_ : float
        The strongest attack's held-out advantage, TPR - FPR.
    auc_ : float
        The area under that attack's ROC curve.
    summary : pandas.Series
        The headline numbers: charged and empirical epsilon, advantage with its 95% interval, AUC, exposed share.
    result_ : dict
        The whole output, as ``python -m dpsurv_core audit ... --json`` prints it.

    Examples
    --------
    >>> from dpsurv_core import Audit, load_dataset
    >>> audit = Audit("km", "adaptive-km", epsilon=1.0, trials=40, grid=(0, 150, 5), record_trials=0)
    >>> audit = audit.run(load_dataset("leukemia"), group_col="x", seed=1)
    >>> bool(audit.empirical_epsilon_ <= 1.0), audit.result_["charged_to_ledger"]
    (True, False)

    References
    ----------
    .. [1] Jagielski M., Ullman J. & Oprea A. (2020), Auditing differentially private machine learning: how private
       is private SGD?, NeurIPS.
    .. [2] Nasr M. et al. (2021), Adversary instantiation: lower bounds for differentially private machine
       learning, IEEE S&P.
    """

    def __init__(self, analysis: str = "km", mechanism: str = "adaptive-km", epsilon: float = 1.0,
                 trials: int = 1000, grid: Any = None, horizon: float | None = None, **options: Any) -> None:
        self.analysis = analysis
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.trials = trials
        self.grid = grid
        self.horizon = horizon
        self.options = dict(options)
        self.result_: dict[str, Any] = {}
        self.empirical_epsilon_ = float("nan")
        self.advantage_ = float("nan")
        self.auc_ = float("nan")
        self.summary = pd.Series(dtype=object)

    def __repr__(self) -> str:
        return f"<Audit analysis={self.analysis!r} mechanism={self.mechanism!r} epsilon={self.epsilon!r}>"

    def run(self, df: Any, duration_col: str | None = None, event_col: str | None = None,
            group_col: str | None = None, dataset: str | None = None, seed: int = 0) -> Self:
        """Run the audit: a seeded simulation, never charged or recorded.

        Parameters
        ----------
        df, duration_col, event_col, group_col, dataset
            As for a fitter's ``release`` (:meth:`dpsurv_core.api.curves.PrivateKaplanMeier.release`).
        seed : int, default 0
            The seed of the simulation noise (``--seed``): the same seed gives the command line's numbers.

        Returns
        -------
        self
            With ``empirical_epsilon_``, ``advantage_``, ``auc_``, ``summary`` and ``result_``.

        Examples
        --------
        >>> from dpsurv_core import Audit, load_dataset
        >>> audit = Audit("km", "nonprivate", trials=10, grid=(0, 150, 5), record_trials=0)
        >>> audit = audit.run(load_dataset("leukemia"), group_col="x")  # exact curves: the subject is exposed
        >>> audit.advantage_, audit.result_["charged_to_ledger"]
        (1.0, False)

        References
        ----------
        .. [1] Jagielski M., Ullman J. & Oprea A. (2020), Auditing differentially private machine learning: how
           private is private SGD?, NeurIPS.
        """
        data, frame = data_options(df, duration_col, event_col, group_col, dataset)
        options = {**data, "analysis": self.analysis, "mechanism": self.mechanism, "epsilon": self.epsilon,
                   "trials": self.trials, "grid": grid_text(self.grid), "horizon": self.horizon, **self.options,
                   "seed": int(seed)}
        out = run("audit", options, frame)
        self.result_ = out

        def number(key: str) -> float:
            value = out.get(key)
            return float("nan") if value is None else float(value)

        self.empirical_epsilon_ = number("empirical_epsilon_lower")
        self.advantage_ = number("advantage")
        self.auc_ = number("auc")
        self.summary = pd.Series({k: out.get(k) for k in SUMMARY}, dtype=object)
        return self
