"""Each mechanism class the catalogue builds, and each data class a user constructs, documents its constructor in a
numpydoc ``Parameters`` section of its class docstring, as lifelines and scikit-survival do: every parameter of the
signature is there, and nothing there is missing from the signature."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest

from dpsurv_core.privacy import catalogue

DATA_CLASSES = ("Cohort", "PublicParameters", "TimeGrid", "ColumnMap", "ValueLabels", "NumericSplit")
MECHANISMS = list(dict.fromkeys(c for c in (e.mechanism_class() for e in catalogue.ENTRIES) if inspect.isclass(c)))
PENDING: set[str] = set()  # classes whose Parameters section is still to be written (none left)
CLASSES = MECHANISMS + [getattr(importlib.import_module("dpsurv_core.data"), n) for n in DATA_CLASSES]


def section(doc: str, title: str) -> str | None:
    """The body of numpydoc section ``title`` (up to the next section heading), or None when there is none."""
    found = re.search(rf"^{title}\n-{{{len(title)}}}\n(.*?)(?=^\w[\w ]*\n-{{3,}}\n|\Z)", doc, flags=re.M | re.S)
    return found.group(1) if found else None


def documented(cls: type) -> list[str]:
    """The names the Parameters section describes: its unindented ``name : type`` lines (``a, b : type`` names
    two; a bare ``name`` line one)."""
    body = section(inspect.cleandoc(cls.__dict__.get("__doc__") or ""), "Parameters")
    assert body is not None, f"{cls.__name__} has no Parameters section"
    names: list[str] = []
    for line in body.splitlines():
        if line and not line[0].isspace():
            names += [n.strip() for n in line.split(" : ")[0].split(",")]
    return names


def signature(cls: type) -> list[str]:
    """The constructor's named parameters (no self, *args or **kwargs)."""
    return [p.name for p in inspect.signature(cls).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def test_the_classes_are_the_catalogues_eighteen_and_the_six_data_classes():
    assert len(MECHANISMS) == 18 and len(CLASSES) == 24


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_parameters_section_names_exactly_the_constructors_parameters(cls):
    if cls.__name__ in PENDING:
        pytest.xfail(f"{cls.__name__}'s Parameters section is still to be written")
    takes = signature(cls)
    if not takes:  # a constructor without parameters needs no section; if it has one it must be empty
        doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
        assert not (section(doc, "Parameters") or "").strip(), f"{cls.__name__} takes no parameters"
        return
    names = documented(cls)
    assert len(names) == len(set(names)), f"{cls.__name__}: a parameter is described twice: {names}"
    assert not set(takes) - set(names), f"{cls.__name__}: undocumented {sorted(set(takes) - set(names))}"
    assert not set(names) - set(takes), f"{cls.__name__}: not in the signature {sorted(set(names) - set(takes))}"
    assert names == takes, f"{cls.__name__}: the section's order {names} is not the signature's {takes}"


def test_the_section_parser_reads_numpydoc():
    class Example:
        """Summary.

        Parameters
        ----------
        a, b : int
            Two.
        c : float, default 1.0
            Meaning, on a line that mentions x : y.

        Privacy
        -------
        Cost: none.
        """

        def __init__(self, a: int, b: int, c: float = 1.0, *args: int, **kw: int) -> None:
            pass

    assert documented(Example) == ["a", "b", "c"] == signature(Example)
