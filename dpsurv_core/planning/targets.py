"""Accuracy targets of a plan, and which mechanisms can meet each.

``--target`` takes one of (times in the study's unit, H a half-width of a 95% interval, P a power):

* ``survival:T:H``: the 95% interval of S(T), in every group, no wider than S +- H (H a share, e.g. 0.05);
* ``median:H``: the 95% interval of the median survival time, in every group, no wider than +- H;
* ``rmst:T:H``: the 95% interval of the restricted mean survival time to T, in every group, no wider than +- H;
* ``logrank-power:HR:P``: the private calibrated log-rank test rejects at alpha 0.05 with probability P when every
  group after the first has hazard ratio HR against the first (two groups: the pair's test; more: the overall test);
* ``weibull-shape:H``: the 95% interval of the Weibull shape of all subjects no wider than +- H;
* ``coefficient:H``: the 95% interval of the group coefficient (log odds ratio of group B against A in the
  discrete-time model) no wider than +- H.

A half-width target is met when the median over simulated releases of the half-width (the worst group's, for the
per-group targets) is at most H; a power target when the share of simulated releases whose test rejects is at least P.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dpsurv_core.errors import ParameterError

CURVES, POWER, WEIBULL, REGRESSION = "curves", "power", "weibull", "regression"
# the release each target is read from: a curve release serves the curves and, for count mechanisms, the test
RELEASE_FAMILY = {CURVES: "curves", POWER: "curves", WEIBULL: "weibull", REGRESSION: "regression"}
KINDS = ("survival", "median", "rmst", "logrank-power", "weibull-shape", "coefficient")
FORMS = {"survival": "survival:T:H", "median": "median:H", "rmst": "rmst:T:H", "logrank-power": "logrank-power:HR:P",
         "weibull-shape": "weibull-shape:H", "coefficient": "coefficient:H"}
# mechanisms tried when none is named: those that protect the subject with a formal epsilon
DEFAULT_MECHANISMS = {CURVES: ("laplace-counts", "adaptive-km", "time-indexed"),
                      POWER: ("laplace-counts", "adaptive-km"),
                      WEIBULL: ("lsp-tll", "laplace", "saa"),
                      REGRESSION: ("output", "objective", "psgld")}
# every mechanism a target can be planned for when named (rrr protects the group label only)
MECHANISMS = {CURVES: ("laplace-counts", "adaptive-km", "time-indexed", "rrr"),
              POWER: ("laplace-counts", "adaptive-km", "rrr"),
              WEIBULL: ("lsp-tll", "laplace", "saa"),
              REGRESSION: ("output", "objective", "psgld")}


@dataclass(frozen=True)
class Target:
    """One accuracy target: ``kind`` (:data:`KINDS`), its time ``time`` (survival, RMST) or hazard ratio
    (``hazard_ratio``, power) and the ``goal`` (a half-width H, or a power P)."""

    kind: str
    goal: float
    time: float | None = None
    hazard_ratio: float | None = None
    spec: str = ""

    @property
    def family(self) -> str:
        return {"survival": CURVES, "median": CURVES, "rmst": CURVES, "logrank-power": POWER,
                "weibull-shape": WEIBULL, "coefficient": REGRESSION}[self.kind]

    @property
    def is_power(self) -> bool:
        return self.kind == "logrank-power"

    @property
    def key(self) -> str:
        return self.spec or FORMS[self.kind]

    @property
    def reading(self) -> tuple[str, float | None, float | None]:
        """What a simulated release is read for, without the goal: (kind, time, hazard ratio). Targets that differ in
        their goal only (``survival:365:0.08`` and ``survival:365:0.05``) read the same numbers from a release."""
        return self.kind, self.time, self.hazard_ratio

    def met(self, value: float) -> bool:
        """Is the achieved ``value`` (a half-width, or a power) as good as the goal?"""
        if not math.isfinite(value) and not self.is_power:
            return False
        return value >= self.goal - 1e-12 if self.is_power else value <= self.goal + 1e-12

    def margin(self, value: float) -> float:
        """How far ``value`` beats the goal, relative to it: (H - h) / H, or (p - P) / P (negative: missed)."""
        if self.is_power:
            return (value - self.goal) / self.goal
        return -math.inf if not math.isfinite(value) else (self.goal - value) / self.goal

    def with_margin(self, m: float) -> Target:
        """The same target asking for a relative margin ``m`` (a goal H (1 - m), or P (1 + m), kept possible)."""
        if self.is_power:
            return replace(self, goal=min(0.999, max(1e-3, self.goal * (1.0 + m))))
        return replace(self, goal=max(self.goal * (1.0 - m), 1e-12))

    def describe(self, unit: str = "days") -> str:
        if self.kind == "survival":
            return f"survival at {self.time:g} {unit} within +-{self.goal:g} (95% interval, each group)"
        if self.kind == "median":
            return f"median survival time within +-{self.goal:g} {unit} (95% interval, each group)"
        if self.kind == "rmst":
            return f"restricted mean survival time to {self.time:g} {unit} within +-{self.goal:g} {unit} (95% interval, each group)"
        if self.kind == "logrank-power":
            return f"log-rank test power {self.goal:.0%} at hazard ratio {self.hazard_ratio:g} (alpha 0.05)"
        if self.kind == "weibull-shape":
            return f"Weibull shape within +-{self.goal:g} (95% interval)"
        return f"group coefficient (log odds ratio) within +-{self.goal:g} (95% interval)"

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": self.kind, "goal": self.goal}
        if self.time is not None:
            out["time"] = self.time
        if self.hazard_ratio is not None:
            out["hazard_ratio"] = self.hazard_ratio
        return out


def _number(text: str, spec: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(f"--target {spec!r}: {what} {text!r} is not a number.") from None
    if not math.isfinite(value):
        raise ParameterError(f"--target {spec!r}: {what} must be a finite number.")
    return value


def parse_target(spec: str) -> Target:
    """One ``--target`` (module docstring); a malformed one is one sentence naming the forms.

    Parameters
    ----------
    spec : str
        The ``--target`` text.

    Returns
    -------
    Target
        The precision asked for.

    Raises
    ------
    dpsurv_core.errors.ParameterError
        For a malformed target, naming the forms.
    """
    text = spec.strip()
    parts = [p.strip() for p in text.split(":")]
    kind = parts[0].lower()
    if kind not in FORMS:
        raise ParameterError(f"--target {spec!r} is not a target: use one of {', '.join(FORMS.values())}.")
    expected = FORMS[kind].count(":") + 1
    if len(parts) != expected:
        raise ParameterError(f"--target {spec!r} needs the form {FORMS[kind]}.")
    nums = [_number(p, spec, name) for p, name in zip(parts[1:], FORMS[kind].split(":")[1:])]
    if kind in ("survival", "rmst"):
        t, h = nums
        if t <= 0:
            raise ParameterError(f"--target {spec!r}: the time T must be positive.")
        if h <= 0 or (kind == "survival" and h >= 0.5):
            limit = "between 0 and 0.5 (a share: 0.05 is 5 points)" if kind == "survival" else "positive"
            raise ParameterError(f"--target {spec!r}: the half-width H must be {limit}.")
        return Target(kind, h, time=t, spec=text)
    if kind == "logrank-power":
        hr, p = nums
        if hr <= 0 or abs(hr - 1.0) < 1e-9:
            raise ParameterError(f"--target {spec!r}: the hazard ratio HR must be positive and not 1 (no effect has "
                                 "no power to plan).")
        if not (0.05 < p < 1.0):
            raise ParameterError(f"--target {spec!r}: the power P must be above the test's level 0.05 and below 1, "
                                 "for example 0.8.")
        return Target(kind, p, hazard_ratio=hr, spec=text)
    (h,) = nums
    if h <= 0:
        raise ParameterError(f"--target {spec!r}: the half-width H must be positive.")
    return Target(kind, h, spec=text)


def applicable(target: Target, mechanism: str) -> bool:
    return mechanism in MECHANISMS[target.family]


def not_applicable(target: Target, mechanism: str) -> str:
    """Why ``mechanism`` cannot serve ``target`` (one sentence)."""
    if target.is_power and mechanism == "time-indexed":
        return ("time-indexed releases no counts, so there is no log-rank test on its output: plan the test with "
                "laplace-counts, adaptive-km or rrr.")
    names = ", ".join(MECHANISMS[target.family])
    return f"{mechanism} cannot serve the target {target.key}: plan it with one of {names}."
