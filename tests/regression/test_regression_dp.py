"""Private discrete-time regression: bounds, sensitivity on random neighbours, noise law, exactness, distinguishing."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from dpsurv_core.data.cohort import ColumnMap, build_cohort, load_bundled
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, EXACT, NO_NOISE
from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise
from dpsurv_core.regression.mechanisms import (
    PSGLD,
    DesignBounds,
    ObjectivePerturbation,
    OutputPerturbation,
    build_mechanism,
    minimise_many,
    sphere_noise,
)
from dpsurv_core.regression.model import fit_nonprivate, minimise, subject_gradients, subject_hessian_traces
from dpsurv_core.regression.person_period import person_period

T, Q = 6, 3


def toy(seed: int, n: int, extra: tuple | None = None, drop: int | None = None):
    """A random cohort (time, event, two covariates), optionally with one subject replaced or removed."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"t": rng.uniform(0.01, 1.2, n), "d": rng.integers(0, 2, n),
                       "a": rng.uniform(0, 10, n), "b": rng.integers(0, 2, n).astype(float)})
    df.loc[0, "b"], df.loc[1, "b"] = 0.0, 1.0
    df.loc[2, "d"] = 1  # an event that no replaced or removed subject takes away (seed 305, n = 12 had one only)
    if extra is not None:
        df.loc[n - 1] = extra
    if drop is not None:
        df = df.drop(index=drop).reset_index(drop=True)
    return build_cohort(df, ColumnMap("t", "d", covariates=("a", "b")), "toy")


def design(cohort, n_public: int):
    return person_period(cohort, ["a", "b"], horizon=1.0, intervals=T, knots=Q, ranges={"a": (0, 10), "b": (0, 1)},
                         n_public=n_public)


@given(seed=st.integers(0, 10_000), n=st.integers(12, 40), lam=st.sampled_from([0.003, 0.03, 0.3]),
       scale=st.floats(0.1, 30))
def test_gradient_and_hessian_bounds_at_any_w(seed, n, lam, scale):
    pp = design(toy(seed, n), n)
    w = np.random.default_rng(seed + 1).normal(0, scale, pp.dim)
    g = subject_gradients(w, pp)
    assert np.all(np.linalg.norm(g, axis=1) <= pp.k * pp.R + 1e-9)  # ||grad L_i|| <= k_i R <= T R = c1
    assert np.all(np.linalg.norm(g, axis=1) <= pp.c1 + 1e-9)
    tr = subject_hessian_traces(w, pp)
    assert np.all(tr <= pp.c2 + 1e-9) and np.all(tr >= 0)  # PSD, trace <= T R^2 / 4 = c2
    # Jacobian ratio of the objective-perturbation map b(w): adding subject s multiplies det by <= exp(c2/(n lam))
    p = special.expit(pp.Z @ w)
    Hrows = (pp.Z * (p * (1 - p))[:, None])
    s = int(np.argmax(tr))
    rows_s = pp.subject_rows(np.array([s]))
    H_all = Hrows.T @ pp.Z
    H_s = Hrows[rows_s].T @ pp.Z[rows_s]
    A_without = H_all - H_s + n * lam * np.eye(pp.dim)
    logratio = np.linalg.slogdet(A_without + H_s)[1] - np.linalg.slogdet(A_without)[1]
    assert 0 <= logratio <= np.trace(H_s) / (n * lam) + 1e-9 <= pp.c2 / (n * lam) + 1e-9


@given(A=st.lists(st.floats(-3, 3), min_size=16, max_size=16), c=st.floats(0.01, 100))
def test_det_trace_inequality(A, c):
    M = np.array(A).reshape(4, 4)
    P = M @ M.T  # PSD
    assert np.linalg.slogdet(np.eye(4) + P / c)[1] <= np.trace(P) / c + 1e-9


@pytest.mark.slow
@given(seed=st.integers(0, 10_000), n=st.integers(12, 30), lam=st.sampled_from([0.01, 0.1, 1.0]),
       new_t=st.floats(0.01, 1.5), new_d=st.integers(0, 1), new_a=st.floats(-5, 15), new_b=st.sampled_from([0.0, 1.0]))
