"""Survival curves, cumulative incidence and log-rank tests, private and exact.

The curve mechanisms (:class:`LaplaceCounts`, :class:`AdaptiveKM`, :class:`RandomizedResponse`,
:class:`TimeIndexed`, and the non-private reference :class:`NonPrivate`) release counts on a public time grid and
return a :class:`CurveResult`; curves, bands and tests are read from those counts alone (post-processing). The
estimators on exact data (:func:`estimate`, :func:`robust_km`, :func:`overall`, :func:`pairwise`,
:func:`hazard_ratios`) are the references the releases are compared with. Names are imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.curves.adaptive_km import AdaptiveKM
    from dpsurv_core.curves.counts import BinnedCounts, count
    from dpsurv_core.curves.hazard_ratio import HazardRatio, hazard_ratios
    from dpsurv_core.curves.kaplan_meier import SurvivalCurves, estimate
    from dpsurv_core.curves.km_robust import RobustCurve, robust_km
    from dpsurv_core.curves.laplace_counts import LaplaceCounts
    from dpsurv_core.curves.logrank import LogRankResult, overall, pairwise
    from dpsurv_core.curves.result import CurveResult, NonPrivate
    from dpsurv_core.curves.rrr import RandomizedResponse
    from dpsurv_core.curves.time_indexed import TimeIndexed

__all__ = ["AdaptiveKM", "BinnedCounts", "CurveResult", "HazardRatio", "LaplaceCounts", "LogRankResult", "NonPrivate",
           "RandomizedResponse", "RobustCurve", "SurvivalCurves", "TimeIndexed", "count", "estimate", "hazard_ratios",
           "overall", "pairwise", "robust_km"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "adaptive_km": ["AdaptiveKM"],
    "counts": ["BinnedCounts", "count"],
    "hazard_ratio": ["HazardRatio", "hazard_ratios"],
    "kaplan_meier": ["SurvivalCurves", "estimate"],
    "km_robust": ["RobustCurve", "robust_km"],
    "laplace_counts": ["LaplaceCounts"],
    "logrank": ["LogRankResult", "overall", "pairwise"],
    "result": ["CurveResult", "NonPrivate"],
    "rrr": ["RandomizedResponse"],
    "time_indexed": ["TimeIndexed"],
})
