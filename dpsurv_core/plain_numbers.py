"""Numbers as plain text, as clinicians read them: significant figures without scientific notation, ratios, p-values.

The lowest layer: every family's sentences (a Weibull or regression release's warnings) and the reports print numbers
with these, so they import nothing of dpsurv_core. :mod:`dpsurv_core.report.text` re-exports them.
"""

from __future__ import annotations

import math

DASH = "–"


def _missing(x: object) -> bool:
    try:
        return x is None or math.isnan(float(x))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return True


def plain_number(x: float, digits: int = 3) -> str:
    """``x`` to ``digits`` significant figures as plain text: thousands separators, never scientific notation
    (2,190, not 2.19e+03; 0.000123, not 1.23e-04); a missing number is a dash."""
    if x is None or not math.isfinite(float(x)):
        return "–" if x is None or math.isnan(float(x)) else ("-inf" if float(x) < 0 else "inf")
    x = float(f"{float(x):.{digits}g}")  # rounded to the significant figures
    if x == 0:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    text = f"{x:.{digits - 1 - math.floor(math.log10(abs(x)))}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_ratio(x: float) -> str:
    """An odds or hazard ratio as the Regression page's table, the warnings and the report print it, as clinicians
    write it: two decimals from 0.01 to 100 (0.60, 3.70), three significant figures beyond (0.00123, 123), with more
    where two decimals would print a ratio near 1 as exactly 1 (1.0037 is not 1: a sentence saying the interval
    includes 1 must not show its end as 1 itself); beyond 1/1,000 and 1,000 in words ("below 0.001", "above 1,000"),
    never scientific notation (1.17e-48); thousands separators; a missing ratio is a dash."""
    if x is None or math.isnan(float(x)):
        return "–"
    x = float(x)
    if x < 1e-3:
        return "below 0.001"
    if x > 1e3:
        return "above 1,000"
    if not 0.01 <= x <= 100:
        return plain_number(x)
    text = f"{x:.2f}"
    if text == "1.00" and x != 1.0:
        for digits in (5, 8, 12):
            text = plain_number(x, digits)
            if text != "1":
                break
    return text


def format_ratio_ci(ratio: float, lower: float | None = None, upper: float | None = None, level: float = 0.95) -> str:
    """``0.60 (95% CI 0.43 to 0.83)``, each number by :func:`format_ratio` (``below 0.001 (95% CI below 0.001
    to 0.0123)``); the ratio alone when the interval is missing."""
    if lower is None or upper is None or math.isnan(float(lower)) or math.isnan(float(upper)):
        return format_ratio(ratio)
    return f"{format_ratio(ratio)} ({level:.0%} CI {format_ratio(lower)} to {format_ratio(upper)})"


def p_value(p: float | None, digits: int = 2, floor: float = 0.001) -> str:
    """A p-value to ``digits`` significant digits as R's ``format.pval`` prints it (``0.012``, ``0.5``), with values
    below ``floor`` as ``< 0.001``. A missing p is a dash; a value outside [0, 1] raises ValueError."""
    if _missing(p):
        return DASH
    p = float(p)  # type: ignore[arg-type]
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"A p-value must lie in [0, 1], not {p!r}.")
    if p < floor:
        return f"< {floor:g}"
    return f"{p:.{digits}g}"
