"""Data: reading files, the bundled data sets, cohorts and the declared (public) parameters.

A :class:`Cohort` is built from a table and a :class:`ColumnMap` (:func:`build_cohort`, after :func:`validate`);
:func:`load_bundled` gives a bundled data set's cohort. What a release may use without reading the data is declared
in :class:`PublicParameters` (with its :class:`TimeGrid`); a value read off the data instead is a
:class:`Disclosure`. Names are imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.data.cohort import (
        Cohort,
        ColumnMap,
        Problem,
        build_cohort,
        default_mapping,
        load_bundled,
        validate,
    )
    from dpsurv_core.data.grouping import NumericSplit, split_cohort
    from dpsurv_core.data.guess import guess_mapping
    from dpsurv_core.data.io import read_columns, read_table
    from dpsurv_core.data.labels import ValueLabels
    from dpsurv_core.data.public import Disclosure, PublicParameters, TimeGrid
    from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
    from dpsurv_core.data.summary import cohort_summary

__all__ = ["Cohort", "ColumnMap", "Disclosure", "NumericSplit", "Problem", "PublicParameters", "TimeGrid",
           "ValueLabels", "WeibullTruth", "build_cohort", "cohort_summary", "default_mapping", "guess_mapping",
           "load_bundled", "read_columns", "read_table", "split_cohort", "validate", "weibull_cohort"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "cohort": ["Cohort", "ColumnMap", "Problem", "build_cohort", "default_mapping", "load_bundled", "validate"],
    "grouping": ["NumericSplit", "split_cohort"],
    "guess": ["guess_mapping"],
    "io": ["read_columns", "read_table"],
    "labels": ["ValueLabels"],
    "public": ["Disclosure", "PublicParameters", "TimeGrid"],
    "simulate": ["WeibullTruth", "weibull_cohort"],
    "summary": ["cohort_summary"],
})
