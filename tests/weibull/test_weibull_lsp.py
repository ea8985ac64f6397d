"""The LSP ladder: roots, nesting, the ladder property on neighbours, sampling, sensitivities, and
distinguishing tests (D vs D minus one subject) for LSP + TLL, Laplace and sample-and-aggregate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import nice_ceiling
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull.lsp import compute_ladder
from dpsurv_core.weibull.mechanisms import LaplaceWeibull, LspTll, SampleAggregateWeibull, block_mle
from dpsurv_core.weibull.model import WeibullSample, sample_from_cohort
from tests.weibull.reference_lsp import reference_ladder

OMEGA = 6.0


def _sample(name: str) -> WeibullSample:
    c = load_bundled(name)
    return sample_from_cohort(c, nice_ceiling(float(c.time.max())))


@pytest.fixture(scope="module")
def flchain_ladder():
    s = _sample("flchain")
    return s, compute_ladder(s, 500, 10.0)


def _reference_F(t, d, k, p, omega=OMEGA):
    """f_U^k - g_L^k straight from the formula, on raw arrays."""
    s1, s0 = np.sum(t**p * np.log(t)), np.sum(t**p)
    return (s1 + k / (math.e * p)) / (s0 + k) - 1 / p - (np.sum(d * np.log(t)) - k * omega) / (d.sum() - k)


def _reference_G(t, d, k, p, omega=OMEGA):
    """f_L^k - g_U^k straight from the formula (n-k smallest times in the denominator)."""
    ts = np.sort(t)
    s1 = np.sum(t**p * np.log(t))
    return (s1 - k / (math.e * p)) / np.sum(ts[: t.size - k] ** p) - 1 / p - (
        np.sum(d * np.log(t)) + k * omega) / (d.sum() + k)


@pytest.mark.parametrize("k", [1, 2, 10, 100, 250, 499])
def test_rungs_are_the_roots_of_the_boundary_equations(flchain_ladder, k):
    s, lad = flchain_ladder
    lo = optimize.brentq(lambda p: _reference_F(s.t, s.d, k, p), 1e-3, lad.p_star, xtol=1e-14)
    assert lad.raw_lower[k] == pytest.approx(lo, abs=1e-8)
    g_gamma = _reference_G(s.t, s.d, k, 10.0)
    if g_gamma <= 0:
        assert lad.raw_upper[k] == 10.0
    else:
        hi = optimize.brentq(lambda p: _reference_G(s.t, s.d, k, p), lad.p_star, 10.0, xtol=1e-14)
        assert lad.raw_upper[k] == pytest.approx(hi, abs=1e-8)


def test_boundary_functions_are_monotone_so_roots_are_unique(flchain_ladder):
    s, lad = flchain_ladder
    grid = np.linspace(0.02, 10, 400)
    for k in (1, 50, 300):
        F = np.array([_reference_F(s.t, s.d, k, p) for p in grid])
        G = np.array([_reference_G(s.t, s.d, k, p) for p in grid])
        assert np.all(np.diff(F) > 0)
        assert np.sum(np.diff(np.sign(G)) != 0) <= 1


def test_nesting(flchain_ladder):
    _, lad = flchain_ladder
    assert lad.lower[0] == lad.upper[0] == lad.p_star
    assert np.all(np.diff(lad.lower) <= 0) and np.all(np.diff(lad.upper) >= 0)
    assert lad.lower[-1] == 0.0 and lad.upper[-1] == 10.0
    assert np.all(lad.lengths >= 0) and lad.lengths.sum() == pytest.approx(10.0)
    # flchain: the first rungs are narrow (about 0.003 on each side), as in the paper's Figure 1 shape
    assert 0.0 < lad.lower[0] - lad.lower[1] < 0.01 and 0.0 < lad.upper[1] - lad.upper[0] < 0.01


def test_release_on_flchain_lands_near_lifelines(flchain_ladder):
    """One LSP + TLL release at epsilon 1 on flchain (n = 7874) is close to lifelines' WeibullFitter on the same
    normalised data. Its speed against that fit is measured in benchmarks/timings.py."""
    from lifelines import WeibullFitter

    s, _ = flchain_ladder
    rel = LspTll(1.0, s.horizon).compute(s, SimulationNoise(0))
    fit = WeibullFitter().fit(s.t, s.d)
    assert rel.trials == 1 and not rel.clamped.any() and 1 <= rel.rung[0] <= 501
    assert abs(rel.shape[0] - fit.rho_) < 0.05
    assert abs(rel.scale_normalised[0] / fit.lambda_ - 1) < 0.05
    # the rung drawn is internal: with the shape it would tell neighbouring ladders apart, so it is never released
    assert set(rel.records()[0]) == {"trial", "shape", "scale", "scale_normalised", "clamped"}


# ----------------------------------------------------------------- the vectorised ladder against the sequential one

# Both searches stop once a Newton step is below 1e-9 relative; a root the sequential one reached by bisection can be
# that far from the true root, so the two nested ladders agree to about 1e-9 (1.4e-9 was the largest gap seen).
RTOL = 1e-8


def _same_ladder(s: WeibullSample, rungs: int, gamma: float):
    old, new = reference_ladder(s, rungs, gamma), compute_ladder(s, rungs, gamma)
    np.testing.assert_allclose(new.lower, old.lower, rtol=RTOL, atol=1e-14 * gamma)
    np.testing.assert_allclose(new.upper, old.upper, rtol=RTOL, atol=1e-14 * gamma)
    assert new.p_star == old.p_star and new.n_events == old.n_events
    # raw roots differ only where the sequential search clamped a rung to the previous rung's root
    for raw_new, raw_old in ((new.raw_lower, old.raw_lower), (new.raw_upper, old.raw_upper)):
        off = ~np.isclose(raw_new, raw_old, rtol=RTOL, atol=1e-14 * gamma)
        k = np.nonzero(off)[0]
        assert np.allclose(raw_old[k], raw_old[k - 1], rtol=RTOL), k
    return old, new


@st.composite
def odd_samples(draw):
    """Tiny to moderate samples: ties (a few distinct times), all censored but one event, all events, continuous
    times; omega, gamma and K from edge values to large ones."""
    n = draw(st.integers(1, 80))
    omega = draw(st.one_of(st.floats(0.3, 15.0), st.just(6.0)))
    kind = draw(st.sampled_from(["ties", "continuous", "one event", "all events"]))
    if kind == "ties":
        m = draw(st.integers(1, 6))
        u = np.array(draw(st.lists(st.integers(0, m), min_size=n, max_size=n))) / m
    else:
        u = np.array(draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n)))
    d = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    d = np.zeros(n, dtype=int) if kind == "one event" else np.ones(n, dtype=int) if kind == "all events" else d
    d[draw(st.integers(0, n - 1))] = 1
    gamma = draw(st.one_of(st.floats(0.2, 60.0), st.sampled_from([1.0, 10.0])))
    return WeibullSample(np.exp(-omega * u), d, 1.0, omega), draw(st.integers(1, 150)), gamma


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_samples())
def test_vectorised_ladder_equals_the_sequential_one(case):
    _same_ladder(*case)


@pytest.mark.parametrize("name,rungs", [("lung", 500), ("veteran", 500), ("flchain", 500), ("flchain", 160)])
def test_vectorised_ladder_equals_the_sequential_one_on_bundled_data(name, rungs):
    _same_ladder(_sample(name), rungs, 10.0)


@pytest.mark.parametrize("shape,n,seed", [(0.7, 2000, 1), (1.3, 2000, 2), (3.0, 2000, 3), (1.3, 5000, 4)])
def test_vectorised_ladder_equals_the_sequential_one_on_large_cohorts(shape, n, seed):
    from dpsurv_core.weibull.inference import simulate_samples

    s = simulate_samples(shape, 0.4, n, 0.3, 1, 6.0, 1.0, 1, np.random.default_rng(seed))[0]
    _same_ladder(s, 500, 10.0)


@pytest.mark.parametrize("name", ["lung", "flchain"])
def test_taylor_power_sums_match_the_exponentials(name):
    """The grid Taylor series of the ladder (full sums and the n-k prefix sums) equal the sums of t^p to 1e-13."""
    from dpsurv_core.weibull.lsp import _Boundary

    s = _sample(name)
    kmax = min(500, s.n_events - 1)
    bf = _Boundary(s, kmax, 10.0)
    bf.use_prefix(kmax)
    rng = np.random.default_rng(3)
    p = np.concatenate([rng.uniform(0.0, 10.0, 300), [1e-9, 1e-3, 10.0]])
    k = rng.integers(0, kmax + 1, p.size)
    w = np.exp(np.multiply.outer(p, s.lt_u)) * s.c_u
    exact = np.stack([w.sum(1), w @ s.lt_u, w @ s.lt_u**2])
    np.testing.assert_allclose(bf.sums.full(p), exact, rtol=1e-13)
    cum = np.concatenate([np.zeros((p.size, 1)), np.cumsum(w, axis=1)], axis=1)
    cum1 = np.concatenate([np.zeros((p.size, 1)), np.cumsum(w * s.lt_u, axis=1)], axis=1)
    r = np.arange(p.size)
    j, rk = bf.j[k], bf.r[k]
    w1 = np.exp(p * s.lt_u[j])
    P = cum[r, j] + rk * w1
    P1 = cum1[r, j] + rk * w1 * s.lt_u[j]
    np.testing.assert_allclose(bf.prefix.partial(k, p), np.stack([P, P1]), rtol=1e-13)
    # the exact elementwise G agrees with the Taylor one
    kk = np.maximum(k, 1)[:-3]
    np.testing.assert_allclose(bf.G_pairs(kk, p[:-3])[0], bf.G(kk, p[:-3])[0], rtol=1e-10, atol=1e-12)


def test_upper_rungs_where_G_crosses_zero_twice():
    """On lung G_k(gamma) <= 0 from rung 6 on, yet G_6..G_9 rise above 0 above p* and fall back below it before
    gamma: u(6..9) are their first crossings (as the rung-after-rung search finds them), u(10) on is gamma."""
    from dpsurv_core.weibull.lsp import _Boundary

    s = _sample("lung")
    _, lad = _same_ladder(s, 500, 10.0)
    bf = _Boundary(s, 164, 10.0)
    for k in range(6, 10):
        assert bf.G_one(k, 10.0)[0] <= 0
        assert lad.p_star < lad.raw_upper[k] < 10.0
        assert abs(bf.G_one(k, lad.raw_upper[k])[0]) < 1e-9
        grid = np.linspace(lad.p_star, lad.raw_upper[k], 200)[1:-1]
        assert all(bf.G_one(k, p)[0] < 0 for p in grid)  # no earlier crossing
    assert np.all(lad.upper[10:] == 10.0)


# ----------------------------------------------------------------- neighbours (hypothesis)

times = st.integers(min_value=1, max_value=60).map(lambda i: math.exp(-OMEGA * (i - 1) / 59))


@st.composite
def neighbours(draw):
    n = draw(st.integers(min_value=3, max_value=40))
    t = np.array(draw(st.lists(times, min_size=n, max_size=n)))
    d = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    d[draw(st.integers(0, n - 1))] = 1
    if draw(st.booleans()):
        t2, d2 = np.append(t, draw(times)), np.append(d, draw(st.integers(0, 1)))
    else:
        i = draw(st.integers(0, n - 1))
        t2, d2 = np.delete(t, i), np.delete(d, i)
        if d2.sum() == 0:
            d2[0] = 1  # keep an event; then (t2, d2) is a neighbour of the data with that event added back
            t, d = np.append(t2, t[i]), np.append(d2, d[i])
    return WeibullSample(t, d, 1.0), WeibullSample(t2, d2, 1.0)


@given(neighbours())
def test_ladder_property_on_neighbours(pair):
    """S^(k)(D) inside S^(k+1)(D') and S^(k)(D') inside S^(k+1)(D), for k = 0..K (Theorem 1b)."""
    a, b = (compute_ladder(x, 25, 10.0) for x in pair)
    for x, y in ((a, b), (b, a)):
        assert np.all(y.lower[1:] <= x.lower[:-1] + 1e-9)
        assert np.all(y.upper[1:] >= x.upper[:-1] - 1e-9)
        assert np.all(np.diff(x.lower) <= 0) and np.all(np.diff(x.upper) >= 0)


@given(neighbours(), st.lists(st.floats(0.0, 10.0), min_size=5, max_size=20))
def test_utility_sensitivity_is_one(pair, ps):
    """|U(p, D) - U(p, D')| <= 1 (Lemma 3), the sensitivity the exponential mechanism is charged for."""
    a, b = (compute_ladder(x, 25, 10.0) for x in pair)
    p = np.array(ps + [a.p_star, b.p_star])
    assert np.max(np.abs(a.utility(p) - b.utility(p))) <= 1


@given(neighbours(), st.floats(0.01, 10.0))
def test_tll_sums_have_sensitivity_one(pair, p):
    a, b = pair
    assert abs(a.n_events - b.n_events) <= 1
    assert abs(a.sum_tp(np.array([p]))[0] - b.sum_tp(np.array([p]))[0]) <= 1 + 1e-12


@given(neighbours(), st.integers(1, 4), st.integers(0, 2**31 - 1), times, st.integers(0, 1))
def test_saa_average_moves_at_most_gamma_over_m(pair, m, seed, extra_t, extra_d):
    """Adding one record to one block moves the average of clipped block estimates by at most gamma / M."""
    small = pair[0]
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, m, small.n)
    lt_big = np.append(np.log(small.t), math.log(extra_t))
    d_big = np.append(small.d, extra_d)
    labels_big = np.append(labels, rng.integers(0, m))
    ps, ls = block_mle(np.log(small.t), small.d, labels[None], m, 10.0)
    pb, lb = block_mle(lt_big, d_big, labels_big[None], m, 10.0)
    assert np.all((ps >= 0) & (ps <= 10) & (ls >= 0) & (ls <= 10))
    assert abs(pb.mean() - ps.mean()) <= 10.0 / m + 1e-9
    assert abs(lb.mean() - ls.mean()) <= 10.0 / m + 1e-9


