"""The comparison an ethics board reads: DP mechanisms at the chosen epsilon next to today's disclosure control.

For every method on the current data and public grid: the error of its survival curve against the non-private
Kaplan-Meier curve on the grid (RMSE and largest gap, averaged over simulated releases for random methods), the
share of subjects it exposes with certainty (:mod:`dpsurv_core.audit.exposure`), the strongest membership attack's
advantage on the most exposed subject and the empirical epsilon lower bound (:mod:`dpsurv_core.audit.runner`;
infinite when the two neighbouring releases never coincide), and its formal guarantee. As in every audit the attack
scores the whole record a ``km`` release of the method would make (released counts, everything derived from them and
each warning: :mod:`dpsurv_core.audit.record`), on fewer runs (a reader per record: :data:`BOARD_RECORD_TRIALS`),
beside the attack on the mechanism's output alone on all the runs; a DP method is within its charge only if both are. Randomized response is left
out: it protects the group label only and publishes the times as they are (its exposure is that of exact counts).

Like every audit, this is a simulation on the raw data for the data holder or a board: nothing is charged and the
numbers must not be published.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core.audit.attack import advantage_bound
from dpsurv_core.audit.runner import AuditResult, CurveAdapter, audit, curve_publisher
from dpsurv_core.curves.result import NonPrivate, context
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

DP_DEFAULT = ("laplace-counts", "adaptive-km")
BOARD_RECORD_TRIALS = 60  # runs per data set of each method's record attack (a reader per record)
SDC_DEFAULT = ("suppress-small-cells", "round", "random-round", "cell-key", "smooth-steps")
SHORT = {"laplace-counts": "Laplace counts", "adaptive-km": "adaptive Kaplan-Meier", "time-indexed": "time-indexed noise",
         "suppress-small-cells": "small-cell suppression", "round": "rounding", "random-round": "random rounding",
         "cell-key": "cell keys", "smooth-steps": "step smoothing"}


def short(method: str) -> str:
    return SHORT.get(method, method)


@dataclass(frozen=True)
class ComparisonRow:
    """One method's row of the comparison board: its accuracy beside what an attacker learns from its output.

    Parameters
    ----------
    method, name, kind : str
        The method's id, its name, and ``"differential privacy"`` or ``"disclosure control"``.
    epsilon : float or None
        The charged epsilon (None for disclosure control: no formal guarantee).
    rmse, max_gap : float
        Root mean squared and largest error of the released curve against the exact one.
    exposed_share : float
        Share of the released cells an attacker reads exactly.
    advantage, advantage_upper : float
        The distinguishing attack's advantage (TPR - FPR) and its upper confidence bound.
    empirical_epsilon : float
        The empirical epsilon lower bound (``math.inf`` when the neighbouring outputs never overlap).
    certain : bool
        True when the attack is always right.
    guarantee, differencing : str
        The guarantee as a sentence, and what differencing two tables reveals.
    differencing_group : str, optional
        The group the differencing sentence names (by its code).
    """

    method: str
    name: str
    kind: str  # "differential privacy" or "disclosure control"
    epsilon: float | None
    rmse: float
    max_gap: float
    exposed_share: float
    advantage: float
    advantage_upper: float
    empirical_epsilon: float  # math.inf when the neighbouring outputs never overlap
    certain: bool
    guarantee: str
    differencing: str
    differencing_group: str | None = None  # the group the differencing sentence names (by its code)
    # what the attack above scored: "record" (the whole release record) or "output" (the mechanism's output only),
    # how many fields, on how many runs per data set; the output's own bound beside it, and the verdict on both
    attacked: str = "output"
    attacked_fields: int = 0
    record_trials: int | None = None
    output_empirical_epsilon: float = math.nan
    within_charge: bool | None = None

    def differencing_named(self, label: Callable[[str], str]) -> str:
        """The differencing sentence with its group called by ``label`` (its value label)."""
        from dpsurv_core.audit.exposure import named_group

        return named_group(self.differencing, self.differencing_group, label)

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "name": self.name, "kind": self.kind, "epsilon": self.epsilon,
                "rmse": self.rmse, "max_gap": self.max_gap, "exposed_share": self.exposed_share,
                "advantage": self.advantage, "advantage_upper": self.advantage_upper,
                "empirical_epsilon": None if math.isinf(self.empirical_epsilon) else self.empirical_epsilon,
                "distinguishable_with_certainty": self.certain, "formal_guarantee": self.guarantee,
                "differencing": self.differencing, "attacked": self.attacked, "attacked_fields_count":
                    self.attacked_fields, "record_trials": self.record_trials,
                "output_empirical_epsilon": None if math.isinf(self.output_empirical_epsilon)
                else self.output_empirical_epsilon, "within_charge": self.within_charge}

    def attacked_words(self) -> str:
        """What the attack scored, for the board's table."""
        if self.attacked == "record":
            return f"whole record ({self.attacked_fields} fields, {self.record_trials} runs)"
        return f"output only ({self.attacked_fields} values)"


