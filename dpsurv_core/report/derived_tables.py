"""Display tables read off a stored release: the ledger records, the medians, landmarks and restricted mean
survival times of a curve release's derived part, its log-rank tests, and the sentence on what its bands
cover. Nothing is re-read from the data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core.report.comparisons import curve_comparison, parameter_comparison, test_comparison  # noqa: F401 (re-exported: the review's comparisons were defined here)


def records_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Released numbers as a wide table: one row per (group, time), one column per quantity."""
    if not records:
        return pd.DataFrame()
    frame = pd.DataFrame(records)
    idx = [c for c in ("trial", "group", "time")
           if c in frame and frame[c].notna().any() and (c != "trial" or frame[c].nunique() > 1)]
    if not idx:
        return frame[["quantity", "value"]]
    frame[idx] = frame[idx].astype(object).where(frame[idx].notna(), "—")
    wide = frame.pivot_table(index=idx, columns="quantity", values="value", aggfunc="first", sort=False).reset_index()
    wide.columns.name = None
    return wide


def median_table(entries: list[dict[str, Any]], names: dict[str, str], unit: str = "") -> pd.DataFrame:
    """Median and quartiles (first trial) with the limits ``km`` prints (the band's crossings; on a public grid read
    linearly between grid points); "not reached" where R gives NA."""
    fmt = lambda v: "not reached" if v is None or not np.isfinite(v) else f"{v:.4g}"  # noqa: E731
    unit = f" ({unit})" if unit else ""
    rows = []
    for e in entries:
        if e.get("trial", 0) != 0:
            continue
        q = {round(float(x["probability"]), 2): x for x in e.get("quantiles") or []}
        row = {"group": names.get(str(e["group"]), str(e["group"])), f"median{unit}": fmt(e["median"]),
               "95% CI lower": fmt(e["median_lower"]), "95% CI upper": fmt(e["median_upper"])}
        for p, name in ((0.25, "first quartile"), (0.75, "third quartile")):
            if p in q:  # one column whether or not a group's limits exist ("no interval" where R gives NA)
                limits = (f" ({fmt(q[p].get('lower'))} to {fmt(q[p].get('upper'))})"
                          if q[p].get("lower") is not None or q[p].get("upper") is not None else " (no interval)")
                row[f"{name}{unit} (95% CI)"] = fmt(q[p].get("time")) + limits
        rows.append(row)
    return pd.DataFrame(rows)


def landmark_table(entries: list[dict[str, Any]], names: dict[str, str]) -> pd.DataFrame:
    """Landmark survival (first trial) as ``km --landmarks`` gives it: the time asked, the time used, the 95% limits
    (NaN where R gives NA)."""
    return pd.DataFrame([{"group": names.get(str(e["group"]), str(e["group"])), "time asked": e["time_requested"],
                          "time used": e["time_used"], "survival": e["survival"], "95% CI lower": _nan(e["lower"]),
                          "95% CI upper": _nan(e["upper"])} for e in entries if e.get("trial", 0) == 0])


def rmst_table(entries: list[dict[str, Any]], names: dict[str, str], unit: str = "") -> pd.DataFrame:
    """Restricted mean survival time (first trial) as ``km --rmst`` gives it, with its 95% limits."""
    up_to = f"up to ({unit})" if unit else "up to"
    return pd.DataFrame([{"group": names.get(str(e["group"]), str(e["group"])), up_to: e["time_used"],
                          "RMST": e["rmst"], "95% CI lower": _nan(e["lower"]), "95% CI upper": _nan(e["upper"])}
                         for e in entries if e.get("trial", 0) == 0])


def _nan(v: float | None) -> float:
    return math.nan if v is None else v


def _curve_summary_tables(out: dict[str, Any], time_unit: str = "") -> list[tuple[pd.DataFrame, str]]:
    """A curve record's medians and quartiles, landmark survival and RMST with their intervals (first trial), groups
    by their labels, as ``km`` printed them."""
    labels = dict(zip(map(str, out.get("groups") or []), out.get("group_labels") or out.get("groups") or []))
    first = lambda key: [e for e in out.get(key) or [] if isinstance(e, dict) and e.get("trial", 0) == 0]  # noqa: E731
    which = "de-biased curves, " if "debiased_survival" in out else ""
    noise = "carrying the noise" if out.get("interval_includes_noise") else "sampling error only"
    tables: list[tuple[pd.DataFrame, str]] = []
    free = out.get("event_free")  # competing events: time to the first event of any type
    survival = "event-free survival (time to the first event of any type)" if free else "survival"
    if medians := first("medians"):
        tables.append((median_table(medians, labels, time_unit), f"Median {survival} and quartiles ({which}95% intervals "
                                                      f"{noise})"))
    if landmarks := first("landmarks"):
        tables.append((landmark_table(landmarks, labels), f"{survival[0].upper() + survival[1:]} at the landmark "
                                                          f"times ({which}95% intervals {noise})"))
    if rmst := first("rmst"):
        tables.append((rmst_table(rmst, labels, time_unit), f"Restricted mean {'event-free ' if free else ''}survival time (95% "
                                                 f"intervals {noise})"))
    return tables


