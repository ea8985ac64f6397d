"""The privacy ledger: one entry per release, composed as spec section 0.5 says.

Sequential composition adds epsilons (and deltas). Entries that share a ``parallel_key`` were
released by one mechanism on disjoint groups of subjects; they compose in parallel (the max).
Totals are kept per protected unit: a label-only epsilon (randomized response) says nothing
about the subject, so it is never added to the subject-level total.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from dpsurv_core.errors import BudgetExceededError, ParameterError

ADD_REMOVE = "add/remove one subject"
CHANGE_LABEL = "change one subject's group label"
SUBJECT = "the subject"
GROUP_LABEL = "the group label only"
EXACT = "exact"
APPROXIMATE_MCMC = "approximate (MCMC)"


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends: epsilon (and delta) under a neighbouring definition, protecting a unit."""

    epsilon: float
    delta: float = 0.0
    neighbouring: str = ADD_REMOVE
    protects: str = SUBJECT
    guarantee: str = EXACT

    def __post_init__(self) -> None:
        if not (self.epsilon >= 0) or math.isnan(self.epsilon):
            raise ParameterError(f"epsilon must be a non-negative number, got {self.epsilon}.")
        if not (0 <= self.delta < 1):
            raise ParameterError(f"delta must be in [0, 1), got {self.delta}.")

    def sentence(self) -> str:
        d = f", delta = {self.delta:g}" if self.delta else ""
        g = "" if self.guarantee == EXACT else f" ({self.guarantee})"
        return f"epsilon = {self.epsilon:.4g}{d}{g}, protecting {self.protects}, neighbours: {self.neighbouring}"


@dataclass
class LedgerEntry:
    mechanism: str
    analysis: str
    dataset: str
    parameters: dict[str, Any]
    cost: PrivacyCost
    parallel_key: str | None = None
    note: str = ""
    disclosures: list[dict[str, Any]] = field(default_factory=list)  # Disclosure.to_dict() of the release
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost"] = asdict(self.cost)
        return out

    def voids_subject_guarantee(self) -> str | None:
        """Why this release leaves the subject without a DP guarantee, or None if it does not."""
        not_dp = [d["message"] for d in self.disclosures if not d.get("dp", True)]
        if not_dp:
            reason = not_dp[0].removeprefix("not DP: ").removeprefix("not DP").rstrip(".")
            return f"{self.mechanism} ({self.analysis}) is not differentially private: {reason}"
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

    @staticmethod
    def _compose(entries: list[LedgerEntry], attr: str) -> float:
        blocks: dict[Any, float] = {}
        total = 0.0
        for e in entries:
            v = getattr(e.cost, attr)
            if e.parallel_key is None:
                total += v
            else:
                blocks[e.parallel_key] = max(blocks.get(e.parallel_key, 0.0), v)
        return total + sum(blocks.values())

    def totals(self) -> dict[str, dict[str, float]]:
        """Composed epsilon and delta per protected unit."""
        out: dict[str, dict[str, float]] = {}
        for unit in sorted({e.cost.protects for e in self.entries}):
            sub = [e for e in self.entries if e.cost.protects == unit]
            out[unit] = {"epsilon": self._compose(sub, "epsilon"), "delta": self._compose(sub, "delta")}
        return out

    def void_reasons(self) -> list[str]:
        """Releases that leave the subject without a DP guarantee (label-only or not-DP releases); empty if none.

        Their epsilons still count against the cap, but no finite epsilon describes the subject's loss once one of
        them has been published (spec section 0.5, honest accounting)."""
        return [f"release {i + 1}: {r}" for i, e in enumerate(self.entries) if (r := e.voids_subject_guarantee())]

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

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        """Record a release, or refuse it if it would take the total past the cap."""
        if self.would_exceed(entry):
            spent = self.spent(entry.cost.protects)
            raise BudgetExceededError(
                f"This release costs epsilon {entry.cost.epsilon:.4g} but only {max(self.cap - spent, 0):.4g} of the "
                f"cap {self.cap:.4g} is left for {entry.cost.protects}: lower epsilon or raise the cap."
            )
        self.entries.append(entry)
        return entry

    def to_dict(self) -> dict[str, Any]:
        return {"cap": self.cap, "totals": self.totals(), "subject_guarantee": self.subject_guarantee(),
                "entries": [e.to_dict() for e in self.entries]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_json_default)

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        raw = json.loads(text)
        ledger = cls(raw.get("cap"))
        for e in raw.get("entries", []):
            cost = PrivacyCost(**e.pop("cost"))
            ledger.entries.append(LedgerEntry(cost=cost, **e))
        return ledger


def _json_default(obj: Any) -> Any:
    try:
        import numpy as np

        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(obj)
