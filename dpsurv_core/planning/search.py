"""The smallest epsilon meeting a target, and what a release at an epsilon achieves.

Epsilons are searched on the ladder :data:`LADDER` (0.05 to 10, neighbours at most 1.67 apart), released lazily: a
profile (:mod:`dpsurv_core.planning.evaluate`) releases its simulated cohorts only at the epsilons the search asks
for. The search first reads the cohorts without noise (epsilon = inf, where the mechanism allows it: a cheap exact
release): a target missed there is missed at every epsilon. It then brackets the target between two neighbouring
ladder epsilons, the lower missing it and the upper meeting it, choosing each next epsilon from a model through the
points already released:

* a half-width h: h^2 = a + b / epsilon^2 (sampling variance plus a noise variance proportional to the noise scale
  squared, 1 / epsilon^2), fitted through the two released points nearest the goal;
* a power p: probit(p) linear in log epsilon.

Inside the bracket the answer is the smallest epsilon of two significant digits whose release meets the target, each
simulated cohort's half-width interpolated between the bracket's two releases by the same model (h^2 linear in
1 / epsilon^2, per cohort and group: the cohorts and their noise seeds are the same at every epsilon), a power by its
probit linear in log epsilon. At a ladder epsilon the numbers are the releases' own.

A half-width target is met when, in every group, the median over cohorts is at most H; its achieved precision is the
worst group's median with that group's 10th and 90th percentiles. A power target is met when the share of rejecting
releases is at least P; its p10 and p90 are the power's Monte Carlo 80% interval, p +- 1.28 sqrt(p (1 - p) / R).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from dpsurv_core.planning.evaluate import Profile
from dpsurv_core.planning.targets import Target

LADDER = (0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0)
EPS_MAX = LADDER[-1]
PILOT = LADDER.index(1.0)
MAX_STEPS = 8
EXTRAPOLATE = 1.5  # the model is carried at most this factor above the highest released epsilon
Z80 = 1.2815515655446004  # the 90% point of the standard normal
Z95 = 1.959963984540054  # the 97.5% point


def round_up(x: float, digits: int = 2) -> float:
    """``x`` rounded up to ``digits`` significant digits (the epsilons a plan names)."""
    if x <= 0:
        return x
    p = digits - 1 - math.floor(math.log10(x))
    v = math.ceil(x * 10 ** p - 1e-9) / 10 ** p
    return float(f"{v:.{max(p, 0)}f}") if p > 0 else float(v)


def candidates(lo: float, hi: float) -> list[float]:
    """The epsilons of two significant digits in (lo, hi], ascending (hi included)."""
    vals = {round_up(x) for x in np.geomspace(lo * 1.0001, hi, 80)}
    return sorted(v for v in vals | {hi} if lo < v <= hi)


@dataclass
class Achieved:
    """What releases at ``epsilon`` achieve for one target: the median (a power for a power target), p10 and p90, the
    worst group for a per-group target, whether the numbers are interpolated between two released epsilons."""

    epsilon: float
    median: float
    p10: float
    p90: float
    met: bool
    group: str | None = None
    interpolated: bool = False

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"median": _finite(self.median), "p10": _finite(self.p10), "p90": _finite(self.p90)}
        if self.group is not None:
            out["group"] = self.group
        if self.interpolated:
            out["interpolated"] = True
        return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass
class Solution:
    """A target's smallest epsilon (None: not reachable below :data:`EPS_MAX`), and the achieved precision there."""

    target: Target
    epsilon: float | None
    achieved: Achieved
    floor: float | None = None  # the precision without noise (median, worst group), where it was read
    bracket: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def reachable(self) -> bool:
        return self.epsilon is not None


