"""Running an audit: R simulated releases on D and R on D', for each analysis, then the attack.

For a target subject s (see :mod:`dpsurv_core.audit.targets`) and the neighbouring pair D (with s)
and D' (without s; for label-only mechanisms, s with another group label), an adapter runs the
analysis's mechanism R times on each with seeded :class:`SimulationNoise` (two independent streams
spawned from one seed, vectorised over the runs) and returns the released quantities as two (R, q)
arrays, with the coordinates nearest the target and, when curves are released, the curves on the
public grid. :func:`audit` then mounts the distinguishing attack of :mod:`dpsurv_core.audit.attack`
(fitted on half the runs, measured on the other half) and counts the influential points.

Adapters: survival curves (released counts, the mechanism's raw histograms and the curves),
log-rank tests (post-processing of released counts), Weibull parameters (shape, normalised scale)
and discrete-time regression (the coefficient vector).

The whole record: an adapter with a :class:`~dpsurv_core.audit.record.Publisher` (the record a release of its
analysis would make: the mechanism's draw, then the registered reader with the release's public inputs) is also
attacked on that record, every numeric field of ``released`` and ``derived`` and each warning
(:mod:`dpsurv_core.audit.record`), on fewer runs by default (a reader per run). That attack is then the headline
(:attr:`AuditResult.headline`); the attack on the mechanism's output alone, on all the runs, stays beside it, and
the release is within its charge only when both are.

An audit is a simulation on the data for the data holder or an ethics board, not a release: it is
never charged to a ledger, and its numbers (which come from the raw data) must not be published.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from dpsurv_core import limits
from dpsurv_core.audit.attack import LEVEL, Attack, advantage_bound, distinguish
from dpsurv_core.audit.record import Publisher, RecordAudit, reader_publisher, record_audit
from dpsurv_core.audit.targets import (
    THRESHOLDS,
    Target,
    check_row,
    influential_points,
    relabelled,
    select_curve_target,
    select_logrank_target,
    select_regression_target,
    select_weibull_target,
    user_target,
    without,
)
from dpsurv_core.curves import logrank
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.result import CURVE_PARAMETERS, context, exact_counts, groups_of, tile_trials
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import CHANGE_LABEL, EXACT, GROUP_LABEL, PrivacyCost, as_run
from dpsurv_core.privacy.noise import SimulationNoise

ANALYSES = ("km", "logrank", "weibull", "regression")
DEFAULT_TRIALS = 1000
DEFAULT_LAMBDA = 0.01  # the regression command's default ridge penalty for the private fits
MAX_TRIALS = 200_000
Progress = Callable[[float, str], None]


# ------------------------------------------------------------------------------------------- result
@dataclass
class AuditResult:
    """An audit: what was released, whom it targeted, the attack on the held-out runs and the influential points."""

    analysis: str
    mechanism: str
    cost: PrivacyCost
    target: Target
    trials: int
    seed: int
    attack: Attack
    influential: dict[float, int] | None
    influential_per_trial: dict[float, np.ndarray] | None
    grid_points: int | None
    dataset: str
    n_subjects: int
    notes: list[str] = field(default_factory=list)
    certain: bool = False  # the neighbouring outputs never overlap: the attack is right every time (epsilon infinite)
    exposure: Any = None  # dpsurv_core.audit.exposure.Exposure (curve and log-rank audits)
    differencing: Any = None  # dpsurv_core.audit.exposure.Differencing (curve and log-rank audits)
    disclosures: list = field(default_factory=list)  # the release's, as the analysis's command prints them
    # the same counts between two runs on D (run r against run r + 1): what the noise alone moves, the yardstick for
    # the counts between D and D'
    influential_noise_alone: dict[float, np.ndarray] | None = None
    # the attack on the whole record a release would make (released, derived, warnings), when the analysis has a
    # reader; ``attack`` is then the attack on the mechanism's output alone, on all the runs
    record: RecordAudit | None = None
    output_fields: list[str] = field(default_factory=list)  # the columns of the mechanism's output ``attack`` scored

    @property
    def headline(self) -> Attack:
        """The audit's attack: on the whole record when there is one, else on the mechanism's output."""
        return self.record.attack if self.record is not None else self.attack

    @property
    def headline_trials(self) -> int:
        """Runs per data set behind :attr:`headline`."""
        return self.record.trials if self.record is not None else self.trials

    @property
    def attacked_fields(self) -> list[str]:
        """The field paths the headline attack scored (``derived.medians[0].median_lower``; the output's columns,
        ``output.counts[3]``, when there is no record)."""
        return list(self.record.fields) if self.record is not None else list(self.output_fields)

    @property
    def as_run(self) -> dict[str, str]:
        """The guarantee, what it protects and its sentence for the release as run (:func:`as_run`): a disclosure
        that is not DP (n or the blocks read off the data) leaves it with none, whatever the epsilon charged."""
        return as_run(self.cost, self.disclosures)

    @property
    def formal_guarantee(self) -> bool:
        return bool(self.cost.private) and self.as_run["guarantee"] == self.cost.guarantee

    @property
    def epsilon_charged(self) -> float | None:
        return self.cost.epsilon

    @property
    def empirical_epsilon(self) -> float:
        """The empirical lower bound of the headline attack, infinite when D and D' can be told apart with
        certainty."""
        return math.inf if self.certain else self.headline.epsilon_lower

    @property
    def within_charge(self) -> bool | None:
        """None for disclosure control, without noise and where a disclosure that is not DP voids the charge's
        guarantee (there is no guarantee to be within)."""
        if self.cost.epsilon is None or not self.cost.private or not self.formal_guarantee:
            return None
        # the record's attack and the output's (on more runs): a release is within its charge only if both are
        return max(self.empirical_epsilon, self.attack.epsilon_lower) <= self.cost.epsilon

    def sentence(self) -> str:
        """One sentence a non-specialist can read."""
        return _plain_sentence(self)

    @property
    def epsilon_note(self) -> str | None:
        """The sentence for an uninformative epsilon test (:attr:`uninformative_test`), else None."""
        if not self.uninformative_test:
            return None
        return (f"The epsilon test's threshold, chosen on half of the {self.headline_trials} runs, labels every "
                "held-out run the same way, so it measures nothing here (its lower bound 0 is true but empty; the "
                "advantage above is the attack to read): run more trials, e.g. --trials 1000.")

    @property
    def uninformative_test(self) -> bool:
        """The epsilon test's held-out rates are both 0 or both 1: its threshold tells no run from another."""
        a = self.headline
        return not self.certain and a.tpr == a.fpr and a.tpr in (0.0, 1.0)

    def to_dict(self) -> dict[str, Any]:
        a = self.headline
        infl = None if self.influential is None else {f"{t:g}": int(c) for t, c in self.influential.items()}
        per = None if self.influential_per_trial is None else {
            f"{t:g}": float(np.mean(v)) for t, v in self.influential_per_trial.items()}
        return {
            "analysis": self.analysis, "mechanism": self.mechanism, "dataset": self.dataset,
            "n_subjects": self.n_subjects, "epsilon_charged": self.cost.epsilon, "delta": self.cost.delta,
            "guarantee": self.as_run["guarantee"], "protects": self.as_run["protects"],
            "neighbouring": self.cost.neighbouring,
            "empirical_epsilon_lower": None if self.certain else a.epsilon_lower,
            "empirical_epsilon_lower_from_runs": a.epsilon_lower, "distinguishable_with_certainty": self.certain,
            "formal_guarantee": self.formal_guarantee,
            "exposed_share": None if self.exposure is None else self.exposure.share,
            "exposure": None if self.exposure is None else self.exposure.to_dict(),
            "differencing": None if self.differencing is None else self.differencing.to_dict(),
            # a threshold that labels every held-out run alike measures nothing: no point estimate, and a sentence
            "empirical_epsilon_point": None if self.uninformative_test else a.epsilon_point,
            "empirical_epsilon_note": self.epsilon_note,
            "within_charge": self.within_charge, "trials": self.trials, "held_out_runs": a.runs, "seed": self.seed,
            "target": self.target.to_dict(), "tpr": a.tpr, "fpr": a.fpr, "tpr_ci": list(a.tpr_ci),
            "fpr_ci": list(a.fpr_ci), "confidence": LEVEL, "threshold": a.threshold, "score": a.score,
            "advantage": a.advantage, "advantage_held_out": a.advantage_held_out, "advantage_lower": a.advantage_lower, "advantage_upper": a.advantage_upper,
            "advantage_tpr": a.adv_tpr, "advantage_fpr": a.adv_fpr, "advantage_tpr_ci": list(a.adv_tpr_ci),
            "advantage_fpr_ci": list(a.adv_fpr_ci), "advantage_threshold": a.adv_threshold,
            "advantage_score": a.adv_score, "epsilon_test_advantage": a.epsilon_test_advantage,
            "advantage_bound": advantage_bound(self.cost.epsilon) if self.formal_guarantee and self.cost.epsilon is not None else None, "auc": a.auc,
            "roc": {"fpr": a.roc_fpr, "tpr": a.roc_tpr},
            "influential_points": infl, "influential_points_per_trial": per, "influential_thresholds": list(THRESHOLDS),
            "influential_points_noise_alone_per_trial": None if self.influential_noise_alone is None else {
                f"{t:g}": float(np.mean(v)) for t, v in self.influential_noise_alone.items()},
            "grid_points": self.grid_points, "sentence": self.sentence(),
            "charged_to_ledger": False,
            "epsilon_test_tpr": a.tpr, "epsilon_test_fpr": a.fpr, "epsilon_test_threshold": a.threshold,
            "fields_note": ("tpr, fpr and threshold (and epsilon_test_*) are the operating point of the test behind "
                            "empirical_epsilon_lower; the headline attack is advantage with advantage_tpr, "
                            "advantage_fpr and advantage_threshold; advantage is advantage_held_out floored at 0 (a "
                            "held-out difference below 0 is chance); empirical_epsilon_lower is null when the releases "
                            "are told apart with certainty (no finite bound)"),
            "notes": self.notes + ["An audit is a simulation on the data for the data holder or an ethics board, not a "
                                   "release: it is not charged to the ledger and its numbers must not be published."],
            **self._record_fields(),
        }

    def _record_fields(self) -> dict[str, Any]:
        """What was attacked: the whole record (``attacked_fields``: every field path scored, ``record_trials``) or
        the mechanism's output only; and the attack on the output alone beside a record's."""
        fields = self.attacked_fields
        out: dict[str, Any] = {"attacked": "record" if self.record is not None else "output",
                               "attacked_fields": fields, "attacked_fields_count": len(fields)}
        if self.record is None:
            out.update({"record_trials": None, "record_note": (
                "No reader makes a release record of this mechanism here, so the attack scores the mechanism's output "
                "only (attacked_fields: its columns), not what a release would publish around it.")})
            return out
        r, o = self.record, self.attack
        out.update({
            "record_trials": r.trials, "record_kind": r.kind, "record_source": r.source,
            "varying_fields_count": r.varying, "separating_fields": list(r.separating),
            "record_rederives": r.rederives,
            "record_note": (
                f"The attack scores every field of the record a release would make ({r.kind} reader: released, derived "
                f"and public inputs, each warning's presence), on {r.trials} runs per data set"
                + (f", fewer than the {self.trials} runs of the mechanism's output (a reader runs once per record)"
                   if r.trials < self.trials else "")
                + "; the attack on the mechanism's output alone is output_attack, and within_charge needs both."
                + (" separating_fields: fields whose values on D and on D' never overlapped in these runs."
                   if r.separating else "")
                + (" The records do not re-derive from their released part and public inputs alone (record_rederives "
                   "false): what people read depends on something else, such as the data." if r.rederives is False
                   else "")),
            "output_attack": {
                "trials": self.trials, "held_out_runs": o.runs, "attacked_fields_count": len(self.output_fields),
                "empirical_epsilon_lower": None if self.certain else o.epsilon_lower,
                "empirical_epsilon_lower_from_runs": o.epsilon_lower, "tpr": o.tpr, "fpr": o.fpr,
                "score": o.score, "advantage": o.advantage, "advantage_lower": o.advantage_lower,
                "advantage_upper": o.advantage_upper, "advantage_score": o.adv_score, "auc": o.auc},
        })
        return out


