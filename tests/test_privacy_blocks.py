"""Every mechanism class the catalogue builds says in its docstring, in a numpydoc ``Privacy`` section of 3-5 lines,
what it costs, its neighbouring relation, what it protects and its source (issue 37); the relation and the unit
agree with the ``cost`` of an instance built at epsilon 1, and the source with the catalogue's paper."""

from __future__ import annotations

import inspect
import re

import pytest

from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.cost import (
    ADD_REMOVE,
    CHANGE_LABEL,
    DISCLOSURE_CONTROL,
    GROUP_LABEL,
    NO_NEIGHBOURS,
    SUBJECT,
)
from dpsurv_core.regression.person_period import person_period

# the words a Privacy section uses for each neighbouring relation and protected unit of PrivacyCost
NEIGHBOURS = {ADD_REMOVE: "add/remove one subject", CHANGE_LABEL: "change one subject's group label",
              NO_NEIGHBOURS: "no formal guarantee"}
PROTECTS = {SUBJECT: "one subject's rows", GROUP_LABEL: "the group label only", DISCLOSURE_CONTROL: "no formal guarantee"}
LABELS = ("Cost:", "Neighbours:", "Protects:", "Source:")
CLASS_ENTRIES = [e for e in catalogue.ENTRIES if inspect.isclass(e.mechanism_class())]


@pytest.fixture(scope="module")
def pp():
    return person_period(load_bundled("lung", covariates=("age", "sex")), ["age", "sex"], horizon=1100.0, intervals=10,
                         knots=3)


def context(entry: catalogue.Entry, pp) -> dict:
    """What the entry's command would pass to build it."""
    if entry.family == catalogue.CURVES:
        return {"rows_per_subject": 1, "n_points": 20, "categories": ("1", "2")}
    if entry.family == catalogue.WEIBULL:
        return {"horizon": 1100.0}
    return {"pp": pp}


def privacy_block(cls: type) -> dict[str, str]:
    """The class's own Privacy section, one entry per labelled fact (continuation lines joined)."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    found = re.search(r"^Privacy\n-{7}\n(.+?)(?:\n\s*\n|\Z)", doc, flags=re.M | re.S)
    assert found, f"{cls.__name__} has no Privacy section"
    lines = found.group(1).splitlines()
    assert 3 <= len(lines) <= 5, f"{cls.__name__}: the Privacy section has {len(lines)} lines, not 3-5"
    facts: dict[str, str] = {}
    for line in lines:
        label = next((x for x in LABELS if line.startswith(x)), None)
        if label:
            facts[label] = line[len(label):].strip()
        else:
            assert facts, f"{cls.__name__}: the Privacy section starts with {line!r}, not a label"
            facts[list(facts)[-1]] += " " + line.strip()
    assert list(facts) == list(LABELS), f"{cls.__name__}: the Privacy section says {list(facts)}, not {LABELS}"
    return facts


@pytest.mark.parametrize("entry", [e for e in CLASS_ENTRIES if e.private], ids=lambda e: f"{e.family}-{e.id}")
def test_a_private_mechanism_states_its_relation_and_unit_as_its_cost_does(entry, pp):
    cost = entry.build(1.0, **context(entry, pp)).cost
    facts = privacy_block(entry.mechanism_class())
    assert NEIGHBOURS[cost.neighbouring] in facts["Neighbours:"], (entry.id, facts["Neighbours:"])
    assert PROTECTS[cost.protects] in facts["Protects:"], (entry.id, facts["Protects:"])
    for other in set(NEIGHBOURS.values()) - {NEIGHBOURS[cost.neighbouring]}:
        assert other not in facts["Neighbours:"], (entry.id, other)
    for other in set(PROTECTS.values()) - {PROTECTS[cost.protects]}:
        assert other not in facts["Protects:"], (entry.id, other)
    if cost.formal:
        assert "epsilon" in facts["Cost:"] and "no epsilon" not in facts["Cost:"], (entry.id, facts["Cost:"])
    else:
        assert "no epsilon" in facts["Cost:"], (entry.id, facts["Cost:"])
    if cost.guarantee != "exact" and cost.formal:
        assert cost.guarantee in facts["Cost:"], (entry.id, cost.guarantee)
    # the source is the catalogue's: its first author (or "dpsurv's own design", or disclosure control practice)
    # and the year of the paper when it has one
    assert entry.paper.split()[0] in facts["Source:"], (entry.id, facts["Source:"])
    for year in re.findall(r"\((\d{4})\)", entry.paper)[:1]:
        assert year in facts["Source:"], (entry.id, year)


@pytest.mark.parametrize("entry", [e for e in CLASS_ENTRIES if not e.private], ids=lambda e: f"{e.family}-{e.id}")
def test_a_non_private_fit_says_it_protects_nothing(entry, pp):
    cost = entry.build(None, **context(entry, pp)).cost
    facts = privacy_block(entry.mechanism_class())
    assert not cost.private and cost.neighbouring == "none"
    assert facts["Neighbours:"].startswith("none") and facts["Protects:"].startswith("nothing"), (entry.id, facts)
    assert "epsilon = inf" in facts["Cost:"], (entry.id, facts["Cost:"])
    assert entry.paper.split()[0] in facts["Source:"], (entry.id, facts["Source:"])