def test_minimiser_moves_at_most_the_sensitivity(seed, n, lam, new_t, new_d, new_a, new_b):
    """Random neighbours: removing one subject moves w* by <= c1/(n Lambda), replacing it by <= 2 c1/(n Lambda)."""
    D = toy(seed, n)
    pp = design(D, n)
    w = minimise(pp, lam)
    sens = OutputPerturbation(1.0, lam, DesignBounds.of(pp)).sensitivity
    assert sens == pytest.approx(2 * pp.c1 / (n * lam))
    removed = design(toy(seed, n, drop=n - 1), n)  # same public n: the objective's form is public
    replaced = design(toy(seed, n, extra=(new_t, new_d, new_a, new_b)), n)
    shift_remove = np.linalg.norm(minimise(removed, lam) - w)
    shift_replace = np.linalg.norm(minimise(replaced, lam) - w)
    assert shift_remove <= sens / 2 + 1e-6
    assert shift_replace <= sens + 1e-6


def test_noise_norm_is_gamma_and_direction_uniform():
    d, scale = 7, 2.5
    b = sphere_noise(SimulationNoise(11), d, scale, 4000)
    r = np.linalg.norm(b, axis=1)
    assert stats.kstest(r, stats.gamma(d, scale=scale).cdf).pvalue > 0.01
    assert stats.kstest(r, stats.gamma(d + 1, scale=scale).cdf).pvalue < 1e-6  # the test has power
    u = b / r[:, None]
    # a uniform direction has u_k^2 ~ Beta(1/2, (d - 1)/2) for every axis, and mean 0
    for k in (0, d - 1):
        assert stats.kstest(u[:, k] ** 2, stats.beta(0.5, (d - 1) / 2).cdf).pvalue > 0.01
    assert np.all(np.abs(u.mean(axis=0)) < 4 / math.sqrt(4000 * d))
    # along a random fixed direction too
    v = np.random.default_rng(3).normal(size=d)
    assert stats.kstest((u @ (v / np.linalg.norm(v))) ** 2, stats.beta(0.5, (d - 1) / 2).cdf).pvalue > 0.01
    assert np.all(sphere_noise(SimulationNoise(1), d, 0.0, 3) == 0)


@pytest.fixture(scope="module")
def lung():
    c = load_bundled("lung", covariates=("age", "sex"))
    return person_period(c, ["age", "sex"], horizon=1100)


def test_output_perturbation_noise_law(lung):
    pp = lung
    mech = OutputPerturbation(2.0, 0.05, DesignBounds.of(pp))
    w = minimise(pp, 0.05)
    rel = mech.compute(pp, SimulationNoise(5), trials=3000)
    r = np.linalg.norm(rel.W - w, axis=1)
    assert stats.kstest(r, stats.gamma(pp.dim, scale=mech.sensitivity / 2.0).cdf).pvalue > 0.01
    assert rel.cost.epsilon == 2.0 and rel.cost.guarantee == EXACT
    entry = mech.ledger_entry("lung")
    assert entry.cost.epsilon == 2.0 and entry.parameters["sensitivity"] == mech.sensitivity
    one = mech.compute(pp, ReleaseNoise())  # the release path: OS entropy
    assert one.W.shape == (1, pp.dim) and np.all(np.isfinite(one.W))


def test_objective_perturbation_budget_split(lung):
    pp = lung
    b = DesignBounds.of(pp)
    big = ObjectivePerturbation(1.0, 1.0, b)  # c2/(n Lambda) = 10/228 < 1
    assert big.extra_ridge == 0 and big.epsilon_prime == pytest.approx(1 - 10 / 228)
    assert big.noise_scale == pytest.approx(2 * pp.c1 / big.epsilon_prime)
    small = ObjectivePerturbation(0.5, 0.01, b)  # c2/(n Lambda) = 4.4 > 0.5: extra ridge
    assert small.epsilon_prime == 0.25
    assert b.c2 / (b.n_public * (0.01 + small.extra_ridge)) == pytest.approx(0.25)
    assert small.cost.epsilon == 0.5 and small.jacobian_log_bound + 0 > 0.5
    rel = small.compute(pp, SimulationNoise(2), trials=5)
    # each draw minimises the perturbed objective: its gradient vanishes there
    assert rel.W.shape == (5, pp.dim) and np.all(np.isfinite(rel.W))


