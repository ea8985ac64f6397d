"""How much the noise alone moves a preview: the same plan drawn PREVIEW_SPREAD_DRAWS times with simulation noise,
shown on request (free, recorded nowhere, never exported; the person at the keyboard may see the data anyway)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st

from dpsurv_app import curves_view as cv
from dpsurv_app import release_panel
from dpsurv_core.curves.readings import band_curves, includes_noise, quantile_entries
from dpsurv_core.curves.result import CurveResult
from dpsurv_core.privacy.release import PREVIEW_SPREAD_DRAWS, Plan, preview_spread


def median_spread(result: CurveResult, coarse: bool) -> dict[str, tuple[float, float, float, float]]:
    """Per group of a several-draw preview: (10th percentile, median, 90th percentile of the median survival time over
    the draws where it is reached, the share of draws where it is not reached)."""
    main = band_curves(result)
    entries = quantile_entries(main, "log", includes_noise(result), coarse)
    out = {}
    for g in main.groups:
        med = np.array([e["median"] for e in entries if e["group"] == g], float)
        reached = med[np.isfinite(med)]
        out[str(g)] = (*preview_spread(reached), float(1 - reached.size / max(med.size, 1)))
    return out


def curve_spread_panel(plan: Plan, key: str, unit: str, coarse: bool, name: Callable[[str], str]) -> None:
    """A button that draws the plan PREVIEW_SPREAD_DRAWS times and then, for each group, the spread of its private
    median over those draws: the noise's part of the uncertainty, next to the one preview on the page."""
    if not plan.private or plan.cost.epsilon is None or getattr(plan.mechanism, "deterministic", False):
        return
    shown = st.session_state.setdefault("spread_shown", set())
    pk = release_panel.plan_key(plan, key)
    if pk not in shown:
        if not st.button(f"Spread over {PREVIEW_SPREAD_DRAWS} preview draws", key=f"spread-{key}",
                         icon=":material/stacked_line_chart:",
                         help=f"Draws this preview {PREVIEW_SPREAD_DRAWS} times with simulation noise and shows how "
                              "much the median moves: the noise's part of the uncertainty. Free, never exported."):
            return
        shown.add(pk)
    with st.spinner(f"Drawing {PREVIEW_SPREAD_DRAWS} previews..."):
        result = cv.preview_spread_of(plan, key)
    if result is None:
        st.caption(f"This mechanism cannot draw {PREVIEW_SPREAD_DRAWS} previews at once here.")
        return
    parts = []
    for g, (p10, p50, p90, missing) in median_spread(result, coarse).items():
        if not np.isfinite(p50):
            parts.append(f"{name(g)}: not reached in any draw")
            continue
        part = (f"{name(g)}: {cv.fmt_time(p10, unit)} to {cv.fmt_time(p90, unit)} {unit} (median "
                f"{cv.fmt_time(p50, unit)})")
        parts.append(part + (f", not reached in {missing:.0%} of draws" if missing > 0 else ""))
    st.caption(f"Private median across {PREVIEW_SPREAD_DRAWS} preview draws (simulation noise, free, never exported; "
               "10th to 90th percentile): " + "; ".join(parts) + ".")
