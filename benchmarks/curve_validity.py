"""Validity of the private curves' published numbers on fine grids, early-falling curves and heavy censoring.

``python -m benchmarks.curve_validity [--cohorts N] [--seed S] [--only NAME[,NAME...]]``

Each cell draws ``N`` cohorts of one group from a known Weibull law (:class:`dpsurv_core.data.simulate.WeibullTruth`:
uniform censoring on (0, c) with c chosen for the stated share), releases them once with the mechanism at epsilon on
a public grid of equal bins from 0 to the truth's 90% quantile (declared, not read off the data), and reads each
release exactly as it is published (:func:`dpsurv_core.curves.readout.released_numbers`: the log band, the median
with its limits, the landmarks and the warnings). It prints, with Monte Carlo standard errors sqrt(p (1 - p) / N):

- coverage of the true S at the grid points nearest the truth's 25%, 50%, 75% and 90% quantiles (S about 0.75, 0.5,
  0.25, 0.1) and of the true median by its published interval;
- the mean released S at those landmarks beside the truth (the bias of the estimate);
- how often each warning fires, and for each landmark and the median the share of releases with no sentence saying it
  cannot be read (a sentence about the curve from a time at or before it, or about the median) and the coverage over
  those releases.

Cells (``--only`` picks some by name): ``grid`` 20, 50, 100 and 200 bins at n = 200 and 30% censoring; ``small``
n = 60 on 20 bins; ``censored`` 70% censoring at n = 200 on 20 and 100 bins; ``early`` an exponential curve whose
median lies 60% of the way into the first of 20 bins (n = 60 and 200); ``others`` rrr (two groups, pooled coverage) and
time-indexed (its declared size and censoring share) on 20 bins. Epsilon 0.5, 1 and 2; laplace-counts and
adaptive-km everywhere; each setting's non-private row (exact counts on the same grid) as the reference.
Target: 93-97.5%, or a warning that says the number cannot be read there. Results: docs/coverage-curves.md.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from benchmarks.truths import HazardTruth, Law, bathtub, lognormal, steep
from dpsurv_core.curves.readings import band_curves, includes_noise, quantile_curves, read_quantiles
from dpsurv_core.curves.readout import released_numbers
from dpsurv_core.curves.result import context
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

PROBS = (0.25, 0.5, 0.75, 0.9)
EPSILONS = (0.5, 1.0, 2.0)
MECHANISMS = ("laplace-counts", "adaptive-km")
# each warning by the words that name it (curves/curve_warnings.py), in the order the table shows them
WARNINGS = {"wide": "spans almost 0 to 1", "clamping": "alone pulls", "empty": "leave nobody at risk",
            "few at risk": "number at risk read from",
            "steep bin": "may read a little high", "first bin": "first bin", "no upper": "has no upper limit", "not reached": "is not reached on the noisy",
            "crosses": "crosses 0.5", "labels": "randomized (reported) group labels",
            "time-indexed": "time-indexed", "other": ""}


@dataclass(frozen=True)
class Setting:
    """One cohort design: the truth (a :class:`WeibullTruth` or a :class:`benchmarks.truths.HazardTruth`), the
    cohort size, the number of equal public bins and the grid's end; ``event_times``: the grid is the cohort's own
    event times instead (read from the data: not DP as run)."""

    name: str
    truth: WeibullTruth | HazardTruth
    n: int
    bins: int
    horizon: float
    groups: tuple[str, ...] = ("A",)
    event_times: bool = False

    def public(self, data: Cohort | None = None) -> PublicParameters:
        grid = (TimeGrid.event_times(data) if self.event_times and data is not None
                else TimeGrid(np.linspace(0.0, self.horizon, self.bins + 1), "equal", False))
        return PublicParameters(self.horizon, grid, group_categories=self.groups)

    def landmarks(self) -> tuple[np.ndarray, np.ndarray]:
        """(landmark times (4,): the grid points nearest the first group's quantiles PROBS, or the quantiles on an
        event-time grid; true S there (G, 4))."""
        quantiles = np.array([self.truth.quantile(p, self.groups[0]) for p in PROBS])
        if self.event_times:
            times = quantiles
        else:
            points = self.public().grid.points
            times = points[[int(np.argmin(np.abs(points - q))) for q in quantiles]]
        return times, np.array([self.truth.survival(times, g) for g in self.groups])

    def cohort(self, seed: int) -> Cohort:
        if isinstance(self.truth, HazardTruth):
            return self.truth.sample(np.random.default_rng(seed))
        d = weibull_cohort(self.n, self.truth, seed=seed)
        group = d["group"].to_numpy(str) if len(self.groups) > 1 else np.full(self.n, self.groups[0])
        return Cohort(d["time"].to_numpy(float), d["status"].to_numpy(np.int64), group)


def shaped(name: str, law: Law, n: int = 200, bins: int = 20, censoring: float = 0.3, end: float | None = None
           ) -> Setting:
    """One group of ``n`` from a non-Weibull ``law``; the grid ends at ``end`` or the law's 90% quantile."""
    truth = HazardTruth(("A",), (n,), (law,), (censoring,))
    return Setting(f"{name}, {100 * censoring:.0f}% censored, n = {n}, {bins} bins", truth, n, bins,
                   end if end is not None else truth.quantile(0.9))


