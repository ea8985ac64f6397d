"""A review's non-private comparisons of a stored release (confidential): its released curve beside the exact curve
of the data as mapped now, its released log-rank tests beside the exact tests on the same public grid, a Weibull
release's parameters beside the non-private fit.

Each takes a report item (:class:`~dpsurv_core.report.html.ReleaseItem`: ``outputs`` as the record keeps them and its
ledger ``entry``) and the cohort; a comparison that cannot be made is a sentence or None, never an error.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpsurv_core.report.figures import PALETTE, step_xy
from dpsurv_core.report.text import plain_label


def curve_outputs(outputs: Any) -> bool:
    """Whether a record's outputs are curves (``groups``, ``time``, ``survival``)."""
    return isinstance(outputs, dict) and all(k in outputs for k in ("groups", "time", "survival"))


def curve_comparison(item: Any, cohort: Any) -> tuple[go.Figure, pd.DataFrame] | str | None:
    """For a curve release: its released survival next to the exact curve of ``cohort`` at the same public time
    points (for a confidential review), as a figure and an error table; a sentence when they cannot be compared;
    None for a release that is not a curve."""
    from dataclasses import replace

    from dpsurv_core.curves.result import NonPrivate, rmse, sup_norm
    from dpsurv_core.data.public import PublicParameters, TimeGrid

    out = item.outputs
    if not curve_outputs(out) or cohort is None:
        return None
    groups = [str(g) for g in out["groups"]]
    names = dict(zip(groups, [str(x) for x in out.get("group_labels") or groups]))
    time = np.asarray(out["time"], dtype=float)
    # rrr: the de-biased curves, which the release's figure and warnings read (the reported-label ones mix the groups)
    private = np.asarray(out.get("debiased_survival") or out["survival"], dtype=float)
    if time.size == 0 or private.shape != (len(groups), time.size):
        return "The record's survival numbers do not have one value per group and time point."
    engine = hasattr(cohort, "exact_release")  # a server table kept in an engine: its exact curves are counted there
    has_group = cohort.has_group if engine else cohort.group is not None
    if groups == ["all"]:
        if engine and has_group:
            return ("No comparison: the release pooled the groups, and the server table is mapped with a group column "
                    "now: map no group column on the Data page to compare.")
        if not engine:
            cohort = replace(cohort, group=None)  # the release pooled the groups: compare with the pooled curve
    elif not has_group or sorted(groups) != sorted(str(g) for g in cohort.groups):
        return (f"The release's groups ({', '.join(groups)}) are not the groups of the data as mapped now "
                f"({', '.join(map(str, cohort.groups)) or 'no group column'}): map the same group column on the Data "
                "page to compare.")
    edges = out.get("edges")
    if not edges:
        edges = [min(0.0, float(time[0]) - 1.0), *time.tolist()]
    try:
        grid = TimeGrid(np.asarray(edges, dtype=float), "custom")
        public = PublicParameters(float(grid.edges[-1]), grid,
                                  group_categories=() if groups == ["all"] else tuple(groups))
        exact = cohort.exact_release(public) if engine else NonPrivate().compute(cohort, public)
    except Exception as exc:  # noqa: BLE001 - a comparison that cannot be made is said, not raised
        return f"No comparison: {exc}"
    order = [list(map(str, exact.curves.groups)).index(g) if g != "all" else 0 for g in groups]
    truth = exact.curves.survival[0][order]
    fig = go.Figure()

    for gi, g in enumerate(groups):
        colour = PALETTE[gi % len(PALETTE)]
        for label, values, dash in (("private", private[gi], "solid"), ("non-private", truth[gi], "dash")):
            x, y = step_xy(time, values * 100, 100.0)
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=plain_label(f"{label}: {names[g]}"),
                                     line=dict(color=colour, dash=dash)))
    unit = getattr(cohort, "time_unit", "")
    fig.update_layout(xaxis_title=f"Time ({unit})" if unit else "Time", yaxis_title="Survival (%)",
                      template="plotly_white", legend=dict(orientation="h", y=-0.2), margin=dict(l=60, r=20, t=20, b=40))
    table = pd.DataFrame({"group": [names[g] for g in groups], "RMSE": rmse(private, truth),
                          "sup-norm": sup_norm(private, truth)})
    return fig, table


