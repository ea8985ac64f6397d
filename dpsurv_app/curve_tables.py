"""Display tables of the survival-curve pages: the number at risk, the exact-versus-private comparison tables
(with their downloads), the pairwise log-rank tests and their flips. No statistics here: every number comes
from ``dpsurv_core`` (curves' summary, logrank).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import logrank_spread, palette
from dpsurv_app.curve_format import NOT_RELEASED, UNKNOWN_AT_RISK, fmt_p, fmt_stat, fmt_time, group_name
from dpsurv_app.curve_mechanisms import in_engine
from dpsurv_app.downloads import table_downloads
from dpsurv_app.exact_curves import counts_of_exact
from dpsurv_core.curves import logrank, logrank_test
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.result import CurveResult, exact_counts, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.release import Released
from dpsurv_core.report.text import markdown_literal_frame


# ----------------------------------------------------------------------------------------- tables
def at_risk_table(times: np.ndarray, exact: np.ndarray, private: np.ndarray | None, groups: Sequence[str],
                  group_column: str | None, unit: str, private_label: str = "private",
                  show_private: bool = True) -> pd.DataFrame:
    """Rows: per group, non-private then private (``not released`` when the mechanism has no counts). The private
    numbers are shown as :func:`dpsurv_core.curves.summary.at_risk_display` makes them (whole, non-negative,
    non-increasing: post-processing of the released counts)."""
    private = None if private is None else cs.at_risk_display(private)
    cols = [fmt_time(t, unit) for t in times]
    rows, index = [], []
    for gi, g in enumerate(groups):
        name = group_name(g, group_column)
        rows.append([UNKNOWN_AT_RISK if np.isnan(v) else f"{v:,.0f}" for v in exact[gi]])
        index.append(f"{name}, non-private")
        if show_private:
            rows.append([NOT_RELEASED] * len(times) if private is None
                        else [UNKNOWN_AT_RISK if np.isnan(v) else f"{v:,.0f}" for v in private[gi]])
            index.append(f"{name}, {private_label}")
    return pd.DataFrame(rows, index=index, columns=cols)


def exact_at_risk(cohort: Cohort, counts: Any, times: np.ndarray) -> np.ndarray:
    """The non-private number at risk (G, T) at ``times`` for the groups of ``counts``: R's n.risk (time >= t) read
    from the rows (:func:`dpsurv_core.curves.summary.at_risk_exact`), as ``km`` prints it; for a table kept in an
    engine, whose rows are not read, from its exact counts on the public grid."""
    if in_engine(cohort):
        return cs.at_risk_at(counts, times)[0]
    return cs.at_risk_exact(cohort, tuple(counts.groups), times)


def show_table(df: pd.DataFrame, name: str, key: str, styled: Any = None, index: bool = False,
               publishable: pd.DataFrame | None = None, confidential: bool = False) -> None:
    """A table drawn whole (``st.table``: nothing truncated, text wraps) with its CSV download underneath; ``styled``
    is a Styler of ``df`` to draw instead (the CSV is always the plain table). ``confidential``: ``df`` holds
    non-private numbers; ``publishable``: after a release, its released part, which "Table as CSV" then saves (the
    whole table is a separate, marked file: :func:`dpsurv_app.downloads.table_downloads`). ``st.table`` reads cells as
    Markdown, so every text cell, header and index is drawn escaped (an uploaded label shows as typed, never as a
    link or image); the CSV holds the text itself, formula-safe."""
    st.table(literal_table(df, styled), hide_index=not index, width="stretch")
    table_downloads(df, name, f"{key}-csv", publishable, confidential, index)


def literal_table(df: pd.DataFrame, styled: Any = None) -> Any:
    """``df`` (or its Styler ``styled``, whose styles are kept) with its text as ``st.table`` shows it literally."""
    shown = markdown_literal_frame(df)
    if styled is None:
        return shown
    restyled = shown.style
    restyled.use(styled.export())
    return restyled


def comparison_table(df: pd.DataFrame, name: str, key: str, released: Released | None, styled: Any = None,
                     index: bool = False, drop: Sequence[str] = ()) -> None:
    """A table of non-private numbers beside private ones (:func:`show_table`, marked confidential): after a
    release, "Table as CSV" saves its released part only (:func:`released_part`, less the ``drop`` columns, which
    compare the two), and the whole table is a separate, marked file."""
    publishable = None if released is None else released_part(df.drop(columns=list(drop)))
    show_table(df, name, key, styled, index, publishable=publishable, confidential=True)


NON_PRIVATE = "non-private"


def released_part(df: pd.DataFrame, keep: Sequence[str] = ("Group", "Test", "Time")) -> pd.DataFrame:
    """The columns and rows of a page's table that hold released numbers only: the ``keep`` columns (what a row is
    about) and every column and row not named non-private (the exact numbers, and the differences from them, are for
    the data holder's eyes only)."""
    columns = [c for c in df.columns if c in keep or NON_PRIVATE not in str(c).lower()]
    rows = [i for i in df.index if NON_PRIVATE not in str(i).lower()]
    return df.loc[rows, columns]


def named_groups(counts: Any, tests: Sequence[Any], group_column: str | None) -> tuple[Any, list[Any]]:
    """Copies of released counts and their tests whose groups carry the readers' names (:func:`group_name`), for the
    sentences the core writes about them (``logrank_test.warnings_for``); the numbers are unchanged."""
    names = {g: group_name(g, group_column) for g in counts.groups}

    def rename(t: Any) -> Any:
        if t.group_b is None:
            return replace(t, group_a=", ".join(names.get(g, g) for g in str(t.group_a).split(", ")))
        return replace(t, group_a=names.get(t.group_a, t.group_a), group_b=names.get(t.group_b, t.group_b))

    return replace(counts, groups=tuple(names[g] for g in counts.groups)), [rename(t) for t in tests]


def style_flips(df: pd.DataFrame, flip_column: str = "Flip?") -> Any:
    """Highlight rows whose significance at 0.05 differs between private and non-private; None when no row does (the
    table is then drawn as it is: pandas' Styler, whose first use imports matplotlib, would paint nothing)."""
    if flip_column not in df.columns or not df[flip_column].astype(str).str.startswith("FLIP").any():
        return None

    def paint(row: pd.Series) -> list[str]:
        bad = str(row.get(flip_column, "")).startswith("FLIP")
        return [f"background-color: {palette.rgba(palette.VERMILLION, 0.15)}; font-weight: 600" if bad else ""] * len(row)
    return df.style.apply(paint, axis=1)


def test_label(r: cs.TestComparison, group_column: str | None) -> str:
    if r.group_b is None:
        return f"overall ({len(r.group_a.split(', '))} groups)"
    return f"{group_name(r.group_a, group_column)} vs {group_name(r.group_b, group_column)}"


@dataclass(frozen=True)
class GroupTests:
    """The Group comparison page's log-rank tests: non-private on every event time (``exact``, ``exact_overall``)
    and on the public grid (``on_grid``: pairs, then overall), and per private reading (the release; rrr's de-biased
    counts too) label -> (pairwise, overall, noise law), with the sentences the core writes about them."""

    exact: list[Any]
    exact_overall: Any
    on_grid: list[Any]
    private: dict[str, tuple[list[Any], Any, Any]]
    warnings: list[str]


def group_tests(cohort: Any, public: PublicParameters, fine: CurveResult, result: CurveResult, mechanism: Any,
                group_column: str | None, private_label: str) -> GroupTests:
    """The calibrated private tests of ``result`` (as many null draws as its ledger record keeps, so the same
    p-values) beside the non-private ones (``fine``: the exact counts on every event time)."""
    grid_counts = tile_trials(exact_counts(cohort, public.grid, public), 1)  # like with like: the same public grid
    on_grid = [*logrank.pairwise(grid_counts), logrank.overall(grid_counts)]
    private: dict[str, tuple[list[Any], Any, Any]] = {}
    warnings: list[str] = []
    if result.counts is not None:
        readings = {private_label: (result.counts, False)}
        if "debiased_counts" in result.extra:
            readings[f"{private_label}, de-biased"] = (result.extra["debiased_counts"], True)
        for label, (counts, debiased) in readings.items():
            calibrated, law = logrank_spread.calibrated(counts, mechanism, result.extra, debiased)
            private[label] = (calibrated[:-1], calibrated[-1], law)
            named_counts, named_tests = named_groups(counts, calibrated, group_column)  # sentences name the groups
            warnings += [w for w in logrank_test.warnings_for(named_counts, law, named_tests, result.cost.epsilon,
                                                              mechanism, general=not debiased)
                         if w not in warnings]
    return GroupTests(logrank.pairwise(counts_of_exact(fine)), logrank.overall(counts_of_exact(fine)), on_grid, private,
                      warnings)


def logrank_table(rows: list[cs.TestComparison], private_label: str = "private",
                  group_column: str | None = None) -> pd.DataFrame:
    """Statistic, p-value and significance at 0.05, non-private next to private; flips spelled out."""
    out = []
    for r in rows:
        sig = lambda s: "significant" if s else "not significant"  # noqa: E731
        flip = ("no private test possible" if not r.defined else
                f"FLIPPED: {sig(r.significant_exact)} → {sig(r.significant_private)}" if r.flipped else "same conclusion")
        out.append({"Test": test_label(r, group_column), "Chi² non-private": fmt_stat(r.statistic_exact), "p non-private": fmt_p(r.p_exact),
                    f"Chi² {private_label}": fmt_stat(r.statistic_private), f"p {private_label}": fmt_p(r.p_private),
                    "At 0.05 non-private": sig(r.significant_exact),
                    f"At 0.05 {private_label}": sig(r.significant_private) if r.defined else "no test",
                    "Flip?": flip})
    return pd.DataFrame(out)
