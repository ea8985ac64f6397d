"""One rule for odds ratios and one name per category wherever a regression shows them: the Regression page's
table and warnings, the command's warnings, and the report built from a release record.

The rule: three significant figures with thousands separators and no scientific notation, and beyond 1/1,000 and
1,000 the words "below 0.001" and "above 1,000"; the discrete-time model's ratio is named an odds ratio; a category
is named against its reference level (``sex: Female vs Male``), never by its indicator's key (``sex=Female``).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.cli import main
from dpsurv_core.privacy.ledger import LedgerStore, record_outputs
from dpsurv_core.regression import mechanisms
from dpsurv_core.report.html import ledger_report
from tests.app.tables import shown

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dpsurv_app" / "pages" / "5_Regression.py")
SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")
RATIO_CI = re.compile(r"^(below 0\.001|above 1,000|[\d,.]+) \(95% CI (below 0\.001|above 1,000|[\d,.]+) to "
                      r"(below 0\.001|above 1,000|[\d,.]+)\)$")
# lung, age and sex (categorical, reference Male), Lambda 0.0001 at epsilon 0.1: output perturbation's noise swamps
# every coefficient, so its odds ratios fall beyond 1/1,000 and 1,000
def fixed_noise(monkeypatch, age: float = 0.0) -> None:
    """Output perturbation's draw made fixed (the released noise is fresh each time): b = 0 except ``age`` on age's
    coordinate. The interval still carries the noise's public law (drawn by the inference, not by this draw)."""
    def draw(noise, dim, scale, trials):
        b = np.zeros((trials, dim))
        b[:, 0] = age
        return b

    monkeypatch.setattr(mechanisms, "sphere_noise", draw)


NOISY = ["regression", "--data", "lung", "--covariates", "age,sex", "--categorical", "sex", "--mechanism", "output",
         "--epsilon", "0.1", "--lambda", "0.0001"]
DECLARED = ["--horizon", "1100", "--n-public", "228", "--range", "age:18:100"]  # a release reads nothing off the data


def test_command_warnings_name_the_category_and_print_plain_numbers(capsys):
    assert main([*NOISY, "--seed", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ratio_kind"] == "odds ratio" and out["covariate_labels"]["sex=Female"] == "sex: Female vs Male"
    text = " ".join(out["warnings"])
    assert "sex: Female vs Male: the odds ratio could be anywhere from below 0.001 to above 1,000" in text
    assert "sex=Female" not in text and not SCIENTIFIC.search(text)


def test_report_of_a_release_says_odds_ratio_in_the_same_words(ledger_path, capsys, monkeypatch):
    fixed_noise(monkeypatch, age=-1e6)  # age's odds ratio far below 1/1,000, sex's the ridge fit's
    assert main([*NOISY, *DECLARED, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    store = LedgerStore(ledger_path)
    (fp,) = {r.fingerprint for r in store.records()}
    (record,) = store.release_records(fp)
    outputs = record_outputs(record.body)
    assert outputs["ratio_kind"] == "odds ratio"
    assert outputs["warnings"] == printed["warnings"]
    page = html.unescape(ledger_report("Release report", "lung", store.ledger(fp), [record]))
    start = page.index("Coefficients with 95% intervals that carry the noise")
    table = page[start:page.index("</table>", start)]
    assert "odds ratio (95% CI)" in table and "coefficient (log odds ratio)" in table
    assert "sex: Female vs Male" in table and "(95% CI below 0.001 to above 1,000)" in table
    assert "below 0.001 (95% CI below 0.001 to below 0.001)" in table  # age: not 1.413e-07
    assert not SCIENTIFIC.search(table)
    for w in printed["warnings"]:
        assert f"Read with care: {w}" in page
    assert "Read with care: sex: Female vs Male: the odds ratio could be anywhere from below 0.001 to above 1,000" in page
    assert "coefficients.sex: Female vs Male" in page  # the released numbers name the category the same way
    assert "sex=Female" not in page


@pytest.mark.slow
def test_regression_page_table_and_warnings_use_the_same_rule_and_labels(monkeypatch):
    fixed_noise(monkeypatch, age=-1e6)  # the preview of output perturbation: age far below 1/1,000
    at = AppTest.from_file(PAGE, default_timeout=300)
    at.session_state["data_choice"] = session.bundled_choice("lung")
    for key, value in {"rg_covs": ["age", "sex"], "rg_eps": 0.1, "rg_lam": 0.0001, "rg_trials": 10,
                       "rg_mechs": ["output"]}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    df = shown(at.table[0].value)
    assert set(df.Covariate) == {"age", "sex: Female vs Male"}
    assert set(df["Ratio type"]) == {"odds ratio", "hazard ratio"}
    ratios = df["Ratio (95% CI)"].tolist()
    assert all(RATIO_CI.match(r) for r in ratios), ratios
    assert not any("10⁻⁶" in r or "10⁶" in r or SCIENTIFIC.search(r) for r in ratios)
    output = dict(zip(df.Covariate[df.Estimate.str.startswith("Output perturbation")],
                      df["Ratio (95% CI)"][df.Estimate.str.startswith("Output perturbation")]))
    assert output["age"] == "below 0.001 (95% CI below 0.001 to below 0.001)"  # was < 10⁻⁶ (95% CI < 10⁻⁶ to < 10⁻⁶)
    assert output["sex: Female vs Male"].endswith("(95% CI below 0.001 to above 1,000)")
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")  # markdown escapes
    assert "sex: Female vs Male: the odds ratio could be anywhere from below 0.001 to above 1,000" in warnings
    assert not SCIENTIFIC.search(warnings)
    words = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [warnings]).replace("\\", "")
    assert "sex=Female" not in words
    assert "A ratio shown as below 0.001 or above 1,000 means" in words and "10⁻⁶" not in words
