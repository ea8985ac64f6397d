"""Errors a user can fix. ``str(error)`` is one sentence saying what is wrong and how to fix it."""


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
