"""Person-period data for discrete-time survival regression (docs/mechanisms.md, Nguyen & Hui 2017, regression sections 2.2-3).

Time is normalised by the public horizon H and (0, 1] is cut into T equal intervals. Subject i
with time t_i falls in interval k_i = clip(ceil(T t_i / H), 1, T) (a subject followed past H is
censored at H, in interval T) and contributes the rows j = 1..k_i with label y_ij = 0 for
j < k_i and y_{i k_i} = d_i. Row features are z_ij = (x_i, s(j)):

* x_i: covariates in the unit ball. A numeric covariate with public range [lo, hi] becomes
  (clip(x, lo, hi) - c) / h with c = (lo + hi) / 2, h = (hi - lo) / 2, so it lies in [-1, 1]; a
  categorical one becomes a one-hot block without its reference level (at most one 1). With P =
  (number of numeric columns) + (number of categorical blocks), the whole vector is divided by
  sqrt(P), so ||x_i||^2 <= P / P = 1.
* s(j): the natural cubic spline basis (Hastie, Tibshirani, Friedman, ESL eq. 5.4-5.5) of the
  interval midpoint m_j = (j - 1/2) / T with q knots xi_k = k / (q + 1) spread evenly over (0, 1);
  its first element is the constant 1 (the intercept). The basis is orthonormalised over the T
  midpoints (QR; the same space of functions) and divided by the public constant max_j ||s(j)||
  so that ||s(j)|| <= 1.

Hence every row satisfies ||z_ij||^2 <= 1 + 1, i.e. R = max ||z_ij|| <= sqrt(2); the value used
is the exact public bound sqrt(1 + max_j ||s(j)||^2) = sqrt(2), which depends on no data.

The expansion is vectorised (np.repeat / cumsum); a million subjects is a few array operations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpsurv_core import limits
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.regression.design import (  # noqa: F401  (the design's public constants, re-exported)
    DEFAULT_INTERVALS,
    DEFAULT_KNOTS,
    gradient_bound,
    hessian_trace_bound,
    interval_basis,
    knots,
    natural_spline_basis,
    original_factors,
    row_bound,
)

MAX_LEVELS = 20


@dataclass(frozen=True)
class CovariateColumn:
    """One encoded column: its source covariate, kind, and the factor to original units."""

    name: str          # reported name, e.g. "age" or "sex=M"
    source: str        # the covariate it comes from
    kind: str          # "numeric" or "categorical"
    centre: float      # numeric: c = (lo + hi) / 2 (0 for categorical)
    half_range: float  # numeric: h = (hi - lo) / 2 (1 for categorical)
    level: str | None = None
    bounds: tuple[float, float] | None = None  # numeric: the public range (lo, hi) as given


@dataclass(frozen=True)
class Encoding:
    """Public encoding of the covariates into the unit ball, and the way back to original units."""

    columns: tuple[CovariateColumn, ...]
    blocks: int  # P: numeric columns + categorical blocks
    disclosures: tuple[Disclosure, ...] = ()
    levels: tuple[tuple[str, tuple[str, ...]], ...] = ()  # per categorical covariate, its levels (reference first)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def to_original(self) -> np.ndarray:
        """Factor f with beta_original = f * beta_normalised: 1 / (h sqrt(P)) (numeric), 1 / sqrt(P) (one-hot)."""
        return original_factors([c.half_range for c in self.columns], self.blocks)

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        """Encoded covariates, shape (n, p), every row in the unit ball (values outside the range are clamped)."""
        n = len(frame)
        out = np.zeros((n, len(self.columns)))
        for k, c in enumerate(self.columns):
            v = frame[c.source]
            if c.kind == "numeric":
                x = np.clip(v.to_numpy(dtype=float), c.centre - c.half_range, c.centre + c.half_range)
                out[:, k] = (x - c.centre) / c.half_range
            else:
                out[:, k] = (v.astype(str).to_numpy() == c.level).astype(float)
        return out / (math.sqrt(self.blocks) if self.blocks else 1.0)


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def build_encoding(frame: pd.DataFrame, covariates: tuple[str, ...] | list[str],
                   ranges: dict[str, tuple[float, float]] | None = None,
                   levels: dict[str, tuple[str, ...]] | None = None, strict: bool = True) -> Encoding:
    """Encoding from declared ranges / levels; anything read off the data is returned as a disclosure.

    Raises a one-sentence :class:`DataError` or :class:`ParameterError` for an unknown column, an
    all-missing column, text in a numeric column, a constant column or a free-text column. ``strict`` False (a
    release with noise): a constant column whose range or categories are declared is kept, since a refusal decided
    by the values that occur would itself depend on the data; its coefficient is then noise alone (the cohort's
    validation warns the data holder that the column is constant).
    """
    ranges, levels = dict(ranges or {}), dict(levels or {})
    cols: list[CovariateColumn] = []
    disclosures: list[Disclosure] = []
    used_levels: list[tuple[str, tuple[str, ...]]] = []
    blocks = 0
    if len(set(covariates)) != len(covariates):
        raise ParameterError("A covariate is listed twice: list each covariate once.")
    for name in covariates:
        if name not in frame.columns:
            raise DataError(f"There is no covariate column {name!r}: choose among {', '.join(map(str, frame.columns[:12]))}.",
                            column=name)
        s = frame[name]
        if s.isna().all():
            raise DataError(f"Covariate {name!r} is missing for every subject: remove it from the covariates.", column=name)
        if not _is_numeric(s):
            num = pd.to_numeric(s, errors="coerce")
            if num.notna().sum() >= 0.8 * s.notna().sum():
                i = int(np.flatnonzero((num.isna() & s.notna()).to_numpy())[0])
                raise DataError(f"Covariate {name!r} is numeric but row {i + 2} holds {str(s.iloc[i])!r}: fix or clear "
                                "the text entries.", column=name)
        if s.nunique(dropna=True) < 2:
            if strict or name not in (ranges if _is_numeric(s) else levels):
                raise ParameterError(f"Covariate {name!r} is constant ({s.dropna().iloc[0]!r}), so its coefficient cannot "
                                     "be estimated: remove it from the covariates.")
        if _is_numeric(s):
            if name in ranges:
                lo, hi = map(float, ranges[name])
            else:
                lo, hi = float(s.min()), float(s.max())
                # the range scales the covariate into the unit ball the noise is calibrated to: read off the data,
                # one subject (the oldest, say) moves every other subject's scaled value, so no DP bound holds
                disclosures.append(Disclosure(f"range:{name}", f"not DP: the range of {name!r} ({lo:g} to {hi:g}) was "
                                                               "read off the data, and it sets the scale the noise is "
                                                               "calibrated to; declare clinically plausible bounds "
                                                               "(--range) instead.", dp=False))
            if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
                raise ParameterError(f"The range of {name!r} must be two finite numbers lo < hi, got {lo:g} to {hi:g}.")
            cols.append(CovariateColumn(name, name, "numeric", (lo + hi) / 2, (hi - lo) / 2, bounds=(lo, hi)))
        else:
            if name in levels:
                levs = tuple(str(v) for v in levels[name])
            else:
                levs = tuple(sorted(s.dropna().astype(str).unique()))
                disclosures.append(Disclosure(f"levels:{name}", f"The categories of {name!r} ({', '.join(levs[:8])}) were "
                                                                "read off the data: declare them to avoid this disclosure."))
            if len(levs) > MAX_LEVELS:
                raise ParameterError(f"Covariate {name!r} has {len(levs)} distinct text values: it looks like free text; "
                                     "choose a numeric or categorical column with at most 20 categories.")
            if len(levs) < 2:
                raise ParameterError(f"Covariate {name!r} needs at least two declared categories.")
            cols += [CovariateColumn(f"{name}={lev}", name, "categorical", 0.0, 1.0, lev) for lev in levs[1:]]
            used_levels.append((name, levs))
        blocks += 1
    return Encoding(tuple(cols), blocks, tuple(disclosures), tuple(used_levels))


@dataclass
class PersonPeriod:
    """The expanded design: rows z_ij = (x_i, s(j)), labels y_ij, subject index, and the public bounds."""

    Z: np.ndarray            # (rows, p + q)
    y: np.ndarray            # (rows,) 0/1
    subject: np.ndarray      # (rows,) index 0..n-1 of the subject of each row
    interval: np.ndarray     # (rows,) interval j = 1..T of each row
    offsets: np.ndarray      # (n + 1,) rows of subject i are offsets[i]:offsets[i+1]
    k: np.ndarray            # (n,) last interval k_i of each subject
    event: np.ndarray        # (n,) d_i after censoring at the horizon
    encoding: Encoding
    spline: np.ndarray       # (T, q) s(j)
    horizon: float
    intervals: int
    knots: int
    n_public: int            # public normaliser n of the objective (1/n) sum L_i
    rows_per_subject: int = 1
    disclosures: list[Disclosure] = field(default_factory=list)
    dropped: int = 0         # subjects dropped for a missing covariate value

    @property
    def n(self) -> int:
        return int(self.k.size)

    @property
    def p(self) -> int:
        return len(self.encoding.columns)

    @property
    def dim(self) -> int:
        return int(self.Z.shape[1])

    @property
    def names(self) -> list[str]:
        return self.encoding.names + [f"spline{j + 1}" for j in range(self.knots)]

    @property
    def R(self) -> float:
        """Public bound on ||z_ij||: sqrt(1 + max_j ||s(j)||^2) = sqrt(2) (covariates in the unit ball)."""
        return row_bound(self.spline)

    @property
    def c1(self) -> float:
        return gradient_bound(self.rows_per_subject, self.intervals, self.R)

    @property
    def c2(self) -> float:
        return hessian_trace_bound(self.rows_per_subject, self.intervals, self.R)

    @property
    def compressed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct rows (z, y) with their multiplicities: the summed loss is the same, the fit much faster."""
        if not hasattr(self, "_compressed"):
            key = np.column_stack([self.Z, self.y])
            uniq, counts = np.unique(key, axis=0, return_counts=True)
            if uniq.shape[0] > 0.8 * key.shape[0]:  # nothing to gain
                self._compressed = (self.Z, self.y.astype(float), np.ones(self.y.size))
            else:
                self._compressed = (uniq[:, :-1], uniq[:, -1], counts.astype(float))
        return self._compressed

    def subject_rows(self, subjects: np.ndarray) -> np.ndarray:
        """Row indices of the given subjects, concatenated in order (vectorised, no loop over subjects)."""
        subjects = np.asarray(subjects, dtype=np.int64)
        starts, counts = self.offsets[subjects], self.k[subjects]
        total = int(counts.sum())
        first = np.cumsum(counts) - counts
        return np.repeat(starts - first, counts) + np.arange(total)


