"""A bin's drop from its counts alone: the life table's premise solved exactly (and the constant-forces answer).

A bin of the grid releases r at risk at its start, d events and c censorings in it, and not when they fell. The life
table (Cutler and Ederer 1958) takes the event's share as d / (r - c / 2), half the censored at risk: the first order,
in the share that leaves, of its own premise (a constant hazard in the bin, censoring times spread evenly over it).
Over a long bin in which many leave the first order is not enough, and :func:`uniform_censoring_drop` solves the
premise itself; :func:`constant_hazards_drop` is the answer when censoring too has a constant hazard (Chiang 1968).
"""

from __future__ import annotations

import numpy as np

__all__ = ["constant_hazards_drop", "uniform_censoring_drop"]


def constant_hazards_drop(events: np.ndarray, censored: np.ndarray, at_risk: np.ndarray) -> np.ndarray:
    """The share of those at risk at a bin's start whom the event takes within it, 1 - (1 - (d + c) / r)^(d / (d + c)),
    when the hazards of the event and of censoring are both constant in time within the bin (Chiang 1968, the net
    probability under proportional forces of decrement): with r at risk at the start, d + c leave, so the two forces
    together are -log(1 - (d + c) / r) over the bin and the event's share of them is d / (d + c).

    The life table's rule, d / (r - c / 2), counts half of the censored as at risk; over a long bin in which many leave
    it takes too few events out (a subject must still be event-free to be censored, so censorings come earlier than
    the bin's middle on average) and the curve reads high after it: on a merged bin the two rules differ at first
    order. Weibull cohorts (n = 200, 30% censored, 100 equal bins, adaptive-km's bins merged at epsilon 0.5) read
    0.121 at a true S of 0.100 with the life table's rule on the exact counts, 0.096 with this one (the exact
    Kaplan-Meier curve of the same cohorts: 0.096). Where nobody is at risk, or nobody leaves, the drop is 0."""
    d, c, r = (np.asarray(x, float) for x in (events, censored, at_risk))
    leave = d + c
    ok = (r > 0) & (leave > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        stay = np.clip(1.0 - leave / np.where(ok, r, 1.0), 0.0, 1.0)
        drop = 1.0 - stay ** (d / np.where(ok, leave, 1.0))
    return np.where(ok, np.clip(drop, 0.0, 1.0), 0.0)


def _excess(q: np.ndarray) -> np.ndarray:
    """1 + L - L / q with L = -log(1 - q) (its series q / 2 + q^2 / 6 near 0), for 0 <= q < 1."""
    small = q < 1e-5
    with np.errstate(divide="ignore", invalid="ignore"):
        cum = -np.log1p(-q)
        x = 1.0 + cum - cum / np.where(small, 1.0, q)
    return np.where(small, q / 2 + q * q / 6, x)


def uniform_censoring_drop(events: np.ndarray, censored: np.ndarray, at_risk: np.ndarray, steps: int = 60
                           ) -> np.ndarray:
    """The share q of those at risk at a bin's start whom the event takes within it, when the event's hazard is
    constant in the bin and the censoring times of those censored in it are spread evenly over it (the life table's own
    premise, Cutler and Ederer 1958, solved exactly instead of to first order).

    With r at risk, a share pi of them with a censoring time uniform in the bin and L = -log(1 - q) the bin's cumulative
    hazard, E[c] / r = pi q / L and E[d] / r = q - pi (q + q / L - 1); eliminating pi,
    d / r = q - (c / r) (1 + L - L / q). Its first order, q = d / (r - c / 2), is the life table's rule, which over a
    long bin in which many leave takes too few events out (Weibull cohorts, n = 200, 30% censored, adaptive-km's bins
    merged on 100 equal bins: 0.121 at a true S of 0.100 on the exact counts). The right side rises from 0 to a
    maximum above 1 - c / r and falls back to 1 - c / r at q = 1, so counts with d + c <= r have a root on the rising
    branch, found by bisection. Counts beyond it (none that tail sums of non-negative counts give) take the
    constant-forces answer, 1 - (1 - (d + c) / r)^(d / (d + c)) (Chiang 1968). Nobody at risk or no event: 0."""
    d, c, r = (np.asarray(x, float) for x in np.broadcast_arrays(events, censored, at_risk))
    ok = (r > 0) & (d > 0)
    rr = np.where(ok, r, 1.0)
    dr, cr = np.where(ok, d / rr, 0.0), np.where(ok, np.maximum(c, 0.0) / rr, 0.0)

    def rising(q: np.ndarray) -> np.ndarray:  # the derivative of q - cr (1 + L - L / q) is positive
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = 1 / (1 - q) - (q / (1 - q) + np.log1p(-q)) / (q * q)
        return 1.0 - cr * np.where(q < 1e-5, 0.5 + q / 3, slope) > 0

    lo, hi = np.zeros_like(dr), np.full_like(dr, 1.0 - 1e-12)  # the top of the rising branch
    for _ in range(steps):
        mid = (lo + hi) / 2
        up = rising(mid)
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    top = lo
    reachable = top - cr * _excess(top) >= dr
    lo, hi = np.zeros_like(dr), top
    for _ in range(steps):
        mid = (lo + hi) / 2
        below = mid - cr * _excess(mid) < dr
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    q = np.where(reachable, (lo + hi) / 2, constant_hazards_drop(d, c, r))
    return np.where(ok, np.clip(q, 0.0, 1.0), 0.0)
