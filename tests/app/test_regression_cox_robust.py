"""The Regression page's Cox settings against R: the ties choice (Efron by default, Breslow) and, with a subject id
mapped, the robust (cluster) standard errors of R's ``coxph(..., cluster = id)``.

R's answers: ``bundled`` of ``tests/regression/r_reference/cox_cluster.json`` (kidney, age + sex + frail, Efron and
Breslow; ``tools/r_reference/cox_cluster.R``). Each test has its own ledger database (the autouse ``ledger_path``
fixture)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from tests.app.apptest import ok
from tests.app.tables import shown, shown_text

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dpsurv_app" / "pages" / "5_Regression.py")
R = {case["ties"]: case for case in json.loads(
    (ROOT / "tests" / "regression" / "r_reference" / "cox_cluster.json").read_text())["bundled"]}


def kidney(with_id: bool) -> session.DataChoice:
    """Bundled kidney (two rows per patient) with its horizon declared past every time (R censors nothing)."""
    choice = session.bundled_choice("kidney")
    mapping = dataclasses.replace(choice.mapping, id="id" if with_id else None,
                                  max_rows_per_subject=2 if with_id else 1)
    return dataclasses.replace(choice, mapping=mapping, horizon=1000.0)


def page(choice: session.DataChoice, ties: str | None = None) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=180)
    at.session_state["data_choice"] = choice
    at.session_state["rg_covs"] = ["age", "sex", "frail"]
    at.session_state["rg_mechs"] = []
    if ties is not None:
        at.session_state["rg_ties"] = ties
    return ok(at)


def robust(at: AppTest):
    return next((t for t in (shown(x.value) for x in at.table) if "Robust SE" in t.columns), None)


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_robust_standard_errors_are_r_coxph_cluster_id(ties):
    at = page(kidney(True), ties)
    assert at.radio(key="rg_ties").value == ties
    table = robust(at).set_index("Covariate")
    r = R[ties]
    for name, k in (("age", 0), ("frail", 2)):  # numeric covariates: the same coefficient whatever sex's labels
        row = table.loc[name]
        assert row["Robust SE"] == f"{r['robust_se'][k]:.4g}", (ties, name, row["Robust SE"])
        assert row["SE (model)"] == f"{r['se'][k]:.4g}", (ties, name)
        assert row["Coefficient"] == f"{r['coefficients'][k]:.4g}", (ties, name)
    text = " ".join(shown_text(c.value) for c in at.caption)
    assert f'coxph(..., ties = "{ties}", cluster = id)' in text and "38 subjects in 76 rows" in text
    assert f"coxph ({ties.capitalize()} ties)" in text


def test_efron_is_the_default_and_no_robust_table_without_an_id():
    at = page(kidney(False))
    assert at.radio(key="rg_ties").value == "efron"
    assert robust(at) is None
