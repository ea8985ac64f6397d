"""Groups from a numeric column: ``COL:median`` (data-derived cut) or ``COL:VALUE`` (public cut).

A subject goes to ``"COL <= cut"`` or ``"COL > cut"`` (Gondara & Wang 2020 splits stanford2 at the median
age this way: age <= 44 vs > 44 gives its Table 3 log-rank 6.6). Subjects without a value form
a third group ``"COL missing"``.

* ``COL:VALUE`` declares the cut: it is public, nothing is disclosed.
* ``COL:median`` reads the cut off the data (the median over subjects). That number is published
  exactly, so the release carries a ``Disclosure`` with ``dp=False``: declare a public cut instead.

The categories follow from the cut, so they are declared (not read off the data), except that the
``missing`` group appears only when some subject has no value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import DataError, ParameterError


@dataclass(frozen=True)
class NumericSplit:
    """A parsed ``COL:median`` / ``COL:VALUE`` group specification: groups ``COL <= cut`` and ``COL > cut``.

    Parameters
    ----------
    column : str
        The numeric column the groups are cut from.
    cut : float or None
        The public cut (finite); None: the data's median over subjects, published exactly and disclosed as not DP.
    """

    column: str
    cut: float | None

    @property
    def from_data(self) -> bool:
        return self.cut is None


def parse(spec: str | None) -> NumericSplit | None:
    """``COL:median`` or ``COL:VALUE`` -> a split; a plain column name (or None) -> None."""
    if not spec or ":" not in spec:
        return None
    column, _, rule = spec.rpartition(":")
    column, rule = column.strip(), rule.strip()
    if not column:
        raise ParameterError(f"--group {spec!r} names no column: write COL, COL:median or COL:VALUE (for example age:60).")
    if rule.lower() == "median":
        return NumericSplit(column, None)
    try:
        cut = float(rule)
    except ValueError:
        raise ParameterError(f"--group {spec!r}: the part after ':' must be 'median' or a number (for example "
                             f"{column}:60).") from None
    if not math.isfinite(cut):
        raise ParameterError(f"--group {spec!r}: the cut must be a finite number.")
    return NumericSplit(column, cut)


def labels_for(split: NumericSplit, cut: float) -> tuple[str, str]:
    return (f"{split.column} <= {cut:g}", f"{split.column} > {cut:g}")


def _per_subject(values: np.ndarray, subject: np.ndarray | None) -> np.ndarray:
    """One value per subject (its first row) when rows carry a subject id."""
    if subject is None:
        return values
    _, first = np.unique(subject, return_index=True)
    return values[np.sort(first)]


def split_values(values, split: NumericSplit, subject: np.ndarray | None = None,
                 ) -> tuple[np.ndarray, tuple[str, ...], list[Disclosure]]:
    """Group labels per row, the categories, and the disclosures of the split."""
    import pandas as pd

    num = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
    raw = pd.Series(values)
    bad = np.isnan(num) & raw.notna().to_numpy()
    if bad.any():
        example = raw[bad].iloc[0]
        raise DataError(f"Column {split.column!r} is not numeric (it holds {str(example)!r}): split it only at a "
                        "number, or use it as a categorical --group.", column=split.column)
    missing = np.isnan(num)
    if missing.all():
        raise DataError(f"Column {split.column!r} has no values to split on: choose another column.", column=split.column)
    disclosures: list[Disclosure] = []
    if split.cut is None:
        cut = float(np.median(_per_subject(num, subject)[~np.isnan(_per_subject(num, subject))]))
        disclosures.append(Disclosure(
            f"cut:{split.column}", f"not DP: the cut {split.column} <= {cut:g} is the data's median, published exactly; "
                      f"declare a public cut ({split.column}:VALUE) to avoid this disclosure.", dp=False))
    else:
        cut = float(split.cut)
    low, high = labels_for(split, cut)
    labels = np.where(num <= cut, low, high).astype(object)
    cats: tuple[str, ...] = (low, high)
    if missing.any():
        miss = f"{split.column} missing"
        labels[missing] = miss
        cats = (*cats, miss)
        disclosures.append(Disclosure("groups", f"{int(missing.sum())} row(s) have no {split.column!r}: they form the "
                                                f"group {miss!r}, whose presence is read off the data."))
    return labels.astype(str), cats, disclosures


def apply(cohort: Cohort, values, split: NumericSplit) -> tuple[Cohort, tuple[str, ...], list[Disclosure]]:
    """The cohort grouped by the split of ``values`` (one per row of the cohort)."""
    values = np.asarray(values)
    if values.shape[0] != cohort.n:
        raise DataError(f"The split column {split.column!r} has {values.shape[0]} values for {cohort.n} rows.")
    labels, cats, disclosures = split_values(values, split, cohort.subject)
    return replace(cohort, group=labels), cats, disclosures


def split_cohort(cohort: Cohort, split: NumericSplit) -> tuple[Cohort, tuple[str, ...], list[Disclosure]]:
    """Split on a covariate of the cohort (load it with ``covariates=(column,)``); the covariate is dropped.

    Parameters
    ----------
    cohort : Cohort
        The cohort, loaded with the covariate to split on.
    split : NumericSplit
        The column and its cut points.

    Returns
    -------
    tuple
        ``(cohort, groups, disclosures)``: the cohort grouped by the split, the groups' names in order, and the
        disclosures of cut points read off the data.
    """
    if split.column not in cohort.covariates.columns:
        raise DataError(f"There is no numeric column {split.column!r} to split on: check the column name.",
                        column=split.column)
    values = cohort.covariates[split.column].to_numpy()
    out, cats, disclosures = apply(cohort, values, split)
    return replace(out, covariates=cohort.covariates.drop(columns=[split.column])), cats, disclosures
