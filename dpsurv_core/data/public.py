"""Public parameters (docs/mechanisms.md): declared, not read off the data.

A value derived from the data (a horizon from the maximum time, a grid of event times, group
categories, covariate ranges) is allowed only with a disclosure the app and the JSON show.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.errors import ParameterError

MAX_BINS = 10_000


@dataclass(frozen=True)
class Disclosure:
    """A value a release read off the data instead of taking it declared: recorded with the release, and named to the
    person who accepts it.

    Parameters
    ----------
    parameter : str
        The parameter read off the data (``"horizon"``, ``"n"``, ``"categories"``, ...).
    message : str
        The sentence saying what was read and what it reveals.
    dp : bool, default True
        False when the release is not differentially private because of it.
    """

    parameter: str
    message: str
    dp: bool = True  # False: the release is not differentially private because of it

    def to_dict(self) -> dict:
        return {"parameter": self.parameter, "message": self.message, "dp": self.dp}


def nice_ceiling(x: float) -> float:
    """Round up to two significant digits (1022 -> 1100, 5215 -> 5300)."""
    if x <= 0:
        return 1.0
    mag = 10.0 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / mag - 1e-9) * mag


@dataclass(frozen=True)
class TimeGrid:
    """Bin edges b_0 < b_1 < ... < b_J; results are reported at the right edges b_1..b_J.

    Counting convention (exact KM when the edges are the distinct event times): events in
    (b_{j-1}, b_j] belong to bin j; censorings in [b_{j-1}, b_j) leave the risk set before
    bin j's events; a subject censored exactly at b_j stays at risk for bin j. :meth:`equal`, :meth:`event_times`
    and :meth:`parse` build the usual grids.

    Parameters
    ----------
    edges : numpy.ndarray
        The bin edges b_0 < ... < b_J in the data's time unit: at least two, increasing and finite.
    kind : {"equal", "event-times", "custom"}, default "equal"
        How the edges were chosen; "event-times" (the data's distinct event times) is disclosed as not DP.
    from_data : bool, default False
        True when the grid's end was read off the data (disclosed with the release).
    """

    edges: np.ndarray
    kind: str = "equal"
    from_data: bool = False

    def __post_init__(self) -> None:
        e = np.asarray(self.edges, dtype=float)
        if e.ndim != 1 or e.size < 2 or not np.all(np.diff(e) > 0) or not np.all(np.isfinite(e)):
            raise ParameterError("A time grid needs at least two increasing, finite edges.")
        object.__setattr__(self, "edges", e)

    @property
    def points(self) -> np.ndarray:
        return self.edges[1:]

    @property
    def bins(self) -> int:
        return self.edges.size - 1

    @classmethod
    def equal(cls, start: float, stop: float, bins: int) -> TimeGrid:
        if bins < 1 or not stop > start or start < 0 or not np.isfinite(stop):
            raise ParameterError(f"A grid needs 0 <= start < stop (finite) and at least one bin, got {start}:{stop}:{bins}.")
        if bins > MAX_BINS:
            raise ParameterError(f"A grid of {bins:,} bins is more than the {MAX_BINS:,} dpsurv allows: use fewer bins "
                                 "(each bin's counts get their own noise, so fine grids are mostly noise anyway).")
        return cls(np.linspace(start, stop, int(bins) + 1), "equal", False)

    @classmethod
    def event_times(cls, cohort: Cohort) -> TimeGrid:
        """The data's distinct event times as edges (not DP), near-tied times one time as R's timefix makes them
        unless the column map says ``timefix`` False (:mod:`dpsurv_core.curves.timefix`)."""
        from dpsurv_core.curves.timefix import merge_near_ties, wanted

        time = merge_near_ties(cohort.time) if wanted(cohort) else cohort.time
        times = np.unique(time[cohort.event == 1])
        if times.size == 0:
            return cls.without_events(float(np.max(cohort.time)) if cohort.time.size else 1.0)
        start = min(0.0, float(times[0]) - 1.0)
        return cls(np.concatenate([[start], times]), "event-times", True)

    @classmethod
    def without_events(cls, last_time: float) -> TimeGrid:
        """The event-time grid of data with no event (every subject censored): one bin up to the last time, so that
        the curve is 1 throughout, as R survival's survfit gives for such data."""
        return cls(np.array([min(0.0, last_time - 1.0), max(last_time, 0.0)]), "event-times", True)

    @classmethod
    def parse(cls, spec: str, cohort: Cohort | None = None) -> TimeGrid:
        """``START:STOP:BINS`` or ``event-times``."""
        spec = spec.strip()
        if spec == "event-times":
            if cohort is None:
                raise ParameterError("The event-times grid needs data.")
            return cls.event_times(cohort)
        parts = spec.split(":")
        try:
            if len(parts) != 3:
                raise ValueError
            start, stop, bins = float(parts[0]), float(parts[1]), int(parts[2])
        except ValueError:
            raise ParameterError(f"--grid {spec!r} is not START:STOP:BINS (for example 0:1100:20) or event-times.") from None
        return cls.equal(start, stop, bins)

    def disclosures(self) -> list[Disclosure]:
        if self.kind == "event-times":
            return [Disclosure("grid", "not DP: time axis taken from the data (every distinct event time is published).",
                               dp=False)]
        if self.from_data:
            return [Disclosure("grid", "The grid's end was read off the data (its maximum time, rounded up).")]
        return []

    def to_dict(self) -> dict:
        return {"kind": self.kind, "edges": self.edges.tolist(), "from_data": self.from_data}


@dataclass(frozen=True)
class PublicParameters:
    """Everything a mechanism may treat as public, each with where it came from.

    :meth:`derive` fills what was not declared from the data and flags each such value; a value read off the data is
    named as a disclosure with the release (:meth:`disclosures`).

    Parameters
    ----------
    horizon : float
        The public horizon T_max in the data's time unit: follow-up ends there; positive.
    grid : TimeGrid
        The public time grid the counts are binned on and the curves reported at.
    horizon_from_data : bool, default False
        True when the horizon was read off the data (its largest time, rounded up).
    group_categories : tuple of str, default ()
        The public categories of the group column, in order.
    categories_from_data : bool, default False
        True when the categories were read off the data.
    covariate_ranges : dict of str to (float, float), default {}
        The public (low, high) range of each numeric covariate, used to rescale it in a regression.
    ranges_from_data : frozenset of str, default frozenset()
        The covariates whose range was read off the data (a regression that rescales with it is not DP).
    """

    horizon: float
    grid: TimeGrid
    horizon_from_data: bool = False
    group_categories: tuple[str, ...] = ()
    categories_from_data: bool = False
    covariate_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    ranges_from_data: frozenset[str] = frozenset()

    def disclosures(self, parameters: tuple[str, ...] | None = None) -> list[Disclosure]:
        """Every data-derived public value, or only those an analysis uses (``parameters`` such as
        ``("horizon", "grid", "groups")``; ``"range"`` covers every covariate range)."""
        out = self._all_disclosures()
        if parameters is None:
            return out
        return [d for d in out if d.parameter.split(":")[0] in parameters]

    def _all_disclosures(self) -> list[Disclosure]:
        out: list[Disclosure] = []
        if self.horizon_from_data:
            out.append(Disclosure("horizon", f"The horizon {self.horizon:.6g} was read off the data (maximum time, "
                                             "rounded up): declare it from the study design to avoid this disclosure."))
        out += [d for d in self.grid.disclosures() if not (self.horizon_from_data and d.parameter == "grid" and d.dp)]
        if self.categories_from_data and self.group_categories:
            out.append(Disclosure("groups", f"The group categories ({', '.join(self.group_categories)}) were read off the "
                                            "data: declare them to avoid disclosing which groups occur."))
        for name in sorted(self.ranges_from_data):
            lo, hi = self.covariate_ranges[name]
            # a regression that scales the covariate with it is not DP (its own disclosure says so: person_period);
            # a categorical covariate or another analysis does not use it
            out.append(Disclosure(f"range:{name}", f"The range of {name!r} ({lo:g} to {hi:g}) was read off the data: "
                                                   "a regression that rescales it with this range is not DP; declare "
                                                   "clinically plausible bounds instead."))
        return out

    @classmethod
    def derive(cls, cohort: Cohort, horizon: float | None = None, bins: int = 20, grid: TimeGrid | None = None,
               group_categories: tuple[str, ...] | None = None,
               covariate_ranges: dict[str, tuple[float, float]] | None = None,
               source_factor: float = 1.0) -> PublicParameters:
        """Fill what was not declared from the data, flagging each such value as a disclosure. A horizon read off the
        data is the largest time rounded up (:func:`nice_ceiling`) in the unit the data are stored in: times in
        another unit times ``source_factor`` (so that showing months instead of days changes no number)."""
        horizon_from_data = horizon is None
        if horizon is None:
            horizon = nice_ceiling(float(cohort.time.max()) * source_factor) / source_factor
        if not horizon > 0:
            raise ParameterError(f"The horizon must be a positive time, got {horizon}.")
        if grid is None:
            grid = TimeGrid(np.linspace(0.0, horizon, bins + 1), "equal", horizon_from_data)
        cats_from_data = group_categories is None and cohort.group is not None
        cats = tuple(cohort.groups) if group_categories is None else tuple(group_categories)
        ranges = dict(covariate_ranges or {})
        derived = set()
        for col in cohort.covariate_columns():
            s = cohort.covariates[col]
            if col not in ranges and np.issubdtype(s.dtype, np.number):
                ranges[col] = (float(s.min()), float(s.max()))
                derived.add(col)
        return cls(horizon, grid, horizon_from_data, cats, cats_from_data, ranges, frozenset(derived))