def _plain_sentence(result: AuditResult) -> str:
    """The audit in one sentence: the strongest attack's advantage, quoted at its 95% upper confidence limit
    ("at most"), with its point estimate and AUC, then the advantage the charged epsilon allows."""
    eps = result.cost.epsilon
    a = result.headline
    label = result.cost.protects == GROUP_LABEL
    what = (f"which group this patient belongs to ({result.target.group} or {result.target.new_group})" if label
            else "whether this patient is in the data")
    found = (f"In this simulation, the strongest attack{' on the whole release record' if result.record else ''} could "
             f"tell {what} with at most {100 * a.advantage_upper:.0f}% "
             f"advantage over a coin toss (95% upper confidence limit; point estimate {100 * max(a.advantage, 0.0):.0f}%, "
             f"AUC {a.auc:.2f})")
    if result.certain:
        found += "; in fact the two possible releases never coincide, so an attacker is right every time"
    if eps is None:
        return (f"{found}; this method has no formal guarantee, so nothing limits what an attacker who knows everyone "
                "else's record can learn.")
    if math.isinf(eps):
        return f"{found}; this release is not private, so no guarantee limits an attacker who knows everyone else's record."
    if not result.formal_guarantee:
        return (f"{found}. This release is {result.as_run['sentence']}. No guarantee limits what an attacker who knows "
                "everyone else's record can learn, whatever the epsilon charged.")
    approx = " if the sampler had converged" if result.cost.guarantee != EXACT else ""
    return (f"{found}; the guarantee of epsilon {eps:g}{approx} is that an attacker who knows everyone else's record "
            f"could tell {what} with at most {100 * advantage_bound(eps):.0f}% advantage.")


