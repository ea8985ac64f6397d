"""Validity of the log-rank tests where groups differ in size and censoring: type-I error and power.

``python -m benchmarks.logrank_validity [--cohorts N] [--draws B] [--designs NAMES] [--epsilons EPS] [--seed S]
[--bins J]``

Designs (exponential event times, mean 300 days; each group's own exponential censoring, which alone would censor
the stated share of the group; follow-up ends at 900 days; times rounded up to whole days):

* ``1:9``: two groups of 20 and 180, 30% censoring each;
* ``censoring 10/70``: two groups of 100, censored 10% and 70%;
* ``three groups``: 40, 60 and 100, censored 10%, 40% and 70%;
* ``30 per group``: two groups of 30, 30% censoring.

Under the null every group has the same hazard; under the alternative the last group's hazard is ``hr`` times the
others'. Tests (the overall k-group test; with two groups it is the pair's): the non-private log-rank test on the
exact times (lifelines' and R's), binned on the public grid of 20 equal bins to 900 days and on 50 bins, and binned
with censorings taken out before each bin's events (the rule before the actuarial one, ``--old-rule``); and the
calibrated private tests (:mod:`dpsurv_core.curves.logrank_test`, B null draws) of laplace-counts, adaptive-km and
rrr (its raw reported-label test and its de-biased one) at each epsilon, one release per cohort, on ``--bins`` equal
bins (20 unless told; the non-private binned test on that grid too). Each cell prints the
rejection rate at alpha 0.05 with its Monte Carlo standard error sqrt(p (1 - p) / N), and for a private test how
often the release's sentences say its p-value is approximate (a weak test; adaptive-km's grid merged into fewer than
four bins, or its groups censored unequally below epsilon 1; bins too wide for how differently the groups are
censored) with the rejection rate of the releases that do not.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsurv_core.curves import logrank
from dpsurv_core.curves import logrank_test as lt
from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.result import context
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

ALPHA = 0.05
MEAN = 300.0
HORIZON = 900.0
BINS = 20
EPSILONS = (0.5, 1.0, 2.0)
BLOCK_KEYS = ("kept", "released_blocks")  # adaptive-km's released merged bins
MECHANISMS = (("laplace-counts", False), ("adaptive-km", False), ("rrr", False), ("rrr", True))


@dataclass(frozen=True)
class Design:
    name: str
    sizes: tuple[int, ...]
    censoring: tuple[float, ...]  # share each group's censoring alone would censor
    hr: float  # the last group's hazard ratio under the alternative

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple("ABCDEFGH"[: len(self.sizes)])


DESIGNS = {d.name: d for d in (
    Design("1:9", (20, 180), (0.3, 0.3), 2.0),
    Design("censoring 10/70", (100, 100), (0.1, 0.7), 1.5),
    Design("three groups", (40, 60, 100), (0.1, 0.4, 0.7), 1.5),
    Design("30 per group", (30, 30), (0.3, 0.3), 2.0),
)}


def cohort(design: Design, hr: float, rng: np.random.Generator) -> Cohort:
    """One cohort: exponential times (the last group's hazard times ``hr``), exponential censoring of rate
    lambda c / (1 - c) per group (share c censored without the end of follow-up), follow-up to ``HORIZON``."""
    rate = np.repeat([(hr if g == len(design.sizes) - 1 else 1.0) / MEAN for g in range(len(design.sizes))],
                     design.sizes)
    cens = np.repeat([c / (1.0 - c) / MEAN for c in design.censoring], design.sizes)
    t = rng.exponential(1.0 / rate)
    c = np.minimum(rng.exponential(1.0 / cens), HORIZON)
    time_ = np.ceil(np.minimum(t, c))
    return Cohort(time_, (t <= c).astype(np.int64), np.repeat(np.array(design.groups), design.sizes))


def cohorts(design: Design, hr: float, n: int, seed: int) -> list[Cohort]:
    rng = np.random.default_rng([seed, int(hr * 100), sum(design.sizes), len(design.sizes), int(design.censoring[-1] * 100)])
    return [cohort(design, hr, rng) for _ in range(n)]


def public(design: Design, bins: int = BINS) -> PublicParameters:
    grid = TimeGrid(np.linspace(0.0, HORIZON, bins + 1), "equal", False)
    return PublicParameters(HORIZON, grid, group_categories=design.groups)


def stack(parts: list[BinnedCounts]) -> BinnedCounts:
    """Counts of several releases (or exact counts) along one leading trials axis."""
    p0 = parts[0]
    join = np.concatenate if p0.n.ndim == 2 else np.stack
    cat = lambda name: join([np.asarray(getattr(p, name), float) for p in parts])  # noqa: E731
    return BinnedCounts(p0.grid, p0.groups, cat("n"), cat("events"), cat("censored"), p0.event_types)


def nonprivate(data: list[Cohort], design: Design, bins: int | None, old_rule: bool = False) -> np.ndarray:
    """Rejections of the non-private overall test: on the exact times (``bins`` None) or binned."""
    if bins is None:
        p = [float(logrank.overall(stack([count(c, TimeGrid.event_times(c), design.groups)])).p_value[0])
             for c in data]
        return np.array(p) < ALPHA
    grid = public(design, bins).grid
    exact = stack([count(c, grid, design.groups) for c in data])
    return np.asarray(logrank.overall(exact, shifted=0.5 if old_rule else 0.0).p_value) < ALPHA


def release(mech_id: str, debiased: bool, eps: float, data: list[Cohort], design: Design, seed: int,
            bins: int = BINS) -> tuple[BinnedCounts, lt.NoiseLaw]:
    """One release per cohort on ``bins`` equal bins (its counts as the release reads them; no bands), stacked, and
    the noise law."""
    pub = public(design, bins)
    entry = catalogue.get(catalogue.CURVES, mech_id)
    mech = (entry.build(eps, **context(data[0], pub)) if mech_id == "rrr"
            else entry.mechanism_class()(eps, noise_in_bands=False))  # the catalogue's mechanism, without bands
    noise = SimulationNoise(np.random.SeedSequence([seed, int(eps * 1000), len(data), sum(design.sizes)]))
    counts, kept, extra = [], [], {}
    for c in data:
        if mech_id == "rrr":  # the reported counts, de-biased by the public matrix (the bands are not needed)
            reported = BinnedCounts.from_released(mech.draw(c, pub, noise)["counts"], pub.grid)
            counts.append(mech.debias(reported) if debiased else reported)
            continue
        rel = mech.compute(c, pub, noise, trials=1)
        counts.append(rel.counts)
        if "kept" in rel.extra:
            kept.append({k: rel.extra[k] for k in BLOCK_KEYS})
            extra = {"actuarial": rel.extra["actuarial"]}
    if kept:
        extra["kept"] = np.concatenate([x["kept"] for x in kept])
        extra["released_blocks"] = tuple(np.concatenate([x["released_blocks"][i] for x in kept]) for i in range(3))
    return stack(counts), lt.noise_law(mech, extra, debiased)


def private(mech_id: str, debiased: bool, eps: float, data: list[Cohort], design: Design, draws: int, seed: int,
            bins: int = BINS) -> np.ndarray:
    """(2, N): each release's rejection, and whether its sentences say the p-value is approximate
    (:func:`~dpsurv_core.curves.logrank_test.level_warned`)."""
    released, law = release(mech_id, debiased, eps, data, design, seed, bins)
    test = lt.calibrated_tests(released, law, draws=draws)[-1]
    return np.stack([np.nan_to_num(test.p_value, nan=1.0) < ALPHA, lt.level_warned(law, test, released, eps)])


def rate(reject: np.ndarray) -> tuple[float, float]:
    p = float(np.mean(reject))
    return p, math.sqrt(p * (1.0 - p) / reject.size)


def cells(epsilons: tuple[float, ...], old_rule: bool, bins: int = BINS
          ) -> list[tuple[str, str, Callable[..., np.ndarray]]]:
    """(test, epsilon, rejections(data, design, draws, seed)) for every test studied; the private tests on ``bins``
    equal bins."""
    out: list[tuple[str, str, Callable[..., np.ndarray]]] = [
        ("non-private, exact times", "-", lambda d, g, b, s: nonprivate(d, g, None)),
        (f"non-private, {BINS} bins", "-", lambda d, g, b, s: nonprivate(d, g, BINS)),
        ("non-private, 50 bins", "-", lambda d, g, b, s: nonprivate(d, g, 50)),
    ]
    if bins not in (BINS, 50):
        out.append((f"non-private, {bins} bins", "-", lambda d, g, b, s: nonprivate(d, g, bins)))
    if old_rule:
        out += [(f"non-private, {BINS} bins, censorings first (old rule)", "-",
                 lambda d, g, b, s: nonprivate(d, g, BINS, True)),
                ("non-private, 50 bins, censorings first (old rule)", "-",
                 lambda d, g, b, s: nonprivate(d, g, 50, True))]
    for mech_id, deb in MECHANISMS:
        for eps in epsilons:
            out.append((mech_id + (" (de-biased)" if deb else ""), f"{eps:g}",
                        lambda d, g, b, s, m=mech_id, x=deb, e=eps: private(m, x, e, d, g, b, s, bins)))
    return out


def run(n: int, draws: int, designs: list[Design], epsilons: tuple[float, ...], seed: int = 1, old_rule: bool = False,
        log: Callable[[dict[str, Any]], None] | None = None, bins: int = BINS) -> list[dict[str, Any]]:
    rows = []
    for design in designs:
        data = {hr: cohorts(design, hr, n, seed) for hr in (1.0, design.hr)}
        for test, eps, fn in cells(epsilons, old_rule, bins):
            t0 = time.perf_counter()
            null = fn(data[1.0], design, draws, seed)
            row = {"design": design.name, "test": test, "epsilon": eps, "cohorts": n,
                   "type1": rate(null[0] if null.ndim == 2 else null),
                   "power": rate(np.atleast_2d(fn(data[design.hr], design, draws, seed + 1))[0]), "hr": design.hr,
                   "seconds": time.perf_counter() - t0}
            if null.ndim == 2:  # how often the release says its p-value is approximate, and the level where it does not
                warned = null[1].astype(bool)
                row["warned"] = float(warned.mean())
                row["type1_unwarned"] = rate(null[0][~warned]) if (~warned).any() else None
            rows.append(row)
            if log:
                log(row)
    return rows


HEADER = ("| design | test | epsilon | type-I (MC s.e.) | power (MC s.e.) at HR | p-value said approximate "
          "| type-I where not said |\n|---|---|---|---|---|---|---|")


def fmt(row: dict[str, Any]) -> str:
    pc = lambda v: f"{100 * v[0]:.1f}% ({100 * v[1]:.1f})"  # noqa: E731
    flag = " **over 6%**" if row["type1"][0] > 0.06 else ""
    warned = f"{100 * row['warned']:.0f}%" if "warned" in row else "-"
    unwarned = row.get("type1_unwarned")
    quiet = "-" if unwarned is None else pc(unwarned) + (" **over 6%**" if unwarned[0] > 0.06 else "")
    return (f"| {row['design']} | {row['test']} | {row['epsilon']} | {pc(row['type1'])}{flag} | "
            f"{pc(row['power'])} at {row['hr']:g} | {warned} | {quiet} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cohorts", type=int, default=500, help="cohorts per cell (null and alternative each)")
    ap.add_argument("--draws", type=int, default=199, help="null draws of each calibrated test")
    ap.add_argument("--designs", default=",".join(DESIGNS), help="comma-separated: " + ", ".join(DESIGNS))
    ap.add_argument("--epsilons", default=",".join(f"{e:g}" for e in EPSILONS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--old-rule", action="store_true", help="also the binned test with censorings first")
    ap.add_argument("--bins", type=int, default=BINS, help="equal bins of the private releases' grid")
    args = ap.parse_args(argv)
    designs = [DESIGNS[name.strip()] for name in args.designs.split(",")]
    epsilons = tuple(float(e) for e in args.epsilons.split(","))
    t0 = time.perf_counter()
    print(f"{args.cohorts} cohorts per cell, {args.draws} null draws, alpha {ALPHA}, grid {args.bins} equal bins to "
          f"{HORIZON:g} days", flush=True)
    print(HEADER, flush=True)
    run(args.cohorts, args.draws, designs, epsilons, args.seed, args.old_rule, log=lambda r: print(fmt(r), flush=True),
        bins=args.bins)
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
