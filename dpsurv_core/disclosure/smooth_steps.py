"""Step smoothing: merge adjacent bins until each step of the curve holds at least k events (k = 5 by default).

Per group, bins are merged left to right: a step closes at the first bin where the events gathered since the last
step reach k. Events left over at the end (fewer than k) join the last step; a group with fewer than k events in
all is shown with no step at all (its events withheld, the curve flat). A merged step's events and censorings are
published at its last bin, so the curve is flat inside the step and drops at its end, and the number-at-risk table
only changes at step ends. O'Keefe, Sparks, McAullay and Loong (2012) discuss this family of confidentialised
survival output. No formal guarantee: the merged counts still move when a subject is removed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.disclosure.base import DisclosureControl
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import NoiseSource


def step_ends(events: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Where the merged steps end (..., J) booleans (the last bin always ends one) and which groups have fewer than
    k events in all (..., ) (their events are withheld). A loop over the J bins, vectorised over everything else."""
    J = events.shape[-1]
    acc = np.zeros(events.shape[:-1])
    ends = np.zeros(events.shape, dtype=bool)
    for j in range(J):
        acc = acc + events[..., j]
        close = acc >= k
        ends[..., j] = close
        acc = np.where(close, 0.0, acc)
    # leftover events (0 < acc < k) after the last closed step join it: that step now ends at the last bin
    any_closed = ends.any(axis=-1)
    last = J - 1 - np.argmax(ends[..., ::-1], axis=-1)
    leftover = (acc > 0) & any_closed
    idx = np.nonzero(leftover)
    ends[(*idx, last[leftover])] = False
    ends[..., -1] = True
    too_few = ~any_closed & (events.sum(axis=-1) > 0)
    return ends, too_few


def merge(values: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each step's total placed at its last bin (zeros inside the step). ``values`` (..., J), ``ends`` broadcastable."""
    csum = np.cumsum(values, axis=-1)
    at_end = np.where(ends, csum, 0.0)
    prev = np.maximum.accumulate(np.where(ends, csum, -np.inf), axis=-1)
    prev = np.concatenate([np.zeros(prev.shape[:-1] + (1,)), prev[..., :-1]], axis=-1)
    prev = np.where(np.isfinite(prev), prev, 0.0)
    return np.where(ends, at_end - prev, 0.0)


class SmoothSteps(DisclosureControl):
    """Merge bins so that every step holds at least ``k`` events.

    Parameters
    ----------
    k : int, default 5
        The fewest events a step of the curve may hold; a whole number, at least 2.
    rows_per_subject : int, default 1
        m, the most rows one subject has; recorded with the release (the rule acts on the cells alone).

    Privacy
    -------
    Cost: no epsilon: statistical disclosure control, not differential privacy.
    Neighbours: none: no formal guarantee.
    Protects: no formal guarantee (a deterministic rule on the exact counts).
    Source: O'Keefe C. M., Sparks R. S., McAullay D. & Loong B. (2012).
    """

    name = "smooth-steps"

    def __init__(self, k: int = 5, rows_per_subject: int = 1) -> None:
        super().__init__(rows_per_subject)
        if int(k) != k or k < 2:
            raise ParameterError(f"smooth-steps needs at least k = 2 events per step, got {k}.")
        self.k = int(k)
        self.what = f"step smoothing to at least {self.k} events per step"

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "k": self.k}

    def alter(self, exact: BinnedCounts, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None,
              trials: int) -> tuple[BinnedCounts, dict[str, Any]]:
        d = exact.events_total.astype(float)
        ends, too_few = step_ends(d, self.k)
        events = merge(exact.events.astype(float), ends[..., None, :])
        events = np.where(too_few[..., None, None], 0.0, events)
        censored = merge(exact.censored.astype(float), ends)
        return replace(exact, events=events, censored=censored), {"step_ends": ends, "withheld_groups": too_few}
