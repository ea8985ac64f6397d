"""Private Weibull shape and scale.

The mechanisms (:class:`ClippedMLE`, :class:`LspTll`, :class:`LaplaceWeibull`, :class:`SampleAggregateWeibull`, and
the non-private reference :class:`SurvregMLE`; all :class:`WeibullMechanism`, built by id with
:func:`make_mechanism`) read a :class:`WeibullSample` (:func:`sample_from_cohort`) and release
:class:`WeibullEstimates`; :func:`weibull_intervals` gives their :class:`ParameterInterval`. The exact fit is
:func:`weibull_mle`. Names are imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.weibull.baselines import LaplaceWeibull, SampleAggregateWeibull
    from dpsurv_core.weibull.inference import ParameterInterval, WeibullInference, release_intervals, weibull_intervals
    from dpsurv_core.weibull.lsp import Ladder, compute_ladder
    from dpsurv_core.weibull.mechanism_base import WeibullEstimates, WeibullMechanism
    from dpsurv_core.weibull.mechanisms import ClippedMLE, LspTll, SurvregMLE, make_mechanism
    from dpsurv_core.weibull.model import WeibullFit, WeibullSample, sample_from_cohort, survival_curve, weibull_mle

__all__ = ["ClippedMLE", "Ladder", "LaplaceWeibull", "LspTll", "ParameterInterval", "SampleAggregateWeibull",
           "SurvregMLE", "WeibullEstimates", "WeibullFit", "WeibullInference", "WeibullMechanism", "WeibullSample",
           "compute_ladder", "make_mechanism", "release_intervals", "sample_from_cohort", "survival_curve",
           "weibull_intervals", "weibull_mle"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "inference": ["ParameterInterval", "WeibullInference", "release_intervals", "weibull_intervals"],
    "lsp": ["Ladder", "compute_ladder"],
    "baselines": ["LaplaceWeibull", "SampleAggregateWeibull"],
    "mechanism_base": ["WeibullEstimates", "WeibullMechanism"],
    "mechanisms": ["ClippedMLE", "LspTll", "SurvregMLE", "make_mechanism"],
    "model": ["WeibullFit", "WeibullSample", "sample_from_cohort", "survival_curve", "weibull_mle"],
})
