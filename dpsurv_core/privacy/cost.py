"""What a release costs and the guarantee it leaves as run.

:class:`PrivacyCost` is a value type: epsilon (and delta) under a neighbouring definition, protecting a unit, with
sequential (``+``) and parallel (:meth:`PrivacyCost.parallel`) composition (Dwork and Roth 2014, McSherry 2009).
:func:`as_run` reads a release's disclosures: a public value read off the data that sets the noise leaves the release
with no guarantee, whatever its cost says (it is still charged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dpsurv_core.errors import ParameterError

ADD_REMOVE = "add/remove one subject"
CHANGE_LABEL = "change one subject's group label"
SUBJECT = "the subject"
GROUP_LABEL = "the group label only"
EXACT = "exact"
APPROXIMATE_MCMC = "approximate (MCMC)"
# statistical disclosure control (suppression, rounding, cell keys, step smoothing): no epsilon at all
NO_FORMAL = "no formal guarantee"
DISCLOSURE_CONTROL = "nothing formally (statistical disclosure control)"
NO_NEIGHBOURS = "none (no formal definition)"
# epsilon = inf: the non-private estimators, or any mechanism run without noise
NO_NOISE = "no noise: not private"


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends: epsilon (and delta) under a neighbouring definition, protecting a unit."""

    epsilon: float | None  # None only for a release with no formal guarantee (disclosure control): never 0 or inf
    delta: float = 0.0
    neighbouring: str = ADD_REMOVE
    protects: str = SUBJECT
    guarantee: str = EXACT

    def __post_init__(self) -> None:
        if self.epsilon is None or self.guarantee == NO_FORMAL:
            if self.epsilon is not None or self.guarantee != NO_FORMAL:
                raise ParameterError("Only a release with no formal guarantee has no epsilon, and it has none.")
            return
        if not (self.epsilon >= 0) or math.isnan(self.epsilon):
            raise ParameterError(f"epsilon must be a non-negative number, got {self.epsilon}.")
        if not (0 <= self.delta < 1):
            raise ParameterError(f"delta must be in [0, 1), got {self.delta}.")
        if math.isinf(self.epsilon):  # no noise: whatever the mechanism would protect with noise, nothing is
            object.__setattr__(self, "protects", f"nothing ({NO_NOISE})")
            object.__setattr__(self, "neighbouring", "none")
            object.__setattr__(self, "guarantee", NO_NOISE)

    @property
    def formal(self) -> bool:
        """False for statistical disclosure control: no epsilon describes what it protects."""
        return self.guarantee != NO_FORMAL

    @property
    def private(self) -> bool:
        """A formal guarantee with a finite epsilon (not disclosure control, not epsilon = inf)."""
        return self.formal and self.epsilon is not None and math.isfinite(self.epsilon)

    def __add__(self, other: PrivacyCost) -> PrivacyCost:
        """Sequential composition of two releases about the same unit: epsilons and deltas add (Dwork and Roth 2014,
        theorem 3.16). Disclosure control has no epsilon and does not compose."""
        self._composable(other)
        assert self.epsilon is not None and other.epsilon is not None
        return PrivacyCost(self.epsilon + other.epsilon, min(self.delta + other.delta, 0.999999), self.neighbouring,
                           self.protects, _weaker(self.guarantee, other.guarantee))

    def parallel(self, other: PrivacyCost) -> PrivacyCost:
        """Parallel composition: two releases on disjoint parts of the data (one subject is in at most one) cost the
        larger epsilon and delta (McSherry 2009)."""
        self._composable(other)
        assert self.epsilon is not None and other.epsilon is not None
        return PrivacyCost(max(self.epsilon, other.epsilon), max(self.delta, other.delta), self.neighbouring,
                           self.protects, _weaker(self.guarantee, other.guarantee))

    def _composable(self, other: PrivacyCost) -> None:
        if not (self.formal and other.formal):
            raise ParameterError("Disclosure control has no epsilon, so it does not compose with anything.")
        if self.protects != other.protects:
            raise ParameterError(f"A cost protecting {self.protects} does not compose with one protecting "
                                 f"{other.protects}: the ledger keeps a total per protected unit.")

    def sentence(self) -> str:
        if self.guarantee == NO_NOISE:
            return f"{NO_NOISE} (epsilon = inf): exact numbers for the data holder's eyes only"
        if not self.formal:
            return ("no formal guarantee (statistical disclosure control): no epsilon, nothing is protected in a "
                    "provable sense")
        d = f", delta = {self.delta:g}" if self.delta else ""
        g = "" if self.guarantee == EXACT else f" ({self.guarantee})"
        return f"epsilon = {self.epsilon:.4g}{d}{g}, protecting {self.protects}, neighbours: {self.neighbouring}"


