"""The publication boundary: what a release record holds and how its readable part is computed.

A release record has three parts (Dwork and Roth 2014, section 2.3: post-processing of a DP output is DP):

* ``released``: the mechanism's noisy output, exactly as drawn (and post-processed by the mechanism itself);
* ``public_inputs``: values a person declared (grid, horizon, declared n and censoring share, categories,
  covariate ranges, the mechanism's parameters and options): nothing read off the data unless a person accepted it
  as a disclosure, which then voids the guarantee (:mod:`dpsurv_core.publication.declared`);
* ``derived``: everything computed for people to read (bands, medians, landmarks, tests, warnings, sentences and
  figure data), by a *reader* that receives the other two parts as JSON and nothing else
  (:mod:`dpsurv_core.publication.readers`).

Because a reader gets plain JSON, no cohort is in its reach: ``budget rederive`` recomputes ``derived`` from the
stored record after the data is gone and compares field by field.
"""

from dpsurv_core.publication.declared import UndeclaredValueError, enforce, undeclared
from dpsurv_core.publication.readers import derive, publish, rederive
from dpsurv_core.publication.record import Publication, first_difference, jsonable

__all__ = ["Publication", "UndeclaredValueError", "derive", "enforce", "first_difference", "jsonable", "publish",
           "rederive", "undeclared"]
