"""Do releases at the planned epsilon achieve the planned precision? Validation of ``python -m dpsurv_core plan``.

``python -m benchmarks.planning_validity [--cohorts N] [--seed S] [--only NAMES] [--jobs J] [--markdown]``

For each case the planner (:func:`dpsurv_core.planning.make_plan`, its default simulation: seed 1, 16 cohorts per
epsilon for half-widths, 240 for power, 8 for Weibull, 4 x 6 for regression) names the smallest epsilon meeting one
target for one mechanism. Then ``N`` cohorts are drawn independently of the planner: another simulator
(:func:`dpsurv_core.data.simulate.weibull_cohort`: two equal groups, the second at the stated hazard ratio, uniform
censoring with its limit solved on its own fixed sample, times rounded up to whole days) and other seeds. Each cohort
is released once at the planned epsilon through the path a real release takes, and read as it is published:

* curves: ``compute(..., trials=1)`` and :func:`dpsurv_core.curves.readout.released_numbers` (log band);
* log-rank: each release's counts tested on their own by
  :func:`dpsurv_core.curves.logrank_test.calibrated_tests` with 999 null draws (``logrank``'s default for one
  release; the planner simulates 99 per test), rejecting at p < 0.05;
* Weibull: ``compute_many(..., 1)`` and the Weibull reader's intervals from the declared n and censoring share;
* regression: ``compute(..., trials=1)`` and the regression reader (group as the 0/1 covariate, range [0, 1]).

Pass: the validation releases' median half-width (the worst group's) within +-10% of the target; a power within
+-5 points of it. The study each case declares has its horizon at or after the censoring limit (so no subject is
censored by the end of follow-up), which makes the planner's censoring share and the other simulator's the same.
Results: docs/planning.md.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.planning import Study, Survival, make_plan, parse_target
from dpsurv_core.planning.search import summarise
from dpsurv_core.privacy.noise import SimulationNoise

HALF_WIDTH_TOLERANCE = 0.10
POWER_TOLERANCE = 0.05
VALIDATION_DRAWS = 999


@dataclass(frozen=True)
class Case:
    name: str
    n: int
    shape: float
    scale: float
    censoring: float
    grid: tuple[float, float, int]
    target: str
    mechanism: str

    def truth(self, hazard_ratio: float = 1.0) -> WeibullTruth:
        return WeibullTruth(shape=self.shape, scale=self.scale, hazard_ratio=hazard_ratio, censoring=self.censoring)

    @property
    def horizon(self) -> float:
        """At or after every censoring limit the case simulates: follow-up never ends before censoring does."""
        hr = parse_target(self.target).hazard_ratio or 1.0
        return float(math.ceil(max(self.truth(1.0).censoring_limit, self.truth(hr).censoring_limit, self.grid[1])))

    def study(self) -> Study:
        return Study((self.n // 2, self.n // 2), self.horizon, self.grid, self.censoring,
                     Survival.weibull(self.shape, self.scale))


MEDIAN_730 = 730.0 / math.log(2.0)  # the exponential scale with median 730 days
CASES = (
    Case("survival 1 year", 1000, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "survival:365:0.05", "laplace-counts"),
    Case("survival 2 years", 1000, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "survival:730:0.06", "laplace-counts"),
    Case("median", 1000, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "median:120", "laplace-counts"),
    Case("RMST 5 years", 1000, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "rmst:1825:80", "laplace-counts"),
    Case("survival 1 year adaptive-km", 1000, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "survival:365:0.05",
         "adaptive-km"),
    Case("power HR 0.7", 600, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "logrank-power:0.7:0.8", "laplace-counts"),
    Case("power HR 0.6", 400, 1.0, MEDIAN_730, 0.3, (0.0, 3285.0, 36), "logrank-power:0.6:0.8", "laplace-counts"),
    Case("Weibull shape", 1000, 1.3, 1000.0, 0.3, (0.0, 3000.0, 20), "weibull-shape:0.2", "lsp-tll"),
    Case("coefficient", 5000, 1.3, 1000.0, 0.3, (0.0, 3000.0, 20), "coefficient:3", "output"),
)


def cohorts(case: Case, count: int, seed: int, hazard_ratio: float) -> list[Cohort]:
    """``count`` cohorts from the other simulator, seeded apart from the planner (seed, case, cohort)."""
    idx = [c.name for c in CASES].index(case.name)
    out = []
    for r in range(count):
        d = weibull_cohort(case.n, case.truth(hazard_ratio), rng=np.random.default_rng([seed, 7919, idx, r]))
        out.append(Cohort(d["time"].to_numpy(float), d["status"].to_numpy(np.int64), d["group"].to_numpy(str),
                          covariates=d[["x"]]))
    return out


def release_values(case: Case, eps: float, count: int, seed: int) -> np.ndarray:
    """Per cohort (and group) the released half-width, or 0/1 the test's rejection, at ``eps``."""
    target = parse_target(case.target)
    study = case.study()
    public = study.public()
    data = cohorts(case, count, seed, target.hazard_ratio or 1.0)
    noise = lambda r: SimulationNoise(np.random.SeedSequence([seed, 104729, r]))  # noqa: E731
    if target.family == "curves":
        from dpsurv_core.curves.readout import released_numbers
        from dpsurv_core.curves.result import context, with_follow_up_end
        from dpsurv_core.planning.evaluate import half_width
        from dpsurv_core.privacy import catalogue

        out = np.full((count, len(study.groups)), np.inf)
        for r, c in enumerate(data):
            mech = catalogue.get(catalogue.CURVES, case.mechanism).build(eps, **context(c, public))
            rel = with_follow_up_end(mech.compute(c, public, noise(r), trials=1), c, public)
            read = released_numbers(rel, "log", landmarks=[target.time] if target.kind == "survival" else None,
                                    rmst=target.time if target.kind == "rmst" else None, rmst_coarse=True)
            for k, _ in enumerate(rel.curves.groups):
                if target.kind == "survival":
                    e = read["landmarks"][k]
                    out[r, k] = half_width(e["lower"], e["upper"], 0.0, 1.0)
                elif target.kind == "rmst":
                    e = read["rmst"][k]
                    out[r, k] = half_width(e["lower"], e["upper"], -math.inf, math.inf)
                else:
                    e = read["medians"][k]
                    ok = e["median"] is not None and math.isfinite(e["median"])
                    out[r, k] = half_width(e["median_lower"], e["median_upper"]) if ok else math.inf
        return out
    if target.family == "power":
        from dpsurv_core.curves import logrank_test
        from dpsurv_core.privacy import catalogue

        entry = catalogue.get(catalogue.CURVES, case.mechanism)
        reject = np.zeros((count, 1))
        for r, c in enumerate(data):
            mech = entry.mechanism_class()(eps, noise_in_bands=False)  # the release's counts; the test needs no band
            rel = mech.compute(c, public, noise(r), trials=1)
            law = logrank_test.noise_law(mech, rel.extra)
            test = logrank_test.calibrated_tests(rel.counts, law, draws=VALIDATION_DRAWS)[-1]
            reject[r, 0] = float(np.nan_to_num(test.p_value[0], nan=1.0) < logrank_test.ALPHA)
        return reject
    if target.family == "weibull":
        from dpsurv_core.privacy import catalogue
        from dpsurv_core.publication import derive
        from dpsurv_core.weibull import readout

        out = np.full((count, 1), np.inf)
        for r, c in enumerate(data):
            mech = catalogue.get(catalogue.WEIBULL, case.mechanism).build(eps, horizon=study.horizon, n_public=study.n)
            sample = mech.prepare(c)
            est = mech.compute_many(sample, noise(r), 1)
            derived = derive(readout.KIND, readout.released_of(est),
                             readout.public_inputs(mech, study.n, study.censoring, "days"))
            shape = derived["intervals"][0]["shape"]
            out[r, 0] = (shape["upper"] - shape["lower"]) / 2.0
        return out
    from dpsurv_core.privacy import catalogue
    from dpsurv_core.publication import derive
    from dpsurv_core.regression import readout
    from dpsurv_core.regression.person_period import person_period

    out = np.full((count, 1), np.inf)
    for r, c in enumerate(data):
        pp = person_period(c, ["x"], horizon=study.horizon, ranges={"x": (0.0, 1.0)}, n_public=study.n, strict=False)
        mech = catalogue.get(catalogue.REGRESSION, case.mechanism).build(eps, pp=pp, lam=0.01)
        rel = mech.compute(pp, noise(r), trials=1)
        released, public_inputs = readout.publication(case.mechanism, mech, rel)
        row = derive(readout.KIND, released, public_inputs)["intervals"][0]
        out[r, 0] = (row["upper"] - row["lower"]) / 2.0
    return out


