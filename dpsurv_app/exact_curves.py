"""The exact (non-private) curves of the analysed data, computed by ``dpsurv_core`` and kept in Streamlit's cache
by the data's identity, and the warning for groups left empty on the public grid.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import streamlit as st

from dpsurv_app import session
from dpsurv_app.curve_format import group_name
from dpsurv_app.curve_mechanisms import in_engine
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.result import CurveResult
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy import catalogue
from dpsurv_core.report.text import markdown_literal


def data_key(cohort: Cohort, public: PublicParameters) -> str:
    """Identity of the analysed data and its public grid, for caches (a cohort kept in an engine: its source and
    column map)."""
    grid = ",".join(f"{e:.6g}" for e in public.grid.edges)
    ident = (f"{cohort.engine.source}|{cohort.mapping}|{cohort.time_unit}" if in_engine(cohort)
             else cs.fingerprint(cohort))
    return f"{cohort.name}|{ident}|{grid}|{public.group_categories}"


def _exact_pair(cohort: Cohort, public: PublicParameters, competing: bool) -> tuple[CurveResult, CurveResult]:
    if in_engine(cohort) and not competing:  # from the engine's counts: the same exact KM, no row read
        on_grid = cohort.exact_release(public)
        if on_grid.notes:  # more distinct event times than the engine counts on a grid: the exact curve on this grid
            return on_grid, on_grid
        return cohort.exact_release(replace(public, grid=cohort.event_time_grid())), on_grid
    fine = PublicParameters.derive(cohort, horizon=public.horizon, grid=TimeGrid.event_times(cohort),
                                   group_categories=public.group_categories or None)
    exact: Any = catalogue.entries(catalogue.CURVES, "km", private=False)[0].build()  # a curve mechanism (compute)
    return exact.compute(cohort, fine, competing=competing), exact.compute(cohort, public, competing=competing)


@st.cache_data(max_entries=24, show_spinner=False)
def _exact_cached(key: str, competing: bool, _cohort: Cohort, _public: PublicParameters) -> tuple[CurveResult, CurveResult]:
    return _exact_pair(_cohort, _public, competing)


def empty_groups_warning(on_grid: CurveResult, group_column: str | None) -> None:
    """One sentence for declared group categories that no patient of the data is in (a category typed as its label
    where the data hold codes, say): their non-private numbers describe nobody and their private ones are noise."""
    counts = on_grid.counts
    if counts is None or group_column is None:
        return
    n = np.asarray(counts.n, float).reshape(-1, len(counts.groups))[0]
    empty = [g for g, k in zip(counts.groups, n) if k <= 0]
    if not empty:
        return
    present = [str(g) for g, k in zip(counts.groups, n) if k > 0]
    named = [group_name(g, group_column) for g in empty]
    named = [f"{group_column} = {g}" if name == str(g) else name for g, name in zip(empty, named)]
    st.warning(f"No patient in the data is in {markdown_literal(', '.join(named))}: the declared "
               f"group categories include {'it' if len(empty) == 1 else 'them'}, so {'its' if len(empty) == 1 else 'their'}"
               " rows below describe nobody (a private release still publishes noise for "
               f"{'it' if len(empty) == 1 else 'them'}). Declare the categories as the data's codes"
               + (f" ({markdown_literal(', '.join(present))} have patients)" if present else "") + " on the Data page.",
               icon=":material/warning:")


def counts_of_exact(exact: CurveResult) -> BinnedCounts:
    """The counts of exact (non-private) curves, which always have them (:func:`exact_results`)."""
    if exact.counts is None:
        raise ValueError(f"The exact curves ({exact.mechanism}) hold no counts.")
    return exact.counts


def exact_results(cohort: Cohort, public: PublicParameters, competing: bool = False) -> tuple[CurveResult, CurveResult]:
    """Non-private curves (at every event time, and on the public grid), cached by data identity.

    Bundled data use ``st.cache_data``; uploads are cached in this session only, so nothing derived
    from an upload is shared with another session. A server table kept in an engine gives the exact curves from its
    counts on the distinct event times (equal to lifelines on the same rows), cached in this session by its source
    and column map (dpsurv_app.cache.session_cache).
    """
    key = data_key(cohort, public)
    if session.data_choice().bundled:
        return _exact_cached(key, competing, cohort, public)
    if in_engine(cohort):
        from dpsurv_app.cache import session_cache

        return session_cache(("engine_exact", key, competing), lambda: _exact_pair(cohort, public, competing))
    store = st.session_state.setdefault("exact_curves", {})
    if (key, competing) not in store:
        if len(store) > 8:
            store.clear()
        store[(key, competing)] = _exact_pair(cohort, public, competing)
    return store[(key, competing)]
