"""The small interface every engine offers: a relation ``cohort`` (the source's rows plus ``_row``, their
position in the file), SQL in, small Python tables out, and row batches for the bounded chunked path."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.engines.source import Source

if TYPE_CHECKING:
    import pandas as pd

RELATION = "cohort"


def number(x: float) -> str:
    """An exact double literal that DuckDB and Spark both read as DOUBLE."""
    s = repr(float(x))
    return s if ("e" in s or "E" in s) else s + "E0"


def balanced_case(t: str, edges: np.ndarray, strict: bool) -> str:
    """SQL for the number of sorted ``edges`` below ``t`` (``strict``: e < t, searchsorted left) or at or below it
    (e <= t, searchsorted right): a balanced CASE, log2(J) comparisons per row (NULL ``t``: 0; NaN: J, as NaN
    compares above every number in both dialects)."""
    e = [number(v) for v in np.asarray(edges, float)]
    op = "<" if strict else "<="

    def rec(lo: int, hi: int) -> str:
        if lo == hi:
            return str(lo)
        mid = (lo + hi) // 2
        return f"CASE WHEN {e[mid]} {op} {t} THEN {rec(mid + 1, hi)} ELSE {rec(lo, mid)} END"

    return rec(0, len(e))


class Engine(ABC):
    """An SQL engine holding the view ``cohort`` over one :class:`Source`."""

    name: str = ""

    def __init__(self, source: Source) -> None:
        self.source = source

    @abstractmethod
    def columns(self) -> dict[str, str]:
        """Column name -> kind: ``int``, ``float``, ``bool``, ``text`` or ``other`` (``_row`` left out)."""

    @abstractmethod
    def quote(self, name: str) -> str:
        """An identifier quoted for this dialect."""

    @abstractmethod
    def string(self, text: str) -> str:
        """A string literal for this dialect."""

    @abstractmethod
    def rows(self, sql: str) -> list[tuple]:
        """Run a query whose result is small; returns its rows as tuples."""

    @abstractmethod
    def batches(self, sql: str, size: int) -> Iterator[pd.DataFrame]:
        """Run a query and yield its result as frames of at most ``size`` rows."""

    @abstractmethod
    def cache(self, sql: str) -> str:
        """Keep a query's (small) result as a temporary table; returns its name."""

    def count_edges(self, t: str, edges: np.ndarray, strict: bool) -> str:
        """SQL for the number of sorted ``edges`` below ``t`` (``strict``) or at or below it: the balanced CASE of
        :func:`balanced_case`; an engine may spell the same search otherwise."""
        return balanced_case(t, edges, strict)

    def scalar(self, sql: str):
        return self.rows(sql)[0][0]

    def close(self) -> None:  # noqa: B027 - optional hook
        pass


def kind_of(type_name: str) -> str:
    """An SQL type name (DuckDB or Spark) as a kind."""
    t = type_name.lower()
    if t in ("boolean", "bool"):
        return "bool"
    if any(k in t for k in ("double", "float", "real", "decimal")):
        return "float"
    if any(k in t for k in ("int", "long", "short", "byte", "hugeint")):
        return "int"
    if any(k in t for k in ("char", "string", "text")):
        return "text"
    return "other"
