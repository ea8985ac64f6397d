"""Accuracy-first planning: the epsilon each release needs for the precision a study asks, before any data are read.

:mod:`~dpsurv_core.planning.study` (the declared study and its simulated cohorts), :mod:`~dpsurv_core.planning.targets`
(what precision is asked), :mod:`~dpsurv_core.planning.evaluate` (simulated releases read as releases are read),
:mod:`~dpsurv_core.planning.search` (the smallest epsilon meeting a target), :mod:`~dpsurv_core.planning.budget` (the
split of a cap between releases), :mod:`~dpsurv_core.planning.plan` (the whole plan) and
:mod:`~dpsurv_core.planning.document` (the plan as a document). Nothing here reads a data set or charges a ledger.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.planning.plan import make_plan
    from dpsurv_core.planning.study import Study, Survival
    from dpsurv_core.planning.targets import Target, parse_target

__all__ = ["Study", "Survival", "Target", "make_plan", "parse_target"]

# imported on first use (dpsurv_core._lazy): a release reads its plan through planning.adherence, which must not
# import the planner (its search imports SciPy)
__getattr__, __dir__ = attach(__name__, __all__, {
    "plan": ["make_plan"],
    "study": ["Study", "Survival"],
    "targets": ["Target", "parse_target"],
})
