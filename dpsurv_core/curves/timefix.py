"""R survival's ``timefix``: times that differ by floating-point error count as one time (a tie).

Rule (R survival's documented behaviour, ``aeqSurv``, which ``survfit`` and ``survdiff`` apply by default with
``timefix = TRUE``; Therneau 2024): take the sorted distinct finite times ``y`` of the data (events and censorings,
every group together), with gaps ``dy = diff(y)``; a gap is a tie when ``dy <= tol`` or ``dy / mean(|y|) <= tol``,
``tol = sqrt(.Machine$double.eps)`` (about 1.5e-8). Each run of tied times becomes its smallest member: the cut
points are ``y[c(TRUE, !tied)]`` and every time is replaced by the largest cut point not above it
(``findInterval``). So ``0.1 + 0.2`` and ``0.3`` are one time, as they are in R.

dpsurv applies it where the exact (non-private) Kaplan-Meier, Aalen-Johansen and log-rank test count times on the
data's event times, for rows held in memory and for tables kept in an engine (DuckDB, Spark:
:mod:`dpsurv_core.engines.timefix`, the same rule in SQL), and to the edges of the event-time grid (not DP), which are
R's event times; ``--no-timefix`` (``ColumnMap.timefix`` False) keeps the exact times, as ``timefix = FALSE`` does
in R. Private releases count each row's own time: the rule reads every time of the data (its mean), which no
release's sensitivity accounts for.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

TOLERANCE = math.sqrt(np.finfo(float).eps)  # R's sqrt(.Machine$double.eps)


def merge_near_ties(time: np.ndarray, tolerance: float = TOLERANCE) -> np.ndarray:
    """``time`` with near-equal values merged as R's ``aeqSurv`` merges them (module docstring); the same array
    when no two distinct times are tied."""
    time = np.asarray(time, dtype=float)
    y = np.unique(time)
    y = y[np.isfinite(y)]
    if y.size < 2 or tolerance <= 0:
        return time
    dy = np.diff(y)
    tied = (dy <= tolerance) | (dy / np.mean(np.abs(y)) <= tolerance)
    if not tied.any():
        return time
    cuts = y[np.concatenate([[True], ~tied])]
    finite = np.isfinite(time)
    out = time.copy()
    out[finite] = cuts[np.searchsorted(cuts, time[finite], side="right") - 1]
    return out


def wanted(cohort: Any) -> bool:
    """Whether ``cohort``'s exact counts merge near-tied times: on unless its column map says ``timefix`` False."""
    return bool(getattr(getattr(cohort, "mapping", None), "timefix", True))


def timefixed(cohort: Any) -> Any:
    """``cohort`` with near-tied times merged (:func:`merge_near_ties`) when :func:`wanted`; else ``cohort`` itself.
    A table kept in an engine merges them there, by SQL, with no row read
    (:meth:`dpsurv_core.engines.EngineCohort.timefixed`)."""
    from dpsurv_core.data.cohort import Cohort

    if hasattr(cohort, "timefixed"):
        return cohort.timefixed()
    if not isinstance(cohort, Cohort) or not wanted(cohort):
        return cohort
    merged = merge_near_ties(cohort.time)
    if merged is cohort.time or np.array_equal(merged, cohort.time):
        return cohort
    return dataclasses.replace(cohort, time=merged)
