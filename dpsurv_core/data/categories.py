"""Declared group categories against the labels the data hold.

A declared category (``--categories sex:1,2``, or a bundled data set's documented codes) names the rows whose group
label is that category: the same text, or the same number, so that ``1.0`` declared names rows whose codes are
stored as the integer 1 (a cohort prints integral codes without ``.0``: :func:`dpsurv_core.data.cohort._label`).
Text wins over number: a column holding both ``"1"`` and ``"1.0"`` as text keeps them apart when both are declared.

Which declared categories no row matches is a fact about the data: :func:`unmatched` says so for the data holder's
eyes only, never for a release record (a release's categories are the declared ones, matched or not).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _number_of(code: object) -> float | None:
    """The number a code is written as (``"1.0"`` -> 1.0, ``" 2 "`` -> 2.0), None for any other code (text,
    ``nan``, ``1_0``)."""
    text = str(code).strip()
    return float(text) if _NUMBER.fullmatch(text) else None


def lookup(categories: Sequence[str], observed: Iterable[str]) -> dict[str, int]:
    """Each observed label that names a declared category -> that category's index: the same text first, else the
    same number; labels naming none are left out."""
    exact = {str(c): i for i, c in enumerate(categories)}
    numbers: dict[float, int] = {}
    for i, c in enumerate(categories):
        value = _number_of(c)
        if value is not None:
            numbers.setdefault(value, i)
    out: dict[str, int] = {}
    for label in observed:
        label = str(label)
        if label in exact:
            out[label] = exact[label]
            continue
        value = _number_of(label)
        if value is not None and value in numbers:
            out[label] = numbers[value]
    return out


def row_index(labels: np.ndarray, categories: Sequence[str]) -> np.ndarray:
    """Per row, the index of the declared category its label names (:func:`lookup`), -1 where it names none."""
    uniq, inverse = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    found = lookup(categories, uniq.tolist())
    return np.array([found.get(str(u), -1) for u in uniq], dtype=np.int64)[inverse.ravel()]


def unmatched(categories: Sequence[str], observed: Iterable[str]) -> list[str]:
    """The declared categories no observed label names."""
    named = set(lookup(categories, observed).values())
    return [str(c) for i, c in enumerate(categories) if i not in named]


def unmatched_warning(column: str, missing: Sequence[str], held: Iterable[str]) -> str | None:
    """A sentence for the data holder (confidential: never part of a release) naming the declared categories of
    ``column`` that no row holds (``missing``, from :func:`unmatched`) beside the labels the column ``held``; None when
    none is missing."""
    if not missing:
        return None
    held = sorted(str(h) for h in held)
    shown = ", ".join(held[:8]) + (", ..." if len(held) > 8 else "")
    one = len(missing) == 1
    return (f"No row of {column!r} holds the declared categor{'y' if one else 'ies'} {', '.join(map(str, missing))} "
            f"(the column holds {shown or 'no value'}): {'its' if one else 'their'} released numbers are noise alone; "
            "check the declared categories (--categories) against the codes in the data.")