def measure(case: Case, count: int, seed: int) -> dict[str, Any]:
    """The planner's epsilon for the case and what ``count`` independent releases at it achieve."""
    target = parse_target(case.target)
    t0 = time.perf_counter()
    plan = make_plan(case.study(), [target], [case.mechanism])
    planning_s = time.perf_counter() - t0
    out: dict[str, Any] = {"case": case.name, "target": case.target, "mechanism": case.mechanism, "n": case.n,
                           "planned_epsilon": plan["epsilon"], "reachable": plan["reachable"],
                           "planner": plan["achieved"][case.target], "planning_seconds": round(planning_s, 2)}
    if not plan["reachable"]:
        out["pass"] = False
        return out
    t1 = time.perf_counter()
    values = release_values(case, float(plan["epsilon"]), count, seed)
    got = summarise(target, values, case.study().groups, float(plan["epsilon"]))
    out.update(cohorts=count, achieved=got.median, p10=got.p10, p90=got.p90, validation_seconds=round(
        time.perf_counter() - t1, 1))
    if target.is_power:
        out["se"] = math.sqrt(max(got.median * (1 - got.median), 0.0) / count)
        out["pass"] = bool(abs(got.median - target.goal) <= POWER_TOLERANCE)
    else:
        out["relative"] = got.median / target.goal - 1.0
        out["pass"] = bool(abs(out["relative"]) <= HALF_WIDTH_TOLERANCE)
    return out