# ------------------------------------------------------------------------------------------- adapters
@dataclass
class Released:
    """R releases on D and on D' as (R, q) arrays, the coordinates nearest the target, optional curves."""

    released_in: np.ndarray
    released_out: np.ndarray
    focus: dict[str, np.ndarray]
    curves_in: np.ndarray | None = None
    curves_out: np.ndarray | None = None
    grid_points: int | None = None
    notes: list[str] = field(default_factory=list)
    fields: list[str] | None = None  # a name per column of the released arrays (``output.counts[3]``)


class Adapter:
    """What the audit needs from an analysis: a mechanism, its cost, a default target and the releases; and, when a
    reader makes its release record, the :class:`~dpsurv_core.audit.record.Publisher` that makes it again."""

    analysis: str = ""
    mechanism_name: str = ""
    cohort: Cohort
    public: PublicParameters
    publisher: Publisher | None = None

    @property
    def cost(self) -> PrivacyCost:
        raise NotImplementedError

    @property
    def label_only(self) -> bool:
        return self.cost.protects == GROUP_LABEL or self.cost.neighbouring == CHANGE_LABEL

    def default_target(self) -> Target:
        raise NotImplementedError

    def disclosures(self) -> list:
        """What the release discloses besides its output (the public parameters a curve release uses, read off the
        data, ...)."""
        return list(self.public.disclosures(CURVE_PARAMETERS))

    def target(self, row: int | None) -> Target:
        if row is None:
            return self.default_target()
        row, _ = check_row(self.cohort, int(row))
        self.check_target(row)
        cats = (tuple(self.public.group_categories) or tuple(self.cohort.groups)) if self.label_only else None
        return user_target(self.cohort, row, cats)

    def check_target(self, row: int) -> None:
        """Refuse a row the analysis never sees (e.g. dropped for a missing covariate)."""

    def neighbour(self, target: Target) -> Cohort:
        return relabelled(self.cohort, target) if self.label_only else without(self.cohort, target)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        raise NotImplementedError


def _noises(seed: int) -> tuple[SimulationNoise, SimulationNoise]:
    a, b = np.random.SeedSequence(int(seed)).spawn(2)
    return SimulationNoise(a), SimulationNoise(b)


def _tick(progress: Progress | None, frac: float, text: str) -> None:
    if progress is not None:
        progress(float(min(max(frac, 0.0), 1.0)), text)


def _broadcast(a: np.ndarray, trials: int) -> np.ndarray:
    return np.broadcast_to(a, (trials, *a.shape[1:])).copy() if a.shape[0] == 1 and trials > 1 else a