def _logrank_tests_table(tests: list[dict[str, Any]], overall: dict[str, Any] | None, method: str) -> pd.DataFrame:
    """Pairwise tests and (with more than two groups) the overall test as ``logrank`` gives them: the statistic, the
    value it must exceed at 5% and the p-value. The chi-square tail of a noisy statistic is no p-value and is left out;
    a noise-adjusted statistic is named so, as it has a scale of its own."""
    chi = "chi-square (noise-adjusted)" if "noise-adjusted" in method else "chi-square"
    p = "p (calibrated)" if "Monte Carlo" in method else "p"
    row = lambda what, t: {"comparison": what, chi: t.get("statistic"),  # noqa: E731
                           "needed at 5%": t.get("critical_value_95"), "df": t.get("dof"), p: t.get("p_value")}
    label = lambda t, side: t.get(f"group_{side}_label") or t.get(f"group_{side}")  # noqa: E731
    rows = [row(f"{label(t, 'a')} vs {label(t, 'b')}", t) for t in tests]
    if overall and len(tests) > 1:
        rows.append(row("all groups", overall))
    return pd.DataFrame(rows)


def logrank_tables(out: dict[str, Any]) -> list[tuple[pd.DataFrame, str]]:
    """The log-rank tables of a record's outputs (``logrank``'s fields: ``tests``, ``overall``, ``test_method``, and
    rrr's ``debiased_`` ones), each captioned with its method."""
    tables: list[tuple[pd.DataFrame, str]] = []
    for prefix, what in (("", "Log-rank tests"), ("debiased_", "Log-rank tests on the de-biased counts")):
        tests = out.get(prefix + "tests")
        if not (out.get(prefix + "test_method") and tests):
            continue
        method = str(out[prefix + "test_method"])
        tables.append((_logrank_tests_table(tests, out.get(prefix + "overall"), method), f"{what} ({method})"))
    return tables


def derived_tables(outputs: Any, time_unit: str = "") -> list[tuple[pd.DataFrame, str]]:
    """The tables a record keeps beside its released numbers, computed from them when it was released: the log-rank
    tests calibrated for the noise, a Weibull release's noise-aware intervals, a regression release's coefficients
    with their ratios, intervals and calibrated p-values."""
    out = outputs if isinstance(outputs, dict) else {}
    tables = logrank_tables(out)
    tables += _curve_summary_tables(out, time_unit)
    intervals = out.get("intervals")
    if isinstance(intervals, list) and intervals and isinstance(intervals[0], dict):
        first = intervals[0]
        if "shape" in first and isinstance(first["shape"], dict):  # Weibull
            rows = [{"parameter": f"scale ({time_unit})" if k == "scale" and time_unit else k,
                     "released": first[k]["estimate"], "95% lower": first[k]["lower"], "95% upper": first[k]["upper"]}
                    for k in ("shape", "scale")]
            tables.append((pd.DataFrame(rows), "Weibull parameters with 95% intervals that carry the noise"))
        elif "covariate" in first:  # regression, one row per covariate, in the Regression page's words and numbers
            from dpsurv_core.regression.inference import report_table

            tables.append((report_table(out), "Coefficients with 95% intervals that carry the noise"))
    return tables


def band_sentence(conf_type: str, includes_noise: bool, method: str) -> str:
    """What the bands drawn beside a curve are: R's type and whether they carry the noise, and how they were made."""
    if method.startswith("no interval"):
        return f"No band: {method.removeprefix('no interval: ')}."
    if "does not apply" in method:  # time-indexed: inverted from its noise law, no variance, no conf.type
        return f"95% bands {method.removeprefix('pointwise 95% band ')}."
    noise = ", including the privacy noise" if includes_noise else ", not including any noise"
    return f"95% bands: R's {conf_type} type{noise}. Method: {method}."