def test_comparison(item: Any, cohort: Any, alpha: float = 0.05) -> pd.DataFrame | None:
    """For a release with log-rank tests: each released test (rrr: on the de-biased counts, as the page reads them)
    beside the exact test on the same public grid (R's survdiff on the binned counts), and whether the conclusion at
    ``alpha`` flips (confidential review); None without tests or groups that match."""
    from dpsurv_core.curves import logrank
    from dpsurv_core.curves.result import NonPrivate
    from dpsurv_core.data.public import PublicParameters, TimeGrid

    out = item.outputs
    if not isinstance(out, dict) or cohort is None or hasattr(cohort, "exact_release") or cohort.group is None:
        return None
    prefix = "debiased_" if isinstance(out.get("debiased_tests"), list) else ""
    tests, edges = out.get(prefix + "tests"), out.get("edges")
    groups = [str(g) for g in out.get("groups") or []]
    if not isinstance(tests, list) or not tests or not edges or sorted(groups) != sorted(map(str, cohort.groups)):
        return None
    try:  # a comparison that cannot be made is left out, not raised (as curve_comparison)
        grid = TimeGrid(np.asarray(edges, dtype=float), "custom")
        counts = NonPrivate().compute(cohort, PublicParameters(float(grid.edges[-1]), grid,
                                                               group_categories=tuple(groups))).counts
    except Exception:  # noqa: BLE001
        return None
    assert counts is not None  # the non-private mechanism releases its counts
    exact: dict[tuple[str | None, str | None], Any] = {(r.group_a, r.group_b): r for r in logrank.pairwise(counts)}
    exact[("overall", None)] = logrank.overall(counts)
    rows = []
    for t in [*tests, {"group_a": "overall", "group_b": None, **(out.get(prefix + "overall") or {})}]:
        key = (str(t.get("group_a")), None if t.get("group_b") is None else str(t.get("group_b")))
        r = exact.get(key) or exact.get((key[1], key[0]))
        if r is None:
            continue
        p_private, p_exact = t.get("p_value"), float(r.p_value[0])
        flip = (None if p_private is None or not np.isfinite(p_exact)
                else ("yes" if (p_private < alpha) != (p_exact < alpha) else "no"))
        pair = ("all groups" if key[0] == "overall" else
                f"{t.get('group_a_label', key[0])} vs {t.get('group_b_label', key[1])}")
        rows.append({"test": pair, "private chi-square": t.get("statistic"), "private p (calibrated)": p_private,
                     "non-private chi-square (same grid)": float(r.statistic[0]), "non-private p": p_exact,
                     f"conclusion at {alpha:g} flipped": flip or "no test"})
    return pd.DataFrame(rows) if rows else None


def parameter_comparison(item: Any, cohort: Any) -> pd.DataFrame | str | None:
    """For a Weibull release: the released shape and scale next to the non-private clipped MLE, the estimator the
    private mechanisms estimate (confidential review); for a regression release a sentence (its record keeps the
    coefficients, not the person-period settings)."""
    out = item.outputs
    if cohort is None or out is None or curve_outputs(out):
        return None
    # a Weibull record: its per-trial estimates (a list of them in records written before the intervals were kept)
    rows = out if isinstance(out, list) else out.get("estimates", [out]) if isinstance(out, dict) else [out]
    if rows and all(isinstance(r, dict) and "shape" in r and "scale" in r for r in rows):
        from dpsurv_core.weibull.mechanisms import ClippedMLE

        params = item.entry.parameters
        horizon = params.get("horizon")
        if not horizon:
            return "No comparison: the record does not name the public horizon the release used."
        options = {"omega": params["omega"]} if params.get("omega") else {}
        try:
            mle = ClippedMLE(float(horizon), rows_per_subject=cohort.rows_per_subject, **options)
            fit = mle.compute_many(mle.prepare(cohort), None, 1)
        except Exception as exc:  # noqa: BLE001
            return f"No comparison: {exc}"
        return pd.DataFrame({"parameter": ["shape", "scale"], "private": [float(rows[0]["shape"]), float(rows[0]["scale"])],
                             "non-private (clipped MLE)": [float(fit.shape[0]), float(fit.scale[0])]})
    if isinstance(out, dict) and "coefficients" in out:
        return ("The regression record keeps the released coefficients, not the person-period settings and covariate "
                "ranges of the fit: compare with the non-private fit on the Regression page.")
    return None