def _weaker(a: str, b: str) -> str:
    """The guarantee of two composed releases: the same one, or the approximate one where either is approximate."""
    return a if a == b else (APPROXIMATE_MCMC if APPROXIMATE_MCMC in (a, b) else a)


def not_dp_disclosure(disclosures: Any, protects: str = SUBJECT) -> tuple[str, str] | None:
    """(parameter, reason) of the first disclosure (a dict or a ``Disclosure``) that leaves a release of what it
    ``protects`` without a DP guarantee; None if there is none. A label-only release's own disclosure that it does not
    protect the subject (parameter "release") does not void its guarantee for the label."""
    for d in disclosures or []:
        d = d if isinstance(d, dict) else d.to_dict()
        if d.get("dp", True) is False and (protects == SUBJECT or d.get("parameter") != "release"):
            return str(d.get("parameter", "")), str(d.get("message", "")).removeprefix("not DP: ").removeprefix(
                "not DP").rstrip(".")
    return None


def as_run(cost: PrivacyCost, disclosures: Any) -> dict[str, str]:
    """The guarantee, what it protects and the sentence saying so, as a reader should take them for a release with
    these ``disclosures``: a disclosure that is not DP (a number read off the data that sets the noise) leaves the
    release with no guarantee, whatever the mechanism's cost says (it is still charged)."""
    not_dp = None if cost.guarantee in (NO_NOISE, NO_FORMAL) else not_dp_disclosure(disclosures, cost.protects)
    if not_dp is None:
        outside = "" if cost.guarantee in (NO_NOISE, NO_FORMAL) else outside_guarantee(disclosures)
        return {"guarantee": cost.guarantee, "protects": cost.protects, "sentence": cost.sentence() + outside}
    return voided(not_dp)


READ_OFF = {"horizon": "horizon", "grid": "grid's end", "groups": "group categories"}


def outside_guarantee(disclosures: Any) -> str:
    """"; the horizon ... read off the data are published as read, outside this guarantee" for a DP release that read
    public values off the data (:func:`read_off_the_data`), else ""."""
    read = read_off_the_data(disclosures)
    if not read:
        return ""
    return (f"; the {' and the '.join(read)} read off the data {'is' if len(read) == 1 else 'are'} published as read, "
            "outside this guarantee")


def read_off_the_data(disclosures: Any) -> list[str]:
    """The public values a release read off the data and publishes as they are (its DP disclosures of the horizon,
    the grid's end or the group categories): the guarantee covers the noisy numbers, not these values (a late
    subject can move the horizon), so the release's sentence names them."""
    out = []
    for d in disclosures or []:
        d = d if isinstance(d, dict) else d.to_dict()
        parameter = str(d.get("parameter", ""))
        name = (f"categories of {parameter.split(':', 1)[1]!r}" if parameter.startswith("levels:")
                else READ_OFF.get(parameter))
        if d.get("dp", True) and name and "read off the data" in str(d.get("message", "")) and name not in out:
            out.append(name)
    return out


def voided(not_dp: tuple[str, str]) -> dict[str, str]:
    """The guarantee, what is protected and the sentence for a release that a not-DP disclosure ``(parameter,
    reason)`` (:func:`not_dp_disclosure`) leaves with none."""
    return {"guarantee": f"none: not differentially private ({not_dp[0]} read off the data)",
            "protects": "nothing formally (not differentially private as run)",
            "sentence": f"not differentially private as run: {not_dp[1]}"}


def charged_sentence(cost: PrivacyCost, disclosures: Any) -> str:
    """What a release charged and guarantees, in one sentence: the cost's own (``PrivacyCost.sentence``), or, where a
    disclosure is not DP, the epsilon charged and that the release guarantees nothing (:func:`as_run`)."""
    run = as_run(cost, disclosures)
    if run["guarantee"] == cost.guarantee:
        return run["sentence"]
    return f"epsilon = {cost.epsilon:.4g}, but {run['sentence']}"
