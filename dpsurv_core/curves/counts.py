"""Per-group event and censoring counts on a public time grid (docs/mechanisms.md).

Cells, per group g and bin j of edges b_0 < ... < b_J:
  n_g      subjects in the group at the start (r_1 before censoring);
  d_gj     events in (b_{j-1}, b_j] (per event type k when competing risks are asked for);
  c_gj     censorings in [b_{j-1}, b_j), which leave the risk set before bin j's events.
A subject censored exactly at b_j stays at risk for bin j's events, as in Kaplan-Meier, so with
the distinct event times as edges every estimator here equals the non-private one. Times past
b_J fall in no cell: such subjects stay at risk to the end of the grid.

One subject changes n_g by 1 and exactly one d or c cell by at most 1: L1 sensitivity 2 per
subject (2m with m rows per subject). Arrays carry optional leading trial axes (..., G, J).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from dpsurv_core.data.categories import row_index
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import TimeGrid
from dpsurv_core.errors import ParameterError


@dataclass(frozen=True)
class BinnedCounts:
    """Counts on a grid: ``n`` (..., G), ``events`` (..., G, K, J) by event type, ``censored`` (..., G, J).

    Without competing risks K = 1. ``events_total`` sums the types.
    """

    grid: TimeGrid
    groups: tuple[str, ...]
    n: np.ndarray
    events: np.ndarray
    censored: np.ndarray
    event_types: tuple[str, ...] = ("event",)

    @property
    def events_total(self) -> np.ndarray:
        return self.events.sum(axis=-2)

    @property
    def shape(self) -> tuple[int, ...]:
        """Leading trial axes."""
        return self.n.shape[:-1]

    def cells(self) -> np.ndarray:
        """All released cells flattened per trial: (..., G * (1 + (K + 1) J))."""
        lead = self.shape
        return np.concatenate([self.n.reshape(*lead, -1), self.events.reshape(*lead, -1),
                               self.censored.reshape(*lead, -1)], axis=-1)

    def from_cells(self, cells: np.ndarray) -> BinnedCounts:
        """Inverse of :meth:`cells` (for noisy cells)."""
        g, k, j = self.events.shape[-3:]
        lead = cells.shape[:-1]
        n = cells[..., :g]
        ev = cells[..., g:g + g * k * j].reshape(*lead, g, k, j)
        ce = cells[..., g + g * k * j:].reshape(*lead, g, j)
        return replace(self, n=n, events=ev, censored=ce)

    def group(self, label: str) -> BinnedCounts:
        i = self.groups.index(label)
        return replace(self, groups=(label,), n=self.n[..., i:i + 1], events=self.events[..., i:i + 1, :, :],
                       censored=self.censored[..., i:i + 1, :])

    def pooled(self) -> BinnedCounts:
        """All groups added together (one group ``all``)."""
        return replace(self, groups=("all",), n=self.n.sum(-1, keepdims=True),
                       events=self.events.sum(-3, keepdims=True), censored=self.censored.sum(-2, keepdims=True))

    def snapped(self, snap: Callable[[np.ndarray], np.ndarray]) -> BinnedCounts:
        """Every cell through ``snap``: a release's noise source puts them on its 2^-20 grid (Mironov 2012), which
        whole numbers already are; post-processing can leave fractions (events of several types scaled down to the
        number at risk), and continuous Laplace noise leaves reals."""
        return replace(self, n=snap(self.n), events=snap(self.events), censored=snap(self.censored))

    def released(self) -> dict[str, object]:
        """The cells as a release record holds them (nested lists; the grid is a public input, stored apart)."""
        return {"groups": list(self.groups), "event_types": list(self.event_types), "n": self.n.tolist(),
                "events": self.events.tolist(), "censored": self.censored.tolist()}

    @classmethod
    def from_released(cls, released: dict, grid: TimeGrid) -> BinnedCounts:
        """Inverse of :meth:`released` on the public ``grid`` (cells as floats: None, a JSON null, reads NaN)."""
        return cls(grid, tuple(str(g) for g in released["groups"]), np.array(released["n"], float),
                   np.array(released["events"], float), np.array(released["censored"], float),
                   tuple(str(t) for t in released["event_types"]))

    def at_risk(self) -> np.ndarray:
        """r_gj = n_g - sum_{i<j} d_gi - sum_{i<=j} c_gi: at risk for bin j's events."""
        d = self.events_total
        before = np.cumsum(d, axis=-1) - d
        return self.n[..., None] - before - np.cumsum(self.censored, axis=-1)


def _group_index(cohort: Cohort, groups: tuple[str, ...] | None) -> tuple[np.ndarray, tuple[str, ...]]:
    if groups is None or cohort.group is None:
        if groups is not None and cohort.group is None:
            raise ParameterError("Group categories were given but the data has no group column: map one on the Data page or pass --group.")
        return np.zeros(cohort.n, dtype=np.int64), ("all",)
    return row_index(cohort.group, groups), tuple(groups)  # 1.0 declared names the code 1


