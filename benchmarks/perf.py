"""Performance runner: ratios measured in one run, never absolute seconds alone.

* private KM (laplace-counts: counts + discrete Laplace + estimators) vs lifelines KaplanMeierFitter on
  10^4 .. 10^7 synthetic subjects, with the scaling exponent of each (slope of log time on log n);
* one LSP + TLL release vs one lifelines WeibullFitter fit on flchain (benchmarks/weibull_flchain.timing);
* repeated-trial throughput: releases per second of laplace-counts on lung, vectorised vs one at a time;
* person-period regression fit (expansion + L-BFGS) vs lifelines CoxPHFitter on flchain (age, sex);
* whole process: `python -m dpsurv_core km` on a 10^6-row CSV vs a script reading it with pandas and fitting
  KaplanMeierFitter, and the peak memory of `km` on a 10^7-row two-column CSV (target below 1.5 GB).
Run: .venv/bin/python -m benchmarks [--max-n 10000000] [--skip-process]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"

from dpsurv_core.curves.laplace_counts import LaplaceCounts  # noqa: E402
from dpsurv_core.data.cohort import Cohort, load_bundled  # noqa: E402
from dpsurv_core.data.public import PublicParameters, TimeGrid  # noqa: E402
from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise  # noqa: E402


def synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Weibull(1.2) event times (scale 1000) with uniform censoring on [0, 3000], rounded to 0.1."""
    rng = np.random.default_rng(seed)
    t = rng.weibull(1.2, n) * 1000 + 0.5
    c = rng.uniform(0, 3000, n)
    return np.round(np.minimum(t, c), 1), (t <= c).astype(np.int8)


def _best(fn, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return min(out)


def km_scaling(sizes: list[int]) -> list[dict]:
    from lifelines import KaplanMeierFitter

    rows = []
    noise = ReleaseNoise()
    for n in sizes:
        t, d = synthetic(n)
        cohort = Cohort(t, d)
        public = PublicParameters.derive(cohort, grid=TimeGrid.equal(0, 3000, 20))
        mech = LaplaceCounts(1.0)
        reps = 5 if n <= 10**6 else 3  # best of several: the first call pays for first-touch memory
        ours = _best(lambda: mech.compute(cohort, public, noise), reps)  # noqa: B023
        theirs = _best(lambda: KaplanMeierFitter().fit(t, d), reps)  # noqa: B023
        rows.append({"n": n, "dpsurv_s": ours, "lifelines_s": theirs, "ratio": ours / theirs})
        print(f"  KM n={n:>9,}: private KM / lifelines = {ours / theirs:.3f}", file=sys.stderr)
    return rows


def slope(rows: list[dict], key: str) -> float:
    x = np.log([r["n"] for r in rows])
    y = np.log([r[key] for r in rows])
    return float(np.polyfit(x, y, 1)[0])


def throughput() -> dict:
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100)
    mech = LaplaceCounts(1.0)
    trials = 3000
    vec = _best(lambda: mech.compute(cohort, public, SimulationNoise(1), trials=trials), 3)
    release = ReleaseNoise()
    one = _best(lambda: mech.compute(cohort, public, release), 20)
    return {"vectorised_releases_per_s": trials / vec, "single_release_per_s": 1 / one,
            "speed_up_vectorised": (trials / vec) / (1 / one)}


def weibull() -> dict:
    from benchmarks.weibull_flchain import timing

    return timing(repeats=7)


def regression() -> dict:
    from dpsurv_core.regression.model import fit_cox, fit_nonprivate
    from dpsurv_core.regression.person_period import person_period

    cohort = load_bundled("flchain", covariates=("age", "sex"))
    ranges, levels = {"age": (50.0, 105.0)}, {"sex": ("F", "M")}

    def ours():
        fit_nonprivate(person_period(cohort, ("age", "sex"), horizon=5300.0, ranges=ranges, levels=levels))

    pp = person_period(cohort, ("age", "sex"), horizon=5300.0, ranges=ranges, levels=levels)
    fit_cox(cohort, pp)  # warm-up
    a = _best(ours, 5)
    b = _best(lambda: fit_cox(cohort, pp), 5)
    return {"person_period_fit_s": a, "coxph_s": b, "ratio": a / b}