def _job(job: tuple[Case, int, int]) -> dict[str, Any]:
    return measure(*job)


HEADER = ("| case | target | mechanism | n | planned epsilon | planner's median (p10-p90) | validation median (p10-p90) "
          "| deviation | pass |\n|---|---|---|---|---|---|---|---|---|")


def fmt(row: dict[str, Any]) -> str:
    power = row["target"].startswith("logrank-power")
    p = row["planner"]

    def num(x: Any) -> str:
        if x is None or not math.isfinite(float(x)):
            return "inf"
        return f"{100 * float(x):.1f}%" if power else f"{float(x):.3g}"

    if "achieved" not in row:
        return (f"| {row['case']} | `{row['target']}` | {row['mechanism']} | {row['n']} | not reachable | "
                f"{num(p['median'])} | - | - | no |")
    dev = (f"{100 * (row['achieved'] - parse_target(row['target']).goal):+.1f} points (s.e. {100 * row['se']:.1f})"
           if power else f"{100 * row['relative']:+.1f}%")
    return (f"| {row['case']} | `{row['target']}` | {row['mechanism']} | {row['n']} | {row['planned_epsilon']:g} | "
            f"{num(p['median'])} ({num(p['p10'])}-{num(p['p90'])}) | {num(row['achieved'])} ({num(row['p10'])}-"
            f"{num(row['p90'])}) | {dev} | {'yes' if row['pass'] else 'no'} |")


def run(count: int, seed: int, only: set[str] | None = None, jobs: int = 1, log: Any = print) -> list[dict[str, Any]]:
    chosen = [c for c in CASES if only is None or c.name in only]
    work = [(c, count, seed) for c in chosen]
    if jobs > 1:
        from multiprocessing import get_context

        with get_context("spawn").Pool(jobs) as pool:
            rows = []
            for row in pool.imap(_job, work):
                log(fmt(row))
                rows.append(row)
            return rows
    rows = []
    for job in work:
        row = _job(job)
        log(fmt(row))
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.planning_validity", description=__doc__.splitlines()[0])
    ap.add_argument("--cohorts", type=int, default=500, help="independent releases per case (default 500)")
    ap.add_argument("--seed", type=int, default=20261129, help="seed of the validation cohorts (not the planner's)")
    ap.add_argument("--only", default=None, help="cases to run, by name, comma-separated")
    ap.add_argument("--jobs", type=int, default=1, help="cases run at once, each in its own process")
    args = ap.parse_args(argv)
    only = None if args.only is None else {s.strip() for s in args.only.split(",")}
    t0 = time.perf_counter()
    print(f"{args.cohorts} independent releases per case (seed {args.seed}); tolerance +-{HALF_WIDTH_TOLERANCE:.0%} "
          f"of a half-width target, +-{100 * POWER_TOLERANCE:.0f} points of a power\n\n{HEADER}", flush=True)
    rows = run(args.cohorts, args.seed, only, args.jobs, lambda line: print(line, flush=True))
    passed = sum(r["pass"] for r in rows)
    print(f"\n{passed} of {len(rows)} cases pass; total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0 if passed == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
