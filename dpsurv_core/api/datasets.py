"""The bundled data sets (from the R packages survival and MASS) as DataFrames with their documented columns."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from dpsurv_core.data import datasets

__all__ = ["Dataset", "load_dataset"]


@dataclass(frozen=True)
class Dataset:
    """A bundled data set: its rows and the columns its documentation names.

    Pass it as ``df`` to a fitter's ``release`` or ``simulate``: it is then the bundled data set, exactly as
    ``--data NAME`` on the command line (its documented time and event columns by default, its documented group
    categories declared, its ledger budget the same). To analyse changed rows, pass ``dataset.frame`` (a copy) with a
    name of your own.

    Parameters
    ----------
    name : str
        The data set's name (``python -m dpsurv_core datasets``).
    frame : pandas.DataFrame
        Its rows, with R's column names and codes.
    duration_col, event_col : str
        The documented time column and event column (1 = event, 0 = censored unless documented otherwise).
    group_cols, covariates : tuple of str
        The documented grouping columns and covariates.
    time_unit : str
        The unit of the time column.
    title, source : str
        What the data set is, and where it comes from (package and licence).

    Examples
    --------
    >>> from dpsurv_core import load_dataset
    >>> lung = load_dataset("lung")
    >>> lung.duration_col, lung.event_col, lung.time_unit
    ('time', 'status', 'days')
    >>> len(lung)
    228

    References
    ----------
    .. [1] Therneau T. M., A package for survival analysis in R (the survival package's data sets).
    """

    name: str
    frame: pd.DataFrame = field(repr=False)
    duration_col: str
    event_col: str
    group_cols: tuple[str, ...]
    covariates: tuple[str, ...]
    time_unit: str
    title: str
    source: str

    def __len__(self) -> int:
        return len(self.frame)


def load_dataset(name: str) -> Dataset:
    """A bundled data set with its documented columns.

    Parameters
    ----------
    name : str
        One of ``lung``, ``kidney``, ``leukemia``, ``gehan``, ``mgus2``, ``myeloid`` and the others listed by
        ``python -m dpsurv_core datasets``.

    Returns
    -------
    Dataset
        The rows (``.frame``, a copy) and the documented columns.

    Examples
    --------
    >>> from dpsurv_core import load_dataset
    >>> gehan = load_dataset("gehan")
    >>> gehan.event_col, gehan.group_cols
    ('cens', ('treat',))
    >>> list(gehan.frame.columns)[:3]
    ['pair', 'time', 'cens']

    References
    ----------
    .. [1] Venables W. N. & Ripley B. D. (2002), Modern Applied Statistics with S (the MASS package's data sets).
    """
    info = datasets.info(name)
    return Dataset(info.name, datasets.load(name).copy(), info.time, info.event, tuple(info.groups),
                   tuple(info.covariates), info.time_unit, info.title, info.source)
