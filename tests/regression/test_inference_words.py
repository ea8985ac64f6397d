"""Plain numbers in the regression sentences a clinician reads."""

from __future__ import annotations

from dpsurv_core.regression.inference import _ratio


def test_ratios_far_from_one_are_said_in_words():
    """An odds ratio interval from 1.17e-48 to 1.17e+39 reads "from below 0.001 to above 1,000"; ordinary ratios keep
    three significant figures, and a limit near 1 is never printed as exactly 1."""
    assert (_ratio(1.17e-48), _ratio(1.17e39)) == ("below 0.001", "above 1,000")
    assert (_ratio(0.4321), _ratio(1.51), _ratio(999.0)) == ("0.432", "1.51", "999")
    assert _ratio(1.0037) == "1.0037"
