"""The study a plan is made for, declared from public knowledge only, and the cohorts simulated from it.

A :class:`Study` holds what a protocol states before any data are seen: the number of subjects per group, the
horizon (end of follow-up), the public time grid, the share of subjects censored by the horizon, and the expected
survival S(t) of the reference group (:class:`Survival`). No data set is read anywhere in this package.

Cohorts (:func:`simulate`). Subject i of group g has an event time T = H^{-1}(E / HR_g), E standard exponential and
H the cumulative hazard of S (inversion; group g's survival is S(t)^{HR_g}, proportional hazards, Cox 1972), a
censoring time U c with U uniform on (0, 1), and follow-up ending at the horizon h: the observed time is
min(T, U c, h), an event when T <= min(U c, h). The limit c is chosen so that the declared share Q of all subjects is
censored (drop-outs before the horizon and everyone still event-free at it):

    Q(c) = sum_g w_g [ (1 / c) int_0^min(c, h) S_g(u) du + 1{c > h} (1 - h / c) S_g(h) ],

w_g the group's share of subjects. Q(c) falls from 1 (c -> 0) to the pooled S(h) (c -> infinity), so c follows by
bisection on log c, and a declared share below the pooled S(h) is impossible (everyone still event-free at the
horizon is censored there). Times are kept as real numbers.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError

GROUP_NAMES = tuple("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
MAX_CURVE_POINTS = 10_000
MAX_SUBJECTS = 1_000_000
MAX_CSV_BYTES = 2_000_000


@dataclass(frozen=True)
class Survival:
    """The expected survival of the reference group: ``kind`` "exponential" (``parameters`` = (median,)), "weibull"
    ((shape, scale): S(t) = exp(-(t / scale)^shape)) or "curve" (``times``, ``survival``: a public table, read with a
    constant hazard between its points, log S linear in t, and the last interval's hazard after its last point)."""

    kind: str
    parameters: tuple[float, ...] = ()
    times: tuple[float, ...] = ()
    survival: tuple[float, ...] = ()
    source: str = ""

    @classmethod
    def exponential(cls, median: float) -> Survival:
        if not (math.isfinite(median) and median > 0):
            raise ParameterError(f"--median must be a positive time, got {median}.")
        return cls("exponential", (float(median),))

    @classmethod
    def weibull(cls, shape: float, scale: float) -> Survival:
        if not (math.isfinite(shape) and shape > 0 and math.isfinite(scale) and scale > 0):
            raise ParameterError(f"--weibull needs a positive SHAPE and SCALE (for example 1.2,900), got {shape},{scale}.")
        return cls("weibull", (float(shape), float(scale)))

    @classmethod
    def table(cls, times: list[float], survival: list[float], source: str = "") -> Survival:
        """A public curve from its points; S(0) = 1 is added when the table starts later."""
        t, s = np.asarray(times, float), np.asarray(survival, float)
        where = f" in {source}" if source else ""
        if t.size < 1 or t.size != s.size or t.size > MAX_CURVE_POINTS:
            raise ParameterError(f"The curve{where} needs between 1 and {MAX_CURVE_POINTS} rows of time,survival.")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(s))):
            raise ParameterError(f"The curve{where} has a time or survival that is not a number.")
        if np.any(t < 0) or np.any(np.diff(t) <= 0):
            raise ParameterError(f"The curve{where} needs times from 0 up, each later than the one before.")
        if np.any(s < 0) or np.any(s > 1) or np.any(np.diff(s) > 1e-12):
            raise ParameterError(f"The curve{where} needs survival between 0 and 1 that never rises.")
        if t[0] == 0 and s[0] < 1:
            raise ParameterError(f"The curve{where} starts below 1 at time 0: survival at time 0 is 1.")
        if t[0] > 0:
            t, s = np.concatenate([[0.0], t]), np.concatenate([[1.0], s])
        if t.size < 2 or s[-1] >= 1:
            raise ParameterError(f"The curve{where} never falls below 1: it needs at least one point with survival "
                                 "under 1.")
        return cls("curve", (), tuple(t.tolist()), tuple(s.tolist()), source)

    @classmethod
    def read_csv(cls, path: str) -> Survival:
        """A public CSV file of ``time,survival`` rows (:meth:`from_csv_text`)."""
        p = Path(path)
        if p.stat().st_size > MAX_CSV_BYTES:
            raise ParameterError(f"--curve {path!r} is larger than 2 MB: a public curve needs only its points.")
        return cls.from_csv_text(p.read_text(encoding="utf-8-sig"), p.name)

    @classmethod
    def from_csv_text(cls, text: str, source: str = "") -> Survival:
        """A public curve from CSV text of ``time,survival`` rows (a header row is allowed; survival as a share, or
        in % with or without the sign)."""
        if len(text) > MAX_CSV_BYTES:
            raise ParameterError(f"The curve {source!r} is larger than 2 MB: a public curve needs only its points.")
        rows: list[tuple[float, float]] = []
        for k, row in enumerate(csv.reader(text.lstrip("\ufeff").splitlines())):
            cells = [c.strip() for c in row if c.strip()]
            if not cells:
                continue
            try:
                pct = cells[1].endswith("%")
                rows.append((float(cells[0]), float(cells[1].rstrip("%")) / (100 if pct else 1)))
            except (ValueError, IndexError):
                if k == 0:
                    continue  # a header
                raise ParameterError(f"Row {k + 1} of the curve {source!r} is not time,survival (two numbers).") \
                    from None
        if rows and 1 < max(s for _, s in rows) <= 100:
            rows = [(t, s / 100) for t, s in rows]  # percentages without a % sign
        return cls.table([t for t, _ in rows], [s for _, s in rows], source)

    # ------------------------------------------------------------------------------------------------ the law
    def cumulative_hazard(self, t: np.ndarray) -> np.ndarray:
        t = np.maximum(np.asarray(t, float), 0.0)
        if self.kind == "exponential":
            return math.log(2.0) * t / self.parameters[0]
        if self.kind == "weibull":
            shape, scale = self.parameters
            return (t / scale) ** shape
        times, h = self._hazard_points()
        slope = (h[-1] - h[-2]) / (times[-1] - times[-2])
        return np.where(t <= times[-1], np.interp(t, times, h), h[-1] + slope * (t - times[-1]))

    def survival_at(self, t: np.ndarray, hazard_ratio: float = 1.0) -> np.ndarray:
        return np.exp(-hazard_ratio * self.cumulative_hazard(t))

    def inverse_hazard(self, h: np.ndarray) -> np.ndarray:
        """The time at which the cumulative hazard reaches ``h`` (inf where it never does)."""
        h = np.asarray(h, float)
        if self.kind == "exponential":
            return h * self.parameters[0] / math.log(2.0)
        if self.kind == "weibull":
            shape, scale = self.parameters
            return scale * h ** (1.0 / shape)
        times, hs = self._hazard_points()
        slope = (hs[-1] - hs[-2]) / (times[-1] - times[-2])
        beyond = times[-1] + (h - hs[-1]) / slope if slope > 0 else np.full(h.shape, np.inf)
        return np.where(h <= hs[-1], np.interp(h, hs, times), beyond)

    def median(self) -> float:
        return float(self.inverse_hazard(np.array([math.log(2.0)]))[0])

    def _hazard_points(self) -> tuple[np.ndarray, np.ndarray]:
        times = np.asarray(self.times, float)
        s = np.maximum(np.asarray(self.survival, float), 1e-12)  # S = 0: every subject's event by then
        h = -np.log(s)
        return times, np.maximum.accumulate(h)

    def describe(self, unit: str = "days") -> str:
        if self.kind == "exponential":
            return f"exponential survival with median {self.parameters[0]:g} {unit}"
        if self.kind == "weibull":
            return f"Weibull survival with shape {self.parameters[0]:g} and scale {self.parameters[1]:g} {unit}"
        name = f" ({self.source})" if self.source else ""
        return f"a public survival curve{name} of {len(self.times)} points, constant hazard between them"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind}
        if self.kind == "exponential":
            out["median"] = self.parameters[0]
        elif self.kind == "weibull":
            out.update(shape=self.parameters[0], scale=self.parameters[1])
        else:
            out.update(times=list(self.times), survival=list(self.survival), source=self.source)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Survival:
        kind = str(d.get("kind"))
        if kind == "exponential":
            return cls.exponential(float(d["median"]))
        if kind == "weibull":
            return cls.weibull(float(d["shape"]), float(d["scale"]))
        return cls.table(list(d["times"]), list(d["survival"]), str(d.get("source", "")))