# ------------------------------------------------------------------------------------------------ summaries
def summarise(target: Target, values: np.ndarray, groups: Sequence[str], eps: float, interpolated: bool = False
              ) -> Achieved:
    """The target's achieved precision from per-unit ``values`` (units, groups) (module docstring)."""
    if target.is_power:
        p = float(np.mean(values))
        se = math.sqrt(max(p * (1.0 - p), 0.0) / max(values.shape[0], 1))
        return Achieved(eps, p, max(0.0, p - Z80 * se), min(1.0, p + Z80 * se), target.met(p),
                        interpolated=interpolated)
    med = np.median(values, axis=0)  # inf where more than half the releases have no finite limit
    k = int(np.argmax(np.where(np.isnan(med), np.inf, med)))
    col = values[:, k]
    p10, p90 = (float(np.percentile(col, q, method="lower" if q < 50 else "higher")) for q in (10, 90))
    group = groups[k] if values.shape[1] > 1 else None
    return Achieved(eps, float(med[k]), p10, p90, target.met(float(med[k])), group, interpolated)


def _probit(p: float, n: int) -> float:
    q = min(max(p, 0.5 / n), 1.0 - 0.5 / n)
    return float(ndtri(q))


def interpolate(target: Target, lo: tuple[float, np.ndarray], hi: tuple[float, np.ndarray], eps: float
                ) -> np.ndarray:
    """Per-unit values at ``eps`` between two released epsilons (module docstring); a power target's values are its
    interpolated power repeated (its summary is their mean)."""
    (e0, v0), (e1, v1) = lo, hi
    if target.is_power:
        n = v0.shape[0]
        z0, z1 = _probit(float(np.mean(v0)), n), _probit(float(np.mean(v1)), n)
        w = (math.log(eps) - math.log(e0)) / (math.log(e1) - math.log(e0))
        return np.full_like(v0, float(ndtr(z0 + w * (z1 - z0))))
    u0, u1, u = 1.0 / e0 ** 2, 1.0 / e1 ** 2, 1.0 / eps ** 2
    w = (u - u0) / (u1 - u0)
    with np.errstate(invalid="ignore"):
        y = (1.0 - w) * v0 ** 2 + w * v1 ** 2
    out = np.sqrt(np.maximum(y, 0.0))
    return np.where(np.isfinite(v0) & np.isfinite(v1), out, np.inf)


