"""What every mechanism object has, in the OpenDP spirit: it knows its own privacy cost.

A mechanism is built from its parameters (epsilon, grid, ...); ``cost`` is computed from them,
never typed in elsewhere. ``ledger_entry`` turns one release into a ledger line.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import LedgerEntry, PrivacyCost


def check_epsilon(epsilon: float, what: str = "epsilon") -> float:
    """A positive epsilon; ``math.inf`` means no noise (for exactness checks).

    Parameters
    ----------
    epsilon : float
        The value given.
    what : str, default "epsilon"
        Its name in the error sentence.

    Returns
    -------
    float
        ``epsilon`` as a float.

    Raises
    ------
    dpsurv_core.errors.ParameterError
        When it is not a positive number.
    """
    try:
        eps = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(f"{what} must be a number, got {epsilon!r}.") from None
    if not eps > 0 or math.isnan(eps):
        raise ParameterError(f"{what} must be positive (for example 1), got {epsilon!r}.")
    return eps


class Mechanism(ABC):
    """Base class: ``name``, ``parameters()``, ``cost`` (a :class:`PrivacyCost`)."""

    name: str = "mechanism"
    analysis: str = "analysis"
    interval_includes_noise: bool = False  # do the intervals and tests beside its numbers carry its noise?
    engines: tuple[str, ...] = ("pandas",)  # where its sufficient statistics can be computed

    @property
    @abstractmethod
    def cost(self) -> PrivacyCost: ...

    @abstractmethod
    def parameters(self) -> dict[str, Any]: ...

    def ledger_entry(self, dataset: str, parallel_key: str | None = None, note: str = "",
                     disclosures: Iterable[Any] = ()) -> LedgerEntry:
        """The ledger line of one release, with the release's disclosures (``Disclosure`` objects or dicts)."""
        discl = [d if isinstance(d, dict) else d.to_dict() for d in disclosures]
        return LedgerEntry(self.name, self.analysis, dataset, self.parameters(), self.cost, parallel_key, note, discl)
