"""The result of an audit (:class:`AuditResult`): the attacks on the mechanism's output and on the whole release
record, the headline, the influential points, its tables and its one plain sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsurv_core.audit.attack import LEVEL, Attack, advantage_bound
from dpsurv_core.audit.record import RecordAudit
from dpsurv_core.audit.targets import THRESHOLDS, Target
from dpsurv_core.privacy.ledger import EXACT, GROUP_LABEL, PrivacyCost, as_run


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