def expand(time: np.ndarray, event: np.ndarray, X: np.ndarray, horizon: float, intervals: int = DEFAULT_INTERVALS,
           q: int = DEFAULT_KNOTS) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised person-period expansion: returns Z, y, subject, interval, offsets, k, d (see module docstring)."""
    time = np.asarray(time, dtype=float)
    limits.check_person_period(time.size, intervals)  # n x T bounds the rows: refuse before allocating them
    k = np.clip(np.ceil(time / horizon * intervals - 1e-12), 1, intervals).astype(np.int64)
    d = np.where(time <= horizon, np.asarray(event, dtype=np.int8), 0).astype(np.int8)
    n = k.size
    offsets = np.concatenate([[0], np.cumsum(k)])
    rows = int(offsets[-1])
    subject = np.repeat(np.arange(n), k)
    interval = np.arange(rows) - offsets[:-1][subject] + 1
    y = np.zeros(rows, dtype=np.int8)
    y[offsets[1:] - 1] = d
    s = interval_basis(intervals, q)
    Z = np.empty((rows, X.shape[1] + q))
    Z[:, :X.shape[1]] = X[subject]
    Z[:, X.shape[1]:] = s[interval - 1]
    return Z, y, subject, interval, offsets, k, d


def person_period(cohort: Cohort, covariates: tuple[str, ...] | list[str], horizon: float | None = None,
                  intervals: int = DEFAULT_INTERVALS, knots: int = DEFAULT_KNOTS,  # noqa: F811
                  ranges: dict[str, tuple[float, float]] | None = None,
                  levels: dict[str, tuple[str, ...]] | None = None, n_public: int | None = None,
                  public: PublicParameters | None = None, strict: bool = True) -> PersonPeriod:
    """Person-period design of ``cohort`` with public horizon, T intervals, q knots and covariate bounds.

    ``horizon`` (else ``public.horizon``, else read off the data), covariate ``ranges`` (else
    ``public``'s declared ranges, else the data's) and ``n_public`` (the normaliser n of the
    objective; else the number of subjects) are public; each default read off the data comes back
    as a disclosure. Subjects with a missing covariate value are dropped (complete cases). ``strict`` False (a
    release with noise): a covariate with a declared range or categories is not refused for being constant in the
    data (:func:`build_encoding`), and with ``n_public`` declared one complete subject is enough.
    """
    covariates = tuple(covariates)
    if not covariates:
        raise ParameterError("Choose at least one covariate for the regression (for example age).")
    try:
        intervals, knots = int(intervals), int(knots)
    except (TypeError, ValueError):
        raise ParameterError("The number of intervals and of knots must be whole numbers.") from None
    if not 2 <= intervals <= limits.MAX_INTERVALS:
        raise ParameterError(f"The number of intervals T must be between 2 and {limits.MAX_INTERVALS}, got {intervals}.")
    if not 2 <= knots <= min(intervals, 20):
        raise ParameterError(f"The number of knots q must be between 2 and min(T, 20) = {min(intervals, 20)}, got {knots}.")
    disclosures: list[Disclosure] = []
    if horizon is None and public is not None:
        horizon = public.horizon
        disclosures += [d for d in public.disclosures() if d.parameter == "horizon"]
    if horizon is None:
        pp = PublicParameters.derive(cohort)
        horizon = pp.horizon
        disclosures += [d for d in pp.disclosures() if d.parameter == "horizon"]
    horizon = float(horizon)
    if not (horizon > 0 and math.isfinite(horizon)):
        raise ParameterError(f"The horizon must be a positive time, got {horizon}.")
    declared = dict(ranges or {})
    if public is not None:
        for col, r in public.covariate_ranges.items():
            if col not in public.ranges_from_data:
                declared.setdefault(col, r)
    frame = cohort.covariates
    enc = build_encoding(frame, covariates, declared, levels, strict)
    disclosures += list(enc.disclosures)
    complete = frame[list(covariates)].notna().all(axis=1).to_numpy()
    dropped = int((~complete).sum())
    # with n declared, a release with noise needs a subject, not two: the declared n scales its noise
    if complete.sum() < (1 if not strict and n_public is not None else 2):
        raise DataError(f"{'No subject has' if complete.sum() == 0 else 'Fewer than two subjects have'} every chosen "
                        "covariate: choose covariates with fewer missing values.")
    limits.check_person_period(int(complete.sum()), intervals)
    X = enc.transform(frame.loc[complete])
    Z, y, subject, interval, offsets, k, d = expand(cohort.time[complete], cohort.event[complete], X, horizon, intervals,
                                                    knots)
    if n_public is None:
        n_public = int(complete.sum())
        what = "complete subjects" if cohort.rows_per_subject <= 1 else "complete records"
        disclosures.append(Disclosure("n", f"not DP: the normaliser n = {n_public} of the objective (1/n) sum L_i is the "
                                           f"number of {what}, read off the data, and the noise is scaled by 1/n, so "
                                           "neighbouring cohorts get different noise; declare n from the study design.",
                                      dp=False))
    n_public = int(n_public)
    if n_public < 1:
        raise ParameterError(f"The public cohort size n must be at least 1, got {n_public}.")
    return PersonPeriod(Z, y, subject, interval, offsets, k, d, enc, interval_basis(intervals, knots), horizon, intervals,
                        knots, n_public, max(int(cohort.rows_per_subject), 1), disclosures, dropped)
