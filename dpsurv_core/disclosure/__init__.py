"""Statistical disclosure control: what registries do today (no formal guarantee), audited side by side with DP.

One module per method: :mod:`~dpsurv_core.disclosure.suppress_small_cells`, :mod:`~dpsurv_core.disclosure.rounding`
(round and random-round), :mod:`~dpsurv_core.disclosure.cell_key`, :mod:`~dpsurv_core.disclosure.smooth_steps`. Each
is a curve mechanism returning the same :class:`~dpsurv_core.curves.result.CurveResult` as the DP count mechanisms;
its cost has no epsilon (``guarantee = "no formal guarantee"``). The methods are re-exported here (imported on first
use).
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.disclosure.base import DisclosureControl
    from dpsurv_core.disclosure.cell_key import CellKey
    from dpsurv_core.disclosure.rounding import RandomRound, Round
    from dpsurv_core.disclosure.smooth_steps import SmoothSteps
    from dpsurv_core.disclosure.suppress_small_cells import SuppressSmallCells

__all__ = ["CellKey", "DisclosureControl", "RandomRound", "Round", "SmoothSteps", "SuppressSmallCells"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "base": ["DisclosureControl"],
    "cell_key": ["CellKey"],
    "rounding": ["RandomRound", "Round"],
    "smooth_steps": ["SmoothSteps"],
    "suppress_small_cells": ["SuppressSmallCells"],
})