def grouped(name: str, sizes: tuple[int, ...], shares: tuple[float, ...], bins: int = 20) -> Setting:
    """Groups of their own size and censoring share, one exponential law (median 700 days); coverage pooled over the
    groups (the landmarks are the same times for every group)."""
    names = tuple("ABCDEFGH"[: len(sizes)])
    law = Law(rates=(math.log(2.0) / 700.0,))
    truth = HazardTruth(names, sizes, (law,) * len(sizes), shares)
    return Setting(f"{name}: groups of {', '.join(map(str, sizes))} censored "
                   f"{', '.join(f'{100 * c:.0f}%' for c in shares)}, {bins} bins", truth, sum(sizes), bins,
                   law.quantile(0.9), names)


def weibull(n: int, bins: int, censoring: float = 0.3) -> Setting:
    """Weibull shape 1.3; the grid ends at the truth's 90% quantile, or at 90% of the censoring limit where follow-up
    ends before it (70% censored: S = 0.46 there, so the later landmarks are the grid's last point)."""
    truth = WeibullTruth(shape=1.3, censoring=censoring)
    return Setting(f"Weibull 1.3, {100 * censoring:.0f}% censored, n = {n}, {bins} bins", truth, n, bins,
                   min(truth.quantile(0.9), 0.9 * truth.censoring_limit))


def early(n: int, bins: int = 20) -> Setting:
    """Exponential survival, 30% censored, whose median lies 60% of the way into the first of ``bins`` bins."""
    truth = WeibullTruth(shape=1.0, scale=1000.0, censoring=0.3)
    return Setting(f"exponential, median at 0.6 of the first bin, n = {n}, {bins} bins", truth, n, bins,
                   truth.quantile(0.5) / 0.6 * bins)


def settings(only: set[str] | None) -> list[tuple[str, Setting, tuple[str, ...]]]:
    cells: list[tuple[str, Setting, tuple[str, ...]]] = []
    cells += [("grid", weibull(200, b), MECHANISMS) for b in (20, 50, 100, 200)]
    cells += [("small", weibull(60, 20), MECHANISMS)]
    cells += [("censored", weibull(200, b, 0.7), MECHANISMS) for b in (20, 100)]
    cells += [("early", early(n), MECHANISMS) for n in (60, 200)]
    two = Setting("Weibull 1.3, 30% censored, two groups of 100 (HR 1.5), 20 bins", WeibullTruth(hazard_ratio=1.5),
                  200, 20, WeibullTruth(hazard_ratio=1.5).quantile(0.9), ("A", "B"))
    cells += [("others", two, ("rrr",)), ("others", weibull(200, 20), ("time-indexed",))]
    cells += [("shapes", shaped("bathtub hazard", bathtub()), MECHANISMS),
              ("shapes", shaped("log-normal, sigma 1.5", lognormal(700.0, 1.5)), MECHANISMS),
              ("shapes", shaped("exponential reaching S = 0.1 at the end of bin 3", steep(1000.0), end=1000.0),
               MECHANISMS)]
    cells += [("groups", grouped("1:9", (20, 180), (0.3, 0.3)), MECHANISMS + ("rrr",)),
              ("groups", grouped("censoring 10/70", (100, 100), (0.1, 0.7)), MECHANISMS + ("rrr",)),
              ("groups", grouped("three groups", (40, 60, 100), (0.1, 0.4, 0.7)), MECHANISMS),
              ("groups", grouped("30 per group", (30, 30), (0.3, 0.3)), MECHANISMS)]
    w = weibull(200, 20)
    cells += [("event-times", replace(w, name="Weibull 1.3, 30% censored, n = 200, the cohort's event times as the "
                                           "grid (read from the data: not DP as run)", event_times=True), MECHANISMS)]
    return [c for c in cells if only is None or c[0] in only]


