"""How much the noise alone moves a Group comparison preview: the private log-rank p-values and hazard ratios of the
first PREVIEW_SPREAD_DRAWS preview draws of the plan (the draws "Another draw" walks through), each computed as the
page computes its one preview, shown on request (free, recorded nowhere, never exported; the person at the keyboard
may see the data anyway).

A calibrated p-value needs its own null simulation for each draw, so the draws are computed one by one under a
progress bar and kept for this session per plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import release_panel
from dpsurv_core.curves import logrank_test
from dpsurv_core.curves.hazard_ratio import hazard_ratios
from dpsurv_core.privacy.release import PREVIEW_SPREAD_DRAWS, Plan, preview_spread
from dpsurv_core.report.text import format_ratio, markdown_literal_frame, p_value

ALPHA = 0.05
CACHE = "logrank_spread_cache"  # per plan: the draws' numbers (a few floats each), for this session only
SHOWN = "logrank_spread_shown"  # the plans whose spread was asked for (it stays shown while the plan is unchanged)


def calibrated(counts: Any, mechanism: Any, extra: dict[str, Any], debiased: bool = False
               ) -> tuple[list[Any], Any]:
    """The calibrated log-rank tests of released (or previewed) ``counts`` (every pair, then the overall test) and
    their noise law: the reading the page shows, with as many null draws as one release's record keeps."""
    law = logrank_test.noise_law(mechanism, extra, debiased)
    draws = logrank_test.default_draws(1, len(counts.groups), counts.grid.bins)
    return logrank_test.calibrated_tests(counts, law, draws=draws), law


@dataclass(frozen=True)
class DrawNumbers:
    """One preview draw's private numbers: the calibrated p of each test (pairs, then overall; NaN where the counts
    allow no test) and the hazard ratio of each pair's second group against the first group (NaN where none)."""

    p: tuple[float, ...]
    hazard_ratio: tuple[float, ...]


def draw_numbers(result: Any, mechanism: Any) -> DrawNumbers:
    """The numbers of one preview ``result`` (a one-trial curve result with counts) as the page reads them."""
    tests, _ = calibrated(result.counts, mechanism, result.extra)
    if len(result.counts.groups) == 2:  # two groups: the overall test is the pair's test
        tests = tests[:1]
    ratios = {hr.group: hr.estimate for hr in hazard_ratios(result, mechanism)[0]}
    first = result.counts.groups[0]
    return DrawNumbers(tuple(float(t.p_value[0]) for t in tests),
                       tuple(float(ratios.get(t.group_b, math.nan)) if t.group_a == first and t.group_b is not None
                             else math.nan for t in tests))


def test_labels(groups: Sequence[str], name: Callable[[str], str]) -> list[str]:
    """The tests' labels in the order :func:`calibrated` returns them: every pair, then the overall test (none of its
    own for two groups, whose overall test is the pair's)."""
    pairs = [f"{name(a)} vs {name(b)}" for i, a in enumerate(groups) for b in groups[i + 1:]]
    return pairs + ([f"overall ({len(groups)} groups)"] if len(groups) > 2 else [])


def spread_draws(plan: Plan, key: str) -> list[DrawNumbers] | None:
    """The numbers of the plan's first PREVIEW_SPREAD_DRAWS preview draws, computed one by one under a progress bar
    and kept for this session per plan; None when a draw releases no counts (no test to read)."""
    cache: dict[Any, list[DrawNumbers] | None] = st.session_state.setdefault(CACHE, {})
    pk = (release_panel.plan_key(plan, key), release_panel.preview_seed(plan, 0))
    if pk in cache:
        return cache[pk]
    bar = st.progress(0.0, text=f"Drawing {PREVIEW_SPREAD_DRAWS} previews and calibrating their tests ...")
    out: list[DrawNumbers] | None = []
    for draw in range(PREVIEW_SPREAD_DRAWS):
        result = release_panel.preview(plan, draw=draw)
        if result.counts is None or out is None:
            out = None
            break
        out.append(draw_numbers(result, plan.mechanism))
        bar.progress((draw + 1) / PREVIEW_SPREAD_DRAWS,
                     text=f"Preview draw {draw + 1} of {PREVIEW_SPREAD_DRAWS}: tests calibrated")
    bar.empty()
    if len(cache) > 24:
        cache.clear()
    cache[pk] = out
    return out


def _fmt_ratio(v: float) -> str:
    return "–" if not math.isfinite(v) else format_ratio(v)


def _fmt_p(v: float) -> str:
    return "not defined" if not math.isfinite(v) else p_value(min(max(v, 0.0), 1.0))