@dataclass(frozen=True)
class Study:
    """The declared study: group ``sizes``, ``horizon``, the public grid ``grid`` (START, STOP, BINS), the share of
    subjects ``censoring`` censored by the horizon, the reference group's ``survival`` and the time ``unit``."""

    sizes: tuple[int, ...]
    horizon: float
    grid: tuple[float, float, int]
    censoring: float
    survival: Survival
    unit: str = "days"
    groups: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not self.sizes or any(s < 1 for s in self.sizes):
            raise ParameterError("Every group needs at least one subject: check --n, --groups or --sizes.")
        if len(self.sizes) > len(GROUP_NAMES):
            raise ParameterError(f"At most {len(GROUP_NAMES)} groups can be planned, got {len(self.sizes)}.")
        if sum(self.sizes) > MAX_SUBJECTS:
            raise ParameterError(f"Plans are for up to {MAX_SUBJECTS:,} subjects, got {sum(self.sizes):,}.")
        if not (math.isfinite(self.horizon) and self.horizon > 0):
            raise ParameterError(f"--horizon must be a positive time, got {self.horizon}.")
        start, stop, bins = self.grid
        if not (math.isfinite(start) and math.isfinite(stop) and 0 <= start < stop and 1 <= bins <= 2000):
            raise ParameterError("--grid must be START:STOP:BINS with 0 <= START < STOP and 1 to 2000 bins, for example "
                                 "0:1825:20.")
        if stop > self.horizon + 1e-9:
            raise ParameterError(f"The grid ends at {stop:g}, after the horizon {self.horizon:g}: follow-up ends at "
                                 "the horizon, so end the grid there or earlier.")
        if not (0.0 <= self.censoring < 1.0):
            raise ParameterError(f"--censoring must be a share from 0 up to (not including) 1, got {self.censoring}.")
        if not self.groups:
            object.__setattr__(self, "groups", GROUP_NAMES[: len(self.sizes)])
        pooled = self.pooled_survival_at_horizon(1.0)
        if self.censoring < pooled - 0.005:
            raise ParameterError(f"--censoring {self.censoring:g} is below the share still event-free at the horizon "
                                 f"({pooled:.3f} under the declared survival), all of whom are censored there: declare "
                                 f"at least {math.ceil(pooled * 100) / 100:g}, or a survival that falls further by "
                                 f"{self.horizon:g} {self.unit}.")

    @property
    def n(self) -> int:
        return int(sum(self.sizes))

    def public(self) -> PublicParameters:
        """The public parameters every simulated release uses: the declared grid, horizon and groups."""
        start, stop, bins = self.grid
        return PublicParameters(float(self.horizon), TimeGrid.equal(float(start), float(stop), int(bins)),
                                group_categories=self.groups)

    def hazard_ratios(self, hazard_ratio: float = 1.0) -> np.ndarray:
        """Each group's hazard ratio against the first: 1 for the first group, ``hazard_ratio`` for the others."""
        return np.array([1.0] + [float(hazard_ratio)] * (len(self.sizes) - 1))

    def pooled_survival_at_horizon(self, hazard_ratio: float) -> float:
        w = np.asarray(self.sizes, float) / self.n
        return float(np.dot(w, self.survival.survival_at(np.array([self.horizon]), 1.0)[0]
                            ** self.hazard_ratios(hazard_ratio)))

    def censoring_limit(self, hazard_ratio: float = 1.0) -> float:
        """The uniform censoring limit c that censors the declared share of subjects (module docstring); inf when
        the horizon alone censors that share or more."""
        return _censoring_limit(self, float(hazard_ratio))

    def to_dict(self) -> dict[str, object]:
        start, stop, bins = self.grid
        return {"n": self.n, "sizes": list(self.sizes), "groups": list(self.groups), "horizon": self.horizon,
                "grid": f"{start:g}:{stop:g}:{int(bins)}", "censoring": self.censoring,
                "survival": self.survival.to_dict(), "time_unit": self.unit}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Study:
        start, stop, bins = str(d["grid"]).split(":")
        return cls(tuple(int(s) for s in d["sizes"]), float(d["horizon"]),
                   (float(start), float(stop), int(bins)), float(d["censoring"]),
                   Survival.from_dict(d["survival"]), str(d.get("time_unit", "days")))

    def describe(self) -> str:
        sizes = " and ".join(f"{s} in group {g}" for g, s in zip(self.groups, self.sizes)) if len(self.sizes) > 1 \
            else f"{self.sizes[0]} subjects in one group"
        start, stop, bins = self.grid
        return (f"{self.n} subjects ({sizes}), followed up to {self.horizon:g} {self.unit}; "
                f"{self.survival.describe(self.unit)}; {self.censoring:.0%} of subjects censored by the horizon; "
                f"public grid of {int(bins)} equal bins from {start:g} to {stop:g} {self.unit}")