def test_vectorised_newton_matches_lbfgs(lung):
    pp = lung
    bvec = np.random.default_rng(0).normal(0, 30, (3, pp.dim))
    W = minimise_many(pp, 0.02, bvec)
    for r in range(3):
        np.testing.assert_allclose(W[r], minimise(pp, 0.02, bvec[r]), atol=2e-6)


def test_epsilon_infinity_returns_the_nonprivate_fit(lung):
    pp = lung
    w = fit_nonprivate(pp, 0.0).w  # without noise the ridge, there only to bound one subject's influence, is dropped
    for lam in (0.01, 0.3):
        for kind in ("output", "objective"):
            mech = build_mechanism(kind, math.inf, pp, lam=lam)
            assert mech.ridge_without_noise == 0.0
            rel = mech.compute(pp, SimulationNoise(1), trials=4, w_star=minimise(pp, lam))
            assert np.array_equal(rel.W, np.repeat(w[None], 4, axis=0)), kind
    rel = build_mechanism("psgld", math.inf, pp).compute(pp, SimulationNoise(1), trials=2)
    assert np.array_equal(rel.W[0], fit_nonprivate(pp, 0.0).w)
    assert rel.cost.guarantee == NO_NOISE  # no noise: nothing is protected, MCMC or not


def test_psgld_chain_converges_towards_the_fit(lung):
    pp = lung
    ref = fit_nonprivate(pp, 0.0)
    mech = PSGLD(500.0, DesignBounds.of(pp), epochs=60, burn_in=10)
    assert mech.cost.guarantee == APPROXIMATE_MCMC and "approximate DP (MCMC)" in mech.parameters()["guarantee"]
    assert "(MCMC)" in mech.cost.sentence()
    assert mech.temperature == pytest.approx(500.0 / (2 * 20 * math.log(2)))
    ticks = []
    rel = mech.compute(pp, SimulationNoise(4), trials=16, beta_ref=ref.beta, progress=ticks.append)
    mre = rel.diagnostics["mre_by_epoch"]
    assert rel.diagnostics["trace"].shape == (61, 16, pp.dim) and ticks[-1] == 1.0
    assert mre[0] == pytest.approx(1.0)  # the chain starts at 0, not at the fit
    pick = rel.diagnostics["picked_epoch"]
    assert np.all((pick > 10) & (pick <= 60))  # the release is a state after the burn-in
    assert np.array_equal(rel.W, rel.diagnostics["trace"][pick, np.arange(16)])
    # at this large epsilon the tempered posterior is narrow (MRE about 0.1 if sampled exactly)
    assert mre[-10:].mean() < 0.35 and mre[-10:].mean() < mre[1:4].mean()
    np.testing.assert_allclose(rel.W[:, : pp.p].mean(0), ref.beta, atol=0.15)
    with pytest.raises(ParameterError, match="burn-in"):
        PSGLD(1.0, DesignBounds.of(pp), epochs=5, burn_in=5)


def _empirical_epsilon(scores_in: np.ndarray, scores_out: np.ndarray) -> float:
    """docs/mechanisms.md: threshold fitted on half the runs, TPR/FPR on the other half, Clopper-Pearson 95% bounds."""
    h = scores_in.size // 2
    fit_in, test_in, fit_out, test_out = scores_in[:h], scores_in[h:], scores_out[:h], scores_out[h:]
    cands = np.quantile(np.concatenate([fit_in, fit_out]), np.linspace(0.02, 0.98, 49))
    gap = [np.mean(fit_in > c) - np.mean(fit_out > c) for c in cands]
    thr = cands[int(np.argmax(gap))]
    k_tp, k_fp, m = int(np.sum(test_in > thr)), int(np.sum(test_out > thr)), test_in.size

    def cp(k: int) -> tuple[float, float]:
        lo = stats.beta.ppf(0.025, k, m - k + 1) if k > 0 else 0.0
        hi = stats.beta.ppf(0.975, k + 1, m - k) if k < m else 1.0
        return lo, hi

    (tpr_lo, tpr_hi), (fpr_lo, fpr_hi) = cp(k_tp), cp(k_fp)
    cands_eps = [0.0]
    if tpr_lo > 0 and fpr_hi > 0:
        cands_eps.append(math.log(tpr_lo / fpr_hi))
    if 1 - tpr_hi > 0 and 1 - fpr_lo > 0:
        cands_eps.append(math.log((1 - fpr_lo) / (1 - tpr_hi)))
    return max(cands_eps)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["output", "objective"])