def _run(cmd: list[str]) -> tuple[float, int]:
    """Wall time and peak resident memory (KB) of a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) if peak > before else peak


def whole_process(max_n: int) -> dict:
    py = sys.executable
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "lifelines_km.py"
        script.write_text("import sys\nimport pandas as pd\nfrom lifelines import KaplanMeierFitter\n"
                          "df = pd.read_csv(sys.argv[1])\nKaplanMeierFitter().fit(df['time'], df['status'])\n")
        csv1 = Path(tmp) / "m1.csv"
        t, d = synthetic(10**6, 1)
        np.savetxt(csv1, np.column_stack([t, d]), fmt=["%.1f", "%d"], delimiter=",", header="time,status", comments="")
        km = [py, "-m", "dpsurv_core", "km", "--data", str(csv1), "--time", "time", "--event", "status",
              "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "0:3000:20", "--json"]
        ours = min(_run(km)[0] for _ in range(3))
        theirs = min(_run([py, str(script), str(csv1)])[0] for _ in range(3))
        out["km_1e6_process_s"], out["pandas_lifelines_1e6_process_s"] = ours, theirs
        out["km_1e6_process_ratio"] = ours / theirs
        if max_n >= 10**7:
            csv10 = Path(tmp) / "m10.csv"
            t, d = synthetic(10**7, 2)
            np.savetxt(csv10, np.column_stack([t, d]), fmt=["%.1f", "%d"], delimiter=",", header="time,status",
                       comments="")
            timev = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
            r = subprocess.run([*timev, *km[:5], str(csv10), *km[6:]], capture_output=True, text=True, cwd=ROOT)
            if r.returncode != 0:
                raise RuntimeError(f"km on the 10^7-row file failed: {r.stderr.strip().splitlines()[-1]}")
            peak_kb = None
            for line in r.stderr.splitlines():
                if "Maximum resident set size" in line:
                    peak_kb = int(line.split()[-1])
            out["km_1e7_peak_mb"] = peak_kb / 1024 if peak_kb else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-n", type=int, default=10**7)
    ap.add_argument("--skip-process", action="store_true", help="skip the whole-process timings")
    args = ap.parse_args(argv)
    sizes = [n for n in (10**4, 10**5, 10**6, 10**7) if n <= args.max_n]
    res = {"km": km_scaling(sizes)}
    if len(sizes) > 1:
        res["km_exponent_dpsurv"] = slope(res["km"], "dpsurv_s")
        res["km_exponent_lifelines"] = slope(res["km"], "lifelines_s")
    print("  throughput", file=sys.stderr)
    res["throughput"] = throughput()
    print("  weibull", file=sys.stderr)
    res["weibull"] = weibull()
    print("  regression", file=sys.stderr)
    res["regression"] = regression()
    if not args.skip_process:
        print("  whole process", file=sys.stderr)
        res["process"] = whole_process(args.max_n)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "perf.json").write_text(json.dumps(res, indent=2))
    print("\nratio = dpsurv time / lifelines time (below 1: dpsurv faster)")
    for r in res["km"]:
        print(f"private KM, n = {r['n']:>10,}: {r['ratio']:.3f}")
    if "km_exponent_dpsurv" in res:
        print(f"scaling exponent: dpsurv {res['km_exponent_dpsurv']:.2f}, lifelines {res['km_exponent_lifelines']:.2f}")
    w = res["weibull"]
    print(f"LSP + TLL release / WeibullFitter (flchain): {w['ratio_release_to_lifelines']:.3f}; "
          f"500 releases / one release: {w['ratio_500_to_one']:.2f}")
    th = res["throughput"]
    print(f"laplace-counts on lung: {th['vectorised_releases_per_s']:,.0f} simulated releases/s vectorised, "
          f"{th['single_release_per_s']:,.0f} OpenDP releases/s one at a time")
    print(f"person-period fit / CoxPHFitter (flchain, age + sex): {res['regression']['ratio']:.3f}")
    if "process" in res:
        p = res["process"]
        print(f"km process on 10^6-row CSV / pandas + lifelines script: {p['km_1e6_process_ratio']:.3f}")
        if p.get("km_1e7_peak_mb") is not None:
            print(f"km peak memory on a 10^7-row CSV: {p['km_1e7_peak_mb']:.0f} MB (target < 1536 MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
