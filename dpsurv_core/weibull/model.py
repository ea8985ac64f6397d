"""The Weibull model of docs/mechanisms.md (Nguyen & Hui 2017, Weibull, section III): normalisation and the non-private MLE.

Model: S(t) = exp(-(t / lambda)^p), shape p, scale lambda (lifelines ``WeibullFitter``: ``rho_`` = p,
``lambda_`` = lambda). Times are normalised with a public horizon T_max:

    t_i <- clip(t_i / T_max, e^-omega, 1)

so a time of 0 becomes e^-omega and a time beyond the horizon becomes 1 (its event indicator is kept,
exactly as dpsurv's formula says). The MLE solves Equations 4 and 5 of the paper:

    f(p) = sum t^p ln t / sum t^p  =  g(p) = 1/p + sum d ln t / sum d,     lambda^p = sum t^p / sum d.

f is non-decreasing in p (its derivative is a weighted variance of ln t) and g is decreasing, so the
root is unique when it exists; it does not exist when every normalised time is the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.errors import DataError, ParameterError

if TYPE_CHECKING:  # a type only: the model reads arrays, and the release readers import it without the data layer
    from dpsurv_core.data.cohort import Cohort

OMEGA = 6.0
GAMMA = 10.0
RUNGS = 500


def check_hyper(omega: float = OMEGA, gamma: float = GAMMA, rungs: int = RUNGS) -> tuple[float, float, int]:
    """Validate the public hyper-parameters omega > 0, gamma > 0 and K >= 1."""
    if not (math.isfinite(omega) and omega > 0):
        raise ParameterError(f"omega must be a positive number (default 6), got {omega}.")
    if not (math.isfinite(gamma) and gamma > 0):
        raise ParameterError(f"gamma (the upper bound of shape and scale) must be positive (default 10), got {gamma}.")
    if int(rungs) != rungs or rungs < 1:
        raise ParameterError(f"The number of rungs K must be a whole number of at least 1 (default 500), got {rungs}.")
    return float(omega), float(gamma), int(rungs)


def _within_follow_up(time: np.ndarray, event: np.ndarray, horizon: float) -> np.ndarray:
    """The event indicator with follow-up ending at the horizon: an event after T_max is censored there (its time
    normalises to 1), so that a horizon shorter than the data's follow-up is an administrative censoring time, as the
    noise-aware intervals simulate it (dpsurv_core.weibull.inference)."""
    return np.where(np.asarray(time, dtype=float) <= horizon, np.asarray(event), 0).astype(np.asarray(event).dtype)


def normalise(time: np.ndarray, horizon: float, omega: float = OMEGA) -> np.ndarray:
    """t <- clip(t / T_max, e^-omega, 1) (docs/mechanisms.md)."""
    if not (math.isfinite(horizon) and horizon > 0):
        raise ParameterError(f"The horizon must be a positive time, got {horizon}.")
    return np.clip(np.asarray(time, dtype=float) / horizon, math.exp(-omega), 1.0)


@dataclass(frozen=True)
class WeibullSample:
    """Normalised times with the sufficient pieces every Weibull computation reuses.

    ``lt_u``/``c_u``/``e_u``: distinct log-times (ascending), their counts and their events, so sums over
    subjects become short dot products, and the n-k smallest times of LSP are a prefix of them. These
    are all that the MLE, LSP, TLL and the Laplace baseline read; :meth:`from_table` builds a sample from
    them alone (an engine's ``GROUP BY`` time), without per-subject ``t`` and ``d``, which only
    sample-and-aggregate and lifelines need (:attr:`per_subject`).
    """

    t: np.ndarray | None
    d: np.ndarray | None
    horizon: float
    omega: float = OMEGA
    rows_per_subject: int = 1
    time_unit: str = "days"
    lt_u: np.ndarray = field(init=False, repr=False)
    c_u: np.ndarray = field(init=False, repr=False)
    e_u: np.ndarray = field(init=False, repr=False)
    n_events: int = field(init=False)
    sum_d_lnt: float = field(init=False)

    def __post_init__(self) -> None:
        t = np.asarray(self.t, dtype=float)
        d = np.asarray(self.d).astype(np.int8)
        if t.ndim != 1 or t.shape != d.shape:
            raise DataError("Times and event indicators must be two one-dimensional arrays of the same length.")
        if t.size == 0:
            raise DataError("The data set is empty: a Weibull fit needs subjects with times and events.")
        object.__setattr__(self, "t", t)
        object.__setattr__(self, "d", d)
        tu, inv = np.unique(t, return_inverse=True)
        self._set_table(tu, np.bincount(inv, minlength=tu.size), np.bincount(inv, weights=d, minlength=tu.size))

    def _set_table(self, t_u: np.ndarray, counts: np.ndarray, events: np.ndarray) -> None:
        """Distinct normalised times (ascending), their counts and events -> the log-time table (equal logs merged)."""
        lt_u, inv = np.unique(np.log(t_u), return_inverse=True)
        c_u = np.bincount(inv, weights=np.asarray(counts, dtype=float), minlength=lt_u.size)
        e_u = np.bincount(inv, weights=np.asarray(events, dtype=float), minlength=lt_u.size)
        object.__setattr__(self, "lt_u", lt_u)
        object.__setattr__(self, "c_u", c_u)
        object.__setattr__(self, "e_u", e_u)
        object.__setattr__(self, "n_events", int(round(float(e_u.sum()))))
        object.__setattr__(self, "sum_d_lnt", float(lt_u @ e_u))

    @classmethod
    def from_table(cls, times: np.ndarray, counts: np.ndarray, events: np.ndarray, horizon: float,
                   omega: float = OMEGA, rows_per_subject: int = 1, time_unit: str = "days") -> WeibullSample:
        """A sample from a table of times (in the data's unit), how many subjects have each and how many of those
        had the event: normalised and merged exactly as the per-subject constructor does, so every statistic is
        equal to the last digit. ``t`` and ``d`` are None (see :attr:`per_subject`)."""
        counts = np.asarray(counts, dtype=np.int64)
        if counts.size == 0 or counts.sum() == 0:
            raise DataError("The data set is empty: a Weibull fit needs subjects with times and events.")
        tn = normalise(times, horizon, omega)
        tu, inv = np.unique(tn, return_inverse=True)
        self = cls.__new__(cls)
        for name, value in (("t", None), ("d", None), ("horizon", float(horizon)), ("omega", float(omega)),
                            ("rows_per_subject", int(rows_per_subject)), ("time_unit", time_unit)):
            object.__setattr__(self, name, value)
        self._set_table(tu, np.bincount(inv, weights=counts, minlength=tu.size),
                        np.bincount(inv, weights=np.asarray(events, dtype=np.int64), minlength=tu.size))
        return self

    @property
    def per_subject(self) -> bool:
        """True when each subject's normalised time and event are held (``t``, ``d``), not only the table."""
        return self.t is not None

    @property
    def n(self) -> int:
        return int(round(float(self.c_u.sum())))

    def power_sums(self, p: float) -> tuple[float, float, float]:
        """(sum t^p, sum t^p ln t, sum t^p ln^2 t) at one p."""
        wc = np.exp(p * self.lt_u) * self.c_u
        s1v = wc * self.lt_u
        return float(wc.sum()), float(s1v.sum()), float(s1v @ self.lt_u)

    def sum_tp(self, p: np.ndarray) -> np.ndarray:
        """sum_i t_i^p for an array of p (vectorised over p: one row of exponentials per p)."""
        p = np.asarray(p, dtype=float)
        return np.exp(np.multiply.outer(p, self.lt_u)) @ self.c_u


def sample_from_cohort(cohort: Cohort, horizon: float, omega: float = OMEGA) -> WeibullSample:
    """Normalise a cohort's times with the public horizon (docs/mechanisms.md).

    A cohort kept in an engine (``time_table``) gives its table of times capped at the horizon instead of its
    rows: the same sample without per-subject values (:meth:`WeibullSample.from_table`).

    Parameters
    ----------
    cohort : Cohort
        The data set.
    horizon : float
        The public horizon T_max (times past it are censored there).
    omega : float, default 6.0
        The public bound of the normalised scale.

    Returns
    -------
    WeibullSample
        Times divided by the horizon, with their event indicators.
    """
    if hasattr(cohort, "time_table"):
        times, counts, events = cohort.time_table(float(horizon))
        return WeibullSample.from_table(times, counts, events, float(horizon), float(omega),
                                        int(cohort.rows_per_subject), cohort.time_unit)
    return WeibullSample(normalise(cohort.time, horizon, omega), _within_follow_up(cohort.time, cohort.event, horizon),
                         float(horizon), float(omega), int(cohort.rows_per_subject), cohort.time_unit)


def subject_sample(cohort: Cohort, horizon: float, omega: float = OMEGA) -> WeibullSample:
    """Each subject's normalised time and event (sample-and-aggregate, lifelines): an engine cohort's rows are read
    through its bounded chunked path (refused past the row limit)."""
    return WeibullSample(normalise(cohort.time, horizon, omega), _within_follow_up(cohort.time, cohort.event, horizon),
                         float(horizon), float(omega), int(cohort.rows_per_subject), cohort.time_unit)


def _h_and_slope(s: WeibullSample, p: float) -> tuple[float, float]:
    """h(p) = f(p) - g(p) of Equation 4 and its derivative (h is increasing)."""
    s0, s1, s2 = s.power_sums(p)
    f = s1 / s0
    h = f - 1.0 / p - s.sum_d_lnt / s.n_events
    dh = (s2 * s0 - s1 * s1) / (s0 * s0) + 1.0 / (p * p)
    return h, dh


def shape_root(s: WeibullSample, upper: float = math.inf, tol: float = 1e-13) -> float:
    """Root p* of Equation 4 searched in (0, upper]; returns ``upper`` when h < 0 there (no root below it).

    Safeguarded Newton on the increasing function h = f - g, with a bisection bracket.
    Returns ``math.inf`` when ``upper`` is infinite and there is no root (every time equal).
    """
    if s.n_events == 0:
        raise DataError("There are no events in the data: a Weibull fit needs at least one observed event.")
    if s.lt_u.size == 1:  # f(p) = ln t and g(p) = 1/p + ln t never meet
        return upper
    lo, hi = 0.0, upper
    if math.isfinite(upper) and _h_and_slope(s, upper)[0] < 0:
        return upper
    p = 1.0 if not math.isfinite(upper) else min(1.0, upper)
    for _ in range(200):
        h, dh = _h_and_slope(s, p)
        if h == 0:
            return p
        if h < 0:
            lo = p
        else:
            hi = p
        step = h / dh
        new = p - step
        if not (lo < new < hi) or not math.isfinite(new):
            new = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * p
            if not math.isfinite(hi) and p > 1e6:
                return math.inf
        if abs(new - p) <= tol * max(1.0, p):
            return new
        p = new
    return p


def scale_at(s: WeibullSample, p: float) -> float:
    """lambda = (sum t^p / sum d)^(1/p) (Equation 5), in normalised units."""
    return float((s.sum_tp(np.array([p]))[0] / s.n_events) ** (1.0 / p))


@dataclass(frozen=True)
class WeibullFit:
    """Shape p and scale lambda; ``scale`` is in the data's time unit (= lambda_normalised * T_max)."""

    shape: float
    scale_normalised: float
    horizon: float

    @property
    def scale(self) -> float:
        return self.scale_normalised * self.horizon

    def to_dict(self) -> dict:
        return {"shape": self.shape, "scale": self.scale, "scale_normalised": self.scale_normalised}


def weibull_mle(s: WeibullSample) -> WeibullFit:
    """Non-private MLE from Equations 4 and 5 (agrees with lifelines ``WeibullFitter`` on ``s.t, s.d``).

    Parameters
    ----------
    s : WeibullSample
        The normalised sample.

    Returns
    -------
    WeibullFit
        Shape and normalised scale.
    """
    p = shape_root(s)
    if not math.isfinite(p):
        raise DataError("Every normalised time is the same, so the Weibull shape is unbounded: the data need at "
                        "least two distinct times within the horizon (check the horizon and the time column).")
    return WeibullFit(p, scale_at(s, p), s.horizon)


def survival_curve(times: np.ndarray, shape: float | np.ndarray, scale: float | np.ndarray) -> np.ndarray:
    """S(t) = exp(-(t / scale)^shape), times and scale in the same unit.

    Scalars give one curve; arrays of R fits give an (R, len(times)) array. A non-positive shape or
    scale (possible in a noisy baseline release) has no Weibull curve: its row is NaN.

    Parameters
    ----------
    times : numpy.ndarray
        The times.
    shape, scale : float or numpy.ndarray
        The Weibull shape and scale (one per fit).

    Returns
    -------
    numpy.ndarray
        S at ``times``: one curve, or one row per fit.
    """
    times = np.clip(np.asarray(times, dtype=float), 0.0, None)
    scalar = np.ndim(shape) == 0 and np.ndim(scale) == 0
    shape_a, scale_a = np.broadcast_arrays(np.atleast_1d(np.asarray(shape, dtype=float)),
                                           np.atleast_1d(np.asarray(scale, dtype=float)))
    ok = (shape_a > 0) & (scale_a > 0) & np.isfinite(shape_a) & np.isfinite(scale_a)
    k = np.where(ok, shape_a, 1.0)[:, None]
    lam = np.where(ok, scale_a, 1.0)[:, None]
    with np.errstate(over="ignore", under="ignore"):
        out = np.exp(-np.power(times[None, :] / lam, k))
    out[~ok] = np.nan
    return out[0] if scalar else out


def kaplan_meier(time: np.ndarray, event: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Non-private Kaplan-Meier step function (lifelines ``KaplanMeierFitter``): (times, survival)."""
    from lifelines import KaplanMeierFitter

    km = KaplanMeierFitter().fit(np.asarray(time, dtype=float), np.asarray(event))
    sf = km.survival_function_
    return sf.index.to_numpy(dtype=float), sf.iloc[:, 0].to_numpy(dtype=float)


def lifelines_fit(s: WeibullSample) -> WeibullFit:
    """lifelines ``WeibullFitter`` on the same normalised data (rho_ = shape, lambda_ = scale), tight tolerances."""
    from lifelines import WeibullFitter

    if not s.per_subject:
        raise DataError("lifelines needs each subject's time and event, and this sample holds only its table of times.")
    wf = WeibullFitter().fit(s.t, s.d, fit_options={"ftol": 1e-16, "gtol": 1e-12, "maxiter": 2000})
    return WeibullFit(float(wf.rho_), float(wf.lambda_), s.horizon)