# ------------------------------------------------------------------------------------------------ the search
class Search:
    """The epsilon search of every target one profile reads (they share its releases).

    The search steers by the epsilons *it* has read (``asked``), not by every epsilon the profile holds: a profile
    kept between plans (the app keeps one per declaration, with releases at every ladder epsilon) then gives the same
    answer as a fresh one, only without releasing again."""

    def __init__(self, profile: Profile, targets: Sequence[Target], floor: bool = True,
                 say: Callable[[str], None] | None = None) -> None:
        self.profile, self.targets, self.use_floor, self.say = profile, list(targets), floor, say
        self.groups = tuple(profile.study.groups)
        self.asked: set[float] = set()

    @property
    def evaluated(self) -> list[float]:
        """The epsilons this search has read, ascending (inf: the release without noise)."""
        return sorted(self.asked)

    def values(self, eps: float) -> dict[str, np.ndarray]:
        self.asked.add(eps)
        if self.say is not None and not self.profile.has(self.targets, eps):
            at = "without noise" if math.isinf(eps) else f"at epsilon {eps:g}"
            self.say(f"{self.profile.describe()}: {self.profile.count} simulated cohorts released and read {at}")
        return self.profile.values(self.targets, eps)

    def at(self, target: Target, eps: float) -> Achieved:
        """The achieved precision at ``eps``: released there if it is a ladder epsilon or already released, else
        interpolated between the released epsilons around it (released when there are none)."""
        done = self.evaluated
        if eps in done or eps in LADDER:
            return summarise(target, self.values(eps)[target.key], self.groups, eps)
        below = [e for e in done if e < eps and math.isfinite(e)]
        above = [e for e in done if e > eps and math.isfinite(e)]
        if not above and len(below) >= 2 and eps <= EXTRAPOLATE * max(below):
            # just above the released epsilons: the same model carried on from the two highest (the precision only
            # improves with epsilon, so a release there is not needed to say what it reaches)
            e0, e1 = sorted(below)[-2:]
            v = interpolate(target, (e0, self.values(e0)[target.key]), (e1, self.values(e1)[target.key]), eps)
            return summarise(target, v, self.groups, eps, interpolated=True)
        if not below or not above:
            return summarise(target, self.values(eps)[target.key], self.groups, eps)
        e0, e1 = max(below), min(above)
        v = interpolate(target, (e0, self.values(e0)[target.key]), (e1, self.values(e1)[target.key]), eps)
        return summarise(target, v, self.groups, eps, interpolated=True)

    def floor(self, target: Target) -> Achieved | None:
        """The precision without noise, where the mechanism can release exactly (curves and the log-rank test)."""
        if not self.use_floor or self.profile.family not in ("curves", "power") or self.profile.mechanism == "rrr":
            return None
        return summarise(target, self.values(math.inf)[target.key], self.groups, math.inf)

    def _model_guess(self, target: Target, known: dict[int, Achieved]) -> float | None:
        """The epsilon where the model through the two released points nearest the goal meets it."""
        pts = sorted(((LADDER[i], a.median) for i, a in known.items() if math.isfinite(a.median)),
                     key=lambda p: abs(math.log(max(p[1], 1e-12)) - math.log(target.goal)))[:2]
        if len(pts) < 2:
            return None
        (e0, y0), (e1, y1) = pts
        if target.is_power:
            n = self.profile.count
            z0, z1, zg = _probit(y0, n), _probit(y1, n), _probit(target.goal, n)
            if abs(z1 - z0) < 1e-9 or abs(math.log(e1 / e0)) < 1e-12:
                return None
            return math.exp(math.log(e0) + (zg - z0) * math.log(e1 / e0) / (z1 - z0))
        u0, u1 = (1.0 / e ** 2 if math.isfinite(e) else 0.0 for e in (e0, e1))
        if abs(u1 - u0) < 1e-15:
            return None
        b = (y1 ** 2 - y0 ** 2) / (u1 - u0)
        a = y0 ** 2 - b * u0
        if b <= 0:
            return None
        u = (target.goal ** 2 - a) / b
        return math.inf if u <= 0 else 1.0 / math.sqrt(u)

    def solve(self, target: Target) -> Solution:
        """The smallest epsilon meeting ``target`` (module docstring)."""
        notes: list[str] = []
        floor = self.floor(target)
        if floor is not None and not floor.met:
            at_max = self.at(target, EPS_MAX)
            return Solution(target, None, at_max, floor.median, notes=[unreachable(target, floor, self.profile)])
        known: dict[int, Achieved] = {i: self.at(target, e) for i, e in enumerate(LADDER) if e in self.asked}
        for _ in range(MAX_STEPS):
            lo = max((i for i, a in known.items() if not a.met), default=-1)
            above = [i for i, a in known.items() if a.met and i > lo]
            hi = min(above) if above else None
            if hi is not None and (hi == lo + 1 or hi == 0):
                break
            if hi is None and lo == len(LADDER) - 1:
                break
            if not known:
                nxt = PILOT
            else:
                guess = self._model_guess(target, known)
                if guess is None and floor is not None and len(known) == 1:
                    ((i0, a0),) = known.items()
                    guess = self._model_guess_with_floor(target, LADDER[i0], a0.median, floor.median)
                top = (hi - 1) if hi is not None else len(LADDER) - 1
                if guess is None:  # no model yet: three rungs towards the goal
                    nxt = min(top, lo + 3) if hi is None else max(lo + 1, hi - 3)
                else:
                    nxt = min(max(int(np.searchsorted(np.asarray(LADDER), guess * 0.999)), lo + 1), top)
            known[nxt] = self.at(target, LADDER[nxt])
        lo = max((i for i, a in known.items() if not a.met), default=-1)
        above = [i for i, a in known.items() if a.met and i > lo]
        if not above:
            return Solution(target, None, known.get(len(LADDER) - 1) or self.at(target, EPS_MAX),
                            None if floor is None else floor.median,
                            notes=[unreachable(target, floor, self.profile)])
        hi = min(above)
        if hi == 0:
            return Solution(target, LADDER[0], known[0], None if floor is None else floor.median, (LADDER[0], LADDER[0]),
                            [f"Met already at epsilon {LADDER[0]:g}, the smallest the plan searches."])
        e0, e1 = LADDER[hi - 1], LADDER[hi]
        v0, v1 = self.values(e0)[target.key], self.values(e1)[target.key]
        for eps in candidates(e0, e1):
            if eps == e1:
                return Solution(target, e1, known[hi], None if floor is None else floor.median, (e0, e1), notes)
            a = summarise(target, interpolate(target, (e0, v0), (e1, v1), eps), self.groups, eps, interpolated=True)
            if a.met:
                return Solution(target, eps, a, None if floor is None else floor.median, (e0, e1), notes)
        raise AssertionError("unreachable: the bracket's upper end meets the target")  # pragma: no cover

    def _model_guess_with_floor(self, target: Target, e0: float, y0: float, floor: float) -> float | None:
        """With one released point and the precision without noise: a half-width's h^2 = floor^2 + b / epsilon^2
        through it; a power's noncentrality lambda with 1 / lambda linear in 1 / epsilon^2 (the noise adds variance
        to O - E), lambda read as (probit(p) + z)^2, z the two-sided 5% point (Schoenfeld 1981's approximation)."""
        if target.is_power:
            n = self.profile.count
            s0, sf, sg = (_probit(p, n) + Z95 for p in (y0, floor, target.goal))
            if min(s0, sf, sg) <= 0 or s0 >= sf:
                return None
            a, b = 1.0 / sf ** 2, (1.0 / s0 ** 2 - 1.0 / sf ** 2) * e0 ** 2
            u = (1.0 / sg ** 2 - a) / b
            return math.inf if u <= 0 else 1.0 / math.sqrt(u)
        if not (math.isfinite(y0) and math.isfinite(floor)) or y0 <= floor:
            return None
        b = (y0 ** 2 - floor ** 2) * e0 ** 2
        room = target.goal ** 2 - floor ** 2
        return math.inf if room <= 0 else math.sqrt(b / room)