class CurveAdapter(Adapter):
    """Survival-curve mechanisms: released counts (when the mechanism has them), the
    mechanism's raw histograms in ``extra`` (adaptive-km), and the curves at the public grid points."""

    analysis = "km"
    RAW_EXTRA = ("selection_counts", "block_events", "block_censored", "beyond_grid")

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        self.mechanism, self.cohort, self.public = mechanism, cohort, public
        self.mechanism_name = mechanism.name
        if self.label_only and cohort.group is None:
            raise ParameterError("A label-only mechanism (rrr) randomizes the group label: choose a group column.")

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def exposure(self) -> Any:
        """:func:`dpsurv_core.audit.exposure.exposure` of this release, computed once (the default target and the
        result both read it)."""
        from dpsurv_core.audit.exposure import exposure

        if getattr(self, "_exposure", None) is None:
            self._exposure = exposure(self.mechanism, self.cohort, self.public)
        return self._exposure

    def exposed_units(self) -> np.ndarray | None:
        """For a deterministic disclosure-control rule, the units whose removal changes its released table (None
        otherwise, or when nobody is exposed). Such a rule hides the others: the attack targets an exposed one, else
        the audit would report a safe 0% while others are exposed with certainty."""
        from dpsurv_core.audit.exposure import _is_disclosure_control

        if _is_disclosure_control(self.mechanism) and getattr(self.mechanism, "deterministic", False):
            expo = self.exposure()
            return expo.mask if expo.exposed else None
        return None

    def default_target(self) -> Target:
        return select_curve_target(self.cohort, self.public, self.label_only, self.exposed_units())

    def _run(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> tuple[dict[str, np.ndarray], np.ndarray]:
        rel = self.mechanism.compute(cohort, self.public, noise, trials)
        R = trials
        parts: dict[str, np.ndarray] = {}
        if rel.counts is not None:
            parts["counts"] = _broadcast(rel.counts.cells().reshape(rel.counts.cells().shape[0], -1).astype(float), R)
        for key in self.RAW_EXTRA:
            v = rel.extra.get(key) if isinstance(rel.extra, dict) else None
            if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == R and np.issubdtype(v.dtype, np.number):
                parts[key] = v.reshape(R, -1).astype(float)
        surv = rel.curves.at_times(self.public.grid.points, "survival")
        surv = _broadcast(surv, R)
        parts["curve"] = surv.reshape(R, -1)
        return parts, surv

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        other = self.neighbour(target)
        _tick(progress, 0.1, f"{trials} releases on D")
        p_in, s_in = self._run(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} releases on D'")
        p_out, s_out = self._run(other, n_out, trials)
        keys = [k for k in p_in if k in p_out and p_in[k].shape == p_out[k].shape]
        offsets = np.cumsum([0] + [p_in[k].shape[1] for k in keys])
        focus: dict[str, np.ndarray] = {}
        exact_in = exact_counts(self.cohort, self.public.grid, self.public)
        exact_out = exact_counts(other, self.public.grid, self.public)
        for i, k in enumerate(keys):
            if k == "counts" and p_in[k].shape[1] == exact_in.cells().size:
                diff = np.flatnonzero(exact_in.cells() != exact_out.cells())
                focus["target's cells"] = offsets[i] + diff
            if k == "curve":
                ref_in = estimate(tile_trials(exact_in, 1)).survival.reshape(-1)
                ref_out = estimate(tile_trials(exact_out, 1)).survival.reshape(-1)
                diff = np.flatnonzero(np.abs(ref_in - ref_out) > 1e-12)
                if diff.size:
                    focus["curve where the target matters"] = offsets[i] + diff
        names = [f"output.{k}[{j}]" for k in keys for j in range(p_in[k].shape[1])]
        return Released(np.concatenate([p_in[k] for k in keys], 1), np.concatenate([p_out[k] for k in keys], 1),
                        focus, s_in, s_out, int(self.public.grid.bins), fields=names)


class LogrankAdapter(CurveAdapter):
    """Log-rank tests computed from a curve mechanism's released counts (post-processing): the pairwise
    and overall chi-square statistics and the overall observed-minus-expected per group."""

    analysis = "logrank"

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        super().__init__(mechanism, cohort, public)
        if cohort.group is None or len(groups_of(cohort, public) or ()) < 2:
            raise ParameterError("A log-rank audit needs a group column with two or more groups: pass --group.")

    def default_target(self) -> Target:
        if self.label_only:
            return select_curve_target(self.cohort, self.public, True)
        return select_logrank_target(self.cohort, self.public, self.exposed_units())

    def _stats(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> np.ndarray:
        rel = self.mechanism.compute(cohort, self.public, noise, trials)
        if rel.counts is None:
            raise ParameterError(f"{self.mechanism_name} releases no counts, so there is no log-rank test to audit: "
                                 "choose laplace-counts, rrr or adaptive-km.")
        with np.errstate(all="ignore"):
            pairs = logrank.pairwise(rel.counts)
            cols = [t.statistic for t in pairs]
            ov = logrank.overall(rel.counts)
            cols.append(ov.statistic)
            oe = (ov.observed - ov.expected).reshape(ov.statistic.shape[0], -1)
        self._names = ([f"output.statistic[{t.group_a} vs {t.group_b}]" for t in pairs] + ["output.statistic[overall]"]
                       + [f"output.observed_minus_expected[{j}]" for j in range(oe.shape[1])])
        out = np.column_stack([np.asarray(c, float).reshape(-1, 1) for c in cols] + [oe])
        return _broadcast(np.nan_to_num(out, nan=0.0), trials)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        _tick(progress, 0.1, f"{trials} log-rank releases on D")
        a = self._stats(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} log-rank releases on D'")
        b = self._stats(self.neighbour(target), n_out, trials)
        return Released(a, b, {"all tests": np.arange(a.shape[1])},
                        notes=["Log-rank tests are post-processing of the released counts; no curve is released, so "
                               "there are no influential points."], fields=list(self._names))


class WeibullAdapter(Adapter):
    """Weibull mechanisms: the released (shape, normalised scale); curves S(t) on the grid."""

    analysis = "weibull"

    def __init__(self, mechanism: Any, cohort: Cohort, public: PublicParameters) -> None:
        self.mechanism, self.cohort, self.public = mechanism, cohort, public
        self.mechanism_name = mechanism.name
        self.sample = mechanism.prepare(cohort)

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def default_target(self) -> Target:
        return select_weibull_target(self.cohort, self.sample)

    def disclosures(self) -> list:
        return [*self.public.disclosures(("horizon",)), *self.mechanism.disclosures(self.sample)]

    def _run(self, cohort: Cohort, noise: SimulationNoise, trials: int) -> tuple[np.ndarray, np.ndarray]:
        from dpsurv_core.weibull.model import survival_curve

        est = self.mechanism.compute_many(self.mechanism.prepare(cohort), noise, trials)
        q = np.column_stack([est.shape, est.scale_normalised]).astype(float)
        curves = survival_curve(self.public.grid.points, est.shape, est.scale).reshape(trials, 1, -1)
        return _broadcast(q, trials), _broadcast(curves, trials)

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        _tick(progress, 0.1, f"{trials} Weibull releases on D")
        a, ca = self._run(self.cohort, n_in, trials)
        _tick(progress, 0.45, f"{trials} Weibull releases on D'")
        b, cb = self._run(self.neighbour(target), n_out, trials)
        return Released(a, b, {"shape and scale": np.arange(2)}, ca, cb, int(self.public.grid.bins),
                        fields=["output.shape", "output.scale_normalised"], notes=["Influential points compare the released Weibull curves S(t) = exp(-(t/scale)^shape) "
                               "on the public grid."])


class NonPrivateRegression:
    """The non-private regularised fit w*(Lambda), repeated: for calibrating the audit only."""

    name = "nonprivate"

    def __init__(self, lam: float) -> None:
        self.lam = lam

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(math.inf, protects="nothing (non-private)", neighbouring="none")

    def compute(self, pp: Any, noise: Any, trials: int = 1) -> Any:
        from dpsurv_core.regression.model import minimise

        w = minimise(pp, self.lam)
        return type("Fit", (), {"W": np.repeat(w[None, :], trials, axis=0)})()


class _Design(TypedDict):
    """The public design a regression audit keeps for D and D' (keywords of ``person_period``)."""

    horizon: float
    intervals: int
    knots: int


class RegressionAdapter(Adapter):
    """Discrete-time regression mechanisms: the released coefficient vector W (R, dim).

    D' keeps D's public design: the same horizon, intervals, knots, covariate encoding and public
    normaliser n, so the mechanism (calibrated on those constants) is the same object on both."""

    analysis = "regression"

    def __init__(self, kind: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                 covariates: tuple[str, ...], lam: float = 0.01, intervals: int | None = None,
                 knots: int | None = None, ranges: dict[str, tuple[float, float]] | None = None,
                 n_public: int | None = None, **psgld: Any) -> None:
        from dpsurv_core.regression.person_period import DEFAULT_INTERVALS, DEFAULT_KNOTS, person_period

        if not covariates:
            raise ParameterError("A regression audit needs covariates: pass --covariates, for example age,sex.")
        self.cohort, self.public, self.covariates = cohort, public, tuple(covariates)
        self.design = _Design(horizon=public.horizon, intervals=intervals or DEFAULT_INTERVALS,
                              knots=knots or DEFAULT_KNOTS)
        self.pp = person_period(cohort, self.covariates, ranges=ranges, n_public=n_public, **self.design)
        enc = self.pp.encoding
        self.ranges = {c.source: (c.centre - c.half_range, c.centre + c.half_range)
                       for c in enc.columns if c.kind == "numeric"}
        levels: dict[str, list[str]] = {}
        for c in enc.columns:
            if c.kind == "categorical":
                levels.setdefault(c.source, []).append(str(c.level))
        frame = cohort.covariates
        self.levels = {}
        for src, levs in levels.items():  # the reference level (dropped from the encoding) comes first
            allv = sorted(frame[src].dropna().astype(str).unique())
            ref = [v for v in allv if v not in levs][:1]
            self.levels[src] = tuple(ref + levs)
        self.lam = lam
        if not catalogue.get(catalogue.REGRESSION, kind).private:
            self.mechanism: Any = NonPrivateRegression(lam)
        else:
            self.mechanism = catalogue.get(catalogue.REGRESSION, kind).build(epsilon, pp=self.pp, lam=lam, **psgld)
        self.kind = kind
        self.mechanism_name = kind

    @property
    def cost(self) -> PrivacyCost:
        return self.mechanism.cost

    def _complete(self) -> np.ndarray:
        return self.cohort.covariates[list(self.covariates)].notna().all(axis=1).to_numpy()

    def disclosures(self) -> list:
        return [*self.public.disclosures(("horizon",)), *self.pp.disclosures]  # its design's own ranges and levels

    def check_target(self, row: int) -> None:
        if not self._complete()[row]:
            missing = [c for c in self.covariates if pd.isna(self.cohort.covariates[c].iloc[row])]
            raise ParameterError(f"Row {row} has no value of {missing[0]!r}, so the regression drops it and it cannot be "
                                 "audited: choose another row.")

    def default_target(self) -> Target:
        return select_regression_target(self.cohort, self.pp, self.lam, self._complete())

    def _pp(self, cohort: Cohort) -> Any:
        from dpsurv_core.regression.person_period import person_period

        return person_period(cohort, self.covariates, ranges=self.ranges, levels=self.levels,
                             n_public=self.pp.n_public, **self.design)

    def _run(self, pp: Any, noise: SimulationNoise, trials: int, progress: Callable[[float], None] | None) -> np.ndarray:
        from dpsurv_core.regression.mechanisms import PSGLD

        if isinstance(self.mechanism, PSGLD):
            # The sampler's vectorised path shares one minibatch sequence among the chains of a call, so
            # its chains are not independent draws; the binomial bounds need independent runs, so every
            # run here is its own chain with its own spawned seed (a loop over runs, ~0.1 s per chain).
            seq = noise.rng.bit_generator.seed_seq
            assert isinstance(seq, np.random.SeedSequence)  # simulation generators are seeded (SimulationNoise)
            seeds = seq.spawn(trials)
            out = np.empty((trials, pp.dim))
            for i, s in enumerate(seeds):
                out[i] = self.mechanism.compute(pp, SimulationNoise(s), 1).W[0]
                if progress is not None:
                    progress((i + 1) / trials)
            return out
        rel = self.mechanism.compute(pp, noise, trials)
        info = getattr(rel, "diagnostics", {}).get("information")  # the non-private fit has none
        if info is None:
            return np.asarray(rel.W, float)
        iu = np.triu_indices(pp.dim)  # objective perturbation with an information share also releases H~
        return np.hstack([np.asarray(rel.W, float), np.asarray(info, float)[:, iu[0], iu[1]]])

    def record_publisher(self) -> Publisher | None:
        """The record a ``regression`` release of this mechanism would make (:mod:`dpsurv_core.regression.readout`):
        one run on the data set's person-period design (D' keeps D's public design), its noisy output as released,
        and the regression reader with the public inputs of D's design. None without noise or without a reader."""
        try:
            from dpsurv_core.regression import readout
        except ImportError:
            return None
        if not catalogue.get(catalogue.REGRESSION, self.kind).private or not self.cost.private:
            return None
        mech = self.mechanism
        inputs = readout.public_inputs(self.kind, mech, self.pp)
        designs: dict[int, tuple[Cohort, Any]] = {id(self.cohort): (self.cohort, self.pp)}

        def draw(cohort: Cohort, noise: Any) -> dict[str, Any]:
            if id(cohort) not in designs:
                designs[id(cohort)] = (cohort, self._pp(cohort))
            return readout.released_part(mech.compute(designs[id(cohort)][1], noise, 1))

        return reader_publisher(readout.KIND, draw, inputs, REGRESSION_RECORD_TRIALS,
                                source="the regression release's public inputs (regression.readout.public_inputs of "
                                       "D's design) and its reader")

    def releases(self, target: Target, trials: int, seed: int, progress: Progress | None = None) -> Released:
        n_in, n_out = _noises(seed)
        pp_out = self._pp(self.neighbour(target))
        _tick(progress, 0.1, f"{trials} regression releases on D")
        a = self._run(self.pp, n_in, trials, None if progress is None else
                      lambda f: _tick(progress, 0.1 + 0.35 * f, f"pSGLD chains on D: {f:.0%}"))
        _tick(progress, 0.45, f"{trials} regression releases on D'")
        b = self._run(pp_out, n_out, trials, None if progress is None else
                      lambda f: _tick(progress, 0.45 + 0.35 * f, f"pSGLD chains on D': {f:.0%}"))
        notes = ["The released quantity is the coefficient vector (covariates and baseline spline); no curve is "
                 "released, so there are no influential points."]
        stats = {"coefficients": np.arange(self.pp.p), "all": np.arange(a.shape[1])}
        if a.shape[1] > self.pp.dim:
            stats["information matrix"] = np.arange(self.pp.dim, a.shape[1])
            notes.append("With an information share the release is the coefficients and the noisy information matrix: "
                         "the attack scores both (the 'all' statistic) as well as each alone.")
        if self.cost.guarantee != EXACT:
            notes.append("pSGLD is approximate DP (MCMC): its epsilon holds only if the chain samples the exponential "
                         "mechanism's density exactly, so the audit may exceed it without a bug in the accounting. "
                         "Each run is an independent chain (about 0.1 s each on lung).")
        names = [f"output.w[{j}]" for j in range(self.pp.dim)]
        names += [f"output.information[{j}]" for j in range(a.shape[1] - self.pp.dim)]
        return Released(a, b, stats, notes=notes, fields=names)


# ------------------------------------------------------------------------------------------- driver
def _record_runs(adapter: Adapter, trials: int, record_trials: int | None = None) -> int:
    """Runs per data set of the record attack: ``record_trials`` when given (0: no record attack), else the
    publisher's default (:data:`~dpsurv_core.audit.record.RECORD_TRIALS`) or ``trials`` when fewer; 0 without a
    publisher."""
    if adapter.publisher is None:
        return 0
    if record_trials is None:
        return min(int(trials), int(adapter.publisher.trials))
    record_trials = int(record_trials)
    if record_trials and not 4 <= record_trials <= MAX_TRIALS:
        raise ParameterError(f"--record-trials must be 0 (no record attack) or between 4 and {MAX_TRIALS}, got "
                             f"{record_trials}.")
    return record_trials


def audit(adapter: Adapter, trials: int = DEFAULT_TRIALS, seed: int = 0, target_row: int | None = None,
          progress: Progress | None = None, disclosures: Sequence[Any] = (), record_trials: int | None = None
          ) -> AuditResult:
    """Run the audit: target, R releases on D and D', influential points and the distinguishing attack.
    ``disclosures``: what loading the data disclosed (groups cut at a value read off the data, ...), before the
    analysis's own (:meth:`Adapter.disclosures`); the guarantee as run reads them all. With a publisher on the
    adapter, the whole record a release would make is attacked too, on ``record_trials`` runs per data set
    (:func:`_record_runs`: by default the publisher's, at most ``trials``; 0 leaves the record out).

    Parameters
    ----------
    adapter : Adapter
        The analysis and mechanism to audit (:func:`make_adapter`).
    trials : int, default 1000
        Simulated releases on each of D and D'.
    seed : int, default 0
        Seed of the simulation noise (an audit is a simulation: nothing is charged or recorded).
    target_row : int, optional
        The target subject's row; default the most influential subject (:mod:`~dpsurv_core.audit.targets`).
    progress : callable, optional
        Called with ``(share done, sentence)`` as the runs go.
    disclosures : sequence, default ()
        What loading the data disclosed, before the analysis's own.
    record_trials : int, optional
        Runs per data set of the attack on the whole record (default the publisher's, at most ``trials``; 0: none).

    Returns
    -------
    AuditResult
        The target, the attack's TPR/FPR with Clopper-Pearson bounds, the empirical epsilon beside the charged one,
        the influential points and the guarantee as run.

    References
    ----------
    .. [1] Jagielski M., Ullman J. & Oprea A. (2020), Auditing differentially private machine learning: how private
       is private SGD?, NeurIPS.
    """
    trials = int(trials)
    if not 4 <= trials <= MAX_TRIALS:
        raise ParameterError(f"--trials must be between 4 and {MAX_TRIALS}, got {trials}.")
    n_records = _record_runs(adapter, trials, record_trials)
    public = getattr(adapter, "public", None)
    if public is not None:  # trials x bins x groups on D and on D': within the simulation budget before running
        limits.check_simulation(trials, public.grid.bins, len(adapter.cohort.groups), "runs")
    _tick(progress, 0.0, "choosing the target")
    target = adapter.target(target_row)
    rel = adapter.releases(target, trials, int(seed), progress)
    _tick(progress, 0.8, "distinguishing attack on the mechanism's output")
    attack = distinguish(rel.released_in, rel.released_out, rel.focus)
    record = None
    if n_records and adapter.publisher is not None:
        _tick(progress, 0.8, f"{n_records} release records on D and on D'")
        record = record_audit(adapter.publisher, adapter.cohort, adapter.neighbour(target), n_records, int(seed),
                              None if progress is None else
                              lambda f: _tick(progress, 0.8 + 0.1 * f, f"release records: {f:.0%}"))
    infl = per = None
    alone = None
    if rel.curves_in is not None and rel.curves_out is not None:
        infl, per = influential_points(rel.curves_in, rel.curves_out)
        if len(rel.curves_in) > 1:
            alone = influential_points(rel.curves_in, np.roll(rel.curves_in, 1, axis=0))[1]
    notes = list(rel.notes)
    certain = _never_overlap(rel.released_in, rel.released_out)
    expo = diff = None
    if isinstance(adapter, CurveAdapter):
        from dpsurv_core.audit.exposure import differencing

        _tick(progress, 0.92, "exposure over every subject and a differencing pair")
        expo = adapter.exposure()
        diff = differencing(adapter.mechanism, adapter.cohort, adapter.public, target.row, int(seed))
    if adapter.label_only:
        notes.append("This mechanism protects the group label only: D' gives the target another group label; times "
                     "and events are published as they are.")
    _tick(progress, 1.0, "done")
    c = adapter.cohort
    fields = rel.fields or [f"output[{j}]" for j in range(np.asarray(rel.released_in).shape[1])]
    return AuditResult(adapter.analysis, adapter.mechanism_name, adapter.cost, target, trials, int(seed), attack,
                       infl, per, rel.grid_points, c.name, c.n_subjects, notes, certain, expo, diff,
                       _unique([*disclosures, *adapter.disclosures()]), alone, record, fields)


def _unique(disclosures: list[Any]) -> list[Any]:
    """Each disclosure once (the data's and the analysis's lists can both name a covariate range)."""
    seen: dict[str, Any] = {}
    for d in disclosures:
        key = repr(sorted((d if isinstance(d, dict) else d.to_dict()).items()))
        seen.setdefault(key, d)
    return list(seen.values())


def _never_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """True when the releases on D are all one value, those on D' all another: a deterministic release that the
    target changes, so the neighbouring outputs never overlap (empirical epsilon infinite, reported as null)."""
    if a.size == 0 or b.size == 0:
        return False
    same_a = bool(np.all(a == a[:1]))
    same_b = bool(np.all(b == b[:1]))
    return same_a and same_b and not np.array_equal(a[:1], b[:1])


def curve_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters, **options: Any) -> Any:
    """A curve mechanism by name from the mechanism catalogue, as the ``km`` command builds it (time-indexed
    options: alpha, tau_start, tau_end, window, edge_mode, base_epsilon; other keywords are ignored), without
    noise-aware bands: the audit reads the curves and counts only (the bands are post-processing, never attacked)."""
    mech: Any = catalogue.get(catalogue.CURVES, name).build(epsilon, **context(cohort, public), **options)
    if getattr(mech, "noise_in_bands", False):
        mech.noise_in_bands = False
    return mech


def curve_publisher(name: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                    tests: dict[str, Any] | None = None, reading: dict[str, Any] | None = None,
                    **options: Any) -> Publisher | None:
    """The record a ``km`` release of curve mechanism ``name`` (a ``logrank`` release with ``tests``, e.g.
    ``{"null_draws": None}``) would make, as :func:`dpsurv_core.cli.km.plan` builds it: the mechanism built from the
    catalogue with the release's context and options, one run drawn by its ``draw``, and the curves (log-rank)
    reader on it with :func:`dpsurv_core.curves.readout.public_inputs`, declared from ``public`` and ``reading``
    (conf_type, group names, time unit, landmarks, RMST time; default R's log band and the group codes). None when
    the mechanism draws nothing to read (nonprivate)."""
    from dpsurv_core.curves import readout

    entry = catalogue.get(catalogue.CURVES, name)
    if not entry.private or (entry.formal and (epsilon is None or not math.isfinite(epsilon))):
        return None  # no noise: not a release, so no record (the numbers are for the data holder's eyes only)
    build = {**context(cohort, public), **{k: v for k, v in options.items() if k in entry.options and v is not None}}
    mech: Any = entry.build(epsilon, **build)  # a curve mechanism with draw and read (the base type has neither)
    if not hasattr(mech, "draw") or not hasattr(mech, "read"):
        return None
    groups = groups_of(cohort, public) or ("all",)
    reading = {"conf_type": "log", "names": {str(g): str(g) for g in groups}, "time_unit": cohort.time_unit,
               "landmarks": None, "rmst": None, **(reading or {})}
    inputs = readout.public_inputs(name, epsilon, build, public, False, reading)
    if tests is not None:
        inputs["tests"] = dict(tests)
    noiseless: Any = entry.build(math.inf, **build) if entry.formal else mech  # to find where the target shows
    return reader_publisher("curves" if tests is None else "logrank",
                            lambda c, noise: mech.draw(c, public, noise, 1, False), inputs,
                            source=f"the {'km' if tests is None else 'logrank'} release's public inputs "
                                   "(curves.readout.public_inputs) and the catalogue's mechanism",
                            exact=lambda c, noise: noiseless.draw(c, public, noise, 1, False))


def _weibull_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters, **options: Any) -> Any:
    """A Weibull mechanism by name from the mechanism catalogue, with the public horizon of ``public``."""
    keep = {k: v for k, v in options.items() if k in ("omega", "gamma", "rungs", "blocks", "block_size") and v is not None}
    entry = catalogue.get(catalogue.WEIBULL, name)
    return entry.build(epsilon if entry.private else None, horizon=public.horizon,
                       rows_per_subject=cohort.rows_per_subject, **keep)