# ----------------------------------------------------------------- sampling

def test_rung_frequencies_match_weights():
    s = _sample("veteran")
    lad = compute_ladder(s, 500, 10.0)
    eps_shape = 0.5
    probs = lad.probabilities(eps_shape)
    n = 20000
    p, rung = lad.sample(eps_shape, SimulationNoise(11), n)
    counts = np.bincount(rung - 1, minlength=probs.size)
    keep = probs * n >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp = np.append(probs[keep], probs[~keep].sum()) * n
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert keep.sum() >= 5
    assert stats.chisquare(obs, exp).pvalue > 1e-3
    assert np.all(counts[lad.lengths == 0] == 0)
    # p lies inside the rung it was drawn from: U(p, D) = -rung
    np.testing.assert_array_equal(lad.utility(p), -rung)


def test_uniform_inside_the_rung():
    s = _sample("veteran")
    lad = compute_ladder(s, 500, 10.0)
    p, rung = lad.sample(2.0, SimulationNoise(4), 20000)
    i = int(np.bincount(rung).argmax())
    sel = p[rung == i]
    left = lad.lower[i - 1] - lad.lower[i]
    frac_left = np.mean(sel < lad.lower[i - 1])
    assert frac_left == pytest.approx(left / lad.lengths[i - 1], abs=0.03)
    right = sel[sel > lad.upper[i - 1]]
    if right.size > 200:
        u = (right - lad.upper[i - 1]) / (lad.upper[i] - lad.upper[i - 1])
        assert stats.kstest(u, "uniform").pvalue > 1e-3


