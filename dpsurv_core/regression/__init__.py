"""Discrete-time survival regression, private and exact.

The private mechanisms (:class:`OutputPerturbation`, :class:`ObjectivePerturbation`, :class:`PSGLD`, built by id
with :func:`build_mechanism`) fit a logistic model on the person-period rows
(:func:`dpsurv_core.regression.person_period.person_period`, :class:`PersonPeriod`) within public
:class:`DesignBounds` and return a :class:`RegressionResult`; :func:`coefficient_inference` reads its intervals. The
non-private references are :func:`fit_nonprivate` and the Cox model (:func:`fit_cox`, :func:`coxph`). Names are
imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.regression.cox import CoxModel, coxph
    from dpsurv_core.regression.inference import CoefficientInference, coefficient_inference
    from dpsurv_core.regression.levels import DeclaredLevels, declared_levels
    from dpsurv_core.regression.mechanisms import (
        PSGLD,
        DesignBounds,
        ObjectivePerturbation,
        OutputPerturbation,
        RegressionResult,
        build_mechanism,
    )
    from dpsurv_core.regression.model import CoxResult, Fit, fit_cox, fit_nonprivate
    from dpsurv_core.regression.person_period import PersonPeriod

__all__ = ["PSGLD", "CoefficientInference", "CoxModel", "CoxResult", "DeclaredLevels", "DesignBounds", "Fit",
           "ObjectivePerturbation", "OutputPerturbation", "PersonPeriod", "RegressionResult", "build_mechanism",
           "coefficient_inference", "coxph", "declared_levels", "fit_cox", "fit_nonprivate"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "cox": ["CoxModel", "coxph"],
    "inference": ["CoefficientInference", "coefficient_inference"],
    "levels": ["DeclaredLevels", "declared_levels"],
    "mechanisms": ["PSGLD", "DesignBounds", "ObjectivePerturbation", "OutputPerturbation", "RegressionResult",
                   "build_mechanism"],
    "model": ["CoxResult", "Fit", "fit_cox", "fit_nonprivate"],
    "person_period": ["PersonPeriod"],
})
