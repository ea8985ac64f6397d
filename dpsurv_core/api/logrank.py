"""Private log-rank tests between groups as a lifelines-style fitter: ``PrivateLogRank(...).release(df, ...)``.

The numbers are those of ``python -m dpsurv_core logrank ... --json`` (:mod:`dpsurv_core.api._command`): a release's
p-values are read from its record's derived part, calibrated for the privacy noise.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from dpsurv_core.api._command import Fitter, grid_text
from dpsurv_core.api.curves import curve_frames

__all__ = ["PrivateLogRank"]

COLUMNS = ("test_statistic", "p", "dof", "null_draws")


class PrivateLogRank(Fitter):
    """Log-rank tests between groups on privately released counts, with p-values calibrated for the noise.

    Privacy: a release charges ``epsilon`` to the data set's ledger once, for the released counts; the tests are
    post-processing of them. Neighbouring data sets differ by adding or removing one subject (``rrr``: by changing
    one subject's group label), so what is protected is whether any one subject is in the cohort (``rrr``: each
    subject's group). The p-values compare the statistic with its null distribution simulated under the public noise
    law, so a test keeps its 5% level. ``mechanism="nonprivate"`` or ``epsilon=float("inf")`` gives R's survdiff
    test, never a release.

    Parameters
    ----------
    mechanism : str, default "adaptive-km"
        A curve mechanism that releases counts (``adaptive-km``, ``laplace-counts``, ``rrr``, ``nonprivate``, or a
        disclosure-control method).
    epsilon : float, default 1.0
        The release's total privacy budget; ``float("inf")`` switches the noise off.
    grid : tuple of (float, float, int) or str, optional
        The public time grid ``(start, stop, bins)`` or ``"event-times"``.
    horizon : float, optional
        The public horizon; default the grid's end.
    **options
        Any other option of the ``logrank`` command by its Python name, e.g. ``null_draws=999``,
        ``categories={"sex": (1, 2)}``.

    Attributes
    ----------
    p_value : float
        The overall test's p-value (calibrated for the noise in a private release).
    test_statistic : float
        The overall test statistic.
    summary : pandas.DataFrame
        One row per pair of groups (and ``overall``): ``test_statistic``, ``p``, ``dof``, ``null_draws``.
    survival_function_ : pandas.DataFrame
        The released curves, a column per group.
    record_id_, publishable_, result_
        As for :class:`~dpsurv_core.api.curves.PrivateKaplanMeier`.

    Examples
    --------
    >>> from dpsurv_core import PrivateLogRank, load_dataset
    >>> lung = load_dataset("lung")
    >>> exact = PrivateLogRank("nonprivate").simulate(lung, group_col="sex")
    >>> round(exact.p_value, 4)
    0.0013
    >>> test = PrivateLogRank(epsilon=1.0, grid=(0, 1000, 10)).release(lung, group_col="sex", cap=3.0)
    >>> 0 <= test.p_value <= 1 and test.publishable_["record_id"] == test.record_id_
    True

    References
    ----------
    .. [1] Mantel N. (1966), Evaluation of survival data and two new rank order statistics arising in its
       consideration, Cancer Chemotherapy Reports 50: 163-170.
    .. [2] Peto R. & Peto J. (1972), Asymptotically efficient rank invariant test procedures, JRSS A 135: 185-207.
    """

    command = "logrank"

    def __init__(self, mechanism: str = "adaptive-km", epsilon: float = 1.0, grid: Any = None,
                 horizon: float | None = None, **options: Any) -> None:
        super().__init__(mechanism, epsilon, **options)
        self.grid = grid
        self.horizon = horizon
        self.p_value = float("nan")
        self.test_statistic = float("nan")
        self.summary = pd.DataFrame(columns=list(COLUMNS))
        self.survival_function_ = pd.DataFrame()

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "grid": grid_text(self.grid), "horizon": self.horizon}

    def _read(self, out: dict[str, Any]) -> None:
        derived = self._derived()
        self.survival_function_, _, _ = curve_frames(out, derived)
        if derived is not None:
            tests, overall = derived["tests"], derived["overall"]
        else:
            tests = [t for t in out.get("tests") or [] if t.get("trial", 0) == 0]
            overall = next(o for o in out["overall"] if o.get("trial", 0) == 0)
        labels = {str(k): str(v) for k, v in (out.get("group_labels") or {}).items()}

        def row(t: dict[str, Any]) -> list[Any]:
            return [t.get("statistic"), t.get("p_value"), t.get("dof"), t.get("null_draws")]

        index = [(labels.get(str(t["group_a"]), str(t["group_a"])), labels.get(str(t["group_b"]), str(t["group_b"])))
                 for t in tests] + [("overall", "")]
        self.summary = pd.DataFrame([row(t) for t in tests] + [row(overall)], columns=list(COLUMNS),
                                    index=pd.MultiIndex.from_tuples(index, names=["group_a", "group_b"]))
        self.p_value = float("nan") if overall.get("p_value") is None else float(overall["p_value"])
        self.test_statistic = float("nan") if overall.get("statistic") is None else float(overall["statistic"])