# ----------------------------------------------------------------- distinguishing tests

def _empirical_epsilon(x: np.ndarray, y: np.ndarray) -> float:
    """docs/mechanisms.md: threshold fitted on half the runs, TPR/FPR on the other half, Clopper-Pearson 95%."""
    h = x.size // 2
    fit_x, fit_y, ev_x, ev_y = x[:h], y[:h], x[h:], y[h:]
    cands = np.quantile(np.concatenate([fit_x, fit_y]), np.linspace(0.01, 0.99, 99))

    def point(tx, ty):
        tpr, fpr = (tx + 0.5) / (h + 1), (ty + 0.5) / (h + 1)
        return max(math.log(tpr / fpr), math.log((1 - fpr) / (1 - tpr)))

    best, best_rule = -np.inf, None
    for c in cands:
        for sign in (1, -1):
            v = point(np.sum(sign * fit_x > sign * c), np.sum(sign * fit_y > sign * c))
            if v > best:
                best, best_rule = v, (c, sign)
    c, sign = best_rule
    n = ev_x.size
    tp, fp = int(np.sum(sign * ev_x > sign * c)), int(np.sum(sign * ev_y > sign * c))

    def cp(k):
        lo = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
        hi = stats.beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
        return lo, hi

    (tpr_lo, _), (_, fpr_hi) = cp(tp), cp(fp)
    # Both ratios bounded conservatively: TPR_lo / FPR_hi and (1 - FPR_hi) / (1 - TPR_lo). (docs/mechanisms.md writes
    # the second one as (1 - FPR_lo) / (1 - TPR_hi), which is its optimistic end and blows up when TPR is near 1.)
    e1 = math.log(tpr_lo / fpr_hi) if tpr_lo > 0 else -np.inf
    e2 = math.log((1 - fpr_hi) / (1 - tpr_lo)) if fpr_hi < 1 else -np.inf
    return max(e1, e2, 0.0)


