"""Plain numbers in the regression sentences a clinician reads."""

from __future__ import annotations

import re

import numpy as np

from dpsurv_core.regression.inference import (
    CoefficientInference,
    _ratio,
    coefficient_warnings,
    format_ratio,
    format_ratio_ci,
    labelled_quantities,
    plain_number,
    report_table,
)


def test_ratios_far_from_one_are_said_in_words():
    """An odds ratio interval from 1.17e-48 to 1.17e+39 reads "from below 0.001 to above 1,000"; ordinary ratios have
    two decimals as clinicians write them (three significant figures beyond 0.01 to 100), and a limit near 1 is never
    printed as exactly 1."""
    assert (_ratio(1.17e-48), _ratio(1.17e39)) == ("below 0.001", "above 1,000")
    assert (_ratio(0.4321), _ratio(1.51), _ratio(3.7), _ratio(999.0)) == ("0.43", "1.51", "3.70", "999")
    assert (_ratio(1.0037), _ratio(0.999), _ratio(1.0000004), _ratio(1.0)) == ("1.0037", "0.999", "1.0000004", "1.00")


# ------------------------------------------------------------- one rule for ratios: page table, warnings, report
SCIENTIFIC = re.compile(r"\d[eE][+-]?\d")


def test_plain_numbers_have_thousands_separators_and_no_scientific_notation():
    assert [plain_number(v) for v in (2190.4, 47412.0, -3600.2, 0.000123, 1.5, 0.0, 999.6, 43.8)] == \
        ["2,190", "47,400", "-3,600", "0.000123", "1.5", "0", "1,000", "43.8"]
    assert plain_number(-1148.34, 4) == "-1,148" and plain_number(float("nan")) == "–"


def test_one_ratio_rule_for_the_table_the_warnings_and_the_report():
    assert format_ratio(1.413e-07) == "below 0.001" and format_ratio(1.0142e304) == "above 1,000"
    assert (format_ratio(0.0), format_ratio(float("inf")), format_ratio(float("nan"))) == ("below 0.001", "above 1,000", "–")
    assert (format_ratio(999.0), format_ratio(1000.0), format_ratio(0.001)) == ("999", "1,000", "0.001")
    assert (format_ratio(0.0012345), format_ratio(123.45), format_ratio(0.01), format_ratio(100.0)) == \
        ("0.00123", "123", "0.01", "100.00")
    assert format_ratio_ci(1.413e-07, 1e-9, 2e-6) == "below 0.001 (95% CI below 0.001 to below 0.001)"
    assert format_ratio_ci(0.599, 0.431, 0.831) == "0.60 (95% CI 0.43 to 0.83)"  # R's coxph on lung, sex
    assert format_ratio_ci(2500.0, 12.3456, 1e40) == "above 1,000 (95% CI 12.35 to above 1,000)"
    assert format_ratio_ci(1.0183, 0.999, 1.0383) == "1.02 (95% CI 0.999 to 1.04)"
    assert format_ratio_ci(1.5, float("nan"), float("nan")) == "1.50"  # no interval: the ratio alone


def _noisy() -> CoefficientInference:
    """Output perturbation at a tiny epsilon: odds ratios beyond 1/1,000 and 1,000, noise far above the effect."""
    est, noise = np.array([-43.8, -3600.0]), np.array([2190.0, 47600.0])
    return CoefficientInference(["age", "sex=Female"], est, est - 2 * noise, est + 2 * noise, noise, noise,
                                np.array([0.9, 0.8]), np.array([0.49, 0.47]), "method",
                                labels={"sex=Female": "sex: Female vs Male"})


def test_warnings_name_a_category_as_the_page_does_and_print_plain_numbers():
    text = " ".join(coefficient_warnings(_noisy()))
    assert "sex: Female vs Male: the odds ratio could be anywhere from below 0.001 to above 1,000" in text
    assert "so this release cannot say whether sex: Female vs Male raises or lowers the risk" in text
    assert "standard deviation 47,600 on the log odds ratio scale) is larger than the effect itself (-3,600)" in text
    assert "sex=Female" not in text and not SCIENTIFIC.search(text)


def test_report_table_names_the_odds_ratio_and_uses_the_same_words():
    outputs = {"ratio_kind": "odds ratio", "intervals": [
        {"covariate": "age", "covariate_label": "age", "coefficient": -15.77, "ratio": 1.413e-07, "ratio_lower": 0.0,
         "ratio_upper": 1.0142e304, "p_value": 0.58, "sign_flip_share": 0.29},
        {"covariate": "sex=Female", "covariate_label": "sex: Female vs Male", "coefficient": -0.5647,
         "ratio": 0.5686, "ratio_lower": 0.4004, "ratio_upper": 0.8071, "p_value": 0.0004, "sign_flip_share": 0.0}]}
    table = report_table(outputs)
    assert list(table.columns) == ["covariate", "coefficient (log odds ratio)", "odds ratio (95% CI)", "p (calibrated)",
                                   "sign flips in draws"]
    assert table.iloc[0].tolist() == ["age", "-15.77", "below 0.001 (95% CI below 0.001 to above 1,000)", "0.58", "29%"]
    assert table.iloc[1].tolist() == ["sex: Female vs Male", "-0.5647", "0.57 (95% CI 0.40 to 0.81)", "< 0.001", "0%"]
    # a record written before ratio_kind was kept is a discrete-time (logistic) release all the same
    assert "odds ratio (95% CI)" in report_table({"intervals": outputs["intervals"]}).columns
    # the released numbers name the category as the tables and warnings do
    rows = [{"quantity": "coefficients.age", "value": -15.77}, {"quantity": "coefficients.sex=Female", "value": -0.56}]
    assert [r["quantity"] for r in labelled_quantities(rows, outputs)] == ["coefficients.age",
                                                                          "coefficients.sex: Female vs Male"]
    assert labelled_quantities(rows, {"survival": []}) == rows
