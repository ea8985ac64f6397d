"""Errors a user can fix. ``str(error)`` is one sentence saying what is wrong and how to fix it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class DpsurvError(Exception):
    """Base class: a problem with the input, not a bug in dpsurv."""


class DataError(DpsurvError):
    """The data (file, columns, values) cannot be used as given."""

    def __init__(self, message: str, column: str | None = None):
        super().__init__(message)
        self.column = column


class SheetChoiceNeeded(DataError):
    """An Excel workbook has several sheets and none was chosen."""

    def __init__(self, sheets: list[str]):
        names = ", ".join(repr(s) for s in sheets)
        super().__init__(f"The workbook has {len(sheets)} sheets ({names}): choose which one holds the cohort.")
        self.sheets = sheets


class ParameterError(DpsurvError):
    """A mechanism or analysis parameter is out of range."""


class BudgetExceededError(DpsurvError):
    """A release would take the ledger past its budget cap."""


def stored_version(public_inputs: Mapping[str, Any], highest: int, rules: str) -> int:
    """The version of the reading rules ``rules`` that a record's ``public_inputs`` name (1 when they name none),
    refused in one sentence unless it is a whole number from 1 to ``highest`` (this dpsurv's version of them): every
    reading of a stored record reads it by the rules it was published with."""
    version = public_inputs.get("reader_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= highest:
        raise ParameterError(f"This record names {rules} version {version!r}; this dpsurv reads versions 1 to "
                             f"{highest}: read it with the dpsurv that made it, or a later one.")
    return version
