"""The boundary in the layout: a reader receives only JSON, and no reader module imports the code that reads data
(the cohort, files, bundled data sets, the engines) or Streamlit."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from dpsurv_core.publication import readers

ROOT = Path(__file__).resolve().parents[2]
DATA_READERS = ("dpsurv_core.data.cohort", "dpsurv_core.data.io", "dpsurv_core.data.datasets", "dpsurv_core.engines",
                "dpsurv_core.cli", "streamlit")


def _imports(module: str) -> set[str]:
    path = ROOT / (module.replace(".", "/") + ".py")
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("kind", sorted(readers.READERS))
def test_no_reader_imports_the_data(kind):
    module = readers.READERS[kind].split(":")[0]
    if not (ROOT / (module.replace(".", "/") + ".py")).exists():
        pytest.skip(f"{module} is not written yet")
    bad = [m for m in _imports(module) if m.startswith(DATA_READERS)]
    assert bad == [], f"{module} imports {bad}"
    assert callable(getattr(importlib.import_module(module), readers.READERS[kind].split(":")[1]))


def test_the_publication_layer_imports_no_family():
    for path in (ROOT / "dpsurv_core" / "publication").glob("*.py"):
        module = "dpsurv_core.publication." + path.stem
        assert not [m for m in _imports(module) if m.startswith(("dpsurv_core.curves", "dpsurv_core.weibull",
                                                                   "dpsurv_core.regression", "dpsurv_core.data",
                                                                   "dpsurv_core.cli"))], module


def test_every_curve_mechanism_reads_its_own_output_without_the_cohort():
    import inspect

    from dpsurv_core.privacy import catalogue

    for mid in catalogue.ids(catalogue.CURVES):
        cls = catalogue.get(catalogue.CURVES, mid).mechanism_class()
        if mid == "nonprivate":
            continue
        params = list(inspect.signature(cls.read).parameters)
        assert params[:3] == ["self", "released", "public"] and "cohort" not in params, mid