@dataclass(frozen=True)
class Comparison:
    """DP and disclosure control audited side by side on one data set (:func:`compare`).

    Parameters
    ----------
    dataset : str
        The data set's name.
    n_subjects : int
        Its number of subjects.
    epsilon : float
        The epsilon the DP methods were run at.
    trials : int
        Simulated releases per data set of each attack.
    rows : list of ComparisonRow
        One row per method.
    record_trials : int, default 0
        Runs per data set of each record attack (0: the outputs only).
    """

    dataset: str
    n_subjects: int
    epsilon: float
    trials: int
    rows: list[ComparisonRow]
    record_trials: int = 0  # runs per data set of each record attack (0: the outputs only)

    def table(self) -> pd.DataFrame:
        """The board's table, formatted: empirical epsilon 'infinite' when certain, epsilon 'none' for SDC."""
        out = []
        for r in self.rows:
            emp = "infinite (certain)" if r.certain else f"{r.empirical_epsilon:.2f}"
            out.append({"method": r.name, "kind": r.kind, "RMSE": round(r.rmse, 4), "largest gap": round(r.max_gap, 4),
                        "exposed share": f"{100 * r.exposed_share:.0f}%",
                        "strongest attack advantage": f"{100 * max(r.advantage, 0.0):.0f}%",
                        "empirical epsilon (95% lower bound)": emp, "attacked": r.attacked_words(),
                        "within the charge": "no charge" if r.within_charge is None
                        else "yes" if r.within_charge else "NO: a bug to fix", "formal guarantee": r.guarantee})
        return pd.DataFrame(out)

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "n_subjects": self.n_subjects, "epsilon": self.epsilon,
                "trials": self.trials, "record_trials": self.record_trials, "rows": [r.to_dict() for r in self.rows],
                "paragraph": paragraph(self)}


def _errors(mech: Any, cohort: Cohort, public: PublicParameters, reference: np.ndarray, trials: int,
            seed: int) -> tuple[float, float]:
    reps = 1 if getattr(mech, "deterministic", False) else trials
    rel = mech.compute(cohort, public, SimulationNoise(seed), reps)
    surv = rel.curves.at_times(public.grid.points, "survival")  # (R, G, J)
    diff = surv - reference[None]
    rmse = np.sqrt(np.mean(diff ** 2, axis=(-1, -2)))
    gap = np.max(np.abs(diff), axis=(-1, -2))
    return float(np.mean(rmse)), float(np.mean(gap))


def _row(entry: Any, mech: Any, result: AuditResult, rmse: float, gap: float, epsilon: float) -> ComparisonRow:
    a = result.headline  # the attack on the whole record when there is one, as the audit reports it
    formal = entry.formal
    guarantee = (f"epsilon = {epsilon:g} (differential privacy, {entry.protects}, {entry.neighbouring})" if formal
                 else "none (no formal guarantee)")
    return ComparisonRow(entry.id, entry.name, "differential privacy" if formal else "disclosure control",
                         float(epsilon) if formal else None, rmse, gap,
                         float(result.exposure.share) if result.exposure is not None else float("nan"),
                         float(a.advantage), float(a.advantage_upper), result.empirical_epsilon, result.certain,
                         guarantee, "" if result.differencing is None else result.differencing.sentence,
                         None if result.differencing is None else _group(result.differencing.revealed.get("group")),
                         "record" if result.record is not None else "output", len(result.attacked_fields),
                         None if result.record is None else result.record.trials,
                         math.inf if result.certain else float(result.attack.epsilon_lower), result.within_charge)


def _group(group: Any) -> str | None:
    return None if group is None else str(group)