def build(mech_id: str, eps: float, data: Cohort, s: Setting, public: PublicParameters) -> Any:
    if mech_id == "time-indexed":
        from dpsurv_core.curves.time_indexed import TimeIndexed

        return TimeIndexed(s.bins, epsilon=eps, sample_size=s.n, censoring=s.truth.censoring)
    return catalogue.get(catalogue.CURVES, mech_id).build(eps, **context(data, public))


MEDIAN_WARNINGS = ("first bin", "no upper", "not reached", "crosses")
START = re.compile(r"(?:^|\s)(?:From|from|At) ([-+0-9.e]+)")


def kind_of(sentence: str) -> str:
    return next(k for k, words in WARNINGS.items() if words in sentence)


def warned_from(sentence: str) -> float:
    """The time from which a curve's sentence says its numbers cannot be read (0: everywhere; inf: not the curve's)."""
    if kind_of(sentence) in MEDIAN_WARNINGS or kind_of(sentence) in ("labels", "time-indexed", "other"):
        return np.inf
    if "at every time" in sentence:
        return 0.0
    found = START.search(sentence)
    return float(found.group(1)) if found else 0.0


def measure(s: Setting, mech_id: str, eps: float, cohorts: int, seed: int) -> dict[str, Any]:
    times, s_true = s.landmarks()
    medians = np.array([s.truth.quantile(0.5, g) for g in s.groups])
    hit = np.zeros(5)
    hit_quiet = np.zeros(5)
    quiet = np.zeros(5)
    estimate = np.zeros(4)
    fired = dict.fromkeys(WARNINGS, 0)
    t0 = time.perf_counter()
    for r in range(cohorts):
        data = s.cohort(seed + r)
        public = s.public(data)
        rel = build(mech_id, eps, data, s, public).compute(data, public, SimulationNoise([seed, r]), trials=1)
        out = released_numbers(rel, "log", landmarks=[float(t) for t in times])
        marks = out["landmarks"]
        lo = np.array([np.nan if m["lower"] is None else m["lower"] for m in marks], float).reshape(len(s.groups), 4)
        up = np.array([np.nan if m["upper"] is None else m["upper"] for m in marks], float).reshape(len(s.groups), 4)
        surv = np.array([m["survival"] for m in marks], float).reshape(len(s.groups), 4)
        lo, up = np.nan_to_num(lo, nan=0.0), np.nan_to_num(up, nan=1.0)  # R's NA: no limit on that side
        main = band_curves(rel)
        exact_grid = rel.counts is not None and rel.counts.grid.kind == "event-times"
        coarse = not exact_grid and np.isfinite(eps)
        q = read_quantiles(main, quantile_curves(rel, main), "log", includes_noise(rel), coarse)
        m_lo = np.array([e["median_lower"] if e["median_lower"] is not None else 0.0 for e in q], float)
        m_up = np.array([e["median_upper"] if e["median_upper"] is not None else np.inf for e in q], float)
        m_lo, m_up = np.nan_to_num(m_lo, nan=0.0), np.nan_to_num(m_up, nan=np.inf)
        cover = np.concatenate([((lo <= s_true) & (s_true <= up)).sum(0), [((m_lo <= medians) & (medians <= m_up)).sum()]])
        hit += cover
        estimate += surv.sum(0)
        kinds = {kind_of(w) for w in out["warnings"]}
        for k in kinds:
            fired[k] += 1
        # a landmark is warned about when a sentence says the curve cannot be read from a time at or before it; the
        # median when a sentence is about it or about the curve from its printed value on
        start = min((warned_from(w) for w in out["warnings"]), default=np.inf)
        med = np.array([e["median"] for e in q], float)
        ok = np.concatenate([times < start - 1e-9,
                             [not any(kind_of(w) in MEDIAN_WARNINGS and "median" in w for w in out["warnings"])
                              and bool(np.all(med < start - 1e-9))]])
        quiet += ok
        hit_quiet += cover * ok
    total = cohorts * len(s.groups)
    return {"coverage": hit / total, "quiet": quiet, "quiet_coverage": hit_quiet / np.maximum(1, quiet * len(s.groups)),
            "mean_s": estimate / total, "true_s": s_true.mean(0), "fired": {k: v / cohorts for k, v in fired.items()},
            "seconds": time.perf_counter() - t0, "total": total, "quiet_share": quiet / cohorts}


