"""Benchmark: DP against today's disclosure control on lung, veteran, flchain and kidney (docs/disclosure-control.md).

For each data set (kidney at the subject level: two rows per patient, removed together), the board's comparison
(:func:`dpsurv_core.audit.comparison.compare`): laplace-counts and adaptive-km at epsilon 1 next to small-cell
suppression (threshold 5), rounding (base 5), random rounding (base 5), the cell key and step smoothing (k = 5),
on the default public grid (20 bins up to the horizon read off the data): RMSE and largest gap against the non-private
curve, the exposed share (exact over every subject), the strongest attack's advantage and the empirical epsilon
on the most exposed subject (R runs on D and on D').

Also the speed-up of the vectorised exposure over removing each subject in turn and recomputing (rounding, lung),
quoted as a ratio. Prints markdown tables and saves benchmarks/results/disclosure_bench.json. Seeded simulation.

Run: .venv/bin/python benchmarks/disclosure_bench.py [--runs 500] [--quick]   (about 2 minutes of one core;
--quick: lung only, 100 runs)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from dpsurv_core.audit.comparison import compare, paragraph  # noqa: E402
from dpsurv_core.audit.exposure import exposure  # noqa: E402
from dpsurv_core.data.cohort import load_bundled  # noqa: E402
from dpsurv_core.data.public import PublicParameters  # noqa: E402
from dpsurv_core.disclosure.rounding import Round  # noqa: E402

DATASETS = (("lung", "sex"), ("veteran", "trt"), ("flchain", "sex"), ("kidney", "sex"))
EPSILON = 1.0


def _fmt(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "infinite (certain)"
    return f"{100 * v:.0f}%" if pct else f"{v:.3f}"


def markdown(rows: list[dict]) -> str:
    head = ("| data | method | RMSE | largest gap | exposed share | attack advantage | empirical epsilon | guarantee |\n"
            "|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r['dataset']} | {r['method']} | {r['rmse']:.3f} | {r['max_gap']:.3f} | "
                     f"{_fmt(r['exposed_share'], True)} | {_fmt(max(r['advantage'], 0.0), True)} | "
                     f"{_fmt(r['empirical_epsilon'])} | "
                     f"{'epsilon 1 (DP)' if r['epsilon'] is not None else 'none'} |")
    return "\n".join(lines)


def exposure_speedup(repeats: int = 3) -> dict:
    """Vectorised exposure against the brute force (remove each subject, recompute the table), rounding on lung."""
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort)
    mech = Round(5)
    fast = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        e = exposure(mech, cohort, public)
        fast.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    base = mech.compute(cohort, public, None).counts.cells()[0]
    brute = []
    for i in range(cohort.n):  # the slow reference, on purpose
        keep = np.ones(cohort.n, bool)
        keep[i] = False
        brute.append(bool(np.any(mech.compute(cohort.subset(keep), public, None).counts.cells()[0] != base)))
    slow = time.perf_counter() - t0
    assert np.array_equal(np.array(brute), e.mask), "vectorised exposure differs from the brute force"
    return {"subjects": cohort.n, "speedup": slow / min(fast), "agree": True, "share": e.share}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=500, help="runs on D and on D' for each attack (default 500)")
    p.add_argument("--quick", action="store_true", help="lung only, 100 runs")
    args = p.parse_args(argv)
    runs = 100 if args.quick else args.runs
    sets = DATASETS[:1] if args.quick else DATASETS
    out: dict = {"epsilon": EPSILON, "runs": runs, "datasets": {}}
    rows = []
    t_all = time.perf_counter()
    for name, group in sets:
        cohort = load_bundled(name, group=group)
        public = PublicParameters.derive(cohort)
        t0 = time.perf_counter()
        comp = compare(cohort, public, EPSILON, trials=runs, seed=0)
        took = time.perf_counter() - t0
        d = comp.to_dict()
        d["group"] = group
        d["rows_per_subject"] = cohort.rows_per_subject
        d["seconds"] = took
        out["datasets"][name] = d
        for r in d["rows"]:
            rows.append({"dataset": f"{name} ({comp.n_subjects} subjects)", **r})
        print(f"{name}: {comp.n_subjects} subjects, {took:.1f} s", flush=True)
        print(paragraph(comp), flush=True)
    out["speedup"] = exposure_speedup()
    out["total_seconds"] = time.perf_counter() - t_all
    print()
    print(markdown(rows))
    print(f"\nexposure: vectorised {out['speedup']['speedup']:.0f} times faster than removing each of "
          f"{out['speedup']['subjects']} subjects in turn (same answer)")
    res = ROOT / "benchmarks" / "results"
    res.mkdir(parents=True, exist_ok=True)
    (res / "disclosure_bench.json").write_text(json.dumps(out, indent=1, default=lambda o: None if isinstance(
        o, float) and not math.isfinite(o) else str(o)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
