"""Small-cell suppression: counts from 1 to k - 1 are withheld and shown as "<k" (k = 5 by default).

Every released cell (n_g, d_gj, c_gj) from 1 to k - 1 is suppressed. The curve is computed with a suppressed event
count taken as 0, so a suppressed step holds the curve flat; a suppressed censoring count leaves those subjects at
risk. Registries use k = 5 or 10 (e.g. cancer registries' small-number rules). No formal guarantee: a subject whose
removal moves a cell across the threshold (or changes any unsuppressed cell) is revealed.
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


def suppressed(x: np.ndarray, threshold: int) -> np.ndarray:
    """Mask of the cells a threshold-k rule withholds: 1 <= x <= k - 1."""
    return (x >= 1) & (x < threshold)


class SuppressSmallCells(DisclosureControl):
    """Withhold every count from 1 to threshold - 1.

    Parameters
    ----------
    threshold : int, default 5
        k: counts from 1 to k - 1 are withheld and shown as "<k"; a whole number, at least 2 (registries use 5 or 10).
    rows_per_subject : int, default 1
        m, the most rows one subject has; recorded with the release (the rule acts on the cells alone).

    Privacy
    -------
    Cost: no epsilon: statistical disclosure control, not differential privacy.
    Neighbours: none: no formal guarantee.
    Protects: no formal guarantee (a deterministic rule on the exact counts).
    Source: statistical disclosure control practice (small-number rules of registries and statistical offices).
    """

    name = "suppress-small-cells"
    what = "small-cell suppression"

    def __init__(self, threshold: int = 5, rows_per_subject: int = 1) -> None:
        super().__init__(rows_per_subject)
        if int(threshold) != threshold or threshold < 2:
            raise ParameterError(f"The suppression threshold must be a whole number of at least 2, got {threshold}.")
        self.threshold = int(threshold)

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "threshold": self.threshold}

    def alter(self, exact: BinnedCounts, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None,
              trials: int) -> tuple[BinnedCounts, dict[str, Any]]:
        masks = {k: suppressed(getattr(exact, k), self.threshold) for k in ("n", "events", "censored")}
        changes: dict[str, Any] = {k: np.where(m, 0, getattr(exact, k)) for k, m in masks.items()}
        out = replace(exact, **changes)
        return out, {"suppressed": masks}
