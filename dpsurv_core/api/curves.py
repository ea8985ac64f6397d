"""Private Kaplan-Meier survival curves as a lifelines-style fitter: ``PrivateKaplanMeier(...).release(df, ...)``.

The numbers are those of ``python -m dpsurv_core km ... --json``: the fitter runs that command
(:mod:`dpsurv_core.api._command`), so a release goes through the release protocol and the ledger and its values are
read from the record's derived part, as the CLI prints them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core.api._command import Fitter, grid_text, record_body
from dpsurv_core.errors import ParameterError

__all__ = ["PrivateKaplanMeier"]


def _name(group: str, labels: dict[str, str]) -> str:
    return str(labels.get(str(group), group))


def curve_frames(out: dict[str, Any], derived: dict[str, Any] | None
                 ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, float | None]]:
    """Survival function, 95% band and medians of a km or logrank output: from the release's ``derived`` part when
    there is one, else from the printed curves of the (simulated or non-private) first trial. A column per group, named
    by its label; the index is time (a step function: a group with fewer times is carried forward)."""
    labels = {str(k): str(v) for k, v in (out.get("group_labels") or {}).items()}
    series: dict[str, pd.Series] = {}
    lower: dict[str, pd.Series] = {}
    upper: dict[str, pd.Series] = {}
    medians: dict[str, float | None] = {}
    if derived is not None:
        time = pd.Index(np.asarray(derived["time"], float), name="timeline")
        for i, group in enumerate(derived["groups"]):
            name = _name(group, labels)
            series[name] = pd.Series(derived["survival"][i], index=time, dtype=float)
            lower[name] = pd.Series(derived["lower"][i], index=time, dtype=float)
            upper[name] = pd.Series(derived["upper"][i], index=time, dtype=float)
        for m in derived.get("medians") or []:
            if m.get("trial", 0) == 0:
                medians[_name(m["group"], labels)] = m.get("median")
    else:
        for c in out.get("curves") or []:
            if c.get("trial", 0) != 0 or c.get("debiased"):
                continue
            name = _name(c["group"], labels)
            time = pd.Index(np.asarray(c["time"], float), name="timeline")
            series[name] = pd.Series(c["survival"], index=time, dtype=float)
            lower[name] = pd.Series(c["lower"], index=time, dtype=float)
            upper[name] = pd.Series(c["upper"], index=time, dtype=float)
            medians[name] = c.get("median")

    def frame(parts: dict[str, pd.Series], suffix: str = "") -> pd.DataFrame:
        if not parts:
            return pd.DataFrame()
        df = pd.concat({k + suffix: v for k, v in parts.items()}, axis=1).sort_index().ffill()
        df.index.name = "timeline"
        return df.astype(float)

    band = pd.concat([frame(lower, "_lower_0.95"), frame(upper, "_upper_0.95")], axis=1)
    return frame(series), band, medians


class PrivateKaplanMeier(Fitter):
    """Survival curves released with differential privacy (or previewed in a seeded simulation).

    Privacy: a release charges ``epsilon`` to the data set's ledger (``adaptive-km`` and ``laplace-counts``: pure
    epsilon-DP). Neighbouring data sets differ by adding or removing one subject (all of that subject's rows), so
    what is protected is whether any one subject is in the cohort. Values declared from the study design (the grid,
    the horizon, the categories) are public; a value read off the data is refused unless accepted with
    ``accept_disclosure=...``, and the release then says it is not DP as run. ``mechanism="nonprivate"`` or
    ``epsilon=float("inf")`` computes exact numbers that are never a release.

    Parameters
    ----------
    mechanism : str, default "adaptive-km"
        A curve mechanism of the catalogue (``python -m dpsurv_core mechanisms``): ``adaptive-km``,
        ``laplace-counts``, ``time-indexed``, ``rrr``, ``nonprivate``, or a disclosure-control method.
    epsilon : float, default 1.0
        The release's total privacy budget; ``float("inf")`` switches the noise off.
    grid : tuple of (float, float, int) or str, optional
        The public time grid ``(start, stop, bins)``, or ``"event-times"`` (every event time, non-private curves).
        Default: 20 bins up to the horizon.
    conf_type : str, default "log"
        The pointwise 95% interval as R survfit's ``conf.type``: plain, log, log-log, logit, arcsin.
    horizon : float, optional
        The public horizon; default the grid's end (a horizon read off the data must be accepted).
    **options
        Any other option of the ``km`` command by its Python name, e.g. ``categories={"sex": (1, 2)}``,
        ``landmarks=[365]``, ``rmst=730``, ``accept_disclosure="horizon"``, ``estimand="cumulative-incidence"``.

    Attributes
    ----------
    survival_function_ : pandas.DataFrame
        The survival curve, indexed by time, a column per group.
    confidence_interval_ : pandas.DataFrame
        The 95% band: columns ``<group>_lower_0.95`` and ``<group>_upper_0.95``.
    median_survival_time_ : float or pandas.Series
        The median survival time (a Series by group when there are several groups; NaN when not reached).
    record_id_ : int or None
        The ledger record of the release (None for a simulation).
    publishable_ : dict or None
        Exactly what the ledger record holds for people outside (None for a simulation).
    result_ : dict
        The whole output, as ``python -m dpsurv_core km ... --json`` prints it.

    Examples
    --------
    >>> from dpsurv_core import PrivateKaplanMeier, load_dataset
    >>> lung = load_dataset("lung")
    >>> km = PrivateKaplanMeier(epsilon=1.0, grid=(0, 1000, 10))
    >>> km = km.release(lung, group_col="sex", cap=3.0)
    >>> km.publishable_["record_id"] == km.record_id_
    True
    >>> list(km.survival_function_.columns)
    ['Male', 'Female']
    >>> float(km.survival_function_.index[-1])
    1000.0
    >>> exact = PrivateKaplanMeier("nonprivate").simulate(lung)
    >>> round(exact.median_survival_time_, 1)
    310.0

    References
    ----------
    .. [1] Kaplan E. L. & Meier P. (1958), Nonparametric estimation from incomplete observations, JASA 53: 457-481.
    .. [2] Gondara L. & Wang K. (2020), Differentially private survival function estimation, MLHC.
    .. [3] Dwork C. & Roth A. (2014), The Algorithmic Foundations of Differential Privacy.
    """

    command = "km"

    def __init__(self, mechanism: str = "adaptive-km", epsilon: float = 1.0, grid: Any = None,
                 conf_type: str = "log", horizon: float | None = None, **options: Any) -> None:
        super().__init__(mechanism, epsilon, **options)
        self.grid = grid
        self.conf_type = conf_type
        self.horizon = horizon
        self.survival_function_ = pd.DataFrame()
        self.confidence_interval_ = pd.DataFrame()
        self.median_survival_time_: float | pd.Series = float("nan")

    def _options(self) -> dict[str, Any]:
        return {**super()._options(), "grid": grid_text(self.grid), "conf_type": self.conf_type,
                "horizon": self.horizon}

    def _read(self, out: dict[str, Any]) -> None:
        self.survival_function_, self.confidence_interval_, medians = curve_frames(out, self._derived())
        values = pd.Series({k: np.nan if v is None else float(v) for k, v in medians.items()}, dtype=float)
        self.median_survival_time_ = float(values.iloc[0]) if len(values) == 1 else values

    def plot(self) -> Any:
        """The publication figure of the release, drawn from its ledger record alone.

        Returns
        -------
        plotly.graph_objects.Figure
            The curves with their 95% band, the number-at-risk table and the caption
            (:func:`dpsurv_core.report.publication_figure.publication_figure`).

        Examples
        --------
        >>> from dpsurv_core import PrivateKaplanMeier, load_dataset
        >>> km = PrivateKaplanMeier(grid=(0, 150, 10)).release(load_dataset("leukemia"), group_col="x", cap=2.0)
        >>> type(km.plot()).__name__
        'Figure'

        References
        ----------
        .. [1] Morris T. P. et al. (2019), Proposals on Kaplan-Meier plots in medical research and a survey of
           stakeholder views: KMunicate, BMJ Open 9: e030215.
        """
        if self.record_id_ is None:
            raise ParameterError("The publication figure is drawn from a release's ledger record: call release() "
                                 "first (a simulation is never published).")
        from dpsurv_core.report.publication_figure import publication_figure

        return publication_figure(record_body(self.record_id_, self.ledger_), self.record_id_)
