"""Benchmark: ``adaptive-km`` against ``laplace-counts`` (20 equal bins) on lung.

Setting: lung, horizon 1100 days, public grid of 20 equal bins (0:1100:20), total epsilon in
0.25, 0.5, 1, 2, 4, ``runs`` independent simulated releases of each mechanism (seeded
SimulationNoise, vectorised over runs). Error of one release: RMSE (and sup-norm) of its survival
curve against the non-private Kaplan-Meier curve at the grid's 20 points; reported: the median
over runs, and the ratio adaptive / laplace-counts. The issue asks for a ratio of at most 0.75 at
epsilon 1; the script exits with status 1 if it is above. A plotly HTML plot goes to
benchmarks/results/km_lung.html.

    .venv/bin/python -m benchmarks.km_lung [--runs 500] [--seed 2026]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dpsurv_core.curves.adaptive_km import AdaptiveKM  # noqa: E402
from dpsurv_core.curves.laplace_counts import LaplaceCounts  # noqa: E402
from dpsurv_core.curves.result import NonPrivate, rmse, sup_norm  # noqa: E402
from dpsurv_core.data.cohort import load_bundled  # noqa: E402
from dpsurv_core.data.public import PublicParameters  # noqa: E402
from dpsurv_core.privacy.noise import SimulationNoise  # noqa: E402

EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
HORIZON = 1100.0
BINS = 20
TARGET_EPSILON = 1.0
MAX_RATIO = 0.75
RESULTS = Path(__file__).resolve().parent / "results"


def setting():
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=HORIZON, bins=BINS)
    reference = NonPrivate().compute(cohort, public).curves.survival[0]  # (G, J)
    return cohort, public, reference


def compare(epsilons=EPSILONS, runs: int = 500, seed: int = 2026, keep_curves: bool = False) -> list[dict]:
    """Median RMSE and sup-norm of both mechanisms at each epsilon (independent seeds per mechanism)."""
    cohort, public, reference = setting()
    rows = []
    for i, eps in enumerate(epsilons):
        s_base, s_ours = np.random.SeedSequence([seed, i]).spawn(2)
        base = LaplaceCounts(eps).compute(cohort, public, SimulationNoise(s_base), runs).curves.survival
        ours = AdaptiveKM(eps).compute(cohort, public, SimulationNoise(s_ours), runs).curves.survival
        row = {"epsilon": float(eps),
               "laplace_rmse": float(np.median(rmse(base, reference))),
               "adaptive_rmse": float(np.median(rmse(ours, reference))),
               "laplace_sup": float(np.median(sup_norm(base, reference))),
               "adaptive_sup": float(np.median(sup_norm(ours, reference)))}
        row["ratio"] = row["adaptive_rmse"] / row["laplace_rmse"]
        row["sup_ratio"] = row["adaptive_sup"] / row["laplace_sup"]
        if keep_curves:
            row["curves"] = {"laplace-counts": base[:, 0], "adaptive-km": ours[:, 0]}
        rows.append(row)
    return rows


def table(rows: list[dict], runs: int) -> str:
    head = (f"lung, horizon {HORIZON:g}, {BINS} equal public bins, {runs} runs; median over runs of the error "
            "against the non-private KM at the 20 grid points\n")
    cols = f"{'epsilon':>8} {'laplace RMSE':>13} {'adaptive RMSE':>14} {'ratio':>6} {'laplace sup':>12} {'adaptive sup':>13} {'ratio':>6}"
    lines = [head, cols, "-" * len(cols)]
    for r in rows:
        lines.append(f"{r['epsilon']:>8g} {r['laplace_rmse']:>13.4f} {r['adaptive_rmse']:>14.4f} {r['ratio']:>6.3f} "
                     f"{r['laplace_sup']:>12.4f} {r['adaptive_sup']:>13.4f} {r['sup_ratio']:>6.3f}")
    return "\n".join(lines)


def plot(rows: list[dict], runs: int, path: Path) -> Path:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    _, public, reference = setting()
    eps = [r["epsilon"] for r in rows]
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"Median RMSE over {runs} runs",
                                                        f"Curves at epsilon {TARGET_EPSILON:g}: 10-90% of runs"))
    colours = {"laplace-counts": "#d62728", "adaptive-km": "#1f77b4"}
    for name, key in (("laplace-counts", "laplace_rmse"), ("adaptive-km", "adaptive_rmse")):
        fig.add_trace(go.Scatter(x=eps, y=[r[key] for r in rows], mode="lines+markers", name=name,
                                 line={"color": colours[name]}), row=1, col=1)
    target = next((r for r in rows if r["epsilon"] == TARGET_EPSILON and "curves" in r), None)
    t = public.grid.points
    if target is not None:
        for name, curves in target["curves"].items():
            lo, mid, hi = np.quantile(curves, [0.1, 0.5, 0.9], axis=0)
            fig.add_trace(go.Scatter(x=np.r_[t, t[::-1]], y=np.r_[hi, lo[::-1]], fill="toself", opacity=0.25,
                                     line={"width": 0, "color": colours[name]}, name=f"{name} 10-90%",
                                     showlegend=False), row=1, col=2)
            fig.add_trace(go.Scatter(x=t, y=mid, mode="lines", line={"color": colours[name], "shape": "hv"},
                                     name=f"{name} median", showlegend=False), row=1, col=2)
    fig.add_trace(go.Scatter(x=t, y=reference[0], mode="lines", line={"color": "black", "shape": "hv"},
                             name="non-private KM"), row=1, col=2)
    fig.update_xaxes(type="log", title_text="total epsilon", tickvals=eps, ticktext=[f"{e:g}" for e in eps], row=1, col=1)
    fig.update_yaxes(title_text="median RMSE", row=1, col=1)
    fig.update_xaxes(title_text="days", row=1, col=2)
    fig.update_yaxes(title_text="survival", range=[0, 1.02], row=1, col=2)
    fig.update_layout(title="adaptive-km vs laplace-counts on lung (horizon 1100, 20 public bins)", width=1100, height=480)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.write_html(path, include_plotlyjs=True)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", type=Path, default=RESULTS / "km_lung.html")
    args = ap.parse_args(argv)
    rows = compare(runs=args.runs, seed=args.seed, keep_curves=True)
    print(table(rows, args.runs))
    print(f"plot: {plot(rows, args.runs, args.out)}")
    at_target = next(r for r in rows if r["epsilon"] == TARGET_EPSILON)
    ok = at_target["ratio"] <= MAX_RATIO
    print(f"ratio at epsilon {TARGET_EPSILON:g}: {at_target['ratio']:.3f} "
          f"({'within' if ok else 'ABOVE'} the required {MAX_RATIO})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