def test_distinguishing_d_vs_d_minus_one_subject(kind):
    """Run the mechanism on D and on D minus its most influential subject; the attack's eps_lo stays <= eps."""
    n, lam, eps, trials = 16, 0.02, 1.0, 1500
    D = toy(7, n)
    ppD = design(D, n)
    wD = minimise(ppD, lam)
    shifts = [np.linalg.norm(minimise(design(toy(7, n, drop=i), n), lam) - wD) for i in range(n)]
    target = int(np.argmax(shifts))
    ppO = design(toy(7, n, drop=target), n)
    wO = minimise(ppO, lam)
    direction = (wD - wO) / np.linalg.norm(wD - wO)

    def scores(pp, seed, e):
        mech = build_mechanism(kind, e, pp, lam=lam)
        return mech.compute(pp, SimulationNoise(seed), trials=trials).W @ direction

    eps_lo = _empirical_epsilon(scores(ppD, 1, eps), scores(ppO, 2, eps))
    assert eps_lo <= eps
    # the same attack separates the two data sets perfectly without noise (it has power)
    no_noise = _empirical_epsilon(scores(ppD, 3, math.inf), scores(ppO, 4, math.inf))
    assert no_noise > 3 * eps


# ------------------------------------------------------------------ the noisy information matrix (objective, rho > 0)
def _information(pp, w):
    from dpsurv_core.regression.mechanisms import information_many

    return information_many(pp, w[None])[0]


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(12, 40), scale=st.floats(0.01, 30), new_t=st.floats(0.01, 1.5),
       new_d=st.integers(0, 1), new_a=st.floats(-5, 15), new_b=st.sampled_from([0.0, 1.0]))
def test_information_sensitivity_on_random_neighbours(seed, n, scale, new_t, new_d, new_a, new_b):
    """One subject moves H(w) = sum_i H_i(w) by at most h1 in Frobenius norm when removed and sqrt(2) h1 when
    replaced, at any w (the released w~ is the same on both neighbours); h1 <= c2."""
    from dpsurv_core.regression.mechanisms import information_bound

    pp = design(toy(seed, n), n)
    w = np.random.default_rng(seed + 2).normal(0, scale, pp.dim)
    h1 = information_bound(T, Q)
    delta = DesignBounds.of(pp).information_sensitivity
    assert h1 <= pp.c2 + 1e-12 and delta == pytest.approx(math.sqrt(2) * h1)
    H = _information(pp, w)
    removed = _information(design(toy(seed, n, drop=n - 1), n), w)
    replaced = _information(design(toy(seed, n, extra=(new_t, new_d, new_a, new_b)), n), w)
    assert np.linalg.norm(H - removed) <= h1 + 1e-9
    assert np.linalg.norm(H - replaced) <= delta + 1e-9
    # the bound is attained up to the p(1 - p) <= 1/4 slack: a subject with every row at p = 1/2 and ||x|| = 1
    # (w = 0, a = 10, followed to the horizon) has ||H_s||_F = h1 exactly
    full = design(toy(seed, n, extra=(1.1, 0, 10.0, 1.0)), n)
    rows = full.subject_rows(np.array([n - 1]))
    Zs = full.Z[rows]
    assert Zs.shape[0] == T and np.linalg.norm(Zs.T @ Zs / 4) == pytest.approx(h1)


