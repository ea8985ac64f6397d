"""Several planned releases sharing one cap: the epsilon split.

Releases compose sequentially: a subject's data in k releases at epsilons e_1..e_k is protected at e_1 + ... + e_k
(Dwork and Roth 2014, theorem 3.16), so a cap C is met when the planned epsilons sum to at most C. Each release i
serves targets t with goals; at epsilon e its worst relative margin is

    m_i(e) = min_t margin_t(e),   margin_t = (H - h(e)) / H for a half-width, (p(e) - P) / P for a power,

h(e) and p(e) the achieved median half-width and power (:mod:`dpsurv_core.planning.search`). The split maximises the
worst margin over all releases (a max-min allocation): for a margin m, release i needs e_i(m), the smallest epsilon at
which every target it serves has margin at least m (the search run with the goals H (1 - m) and P (1 + m)); the sum
S(m) = sum_i e_i(m) grows with m, and the plan takes the largest m with S(m) <= C (bisection on m). With m >= 0 every
target is met and the cap's remainder buys margin; a negative m means the cap cannot meet every target, and the split
then misses them all by as little as it can, in relative terms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpsurv_core.planning.search import EPS_MAX, LADDER, Achieved, Search
from dpsurv_core.planning.targets import Target

MARGIN_RANGE = (-0.9, 0.9)
BISECTIONS = 8
COMPOSITION = ("sequential composition: the releases' epsilons add up, each protecting the subject (Dwork and Roth "
               "2014); the releases read from one curve release (its curves, medians, RMST and log-rank tests) are "
               "post-processing of it and cost nothing more")


@dataclass
class PlannedRelease:
    """One release of the plan: a mechanism, its family's analysis, the searches of the targets it serves."""

    mechanism: str
    analysis: str
    targets: list[Target]
    searches: dict[str, Search]  # target key -> the search (profile) that reads it
    epsilon: float = EPS_MAX
    achieved: dict[str, Achieved] = field(default_factory=dict)

    def need(self, m: float) -> float:
        """The smallest epsilon at which every target has relative margin at least ``m`` (inf: none below 10)."""
        out = LADDER[0]
        for t in self.targets:
            sol = self.searches[t.key].solve(t.with_margin(m))
            if sol.epsilon is None:
                return math.inf
            out = max(out, sol.epsilon)
        return out

    def read(self, eps: float) -> None:
        self.epsilon = eps
        self.achieved = {t.key: self.searches[t.key].at(t, eps) for t in self.targets}

    def worst_margin(self) -> float:
        return min((t.margin(self.achieved[t.key].median) for t in self.targets), default=math.inf)


def split(releases: Sequence[PlannedRelease], cap: float | None, progress: Callable[[str], None] | None = None
          ) -> dict[str, Any]:
    """Each release's epsilon under ``cap`` (module docstring); without a cap, each at its own smallest epsilon."""
    say = progress or (lambda _: None)
    if not releases:
        return {"cap": cap, "total": 0.0, "releases": [], "meets_all": True, "composition": COMPOSITION}
    base = [r.epsilon for r in releases]  # each release's own smallest epsilon, as planned and checked
    if cap is None:
        chosen, m = base, 0.0
    else:
        def total(m: float) -> float:
            return sum(r.need(m) for r in releases)

        lo, hi = MARGIN_RANGE
        if sum(base) <= cap:
            lo = 0.0
        if total(lo) > cap:  # not even the loosest margin fits: every release scaled into the cap
            say("the cap is too small for any margin searched")
            finite = [min(b, EPS_MAX) for b in base]
            scale = cap / sum(finite)
            chosen, m = [max(LADDER[0], e * scale) for e in finite], lo
        else:
            for _ in range(BISECTIONS):
                mid = 0.5 * (lo + hi)
                if total(mid) <= cap:
                    lo = mid
                else:
                    hi = mid
            m = lo
            chosen = [min(r.need(m), EPS_MAX) for r in releases]
    for r, e in zip(releases, chosen):
        if e != r.epsilon or not r.achieved:
            r.read(e)
    meets = all(r.achieved[t.key].met for r in releases for t in r.targets)
    tot = float(sum(r.epsilon for r in releases))
    out: dict[str, Any] = {
        "cap": cap, "total": round(tot, 6), "meets_all": bool(meets),
        "worst_margin": min(r.worst_margin() for r in releases),
        "within_cap": None if cap is None else bool(tot <= cap + 1e-9),
        "composition": COMPOSITION,
        "releases": [{"release": i + 1, "analysis": r.analysis, "mechanism": r.mechanism, "epsilon": r.epsilon,
                      "targets": [{"target": t.key, "achieved": r.achieved[t.key].to_dict(),
                                   "met": bool(r.achieved[t.key].met),
                                   "margin": _finite(t.margin(r.achieved[t.key].median))} for t in r.targets]}
                     for i, r in enumerate(releases)],
    }
    if cap is not None:
        out["objective"] = ("every target met, the cap's remainder spent to maximise the worst relative margin" if m >= 0
                            else "the cap cannot meet every target: the split maximises the worst relative margin "
                                 "(every target missed by as little as possible)")
    return out


def _finite(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None
