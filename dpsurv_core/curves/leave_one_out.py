"""Exact counts on a public grid for a cohort and, vectorised, for the cohort minus each privacy unit: what a
deterministic disclosure-control rule's exposure (:mod:`dpsurv_core.disclosure`) and the audit's target choice
(:mod:`dpsurv_core.audit.targets`) both read."""

from __future__ import annotations

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.result import groups_of
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters


def _units(cohort: Cohort) -> tuple[np.ndarray, int]:
    """Privacy unit of every row (the subject id when given, else the row) and the number of units."""
    if cohort.subject is None:
        return np.arange(cohort.n), cohort.n
    _, inv = np.unique(cohort.subject, return_inverse=True)
    return inv, int(inv.max()) + 1 if inv.size else 0


def _first_rows(unit: np.ndarray, n_units: int) -> np.ndarray:
    first = np.full(n_units, -1, dtype=np.int64)
    first[unit[::-1]] = np.arange(unit.size)[::-1]
    return first


def leave_one_out_counts(cohort: Cohort, public: PublicParameters, competing: bool = False
                         ) -> tuple[BinnedCounts, BinnedCounts, BinnedCounts, np.ndarray]:
    """Exact counts on the public grid for D and, vectorised, for D minus each privacy unit.

    Every row's own cells are counted in one call (each row as its own "group"), summed per unit
    into the unit's real group: returns (exact, contributions (U, G, ...), loo (U, G, ...) with a
    leading unit axis, unit index per row)."""
    groups = groups_of(cohort, public)
    exact = count(cohort, public.grid, groups, competing)
    unit, n_units = _units(cohort)
    labels = tuple(str(i) for i in range(cohort.n))
    solo = Cohort(cohort.time, cohort.event, np.array(labels, dtype=object), None, cohort.event_type,
                  cohort.event_type_labels, name=cohort.name)
    rows = count(solo, public.grid, labels, competing)  # (n,) (n, K, J) (n, J)
    if groups is None:
        gi = np.zeros(cohort.n, dtype=np.int64)
    else:
        assert cohort.group is not None  # groups_of returns categories only for a cohort with a group column
        uniq, inv = np.unique(cohort.group.astype(str), return_inverse=True)
        lookup = {g: i for i, g in enumerate(groups)}
        gi = np.array([lookup.get(str(g), -1) for g in uniq], dtype=np.int64)[inv]
    ok = gi >= 0
    G = len(exact.groups)
    n_c = np.zeros((n_units, G))
    ev_c = np.zeros((n_units, G, *exact.events.shape[-2:]))
    ce_c = np.zeros((n_units, G, exact.censored.shape[-1]))
    np.add.at(n_c, (unit[ok], gi[ok]), rows.n[ok])
    np.add.at(ev_c, (unit[ok], gi[ok]), rows.events[ok])
    np.add.at(ce_c, (unit[ok], gi[ok]), rows.censored[ok])
    contrib = BinnedCounts(exact.grid, exact.groups, n_c, ev_c, ce_c, exact.event_types)
    loo = BinnedCounts(exact.grid, exact.groups, exact.n[None] - n_c, exact.events[None] - ev_c,
                       exact.censored[None] - ce_c, exact.event_types)
    return exact, contrib, loo, unit