WEIBULL_RECORD_TRIALS = 60  # the Weibull reader simulates its intervals (about 0.3 s a record for lsp-tll on lung)
REGRESSION_RECORD_TRIALS = 60  # its reader simulates the intervals (about 0.4 s a record with an information share)


def _prepared(mech: Any) -> Callable[[Cohort], Any]:
    """``mech.prepare`` of a cohort, once per cohort (the record runs draw one release at a time)."""
    memo: dict[int, tuple[Cohort, Any]] = {}

    def prepare(cohort: Cohort) -> Any:
        if id(cohort) not in memo:
            memo[id(cohort)] = (cohort, mech.prepare(cohort))
        return memo[id(cohort)][1]

    return prepare


def _weibull_publisher(mech: Any, cohort: Cohort, public: PublicParameters, n_public: int | None = None,
                      censoring: float | None = None) -> Publisher | None:
    """The record a ``weibull`` release of ``mech`` would make (:mod:`dpsurv_core.weibull.readout`): one run of
    ``release_many``, its estimates as released, and the Weibull reader's intervals, warnings and curves from the
    public inputs. The intervals simulate cohorts of the declared ``n_public`` subjects (default: D's count, which a
    release must declare or accept as a disclosure) with the declared ``censoring`` share (default: read off D, rounded
    to 5%): the same on D and on D', as public inputs are. None for a mechanism without noise (mle) or when this
    version has no Weibull reader."""
    try:
        from dpsurv_core.weibull import readout
    except ImportError:
        return None
    from dpsurv_core.weibull.inference import censoring_share, check_share

    if not getattr(mech, "private", True) or not mech.cost.private:
        return None
    sample = mech.prepare(cohort)
    blocks_from_data = hasattr(mech, "n_blocks") and getattr(mech, "blocks", None) is None
    blocks = mech.n_blocks(sample) if blocks_from_data else getattr(mech, "blocks", None)
    n = cohort.n_subjects if n_public is None else int(n_public)
    share = censoring_share(sample) if censoring is None else check_share(float(censoring))
    inputs = readout.public_inputs(mech, n, share, cohort.time_unit, blocks=blocks,
                                   horizon_from_data=public.horizon_from_data, n_from_data=n_public is None,
                                   censoring_from_data=censoring is None, blocks_from_data=blocks_from_data)
    prepare = _prepared(mech)
    return reader_publisher(readout.KIND, lambda c, noise: readout.released_of(mech.compute_many(prepare(c), noise, 1)),
                            inputs, WEIBULL_RECORD_TRIALS,
                            source="the weibull release's public inputs (weibull.readout.public_inputs: declared n "
                                   "and censoring share, the same on D and D') and its reader")