def test_information_noise_law_and_budget_split(lung):
    from dpsurv_core.regression.mechanisms import information_many, symmetric_size

    pp = lung
    plain = ObjectivePerturbation(1.0, 0.01, DesignBounds.of(pp))
    mech = ObjectivePerturbation(1.0, 0.01, DesignBounds.of(pp), information_share=0.2)
    assert mech.cost.epsilon == 1.0 and mech.epsilon_information + mech.epsilon_objective == pytest.approx(1.0)
    par = mech.parameters()
    assert par["charged"] == {"objective perturbation": pytest.approx(0.8), "information matrix": pytest.approx(0.2)}
    assert par["epsilon_information"] == pytest.approx(0.2) and plain.parameters()["information_share"] == 0.0
    # the objective part is the paper's mechanism at (1 - rho) epsilon
    assert mech.noise_scale == ObjectivePerturbation(0.8, 0.01, DesignBounds.of(pp)).noise_scale
    assert mech.information_noise_scale == pytest.approx(mech.information_sensitivity / 0.2)
    small = design(toy(1, 20), 20)  # the noise law on a small design (1,500 perturbed fits in a second)
    m_small = ObjectivePerturbation(1.0, 0.3, DesignBounds.of(small), information_share=0.2)
    rel = m_small.compute(small, SimulationNoise(8), trials=1500)
    E = rel.diagnostics["information"] - information_many(small, rel.W)
    assert np.allclose(E, np.swapaxes(E, 1, 2))
    r = np.linalg.norm(E, axis=(1, 2))
    D, scale = symmetric_size(small.dim), m_small.information_noise_scale
    assert stats.kstest(r, stats.gamma(D, scale=scale).cdf).pvalue > 0.01
    assert stats.kstest(r, stats.gamma(D + 1, scale=scale).cdf).pvalue < 1e-4
    # rho = 0 draws exactly the noise it drew before the option existed, and releases no matrix
    a = plain.compute(pp, SimulationNoise(3), trials=2)
    b = build_mechanism("objective", 1.0, pp, lam=0.01).compute(pp, SimulationNoise(3), trials=2)
    assert np.array_equal(a.W, b.W) and "information" not in a.diagnostics
    with pytest.raises(ParameterError, match="information share"):
        mech.set_information_share(1.0)
    with pytest.raises(ParameterError, match="objective perturbation only"):
        build_mechanism("output", 1.0, pp, information_share=0.2)


def test_information_share_at_epsilon_infinity_is_the_nonprivate_fit(lung):
    pp = lung
    mech = build_mechanism("objective", math.inf, pp, lam=0.01, information_share=0.2)
    rel = mech.compute(pp, SimulationNoise(1), trials=2)
    w = fit_nonprivate(pp, 0.0).w  # no noise, so no ridge: the maximum-likelihood fit and its exact information
    assert np.array_equal(rel.W, np.repeat(w[None], 2, axis=0))
    np.testing.assert_allclose(rel.diagnostics["information"][0], _information(pp, w), rtol=1e-12)


def test_information_release_uses_the_release_noise(lung):
    mech = build_mechanism("objective", 1.0, lung, lam=0.01, information_share=0.2)
    one = mech.compute(lung, ReleaseNoise())
    H = one.diagnostics["information"]
    assert H.shape == (1, lung.dim, lung.dim) and np.all(np.isfinite(H))


@pytest.mark.slow
def test_distinguishing_the_information_matrix():
    """The attack on the released H~ (projected on the target's own H_s) stays within the whole epsilon; without
    noise the same score separates D from D minus the target perfectly."""
    n, lam, eps, trials = 16, 0.02, 1.0, 1500
    D = toy(7, n)
    ppD = design(D, n)
    w = minimise(ppD, lam)
    H_all = _information(ppD, w)
    shifts = [np.linalg.norm(H_all - _information(design(toy(7, n, drop=i), n), w)) for i in range(n)]
    target = int(np.argmax(shifts))
    ppO = design(toy(7, n, drop=target), n)
    direction = H_all - _information(ppO, w)
    direction /= np.linalg.norm(direction)

    def scores(pp, seed, e):
        mech = build_mechanism("objective", e, pp, lam=lam, information_share=0.5)
        return np.einsum("rij,ij->r", mech.compute(pp, SimulationNoise(seed), trials=trials).diagnostics["information"],
                         direction)

    assert _empirical_epsilon(scores(ppD, 1, eps), scores(ppO, 2, eps)) <= eps
    assert _empirical_epsilon(scores(ppD, 3, math.inf), scores(ppO, 4, math.inf)) > 3 * eps
