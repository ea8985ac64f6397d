"""The API's docstring examples run as doctests, on a throw-away ledger (the autouse fixture sets DPSURV_LEDGER)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["dpsurv_core.api._command", "dpsurv_core.api.datasets", "dpsurv_core.api.curves", "dpsurv_core.api.logrank",
           "dpsurv_core.api.weibull", "dpsurv_core.api.regression", "dpsurv_core.api.audit"]


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name: str, ledger_path) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} example(s) of {name} failed"