HEADER = ("| mechanism | eps | S 0.75 | S 0.5 | S 0.25 | S 0.1 | median | mean S (truth) | warnings fired | "
          "not warned about: share; coverage |\n|---|---|---|---|---|---|---|---|---|---|")


def fmt(mech_id: str, eps: float, out: dict[str, Any]) -> str:
    def cell(p: float, total: float) -> str:
        return f"{100 * p:.1f} ({100 * np.sqrt(p * (1 - p) / total):.1f})" if total else "-"

    cov = " | ".join(cell(p, out["total"]) for p in out["coverage"])
    bias = ", ".join(f"{m:.3f} ({t:.3f})" for m, t in zip(out["mean_s"], out["true_s"]))
    fired = ", ".join(f"{k} {100 * v:.0f}%" for k, v in out["fired"].items() if v) or "none"
    quiet = " / ".join(f"{100 * sh:.0f}%: {100 * p:.0f}" if sh else "0%: -"
                       for sh, p in zip(out["quiet_share"], out["quiet_coverage"]))
    eps_text = "-" if not np.isfinite(eps) else f"{eps:g}"
    return f"| {mech_id} | {eps_text} | {cov} | {bias} | {fired} | {quiet} |"


def _row(job: tuple[Setting, str, float, int, int]) -> str:
    s, mech_id, eps, cohorts, seed = job
    return fmt(mech_id, eps, measure(s, mech_id, eps, cohorts, seed))


def run(cohorts: int, seed: int = 1, only: set[str] | None = None, epsilons: tuple[float, ...] = EPSILONS,
        mechanisms: tuple[str, ...] | None = None, jobs: int = 1, log: Any = print,
        setting: str | None = None) -> list[str]:
    """Every cell's table (a Markdown section per setting), printed through ``log`` as each row is done; rows run in
    ``jobs`` processes. ``setting``: only the settings whose name starts with it (e.g. "1:9")."""
    plan: list[tuple[Setting, list[tuple[Setting, str, float, int, int]]]] = []
    for _, s, mechs in settings(only):
        if setting is not None and not s.name.startswith(setting):
            continue
        if mechanisms:
            mechs = tuple(m for m in mechs if m in mechanisms)
            if not mechs:
                continue
        ref = "nonprivate" if "time-indexed" not in mechs and not mechanisms else None
        rows = ([(ref, float("inf"))] if ref else []) + [(m, e) for m in mechs for e in epsilons]
        plan.append((s, [(s, m, e, cohorts, seed) for m, e in rows]))
    flat = [job for _, jobs_ in plan for job in jobs_]
    lines: list[str] = []
    if jobs > 1:
        from multiprocessing import get_context

        pool = get_context("spawn").Pool(jobs)
        results = pool.imap(_row, flat)
    else:
        pool, results = None, map(_row, flat)
    try:
        for s, rows in plan:
            head = f"\n**{s.name}**\n\n{HEADER}"
            log(head)
            lines.append(head)
            for _ in rows:
                line = next(results)
                log(line)
                lines.append(line)
    finally:
        if pool is not None:
            pool.close()
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cohorts", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", type=lambda v: set(re.split(r"\s*,\s*", v)), default=None,
                    help="cells to run: grid, small, censored, early, others, shapes, groups, event-times")
    ap.add_argument("--epsilons", type=lambda v: tuple(float(x) for x in v.split(",")), default=EPSILONS)
    ap.add_argument("--mechanisms", type=lambda v: tuple(v.split(",")), default=None,
                    help="only these mechanisms (and no non-private reference row)")
    ap.add_argument("--jobs", type=int, default=1, help="processes (rows run in parallel)")
    ap.add_argument("--setting", default=None,
                    help="only the settings whose name starts with this (e.g. '1:9' of --only groups)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    print(f"{args.cohorts} cohorts per cell (seed {args.seed}); coverage in % (Monte Carlo s.e.), log band", flush=True)
    run(args.cohorts, args.seed, args.only, args.epsilons, args.mechanisms, args.jobs,
        lambda line: print(line, flush=True), args.setting)
    print(f"\ntotal {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
