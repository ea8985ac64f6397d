"""The LSP ladder solved as arrays over rungs (dpsurv_core/weibull/lsp.py) against the rung-after-rung solver it
replaced (kept as tests/weibull/reference_lsp.py), in one run on the same machine under the same load.

* ladder: ``compute_ladder`` on lung, flchain and a simulated cohort of 2,000 records (Weibull shape 1.3, 30%
  censored), with K = 500 rungs and with K = 160 (what a noise-aware interval at epsilon 1 cuts the ladder to);
* interval: one ``release_intervals`` of lsp-tll on lung at epsilon 1 (104 ladders of simulated cohorts), with
  ``dpsurv_core.weibull.mechanisms.compute_ladder`` swapped for the old solver and back.

Old and new alternate within every round, so a change of load hits both; the figures are medians over the rounds
and the ratio old / new is the number to quote (seconds depend on the machine and on what else runs). Each ladder
pair is also checked to agree (nested lower and upper ends to 1e-8 relative). Results go to
benchmarks/results/lsp_ladder.json.

Run: .venv/bin/python benchmarks/lsp_ladder.py [--rounds 5] [--intervals 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import dpsurv_core.weibull.mechanisms as mechanisms  # noqa: E402
from dpsurv_core.data.cohort import load_bundled  # noqa: E402
from dpsurv_core.data.public import nice_ceiling  # noqa: E402
from dpsurv_core.weibull.inference import release_intervals, simulate_samples  # noqa: E402
from dpsurv_core.weibull.lsp import compute_ladder  # noqa: E402
from dpsurv_core.weibull.model import WeibullSample, sample_from_cohort, weibull_mle  # noqa: E402
from tests.weibull.reference_lsp import reference_ladder  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"


def _bundled(name: str) -> WeibullSample:
    c = load_bundled(name)
    return sample_from_cohort(c, nice_ceiling(float(c.time.max())))


def _timed(fn, *args, repeat: int = 1) -> float:
    t = time.perf_counter()
    for _ in range(repeat):
        fn(*args)
    return (time.perf_counter() - t) / repeat


def ladders(rounds: int) -> list[dict]:
    samples = {"lung": _bundled("lung"), "flchain": _bundled("flchain"),
               "simulated n=2000": simulate_samples(1.3, 0.4, 2000, 0.3, 1, 6.0, 1.0, 1, np.random.default_rng(7))[0]}
    rows = []
    for name, s in samples.items():
        for rungs in (500, 160):
            old_l, new_l = reference_ladder(s, rungs), compute_ladder(s, rungs)
            np.testing.assert_allclose(new_l.lower, old_l.lower, rtol=1e-8, atol=1e-13)
            np.testing.assert_allclose(new_l.upper, old_l.upper, rtol=1e-8, atol=1e-13)
            repeat = 20 if s.n < 1000 else 5
            old, new = [], []
            for _ in range(rounds):
                old.append(_timed(reference_ladder, s, rungs, repeat=repeat))
                new.append(_timed(compute_ladder, s, rungs, repeat=repeat))
            o, n = statistics.median(old), statistics.median(new)
            rows.append({"data": name, "n": s.n, "events": s.n_events, "distinct_times": int(s.lt_u.size),
                         "rungs": rungs, "old_ms": round(o * 1e3, 2), "new_ms": round(n * 1e3, 2),
                         "ratio": round(o / n, 2)})
            print(f"ladder {name:17s} K={rungs:3d}: old {o * 1e3:7.2f} ms  new {n * 1e3:7.2f} ms  ratio {o / n:5.2f}")
    return rows


def interval(rounds: int) -> dict:
    s = _bundled("lung")
    fit = weibull_mle(s)
    args = ("lsp-tll", 1.0, fit.shape, fit.scale_normalised, s.n, 0.28, s.horizon, 6.0, 10.0, 500)
    old, new, outs = [], [], {}
    try:
        for _ in range(rounds):
            for label, fn, acc in (("old", reference_ladder, old), ("new", compute_ladder, new)):
                mechanisms.compute_ladder = fn
                t = time.perf_counter()
                outs[label] = release_intervals(*args)
                acc.append(time.perf_counter() - t)
    finally:
        mechanisms.compute_ladder = compute_ladder
    for key in ("shape", "scale"):
        for end in ("lower", "upper"):
            assert abs(outs["old"][key][end] - outs["new"][key][end]) <= 1e-8 * abs(outs["old"][key][end]) + 1e-12
    o, n = statistics.median(old), statistics.median(new)
    print(f"lsp-tll interval on lung (epsilon 1): old {o:.3f} s  new {n:.3f} s  ratio {o / n:.2f}  "
          f"(shape interval {outs['new']['shape']['lower']:.4f} .. {outs['new']['shape']['upper']:.4f} both)")
    return {"old_s": round(o, 3), "new_s": round(n, 3), "ratio": round(o / n, 2), "rounds": rounds}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="rounds of old/new ladder timings (median)")
    ap.add_argument("--intervals", type=int, default=2, help="rounds of old/new interval timings (median)")
    a = ap.parse_args(argv)
    load0 = os.getloadavg()[0]
    rows = ladders(a.rounds)
    iv = interval(a.intervals)
    load1 = os.getloadavg()[0]
    print(f"load average {load0:.1f} at the start, {load1:.1f} at the end (2 cores)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "lsp_ladder.json").write_text(json.dumps(
        {"ladders": rows, "interval_lung_lsp_tll": iv, "load_average": [round(load0, 2), round(load1, 2)]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