def spread_table(draws: Sequence[DrawNumbers], labels: Sequence[str]) -> pd.DataFrame:
    """Per test: the 10th and 90th percentiles and the median of its private p and hazard ratio over the draws, and
    in how many draws it is significant at 5%."""
    rows = []
    for i, label in enumerate(labels):
        p = np.array([d.p[i] for d in draws], float)
        hr = np.array([d.hazard_ratio[i] for d in draws], float)
        p10, p50, p90 = preview_spread(p)
        row = {"Test": label, "p (10th to 90th percentile)": f"{_fmt_p(p10)} to {_fmt_p(p90)}",
               "p median": _fmt_p(p50),
               "Significant at 0.05": f"{int(np.sum(p < ALPHA))} of {len(draws)} draws"
                                      + (f" ({int(np.sum(~np.isfinite(p)))} without a test)"
                                         if not np.all(np.isfinite(p)) else "")}
        if np.any(np.isfinite(hr)):
            h10, h50, h90 = preview_spread(hr)
            row["HR (10th to 90th percentile, median)"] = (f"{_fmt_ratio(h10)} to {_fmt_ratio(h90)} "
                                                           f"(median {_fmt_ratio(h50)})")
        rows.append(row)
    return pd.DataFrame(rows)


def each_draw_table(draws: Sequence[DrawNumbers], labels: Sequence[str]) -> pd.DataFrame:
    """Every draw's private p (and hazard ratio, where the test has one), draw 1 being the page's first preview."""
    rows = []
    for k, d in enumerate(draws):
        row: dict[str, Any] = {"Draw": k + 1}
        for i, label in enumerate(labels):
            row[f"p {label}"] = _fmt_p(d.p[i])
            if any(math.isfinite(x.hazard_ratio[i]) for x in draws):
                row[f"HR {label}"] = _fmt_ratio(d.hazard_ratio[i])
        rows.append(row)
    return pd.DataFrame(rows)


def logrank_spread_panel(plan: Plan, key: str, groups: Sequence[str], name: Callable[[str], str]) -> None:
    """A button that draws the plan's first PREVIEW_SPREAD_DRAWS previews (the page's own, then those "Another draw"
    shows), calibrates each one's log-rank tests and reads its hazard ratios as the page does, then shows how much the
    private p and hazard ratio move over those draws: the noise's part of the uncertainty, next to the one preview
    on the page. Shown without download buttons: previews are never exported."""
    if not plan.private or plan.cost.epsilon is None or getattr(plan.mechanism, "deterministic", False):
        return
    shown = st.session_state.setdefault(SHOWN, set())
    pk = release_panel.plan_key(plan, key)
    if pk not in shown:
        if not st.button(f"Spread over {PREVIEW_SPREAD_DRAWS} preview draws", key=f"spread-{key}",
                         icon=":material/stacked_line_chart:",
                         help=f"Draws this preview {PREVIEW_SPREAD_DRAWS} times with simulation noise (the draws "
                              "'Another draw' shows), calibrates each draw's log-rank test and shows how much the "
                              "private p-value and hazard ratio move: the noise's part of the uncertainty. Free, "
                              "never exported; a calibrated test simulates its own null, so this takes a few "
                              "seconds."):
            return
        shown.add(pk)
    draws = spread_draws(plan, key)
    if draws is None:
        st.caption(f"This mechanism's previews hold no counts: no log-rank test to read over {PREVIEW_SPREAD_DRAWS} "
                   "draws.")
        return
    labels = test_labels(groups, name)
    if draws and len(draws[0].p) != len(labels):  # the page's groups are the preview's groups
        raise ValueError(f"{len(draws[0].p)} tests drawn for the {len(labels)} the page names.")
    st.markdown(f"**Private tests across {PREVIEW_SPREAD_DRAWS} preview draws** (simulation noise, free, never "
                "exported)")
    st.table(markdown_literal_frame(spread_table(draws, labels)), hide_index=True, width="stretch")
    with st.expander(f"Each of the {PREVIEW_SPREAD_DRAWS} draws (draw 1 is the page's first preview, draw 2 the one "
                     "'Another draw' shows next, and so on)"):
        st.table(markdown_literal_frame(each_draw_table(draws, labels)), hide_index=True, width="stretch")
    st.caption("Each draw is a preview of this plan with its own simulation noise, read as the page reads its "
               "preview: the private p-value calibrated against its own simulated null, the hazard ratio of each "
               "group against the first from the same counts. The spread is the noise's part of the uncertainty; a "
               "release makes one fresh draw of its own.")