def compare(cohort: Cohort, public: PublicParameters, epsilon: float = 1.0, dp: Sequence[str] = DP_DEFAULT,
            sdc: Sequence[str] = SDC_DEFAULT, trials: int = 200, seed: int = 0,
            progress: Callable[[float, str], None] | None = None, record_trials: int | None = None) -> Comparison:
    """Every method's error, exposure, attack and guarantee on ``cohort`` (``trials`` simulated runs per data set for
    the attack on the output and for the error of random methods; ``record_trials`` for the attack on the whole
    record, default the smaller of ``trials`` and :data:`BOARD_RECORD_TRIALS`, 0 for the outputs only).

    Parameters
    ----------
    cohort : Cohort
        The data set.
    public : PublicParameters
        Its declared grid and categories.
    epsilon : float, default 1.0
        The epsilon of the DP methods.
    dp, sdc : sequence of str
        Catalogue ids of the DP and of the disclosure-control methods compared.
    trials : int, default 200
        Simulated runs per data set.
    seed : int, default 0
        Seed of the simulation noise.
    progress : callable, optional
        Called with ``(share done, sentence)``.
    record_trials : int, optional
        Runs per data set of the record attack.

    Returns
    -------
    Comparison
        One :class:`ComparisonRow` per method.
    """
    reference = NonPrivate().compute(cohort, public).curves.survival[0]
    n_records = min(int(trials), BOARD_RECORD_TRIALS) if record_trials is None else int(record_trials)
    rows: list[ComparisonRow] = []
    ids = [*dp, *sdc]
    for i, mid in enumerate(ids):
        if progress is not None:
            progress(i / len(ids), f"{mid}: error, exposure and attack on its release record")
        entry = catalogue.get(catalogue.CURVES, mid)
        mech = entry.build(epsilon, **context(cohort, public))
        rmse, gap = _errors(mech, cohort, public, reference, trials, seed)
        adapter = CurveAdapter(mech, cohort, public)
        if n_records:
            adapter.publisher = curve_publisher(mid, epsilon, cohort, public)
        result = audit(adapter, trials=trials, seed=seed, record_trials=n_records)
        rows.append(_row(entry, mech, result, rmse, gap, epsilon))
    if progress is not None:
        progress(1.0, "done")
    return Comparison(cohort.name, cohort.n_subjects, float(epsilon), int(trials), rows, n_records)


def paragraph(comp: Comparison) -> str:
    """What the numbers mean for one patient in the cohort, in plain words."""
    sdc = [r for r in comp.rows if r.kind == "disclosure control"]
    dp = [r for r in comp.rows if r.kind == "differential privacy"]
    parts = []
    if sdc:
        worst = max(sdc, key=lambda r: r.exposed_share)
        best = min(sdc, key=lambda r: r.exposed_share)
        parts.append(
            f"With today's disclosure control, a patient in this cohort of {comp.n_subjects} is exposed when leaving "
            "them out changes the published table: anyone who knows the other patients' records, or who can compare "
            "this table with a second one that leaves them out, then learns for certain that they took part and, "
            "often, in which group and time interval their event or censoring fell. "
            f"That is {100 * worst.exposed_share:.0f}% of the patients under {short(worst.method)}"
            + (f" and {100 * best.exposed_share:.0f}% under {short(best.method)}"
               if best is not worst else "") + "; none of these methods has a formal guarantee.")
        certain = [short(r.method) for r in sdc if r.certain]
        if certain:
            parts.append(f"For the most exposed patient the attack was right every time under {', '.join(certain)}.")
    if dp:
        lo = min(dp, key=lambda r: r.rmse)
        adv = max(max(r.advantage, 0.0) for r in dp)
        parts.append(
            f"Under differential privacy at epsilon {comp.epsilon:g} no patient is exposed for certain: whatever an "
            f"attacker knows, the guarantee caps any attack on any one patient at {100 * advantage_bound(comp.epsilon):.0f}% "
            f"better than a coin toss, and the strongest attack here, on the most exposed patient, reached "
            f"{100 * adv:.0f}%. The price is accuracy: the curve is off by {lo.rmse:.3f} on average (RMSE) with "
            f"{short(lo.method)}")
        if sdc:
            s_lo = min(sdc, key=lambda r: r.rmse)
            parts[-1] += f", against {s_lo.rmse:.3f} for {short(s_lo.method)}."
        else:
            parts[-1] += "."
    return " ".join(parts)