@pytest.fixture(scope="module")
def small_pair():
    """D: 30 lung subjects; D': D minus its latest event (the most exposed subject)."""
    c = load_bundled("lung")
    s = sample_from_cohort(c, 1100.0)
    t, d = s.t[:30], s.d[:30]
    target = int(np.argmax(np.where(d == 1, t, -1)))
    keep = np.arange(30) != target
    return WeibullSample(t, d, 1100.0), WeibullSample(t[keep], d[keep], 1100.0)


@pytest.mark.parametrize("factory,eps", [
    (lambda e, b=2: LspTll(e, 1100.0, rungs=100), 2.0),
    (lambda e, b=2: LaplaceWeibull(e, 1100.0), 2.0),
    (lambda e, b=2: SampleAggregateWeibull(e, 1100.0, blocks=b), 4.0),
])
def test_distinguishing_attack_stays_below_charged_epsilon(small_pair, factory, eps):
    D, D1 = small_pair
    R = 2000
    mech = factory(eps)
    a = mech.compute_many(D, SimulationNoise(101), R)
    b = mech.compute_many(D1, SimulationNoise(202), R)
    for x, y in ((a.shape, b.shape), (a.scale_normalised, b.scale_normalised)):
        assert _empirical_epsilon(x, y) <= mech.cost.epsilon
    # the same attack sees the noise-free version of the mechanism at once (the test has power)
    exact = factory(math.inf, 1)
    xa = exact.compute_many(D, SimulationNoise(1), R).shape
    xb = exact.compute_many(D1, SimulationNoise(2), R).shape
    assert _empirical_epsilon(xa, xb) > 4.0
