"""The glossary, its popovers and tooltips, and explainers that open on a page's first visit only."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import glossary

REQUIRED = ("Greenwood", "life-table rule", "add/remove neighbours", "change-one-label", "LSP rung", "sanitizer bound",
            "epsilon", "ledger", "Kaplan-Meier", "log-rank", "hazard ratio", "RMST", "censored", "disclosure")


def test_glossary_has_every_term_in_one_or_two_plain_sentences():
    for name in REQUIRED:
        text = glossary.define(name)
        assert 1 <= text.count(". ") + 1 <= 3 and text.endswith("."), name
        assert len(text) < 300, name
    assert glossary.define("greenwood") == glossary.define("Greenwood")  # case-insensitive
    assert glossary.help_text("RMST").startswith("**RMST**: Restricted mean survival time")
    with pytest.raises(KeyError, match="not in the glossary"):
        glossary.define("frobnication")


def _page() -> None:
    import streamlit as st

    from dpsurv_app import glossary as g

    g.start_run(st.session_state.get("_test_page", "curves"))
    g.explainer("curves", "Text of the explainer.")
    g.term("Greenwood")
    g.terms("epsilon", "ledger")


def test_explainer_opens_on_the_first_visit_and_stays_open_on_its_reruns_then_collapses():
    at = AppTest.from_function(_page)
    at.run()
    assert not at.exception
    (box,) = at.expander
    assert box.label == "What am I looking at?" and box.proto.expanded is True
    assert box.markdown[0].value == "Text of the explainer."
    at.run()  # a widget change on the same page: still the first visit
    assert at.expander[0].proto.expanded is True
    at.session_state["_test_page"] = "data"  # the user goes to another page ...
    at.run()
    at.session_state["_test_page"] = "curves"  # ... and comes back
    at.run()
    assert at.expander[0].proto.expanded is False


def test_terms_render_as_popovers_holding_their_definition():
    at = AppTest.from_function(_page)
    at.run()
    pops = at.get("popover")
    assert [p.proto.popover.label for p in pops] == ["Greenwood", "epsilon", "ledger"]
    assert pops[0].children[1].value == glossary.define("Greenwood")
    texts = [m.value for m in at.markdown]
    assert glossary.define("Greenwood") in texts and glossary.define("epsilon") in texts
    assert "Words on this page" in [c.value for c in at.caption]


def _glossary_calls() -> list[tuple[str, str]]:
    """(file, term) for every literal term passed to terms/term/help_text/define in the app's sources."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    found = []
    for path in [*sorted((root / "dpsurv_app" / "pages").glob("*.py")), *sorted((root / "dpsurv_app").glob("*.py"))]:  # app.py too
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in {"terms", "term", "help_text", "define"}:
                found += [(path.name, a.value) for a in node.args if isinstance(a, ast.Constant)
                          and isinstance(a.value, str)]
    return found


def test_every_term_a_page_names_is_in_the_one_glossary():
    calls = _glossary_calls()
    assert len(calls) > 40 and {f for f, _ in calls} >= {"2_Survival_curves.py", "5_Regression.py",
                                                         "7_Trade-off_explorer.py"}
    lower = {k.lower() for k in glossary.GLOSSARY}
    assert [(f, t) for f, t in calls if t.lower() not in lower] == []
    # the page-specific words live in the glossary itself, not added by the pages at run time
    for word in ("calibrated test", "disclosure control", "empirical epsilon", "exposure", "omega", "TLL",
                 "odds ratio", "Wald test", "calibrated p-value"):
        assert glossary.define(word).endswith(".")
