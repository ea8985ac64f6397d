"""Exposure and differencing: the audit figures for deterministic releases (statistical disclosure control).

Exposure: the share of privacy units whose removal changes the released table with certainty, i.e. the released
tables on D and on D minus the unit have disjoint supports. An attacker who knows every other record then learns
with certainty whether that subject is in the data. Computed exactly over every unit:

- a deterministic count rule (suppression, rounding, step smoothing) sees a unit only through its cells, so the
  leave-one-out tables are the exact counts minus each unit's contribution, altered all at once (vectorised);
- the cell key adds each unit's record keys to the same subtraction;
- random rounding: a cell x and x - 1 always share a released value (both can round to the same multiple), so no
  single release rules a subject in or out with certainty: exposure 0 (what it leaks shows in the attack instead);
- a DP mechanism's noise has full support (every output is possible on both neighbours): exposure 0;
- exact counts (the non-private release, or randomized response, which publishes times and events as they are):
  every unit counted in the table is exposed.

Differencing: two releases on cohorts one subject apart (for example a filter that drops one person) and the
cells that differ, in fields and in words: the group, and the bin of the event or censoring.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsurv_core.curves.result import exact_counts, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import GROUP_LABEL, SUBJECT
from dpsurv_core.privacy.noise import SimulationNoise


@dataclass(frozen=True)
class Exposure:
    """The share of units revealed with certainty, with the per-unit mask and how it was computed."""

    share: float
    exposed: int
    units: int
    method: str
    mask: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, bool))
    first_rows: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))

    def to_dict(self) -> dict[str, Any]:
        return {"exposed_share": self.share, "exposed_subjects": self.exposed, "subjects": self.units,
                "exposure_method": self.method}


def _is_disclosure_control(mechanism: Any) -> bool:
    return hasattr(mechanism, "leave_one_out") and not mechanism.cost.formal


def _identity_exposure(cohort: Cohort, public: PublicParameters) -> tuple[np.ndarray, np.ndarray]:
    from dpsurv_core.curves.leave_one_out import _first_rows, leave_one_out_counts

    exact, contrib, _, unit = leave_one_out_counts(cohort, public)
    mask = np.any(contrib.cells() != 0, axis=1)
    return mask, _first_rows(unit, mask.size)


def exposure(mechanism: Any, cohort: Cohort, public: PublicParameters) -> Exposure:
    """Exact exposure of ``mechanism``'s release on ``cohort`` over every privacy unit (see the module docstring)."""
    from dpsurv_core.curves.leave_one_out import _units

    _, n_units = _units(cohort)
    cost = mechanism.cost
    if _is_disclosure_control(mechanism):
        if not mechanism.deterministic:
            return Exposure(0.0, 0, n_units, "random rounding: a cell and the same cell minus one always share a "
                                             "possible released value, so no single release is certain",
                            np.zeros(n_units, bool))
        base, loo, first = mechanism.leave_one_out(cohort, public)
        mask = np.any(np.abs(loo - base[None]) > 1e-9, axis=1)
        method = "exact: the released table recomputed without each subject (vectorised over subjects)"
    elif cost.formal and cost.epsilon is not None and math.isfinite(cost.epsilon) and cost.protects == SUBJECT:
        return Exposure(0.0, 0, n_units, "differential privacy: the noise has full support, so every output is "
                                         "possible with and without any one subject", np.zeros(n_units, bool))
    else:
        mask, first = _identity_exposure(cohort, public)
        method = "exact counts are published: every subject counted in the table changes it"
    exposed = int(mask.sum())
    return Exposure(exposed / n_units if n_units else 0.0, exposed, n_units, method, mask, first)


# ------------------------------------------------------------------------------------------- differencing
@dataclass(frozen=True)
class Differencing:
    """Two releases on D and on D minus one subject, and what their difference reveals."""

    row: int
    changes: list[dict[str, Any]]
    revealed: dict[str, Any]
    sentence: str

    def to_dict(self) -> dict[str, Any]:
        return {"removed_row": self.row, "changes": self.changes, "revealed": self.revealed, "sentence": self.sentence}

    def named(self, label: Callable[[str], str]) -> str:
        """``sentence`` with the group it names called by ``label`` (its value label), as the target is."""
        return named_group(self.sentence, self.revealed.get("group"), label)


def named_group(sentence: str, group: Any, label: Callable[[str], str]) -> str:
    """``sentence`` with "group <code>" called by ``label`` (its value label); as it is for no group or "all"."""
    if group in (None, "all"):
        return sentence
    return sentence.replace(f"group {group}", f"group {label(str(group))}")


def _table(mechanism: Any, cohort: Cohort, public: PublicParameters, seed: int) -> Any:
    if hasattr(mechanism, "alter"):
        exact = tile_trials(exact_counts(cohort, public.grid, public), 1)
        out, _ = mechanism.alter(exact, cohort, public, SimulationNoise(seed), 1)
        return out
    rel = mechanism.compute(cohort, public, SimulationNoise(seed), 1)
    return rel.counts


def _random(mechanism: Any) -> bool:
    """Does each release draw fresh randomness? (random rounding and every DP mechanism with finite epsilon)"""
    if hasattr(mechanism, "deterministic"):
        return not mechanism.deterministic
    eps = mechanism.cost.epsilon
    return eps is not None and math.isfinite(eps)


