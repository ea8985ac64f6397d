"""The composed view of one data set's releases: its entries and its cap (:class:`Ledger`).

Sequential composition adds epsilons (and deltas). Entries that share a ``parallel_key`` were released by one
mechanism on disjoint groups of subjects; they compose in parallel (the max). Totals are kept per protected unit: a
label-only epsilon (randomized response) says nothing about the subject, so it is never added to the subject-level
total. The persistent ledger that keeps these entries is :class:`dpsurv_core.privacy.ledger.LedgerStore`.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.chain import _json_default
from dpsurv_core.privacy.cost import (
    SUBJECT,
    PrivacyCost,
    as_run,
    charged_sentence,
    not_dp_disclosure,
)


@dataclass
class LedgerEntry:
    """One release as the ledger records it: what ran, on which data set, at what cost.

    Parameters
    ----------
    mechanism, analysis, dataset : str
        The mechanism's id, the analysis, and the data set (its fingerprint key).
    parameters : dict
        The mechanism's public parameters.
    cost : PrivacyCost
        What the release costs (epsilon, delta, guarantee, what it protects).
    parallel_key : str, optional
        Releases sharing a key compose in parallel (disjoint subjects).
    note : str, default ""
        A free note.
    disclosures : list of dict
        The release's disclosures (:meth:`dpsurv_core.data.public.Disclosure.to_dict`).
    time : str
        When it was recorded (UTC, ISO 8601).
    record_id : int, optional
        The ledger database's record id, once recorded.
    command : str, default ""
        The command line that runs the same plan again as a new, charged release.
    """

    mechanism: str
    analysis: str
    dataset: str
    parameters: dict[str, Any]
    cost: PrivacyCost
    parallel_key: str | None = None
    note: str = ""
    disclosures: list[dict[str, Any]] = field(default_factory=list)  # Disclosure.to_dict() of the release
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    record_id: int | None = None  # the ledger database's record id, once recorded
    command: str = ""  # the command line that runs the same plan again as a new, charged release

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost"] = asdict(self.cost)
        return out

    def as_run(self) -> dict[str, Any]:
        """What this release guarantees as it was run, for a listing of records: the guarantee and what it protects
        (:func:`as_run`: none where a disclosure was not DP; "label only" for a label-only release), the sentence
        saying what was charged (:func:`charged_sentence`), whether the subject is still protected and, if not, why
        (:meth:`voids_subject_guarantee`, the reason :meth:`Ledger.subject_guarantee` gives), and the disclosures."""
        run = as_run(self.cost, self.disclosures)
        guarantee = run["guarantee"]
        if guarantee == self.cost.guarantee and self.cost.private and self.cost.protects != SUBJECT:
            guarantee = f"label only ({guarantee}): protects {self.cost.protects}, not the subject"
        void = self.voids_subject_guarantee()
        return {"guarantee": guarantee, "protects": run["protects"],
                "sentence": charged_sentence(self.cost, self.disclosures) if self.cost.formal else self.cost.sentence(),
                "subject_protected": void is None, "subject_unprotected_because": void,
                "disclosures": list(self.disclosures)}

    def voids_subject_guarantee(self) -> str | None:
        """Why this release leaves the subject without a DP guarantee, or None if it does not."""
        if not self.cost.formal:
            return (f"{self.mechanism} ({self.analysis}) is statistical disclosure control with no formal guarantee: "
                    "a subject whose removal changes its table is revealed to anyone who knows the other records")
        not_dp = not_dp_disclosure(self.disclosures)
        if not_dp:
            return f"{self.mechanism} ({self.analysis}) is not differentially private: {not_dp[1]}"
        if self.cost.protects not in (SUBJECT,):
            return (f"{self.mechanism} ({self.analysis}) protects {self.cost.protects}: the subject's times and events "
                    "are published as they are")
        return None


class Ledger:
    """Charges of a session, with an optional cap on the total epsilon per protected unit."""

    def __init__(self, cap: float | None = None) -> None:
        if cap is not None and not cap > 0:
            raise ParameterError(f"The budget cap must be a positive epsilon, got {cap}.")
        self.cap = cap
        self.entries: list[LedgerEntry] = []
        self.label_only_allowed = False  # a recorded act of the data holder (LedgerStore.allow_label_only)
        self.disclosure_control_allowed = False  # likewise (LedgerStore.allow_disclosure_control)

    @staticmethod
    def composed(entries: list[LedgerEntry]) -> PrivacyCost | None:
        """The entries' costs composed: releases sharing a ``parallel_key`` (disjoint parts of the data) in parallel,
        then everything in sequence (:meth:`PrivacyCost.__add__`, :meth:`PrivacyCost.parallel`); None when no entry
        has an epsilon (disclosure control composes with nothing)."""
        blocks: dict[Any, PrivacyCost] = {}
        total: PrivacyCost | None = None
        for e in entries:
            if not e.cost.formal:
                continue
            if e.parallel_key is None:
                total = e.cost if total is None else total + e.cost
            else:
                held = blocks.get(e.parallel_key)
                blocks[e.parallel_key] = e.cost if held is None else held.parallel(e.cost)
        for cost in blocks.values():
            total = cost if total is None else total + cost
        return total

    @staticmethod
    def _compose(entries: list[LedgerEntry], attr: str) -> float:
        total = Ledger.composed(entries)
        return 0.0 if total is None else float(getattr(total, attr))

    def totals(self) -> dict[str, dict[str, float]]:
        """Composed epsilon and delta per protected unit."""
        out: dict[str, dict[str, float]] = {}
        for unit in sorted({e.cost.protects for e in self.entries if e.cost.formal}):
            sub = [e for e in self.entries if e.cost.protects == unit]
            out[unit] = {"epsilon": self._compose(sub, "epsilon"), "delta": self._compose(sub, "delta")}
        return out

    def disclosure_control(self) -> list[LedgerEntry]:
        """Releases with no formal guarantee (statistical disclosure control): they have no epsilon to add up."""
        return [e for e in self.entries if not e.cost.formal]

    def void_reasons(self) -> list[str]:
        """Releases that leave the subject without a DP guarantee (label-only or not-DP releases); empty if none.

        Their epsilons still count against the cap, but no finite epsilon describes the subject's loss once one of
        them has been published (docs/mechanisms.md, honest accounting)."""
        return [f"release {e.record_id or i + 1}: {r}" for i, e in enumerate(self.entries)
                if (r := e.voids_subject_guarantee())]

    def subject_guarantee(self) -> str:
        """One sentence on what protects the subject now."""
        reasons = self.void_reasons()
        if reasons:
            return "none: " + "; ".join(reasons)
        return f"epsilon = {self.spent():.4g} under add/remove-one-subject neighbours"

    def spent(self, protects: str = SUBJECT) -> float:
        return self.totals().get(protects, {"epsilon": 0.0})["epsilon"]

    def remaining(self, protects: str = SUBJECT) -> float:
        return math.inf if self.cap is None else max(self.cap - self.spent(protects), 0.0)

    def would_exceed(self, entry: LedgerEntry) -> bool:
        if self.cap is None:
            return False
        trial = [e for e in self.entries if e.cost.protects == entry.cost.protects] + [entry]
        return self._compose(trial, "epsilon") > self.cap * (1 + 1e-12)

    def excess(self, entry: LedgerEntry) -> float:
        """By how much ``entry`` would take the composed total past the cap (0 when it fits or there is no cap)."""
        if self.cap is None:
            return 0.0
        trial = [e for e in self.entries if e.cost.protects == entry.cost.protects] + [entry]
        over = self._compose(trial, "epsilon") - self.cap
        return over if over > self.cap * 1e-12 else 0.0

    def check(self, entry: LedgerEntry) -> None:
        """Refuse, with a sentence saying by how much, a release that would take the total past the cap; and, under a
        cap, a label-only or disclosure-control release the data holder has not allowed (either leaves the subject with
        no guarantee at all)."""
        if self.cap is not None and not entry.cost.formal:
            if not self.disclosure_control_allowed:
                raise BudgetExceededError(
                    f"{entry.mechanism} is statistical disclosure control with no formal guarantee: it has no epsilon, "
                    f"so no subject-level cap (epsilon {self.cap:.4g}) can account for it. It is refused unless the "
                    "data holder allows disclosure-control releases for this data set, a recorded act with a reason: "
                    "`python -m dpsurv_core budget allow-disclosure-control --data D --reason TEXT`.")
            return
        if self.cap is not None and entry.cost.protects != SUBJECT and not self.label_only_allowed:
            raise BudgetExceededError(
                f"{entry.mechanism} protects {entry.cost.protects}: the subject's times and events would be published "
                f"as they are, which no subject-level cap (epsilon {self.cap:.4g}) can account for. It is refused unless "
                "the data holder allows label-only releases for this data set, a recorded act with a reason: "
                "`python -m dpsurv_core budget allow-label-only --data D --reason TEXT`.")
        over = self.excess(entry)
        if over > 0:
            assert self.cap is not None  # no cap: no excess
            left = self.cap - self.spent(entry.cost.protects)
            left = left if left > self.cap * 1e-12 else 0.0  # 1e-16 left by rounding is nothing left
            raise BudgetExceededError(
                f"This release costs epsilon {entry.cost.epsilon:.4g} but only {left:.4g} of the "
                f"cap {self.cap:.4g} is left for {entry.cost.protects}: it would exceed the cap by {over:.4g}. Lower "
                f"epsilon, or raise the cap to at least {self.cap + over:.4g} as a recorded act with a reason: "
                "`python -m dpsurv_core budget raise --data D --cap C --reason TEXT`."
            )

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        """Record a release in this in-memory view, or refuse it if it would take the total past the cap."""
        self.check(entry)
        self.entries.append(entry)
        return entry

    def to_dict(self) -> dict[str, Any]:
        return {"cap": self.cap, "label_only_allowed": self.label_only_allowed,
                "disclosure_control_allowed": self.disclosure_control_allowed,
                "disclosure_control_releases": len(self.disclosure_control()), "totals": self.totals(),
                "subject_guarantee": self.subject_guarantee(),
                "entries": [e.to_dict() for e in self.entries]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_json_default)

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        raw = json.loads(text)
        ledger = cls(raw.get("cap"))
        ledger.label_only_allowed = bool(raw.get("label_only_allowed", False))
        ledger.disclosure_control_allowed = bool(raw.get("disclosure_control_allowed", False))
        for e in raw.get("entries", []):
            cost = PrivacyCost(**e.pop("cost"))
            ledger.entries.append(LedgerEntry(cost=cost, **e))
        return ledger

    @property
    def cap_sentence(self) -> str:
        """The cap, or how to set one when there is none."""
        if self.cap is None:
            return NO_CAP
        return f"cap epsilon {self.cap:.4g}, spent {self.spent():.4g}, left {self.remaining():.4g}"


NO_CAP = ("no cap set: this data set's releases are recorded but not limited; set a cap with "
          "`python -m dpsurv_core budget set --data D --cap C` or on the Ledger and report page.")
