"""The levels of a private regression's categorical covariates: declared, never the ones that happen to occur.

:func:`dpsurv_core.data.labels.encode_categories` takes the codes that occur in the data (a labelled code nobody has
gets no level). For a fit nobody else sees that is right; for a release it is not: lung has one subject with ECOG 3,
and without that subject the released coefficients would lose a column, so the very shape of the release would tell
whether that subject is in the data. A private fit therefore takes its levels from a declaration:

* ``--categories COL:A,B`` (the study design's codes, matched as :mod:`dpsurv_core.data.categories` says: the same
  text, else the same number): rows in another category are left out;
* else the value labels, when they name every code that occurs (a bundled data set's documented codes, or the
  labels a data holder typed on the Data page or gave as ``--labels``): every labelled code is a level, whether or
  not anyone has it (its indicator is then 0 for everyone and its coefficient noise alone);
* else the levels are read off the data: the ``levels:COL`` disclosure says so, and a release refuses it unless the
  data holder accepts it (:mod:`dpsurv_core.publication.declared`).

The reference level is the one asked for (``--categorical COL:REF``), else the labels' declared reference among the
declared codes, else the first declared code, as R takes the first factor level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpsurv_core.data.categories import lookup, unmatched_warning
from dpsurv_core.data.labels import Categories, Category, ValueLabels, category_name, code_key, code_keys
from dpsurv_core.errors import DataError, ParameterError


@dataclass(frozen=True)
class DeclaredLevels:
    """The private fit's categories (:class:`~dpsurv_core.data.labels.Categories`: its frame holds each categorical
    covariate by category name, a value outside the declared categories missing), how many rows had such a value
    and a warning per column naming the declared codes no row holds (exact: for the data holder's eyes only)."""

    categories: Categories
    left_out: int
    warnings: tuple[str, ...] = ()


def _natural(code: str) -> tuple:
    try:
        return (0, float(code), "")
    except ValueError:
        return (1, 0.0, code)


def _is_text(series: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))


def declared_levels(frame: pd.DataFrame, cats: Categories, labels: ValueLabels | None = None,
                    declared: Mapping[str, Sequence[str]] | None = None,
                    references: Mapping[str, object | None] | None = None, extend_to_labels: bool = True
                    ) -> DeclaredLevels:
    """The categories a private fit uses for the columns of ``cats`` (``encode_categories(frame, references,
    labels)``): ``declared`` codes per column (``--categories``), else every code ``labels`` name when they name
    each code that occurs, else the levels as read off the data (with their disclosure). ``references`` are the
    reference levels asked for (a code or a label, None for the default).

    ``extend_to_labels=False`` (a fit without noise, for the data holder's eyes: the non-private fit, Cox) keeps the
    labelled codes that occur, as :func:`~dpsurv_core.data.labels.encode_categories` gives them: a level nobody has
    would leave the maximum-likelihood fit without a finite interval and Cox without an estimate. ``--categories``
    applies either way.

    Parameters
    ----------
    frame : pandas.DataFrame
        The covariate columns.
    cats : Categories
        The categorical columns.
    labels : ValueLabels, optional
        The value labels.
    declared : mapping of str to sequence of str, optional
        Declared codes per column (``--categories``).
    references : mapping, optional
        The reference level asked for per column.
    extend_to_labels : bool, default True
        Use every labelled code, occurring or not (a private fit); False keeps the occurring ones.

    Returns
    -------
    DeclaredLevels
        The levels per column and the disclosures of levels read off the data.
    """
    labels = labels or ValueLabels()
    declared = dict(declared or {})
    references = dict(references or {})
    categorical = list(dict.fromkeys([*references, *cats.columns]))
    unknown = [c for c in declared if c not in categorical]
    if unknown:
        raise ParameterError(f"--categories names {unknown[0]!r}, which is not among the categorical covariates "
                             f"({', '.join(categorical) or 'none'}): add it to --categorical (and --covariates) or "
                             "remove it from --categories.")
    columns: dict[str, Category] = {}
    out = cats.frame.copy()
    outside = np.zeros(len(out), dtype=bool)
    warnings: list[str] = []
    # a declared column need not be among those encoded off the data: its codes, reference and names are declared
    for col in [c for c in categorical if c in cats.columns or c in declared]:
        cat = cats.columns.get(col)
        if col in declared:
            codes = [k for k in dict.fromkeys(code_key(v) for v in declared[col]) if k]
        else:
            assert cat is not None  # not declared, so among the encoded columns
            if cat.declared and extend_to_labels:
                codes = list(labels.labels_for(col))
            else:
                columns[col] = cat  # read off the data: its disclosure (levels:COL) goes with it
                continue
        codes = sorted(dict.fromkeys(codes), key=_natural)
        if len(codes) < 2:
            raise ParameterError(f"The declared categories of {col!r} must be at least two codes (for example "
                                 f"--categories {col}:1,2).")
        text = _is_text(frame[col])
        names = {c: category_name(labels, col, c, text) for c in codes}
        if len(set(names.values())) < len(names):
            twice = next(n for n in names.values() if list(names.values()).count(n) > 1)
            raise DataError(f"Two categories of column {col!r} are both named {twice!r}: give each code its own label.")
        ref = _reference(col, codes, names, labels, references.get(col))
        order = (ref, *[c for c in codes if c != ref])
        columns[col] = Category(col, order, tuple(names[c] for c in order), True)
        keys = code_keys(frame[col])
        held = [k for k in keys.unique() if k != ""]
        found = lookup(order, held)  # each code the data hold -> the declared code it names
        outside |= ((keys != "") & ~keys.isin(list(found))).to_numpy()
        out[col] = keys.map({k: columns[col].names[i] for k, i in found.items()}).astype(object)
        missing = [c for i, c in enumerate(order) if i not in set(found.values())]
        if col in declared and missing:  # labelled codes nobody has are levels by design: no news for the holder
            warnings.append(unmatched_warning(col, missing, held) or "")
    return DeclaredLevels(Categories(out, columns), int(outside.sum()), tuple(warnings))


def _reference(col: str, codes: list[str], names: dict[str, str], labels: ValueLabels, asked: object | None) -> str:
    if asked is None:
        return labels.reference(col, codes)
    key, wanted = code_key(asked), str(asked).strip()
    if key in names:
        return key
    by_name = {n: c for c, n in names.items()}
    if wanted in by_name:
        return by_name[wanted]
    raise DataError(f"The reference level {wanted!r} is not among the declared categories of {col!r}: choose one of "
                    f"{', '.join(codes[:10])} (or their names: {', '.join(names[c] for c in codes[:10])}).")