def differencing(mechanism: Any, cohort: Cohort, public: PublicParameters, row: int, seed: int = 0) -> Differencing:
    """Release on D and on D without the subject of ``row`` (fresh, independent randomness for each when the method
    is random, as two real releases would have) and read off what changed.

    Parameters
    ----------
    mechanism : object
        A curve mechanism (DP or disclosure control).
    cohort : Cohort
        The data set D.
    public : PublicParameters
        Its declared grid and categories.
    row : int
        The row of the subject left out of D.
    seed : int, default 0
        Seed of the two releases' noise.

    Returns
    -------
    Differencing
        What the two releases' difference reveals about the subject.
    """
    from dpsurv_core.audit.targets import check_row

    row, rows = check_row(cohort, int(row))
    keep = np.ones(cohort.n, bool)
    keep[list(rows)] = False
    a = _table(mechanism, cohort, public, seed)
    b = _table(mechanism, cohort.subset(keep), public, seed + 1)
    unit = "days" if cohort.time_unit == "days" else cohort.time_unit
    if a is None or b is None:
        return Differencing(row, [], {"released_counts": False},
                            "This mechanism releases no count table, so a differencing pair compares curves only.")
    edges = a.grid.edges
    changes: list[dict[str, Any]] = []
    for g, name in enumerate(a.groups):
        if abs(float(a.n[0, g]) - float(b.n[0, g])) > 1e-9:
            changes.append({"cell": "subjects", "group": name, "from": None, "to": None,
                            "before": float(a.n[0, g]), "after": float(b.n[0, g])})
        for kind, arr_a, arr_b in (("events", a.events_total[0], b.events_total[0]),
                                   ("censored", a.censored[0], b.censored[0])):
            for j in np.flatnonzero(np.abs(arr_a[g] - arr_b[g]) > 1e-9):
                changes.append({"cell": kind, "group": name, "from": float(edges[j]), "to": float(edges[j + 1]),
                                "before": float(arr_a[g, j]), "after": float(arr_b[g, j])})
    groups = sorted({c["group"] for c in changes})
    timed = [c for c in changes if c["cell"] != "subjects"]
    revealed: dict[str, Any] = {"presence": bool(changes), "group": groups[0] if len(groups) == 1 else None,
                                "kind": None, "bin": None}
    truth_event = bool(cohort.event[row])
    truth_group = None if cohort.group is None else str(cohort.group[row])
    if len(timed) == 1:
        c = timed[0]
        revealed.update(kind="event" if c["cell"] == "events" else "censoring", bin=[c["from"], c["to"]])
    random = _random(mechanism)
    if not changes:
        sentence = ("The two releases are identical: this pair does not show whether the subject of row "
                    f"{row} was in the data.")
    elif random and getattr(getattr(mechanism, "cost", None), "protects", SUBJECT) == GROUP_LABEL:
        # randomized response draws only the group labels: the table summed over the groups is exact, so removing
        # one person changes it with certainty (label-DP protects the label, not the presence)
        pooled = [(k, j) for k, arr_a, arr_b in (("event", a.events_total[0].sum(0), b.events_total[0].sum(0)),
                                                 ("censoring", a.censored[0].sum(0), b.censored[0].sum(0)))
                  for j in np.flatnonzero(np.abs(arr_a - arr_b) > 1e-9)]
        sentence = ("The group labels are randomized but the table summed over the groups is exact, so it shows "
                    "with certainty that a person left")
        if len(pooled) == 1:
            kind, j = pooled[0]
            what = "had an event" if kind == "event" else "was censored (left follow-up)"
            sentence += f": the removed person {what} between {edges[j]:g} and {edges[j + 1]:g} {unit}"
            revealed.update(kind=kind, bin=[float(edges[j]), float(edges[j + 1])])
        sentence += "; only their group is hidden by the noise."
        revealed.update(presence=True, group=None)
    elif random:
        sentence = (f"The two releases differ in {len(changes)} cell(s), but each release draws fresh randomness, so "
                    "the difference mixes the removed person with the noise: it does not say with certainty who left, "
                    "or when.")
        revealed.update(presence=None, group=None)
    else:
        sentence = "The two releases differ"
        if revealed["kind"] is not None:
            who = f" in group {revealed['group']}" if revealed["group"] not in (None, "all") else ""
            what = "had an event" if revealed["kind"] == "event" else "was censored (left follow-up)"
            sentence += (f" in one {revealed['kind']} cell{who}: the removed person {what} between "
                         f"{revealed['bin'][0]:g} and {revealed['bin'][1]:g} {unit}.")
            right = (revealed["kind"] == ("event" if truth_event else "censoring")
                     and (revealed["group"] in (None, "all") or revealed["group"] == truth_group))
            revealed["matches_truth"] = bool(right)
        elif revealed["group"] not in (None, "all"):
            sentence += (f" only in group {revealed['group']}: the removed person was in that group (the timing is "
                         "hidden).")
        else:
            sentence += (f" in {len(changes)} cell(s): anyone who knows the other records learns that this person "
                         "is in the data.")
    return Differencing(row, changes, revealed, sentence)
