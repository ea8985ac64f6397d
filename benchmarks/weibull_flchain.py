"""Paper 000's Figures 3 and 4 on flchain: MdAE of the Weibull shape and scale over 500 tries, and a timing
of one LSP + TLL release against one lifelines ``WeibullFitter`` fit on the same data.

Run from the project root:  .venv/bin/python benchmarks/weibull_flchain.py [--tries 500] [--seed 2024]

Per-parameter budgets 0.05 .. 1.6 (the total epsilon of a release is twice that). Errors are against the
non-private MLE on the same normalised data (horizon 5300 days = flchain's maximum rounded up, omega 6,
gamma 10, K 500, SAA blocks of about 500 records). Prints the table and writes
benchmarks/results/weibull_flchain.{csv,html}. All noise is seeded simulation noise except in the
timing, which uses the release path (OpenDP samplers).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dpsurv_core.data.cohort import load_bundled  # noqa: E402
from dpsurv_core.data.public import nice_ceiling  # noqa: E402
from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise  # noqa: E402
from dpsurv_core.weibull.mechanisms import LspTll, mdae_study  # noqa: E402
from dpsurv_core.weibull.model import weibull_mle  # noqa: E402

BUDGETS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)
RESULTS = ROOT / "benchmarks" / "results"
NAMES = {"lsp-tll": "LSP / TLL", "laplace": "Laplace", "saa": "SAA"}


def mdae_table(tries: int, seed: int) -> tuple[pd.DataFrame, dict]:
    cohort = load_bundled("flchain")
    horizon = nice_ceiling(float(cohort.time.max()))
    lsp = LspTll(1.0, horizon)
    sample = lsp.prepare(cohort)
    fit = weibull_mle(sample)
    ladder = lsp.ladder(sample)  # depends only on the data: reused for every budget
    rows = mdae_study(sample, [2 * b for b in BUDGETS], tries, seed, ladder=ladder,
                      progress=lambda i, n, what: print(f"  {i}/{n} {what}", file=sys.stderr))
    table = pd.DataFrame(rows).rename(columns={"epsilon_per_parameter": "budget_per_parameter",
                                               "epsilon": "epsilon_total", "mdae_scale": "mdae_scale_days"})
    table["mdae_scale"] = table.pop("mdae_scale_normalised")
    table["mechanism"] = table["mechanism"].map(NAMES)
    info = {"n": sample.n, "events": sample.n_events, "horizon": horizon, "shape": fit.shape,
            "scale_normalised": fit.scale_normalised, "scale_days": fit.scale}
    return table, info


def timing(repeats: int = 15) -> dict:
    """Median wall time of one in-process LSP + TLL release (normalisation, ladder, draw, TLL) vs one lifelines fit."""
    from lifelines import WeibullFitter

    cohort = load_bundled("flchain")
    horizon = nice_ceiling(float(cohort.time.max()))
    mech = LspTll(1.0, horizon)
    noise = ReleaseNoise()
    sample = mech.prepare(cohort)
    WeibullFitter().fit(sample.t, sample.d)  # warm-up (imports, autograd tracing)
    mech.compute(mech.prepare(cohort), noise)
    rel, ll, many = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        mech.compute(mech.prepare(cohort), noise)
        t1 = time.perf_counter()
        WeibullFitter().fit(sample.t, sample.d)
        t2 = time.perf_counter()
        s = mech.prepare(cohort)
        mech.compute_many(s, SimulationNoise(1), 500, ladder=mech.ladder(s))
        t3 = time.perf_counter()
        rel.append(t1 - t0)
        ll.append(t2 - t1)
        many.append(t3 - t2)
    r, l_, m = statistics.median(rel), statistics.median(ll), statistics.median(many)
    return {"release_s": r, "lifelines_s": l_, "release_500_s": m, "ratio_release_to_lifelines": r / l_,
            "ratio_500_to_one": m / r}


def plot(table: pd.DataFrame, path: Path) -> None:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("Shape p (Figure 3)", "Scale lambda, normalised (Figure 4)"))
    colours = {"LSP / TLL": "#1f77b4", "Laplace": "#d62728", "SAA": "#2ca02c"}
    for label, grp in table.groupby("mechanism", sort=False):
        for col, key in ((1, "mdae_shape"), (2, "mdae_scale")):
            fig.add_trace(go.Scatter(x=grp["budget_per_parameter"], y=grp[key], mode="lines+markers", name=label,
                                     legendgroup=label, showlegend=col == 1, line={"color": colours[label]}),
                          row=1, col=col)
    fig.update_xaxes(type="log", title_text="privacy budget per parameter (total epsilon = 2x)")
    fig.update_yaxes(type="log", title_text="median absolute error")
    fig.update_layout(title="flchain: MdAE over 500 tries (Nguyen & Hui 2017, Weibull, Figures 3 and 4)", height=480, width=1000)
    fig.write_html(path, include_plotlyjs="cdn")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args(argv)
    table, info = mdae_table(args.tries, args.seed)
    print(f"flchain: n = {info['n']}, events = {info['events']}, horizon = {info['horizon']:g} days; "
          f"MLE shape {info['shape']:.6f}, scale {info['scale_normalised']:.6f} (normalised) = "
          f"{info['scale_days']:.1f} days")
    wide = table.pivot(index="budget_per_parameter", columns="mechanism", values=["mdae_shape", "mdae_scale"])
    wide = wide.reindex(columns=["LSP / TLL", "Laplace", "SAA"], level=1)
    with pd.option_context("display.float_format", "{:.4g}".format, "display.width", 160):
        print(f"\nMdAE over {args.tries} tries (columns: parameter, mechanism; rows: budget per parameter)")
        print(wide.to_string())
        lsp = table[table.mechanism == "LSP / TLL"].set_index("budget_per_parameter")
        for other in ("SAA", "Laplace"):
            o = table[table.mechanism == other].set_index("budget_per_parameter")
            print(f"{other} / LSP shape error ratio: " + ", ".join(
                f"{b:g}: {o.mdae_shape[b] / lsp.mdae_shape[b]:.0f}x" for b in BUDGETS))
            print(f"{other} / TLL scale error ratio: " + ", ".join(
                f"{b:g}: {o.mdae_scale[b] / lsp.mdae_scale[b]:.0f}x" for b in BUDGETS))
    RESULTS.mkdir(parents=True, exist_ok=True)
    table.to_csv(RESULTS / "weibull_flchain.csv", index=False)
    plot(table, RESULTS / "weibull_flchain.html")
    print(f"\nwrote {RESULTS / 'weibull_flchain.csv'} and {RESULTS / 'weibull_flchain.html'}")
    if not args.no_timing:
        t = timing()
        print(f"\ntiming (median of 15, in process): one LSP + TLL release {t['release_s'] * 1e3:.1f} ms, one lifelines "
              f"WeibullFitter fit {t['lifelines_s'] * 1e3:.1f} ms: ratio {t['ratio_release_to_lifelines']:.2f}; "
              f"500 releases reusing the ladder {t['release_500_s'] * 1e3:.1f} ms = "
              f"{t['ratio_500_to_one']:.2f} x one release")
    return 0


if __name__ == "__main__":
    sys.exit(main())
