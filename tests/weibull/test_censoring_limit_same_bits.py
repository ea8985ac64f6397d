"""The censoring limits behind the Weibull intervals are found faster but decide every bisection step as before, so a
stored release's intervals re-derive to the last bit: the sorted-ratio count equals the elementwise comparison it
replaces, and the limits equal the ones the plain loops give (the loops are repeated here as the reference)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsurv_core.weibull.censoring import _censored_count, censored_share, censoring_limit, exact_censoring_limit


def _plain_limit(shape: float, scale: float, share: float, rng: np.random.Generator, m: int = 20_000) -> float:
    if share <= 0.0:
        return math.inf
    t = scale * rng.exponential(size=m) ** (1.0 / shape)
    u = rng.random(m)
    if np.mean(t > 1.0) >= share:
        return math.inf
    lo, hi = 1e-8 * scale, 1e4 * max(scale, 1.0)
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if np.mean(np.minimum(u * mid, 1.0) < t) > share else (lo, mid)
    return math.sqrt(lo * hi)


def _plain_exact(shape: float, share: float, scale: float = 1.0) -> float:
    if share <= 0.0 or censored_share(shape, scale, math.inf) >= share:
        return math.inf
    lo, hi = math.log(scale) - 40.0, math.log(scale) + 40.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if censored_share(shape, scale, math.exp(mid)) > share else (lo, mid)
    return math.exp(0.5 * (lo + hi))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 300), st.floats(1e-6, 1e3))
def test_the_count_equals_the_comparison_it_replaces(seed, m, c):
    rng = np.random.default_rng(seed)
    t = rng.weibull(rng.uniform(0.2, 5.0), m) * rng.uniform(0.01, 3.0)
    u = rng.random(m)
    t[: m // 5] = np.round(t[: m // 5], 2)  # ties
    u[m // 7: m // 6] = 0.0  # a zero draw: its ratio is infinite (or not a number where t is 0 too)
    t[m // 9: m // 8] = 0.0
    count = _censored_count(t, u)
    for cc in (c, *(  # c, and values of c on some ratio exactly (and one ulp either side)
            t[t <= 1.0][:5] / np.where(u[t <= 1.0][:5] > 0, u[t <= 1.0][:5], 1.0))):
        for x in (float(cc), float(np.nextafter(cc, 0)), float(np.nextafter(cc, np.inf))):
            assert count(x) == int(np.count_nonzero(np.minimum(u * x, 1.0) < t)), x


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.2, 6.0), st.floats(0.05, 5.0), st.floats(0.0, 0.95))
def test_the_limits_are_the_plain_loops_to_the_last_bit(seed, shape, scale, share):
    a = censoring_limit(shape, scale, share, np.random.default_rng(seed), m=2_000)
    b = _plain_limit(shape, scale, share, np.random.default_rng(seed), m=2_000)
    assert a == b or (math.isinf(a) and math.isinf(b))
    assert exact_censoring_limit(shape, share, scale) == _plain_exact(shape, share, scale)


def test_the_count_holds_at_the_edges_of_floating_point():
    """Subnormal times and draws, a product that rounds onto a subnormal time, and values of c that are not finite
    positive numbers: the comparison itself decides them."""
    t = np.array([5e-324, 5e-324, 1e-300, 0.5, 2.0, 0.0, 1e-290, 0.25])
    u = np.array([0.5634, 5e-324, 1e-300, 0.0, 0.0, 0.0, 0.75, 2.0**-53])
    count = _censored_count(t, u)
    for c in (5e-324, 1e-310, 1e-300, 0.842, 1.0, 1e300, 1.7e308, math.inf, -1.0, 0.0, -0.0, math.nan):
        with np.errstate(invalid="ignore", over="ignore"):
            plain = int(np.count_nonzero(np.minimum(u * c, 1.0) < t))
        assert count(c) == plain, c

