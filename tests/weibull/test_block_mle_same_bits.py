"""Sample-and-aggregate's block MLEs solve only the blocks still unsolved at each Newton step; the answers are the
ones of solving every block at every step to the last bit (stored saa records re-derive), on hostile inputs too."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsurv_core.weibull.baselines import block_mle


def every_block_every_step(lt, d, blocks, n_blocks, gamma, iterations=100, start=1.0):
    """The solver as it was: h over every record at every step (the reference)."""
    r, n = blocks.shape
    idx = (blocks + n_blocks * np.arange(r)[:, None]).ravel()
    size = r * n_blocks
    lt_rep = np.broadcast_to(lt, (r, n)).ravel()
    d_rep = np.broadcast_to(d.astype(float), (r, n)).ravel()
    big_d = np.bincount(idx, weights=d_rep, minlength=size)
    sd = np.bincount(idx, weights=d_rep * lt_rep, minlength=size)
    has = big_d > 0
    mean_d = np.where(has, sd / np.where(has, big_d, 1.0), 0.0)

    def sums(p):
        w = np.exp(p[idx] * lt_rep)
        wl = w * lt_rep
        return (np.bincount(idx, weights=w, minlength=size), np.bincount(idx, weights=wl, minlength=size),
                np.bincount(idx, weights=wl * lt_rep, minlength=size))

    def h(p):
        s0, s1, s2 = sums(p)
        s0 = np.where(s0 > 0, s0, 1.0)
        return s1 / s0 - 1.0 / p - mean_d, (s2 * s0 - s1 * s1) / (s0 * s0) + 1.0 / (p * p), s0

    h_top, _, _ = h(np.full(size, gamma))
    done = ~has | (h_top < 0)
    p = np.where(done, gamma, min(start, gamma))
    lo, hi = np.zeros(size), np.full(size, gamma)
    for _ in range(iterations):
        val, der, _ = h(p)
        lo = np.where(val < 0, p, lo)
        hi = np.where(val >= 0, p, hi)
        new = p - val / der
        bad = ~np.isfinite(new) | (new <= lo) | (new >= hi)
        new = np.where(bad, 0.5 * (lo + hi), new)
        new = np.where(done, p, new)
        conv = np.abs(new - p) <= 1e-12 * np.maximum(p, 1e-3)
        p = new
        done = done | conv
        if done.all():
            break
    s0, _, _ = sums(p)
    with np.errstate(divide="ignore", over="ignore"):
        lam = np.where(has, (s0 / np.where(has, big_d, 1.0)) ** (1.0 / p), np.inf)
    return np.clip(p, 0.0, gamma).reshape(r, n_blocks), np.clip(lam, 0.0, gamma).reshape(r, n_blocks)


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 400), trials=st.integers(1, 12),
       kind=st.sampled_from(["weibull", "ties", "equal", "no events", "tiny"]),
       gamma=st.sampled_from([2.0, 10.0, 100.0]), start=st.floats(0.05, 5.0), iterations=st.sampled_from([3, 100]))
def test_unsolved_blocks_only_give_the_same_bits(seed, n, trials, kind, gamma, start, iterations):
    rng = np.random.default_rng(seed)
    t = rng.weibull(rng.uniform(0.3, 4.0), n) * rng.uniform(1.0, 1000.0) + 1e-3
    if kind == "ties":
        t = np.round(t) + 1.0
    elif kind == "equal":
        t[:] = t[0]
    elif kind == "tiny":
        t = t * 1e-6
    d = (rng.random(n) < rng.uniform(0.0, 1.0)).astype(np.int64)
    if kind == "no events":
        d[:] = 0
    m = int(rng.integers(1, max(2, n // 2) + 1))
    blocks = rng.integers(0, m, (trials, n))
    with np.errstate(all="ignore"):
        got = block_mle(np.log(t), d, blocks, m, gamma, iterations, start)
        want = every_block_every_step(np.log(t), d, blocks, m, gamma, iterations, start)
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b, equal_nan=True)