FAMILIES = {"km": catalogue.CURVES, "logrank": catalogue.CURVES, "weibull": catalogue.WEIBULL,
            "regression": catalogue.REGRESSION}
_COMMANDS = {"km": (catalogue.CURVES, "km"), "logrank": (catalogue.CURVES, "logrank"),
             "weibull": (catalogue.WEIBULL, "weibull"), "regression": (catalogue.REGRESSION, "audit")}


def mechanisms_for(analysis: str) -> list[str]:
    """Mechanism ids the audit accepts for an analysis (the catalogue's)."""
    if analysis not in _COMMANDS:
        raise ParameterError(f"Unknown analysis {analysis!r}: choose one of {', '.join(ANALYSES)}.")
    return catalogue.ids(*_COMMANDS[analysis])


def make_adapter(analysis: str, mechanism: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                 record: bool = False, **options: Any) -> Adapter:
    """The adapter for an analysis and a mechanism name (options as in the CLI, by keyword). ``record``: give it the
    :class:`~dpsurv_core.audit.record.Publisher` of the record a release would make, so that :func:`audit` attacks the
    whole record too (the ``audit`` command and the Privacy audit page do; a reader runs once per record, so it is
    left to the caller: the DP test suite's thousand-run audits of the mechanisms' outputs stay fast without it)."""
    names = mechanisms_for(analysis)
    if mechanism not in names:
        raise ParameterError(f"The {analysis} audit has no mechanism {mechanism!r}: choose one of {', '.join(names)}.")
    reading = options.pop("reading", None)  # how the release would be read (curves: conf_type, group names, ...)
    if analysis in ("km", "logrank"):
        mech = curve_mechanism(mechanism, epsilon, cohort, public, **options)
        adapter = CurveAdapter(mech, cohort, public) if analysis == "km" else LogrankAdapter(mech, cohort, public)
        if record:
            adapter.publisher = curve_publisher(mechanism, epsilon, cohort, public,
                                                None if analysis == "km" else {"null_draws": None}, reading, **options)
        return adapter
    if analysis == "weibull":
        wb = WeibullAdapter(_weibull_mechanism(mechanism, epsilon, cohort, public, **options), cohort, public)
        share = options.get("censoring")
        if isinstance(share, (list, tuple)):  # --censoring as the curve commands parse it: one share for all
            share = share[0] if len(share) == 1 else None
        if record:
            wb.publisher = _weibull_publisher(wb.mechanism, cohort, public, options.get("n_public"), share)
        return wb
    own = set(catalogue.get(catalogue.REGRESSION, mechanism).options) - {"lam"}
    psgld = {k: v for k, v in options.items() if k in own and v is not None}
    lam = options.get("lam")
    rg = RegressionAdapter(mechanism, epsilon, cohort, public, tuple(options.get("covariates") or ()),
                           lam=DEFAULT_LAMBDA if lam is None else float(lam),
                           intervals=options.get("intervals"), knots=options.get("knots"),
                           ranges=options.get("ranges"), n_public=options.get("n_public"), **psgld)
    if record:
        rg.publisher = rg.record_publisher()
    return rg