def bin_index(edges: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``searchsorted(edges, t, "right")`` and ``searchsorted(edges, t, "left")`` in one pass.

    For equal-width edges the index is computed arithmetically and corrected against the edges
    themselves (floating-point rounding moves it by at most one), O(n) instead of O(n log J).
    """
    width = (edges[-1] - edges[0]) / (edges.size - 1)
    if edges.size > 2 and np.allclose(np.diff(edges), width, rtol=1e-9, atol=0):
        right = np.floor((t - edges[0]) / width).astype(np.int64) + 1
        np.clip(right, 0, edges.size, out=right)
        ext = np.concatenate([[-np.inf], edges, [np.inf]])  # ext[i] = edges[i - 1]
        right -= t < ext[right]
        right += t >= ext[right + 1]
    else:
        right = np.searchsorted(edges, t, side="right")
    ext = np.concatenate([[-np.inf], edges])
    left = right - (t == ext[right])
    return right, left


def count(cohort: Cohort, grid: TimeGrid, groups: tuple[str, ...] | None = None, competing: bool = False) -> BinnedCounts:
    """Exact counts. ``groups``: the public categories (None = one group of everyone).

    Subjects whose label is not among the declared categories are left out (and counted nowhere).
    With ``competing``, events are split by ``cohort.event_type`` (types 1..K). A cohort kept in an engine
    (:class:`dpsurv_core.engines.EngineCohort`) is counted there by one query, to the same numbers.

    Parameters
    ----------
    cohort : Cohort
        The data set (in memory or in an engine).
    grid : TimeGrid
        The public time grid.
    groups : tuple of str, optional
        The public categories; None counts everyone as one group.
    competing : bool, default False
        Split the events by event type.

    Returns
    -------
    BinnedCounts
        At risk at the start of each bin, events and censorings per bin, per group.
    """
    if hasattr(cohort, "binned_counts"):
        return cohort.binned_counts(grid, groups, competing)
    edges = grid.edges
    j_count = edges.size - 1
    gi, labels = _group_index(cohort, groups)
    g_count = len(labels)
    keep = gi >= 0
    if keep.all():
        t, ev = cohort.time, cohort.event
        etype_all = cohort.event_type
    else:
        t, ev, gi = cohort.time[keep], cohort.event[keep], gi[keep]
        etype_all = None if cohort.event_type is None else cohort.event_type[keep]
    if competing:
        if etype_all is None:
            raise ParameterError("Cumulative incidence needs an event-type column: map the competing-event type on the Data page.")
        etype = etype_all.astype(np.int64)
        types = tuple(cohort.event_type_labels)
        d = etype > 0
    else:
        d = ev.astype(bool)
        etype = None
        types = ("event",)
    k_count = len(types)
    right, left = bin_index(edges, t)
    # events: (b_{j-1}, b_j] -> bin j = left; censorings: [b_{j-1}, b_j) -> bin j = right; times at or
    # before b_0 fold into bin 1, times past b_J fall in no cell. One bincount over every subject:
    # event cells first (group, type, bin), then censoring cells (group, bin), then a sink.
    bins = np.where(d, left, right)
    np.maximum(bins, 1, out=bins)
    n_event_cells = g_count * k_count * j_count
    cell = gi * k_count if etype is None else gi * k_count + np.maximum(etype - 1, 0)
    flat = np.where(d, cell * j_count, n_event_cells + gi * j_count) + bins - 1
    flat[bins > j_count] = n_event_cells + g_count * j_count
    cells = np.bincount(flat, minlength=n_event_cells + g_count * j_count + 1)
    events = cells[:n_event_cells]
    censored = cells[n_event_cells:-1]
    n = np.bincount(gi, minlength=g_count).astype(np.int64)
    events = events.reshape(g_count, k_count, j_count)
    censored = censored.reshape(g_count, j_count)
    return BinnedCounts(grid, labels, n, events.astype(np.int64), censored.astype(np.int64), types)


def post_process(noisy: BinnedCounts) -> BinnedCounts:
    """Free post-processing of noisy counts (docs/mechanisms.md): clamp cells at 0, then keep the
    events of each bin within its at-risk count so every Kaplan-Meier factor lies in [0, 1]."""
    n = np.maximum(noisy.n, 0)
    ev = np.maximum(noisy.events, 0)
    ce = np.maximum(noisy.censored, 0)
    out = replace(noisy, n=n, events=ev, censored=ce)
    r = out.at_risk()
    total = out.events_total
    # where noisy events exceed those at risk, scale the types down to fit (the curve reaches 0 there)
    room = np.maximum(r, 0)
    scale = np.where(total > room, np.divide(room, total, out=np.zeros(total.shape, float), where=total > 0), 1.0)
    if np.any(scale < 1):
        ev = ev * scale[..., None, :]
        out = replace(out, events=ev)
    return out