def unreachable(target: Target, floor: Achieved | None, profile: Profile) -> str:
    """Why a target is not reachable below epsilon 10, with what would reach it where that can be said."""
    top = f"not reachable below epsilon {EPS_MAX:g}"
    if floor is None or floor.met:
        return f"{target.key}: {top} with {profile.mechanism}."
    if target.is_power:
        return (f"{target.key}: {top}: even without noise the test's power is {floor.median:.0%} at this size; more "
                "subjects (or a larger effect) are needed.")
    if not math.isfinite(floor.median):
        return f"{target.key}: {top}: even without noise the interval has no finite limit at this size and follow-up."
    factor = (floor.median / target.goal) ** 2
    sizes = profile.study.sizes
    need = ", ".join(str(math.ceil(s * factor)) for s in sizes)
    return (f"{target.key}: {top}: even without noise the median half-width is {floor.median:.3g} at this size; "
            f"about {need} subjects per group would be needed without noise (half-widths shrink as 1 / sqrt(n)), "
            "and more with it.")


def release_epsilon(solutions: Sequence[Solution]) -> float:
    """The smallest epsilon of one release meeting every reachable target it serves (EPS_MAX when none is)."""
    eps = [s.epsilon for s in solutions if s.epsilon is not None]
    return max(eps) if eps else EPS_MAX