def sizes_of(n: int | None, groups: int | None, sizes: str | None) -> tuple[int, ...]:
    """Group sizes from ``--n`` with ``--groups`` (equal, the first groups one larger where n does not divide) or
    ``--sizes A,B``."""
    if sizes:
        try:
            out = tuple(int(s) for s in sizes.split(","))
        except ValueError:
            raise ParameterError(f"--sizes {sizes!r} is not whole numbers separated by commas, for example 200,200.") \
                from None
        if any(s < 1 for s in out):
            raise ParameterError("--sizes needs at least one subject in every group.")
        if n is not None and n != sum(out):
            raise ParameterError(f"--n {n} is not the sum of --sizes {sizes} ({sum(out)}): give one or make them agree.")
        if groups is not None and groups != len(out):
            raise ParameterError(f"--groups {groups} does not match the {len(out)} sizes of --sizes.")
        return out
    if n is None:
        raise ParameterError("Declare the study's size: --n N (with --groups G) or --sizes A,B.")
    g = 1 if groups is None else int(groups)
    if g < 1 or n < g:
        raise ParameterError(f"--n {n} cannot be split into {g} groups of at least one subject.")
    return tuple(n // g + (1 if i < n % g else 0) for i in range(g))


def parse_grid(spec: str) -> tuple[float, float, int]:
    """``START:STOP:BINS`` as ``km --grid`` takes it (the event-times grid needs data, so a plan cannot use it)."""
    grid = TimeGrid.parse(spec) if spec.strip() != "event-times" else None
    if grid is None:
        raise ParameterError("A plan reads no data, so it cannot use the event-times grid: declare START:STOP:BINS.")
    return float(grid.edges[0]), float(grid.edges[-1]), int(grid.bins)


@lru_cache(maxsize=256)
def _censoring_limit(study: Study, hazard_ratio: float) -> float:
    q, h = study.censoring, study.horizon
    w = np.asarray(study.sizes, float) / study.n
    hrs = study.hazard_ratios(hazard_ratio)
    u = np.linspace(0.0, h, 8001)
    s = study.survival.survival_at(u)[None, :] ** hrs[:, None]  # (G, points)
    integral = np.concatenate([np.zeros((len(hrs), 1)), np.cumsum((s[:, 1:] + s[:, :-1]) / 2 * np.diff(u), axis=1)],
                              axis=1)
    pooled_int = w @ integral
    s_h = float(w @ s[:, -1])
    if q <= s_h + 1e-9:
        return math.inf

    def share(c: float) -> float:
        if c <= h:
            return float(np.interp(c, u, pooled_int)) / c
        return float(pooled_int[-1]) / c + (1.0 - h / c) * s_h

    lo, hi = math.log(h * 1e-6), math.log(h * 1e8)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if share(math.exp(mid)) > q else (lo, mid)
    return math.exp(0.5 * (lo + hi))


@dataclass(frozen=True)
class Cohorts:
    """``R`` simulated cohorts of one scenario: ``time`` and ``event`` (R, n), ``group`` (n,) labels."""

    time: np.ndarray
    event: np.ndarray
    group: np.ndarray
    hazard_ratio: float
    seed: int

    @property
    def count(self) -> int:
        return int(self.time.shape[0])

    def cohort(self, r: int, covariate: bool = False) -> Cohort:
        """Cohort ``r`` as every analysis takes it (``covariate``: the group as the 0/1 column ``group_b``)."""
        import pandas as pd

        cov = (pd.DataFrame({"group_b": (self.group != self.group[0]).astype(float)}) if covariate
               else _no_covariates())
        return Cohort(self.time[r], self.event[r], self.group, covariates=cov, name=f"simulated cohort {r + 1}")


@lru_cache(maxsize=1)
def _no_covariates() -> object:
    """One empty covariate table shared by every simulated cohort (nothing writes to it; building one per cohort
    cost more than counting the cohort)."""
    import pandas as pd

    return pd.DataFrame()


def simulate(study: Study, count: int, seed: int, hazard_ratio: float = 1.0) -> Cohorts:
    """``count`` cohorts of the declared study (module docstring), the first group at the declared survival and every
    other at ``hazard_ratio`` times its hazard; cached per declaration, scenario, count and seed."""
    return _simulate(study, int(count), int(seed), float(hazard_ratio))


@lru_cache(maxsize=32)
def _simulate(study: Study, count: int, seed: int, hazard_ratio: float) -> Cohorts:
    rng = np.random.default_rng([seed, 20261129, int(round(hazard_ratio * 1e6))])
    hrs = np.repeat(study.hazard_ratios(hazard_ratio), study.sizes)
    n = study.n
    t = study.survival.inverse_hazard(rng.exponential(size=(count, n)) / hrs[None, :])
    c = rng.random((count, n)) * study.censoring_limit(hazard_ratio)
    end = np.minimum(c, study.horizon)
    time = np.minimum(t, end)
    event = (t <= end).astype(np.int64)
    group = np.repeat(np.array(study.groups), study.sizes)
    time.setflags(write=False)
    event.setflags(write=False)
    return Cohorts(time, event, group, hazard_ratio, seed)
