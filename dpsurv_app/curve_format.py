"""Formatting for the survival-curve pages: times, percentages, p-values and statistics as the pages print them,
group names from the session's value labels, and the pages' shared constants (privacy-loss choices, R's
``conf.type`` names, the quantiles read). No statistics here: every number comes from ``dpsurv_core``.
"""

from __future__ import annotations

import math

import numpy as np

from dpsurv_app import palette, session
from dpsurv_core.curves import summary as cs
from dpsurv_core.data.labels import ValueLabels, code_key
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.report.text import p_value

COLOURS = palette.COLOURS  # Okabe-Ito (colour-blind safe)
EPSILONS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0]
NOT_RELEASED = "not released"
# a grid that starts after 0 bins everyone earlier into its first bin: counts cannot say who is at risk before its
# second edge
UNKNOWN_AT_RISK = "unknown (grid starts later)"
CONF_TYPE_NAMES = {"plain": "plain (S ± 1.96 SE)", "log": "log (R's default)", "log-log": "log-log (lifelines' default)",
                   "logit": "logit", "arcsin": "arcsin"}
QUANTILES = (0.25, 0.5, 0.75)


# ----------------------------------------------------------------------------------------- formatting
def fmt_time(t: float, unit: str, difference: bool = False) -> str:
    """A time in the data's unit: whole days (below 10 days a fraction of a day is kept, as a short grid's points
    may have one; not for a ``difference`` of times, shown as precisely as the times), one decimal for weeks/months,
    two for years; never '-0'."""
    if t is None or (isinstance(t, float) and math.isnan(t)):
        return "—"
    if math.isinf(t):
        return "not reached"
    digits = {"days": 0, "weeks": 1, "months": 1, "years": 2}.get(unit, 1)
    if unit == "days" and not difference and abs(t) < 10 and abs(t - round(t)) > 1e-9:
        digits = 1 if abs(t * 10 - round(t * 10)) < 1e-6 else 2
    text = f"{t:,.{digits}f}"
    return text[1:] if text.startswith("-") and float(text.replace(",", "")) == 0 else text


def fmt_ci_time(est: float, lo: float, hi: float, unit: str) -> str:
    """``310 (284 to 361)``; ``not reached`` when the curve stays above one half; ``118 (no CI)`` when the lower band
    never reaches one half beside a finite estimate (R's NA for both limits: one patient who died, say)."""
    if math.isinf(est):
        return "not reached" if math.isinf(lo) else f"not reached (CI from {fmt_time(lo, unit)})"
    if math.isinf(lo):
        return f"{fmt_time(est, unit)} (no CI)"
    return f"{fmt_time(est, unit)} ({fmt_time(lo, unit)} to {fmt_time(hi, unit)})"


def fmt_interval(lo: float, hi: float, unit: str) -> str:
    """An interval of times, e.g. '292 to 384'; a dash when it is undefined."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return "—"
    return f"{fmt_time(lo, unit)} to {fmt_time(hi, unit)}"


def uninformative(lower: float, upper: float, public: PublicParameters) -> bool:
    """A quantile interval from the grid's start to 'not reached' says nothing."""
    return bool(np.isinf(upper) and lower <= float(public.grid.edges[0]) + 1e-9)


def fmt_pct(v: float, digits: int = 1) -> str:
    return "—" if v is None or math.isnan(v) else f"{100 * v:.{digits}f}%"


def fmt_p(p: float) -> str:
    """A p-value as clinicians write it: two significant digits, ``< 0.001`` below that (report.text.p_value)."""
    if p is None or math.isnan(p):
        return "not defined"
    return p_value(min(max(float(p), 0.0), 1.0))


def fmt_stat(s: float) -> str:
    return "not defined" if s is None or math.isnan(s) else f"{s:.2f}"


def estimand_axis(estimand: str) -> tuple[str, bool]:
    """Axis title and whether values are shown as percentages."""
    return {cs.SURVIVAL: ("Survival (%)", True), cs.HAZARD: ("Cumulative hazard", False),
            cs.INCIDENCE: ("Cumulative incidence (%)", True)}[estimand]


def session_labels() -> ValueLabels:
    """The value labels of the data in use (the Data page's, over a bundled data set's own); none outside a page."""
    try:
        return session.value_labels()
    except Exception:  # no Streamlit session (a bare import, a unit test of a figure): codes as they are
        return ValueLabels()


def group_name(label: str, column: str | None, labels: ValueLabels | None = None) -> str:
    """A group as a reader names it: its value label (``Male``) when the column's code has one; the code itself
    when other codes of the column have labels (so that one table names every group alike: gehan's '6-MP' beside
    'Control', not 'treat = 6-MP'); else ``column = code``; ``All patients`` for the whole cohort."""
    if label == "all":
        return "All patients"
    if not column:
        return str(label)
    known = labels or session_labels()
    named = known.label(column, label)
    if named != code_key(label):
        return named
    return str(label) if known.labels_for(column) else f"{column} = {label}"


# plotly's default (D3) colours that figures built in dpsurv_core still name, and their Okabe-Ito replacements
_D3_TO_OKABE_ITO = {"#1f77b4": palette.BLUE, "#d62728": palette.VERMILLION, "#ff7f0e": palette.ORANGE,
                    "#2ca02c": palette.BLUISH_GREEN, "#9467bd": palette.REDDISH_PURPLE, "#17becf": palette.SKY_BLUE,
                    "#8c564b": palette.SKY_BLUE, "#e377c2": palette.YELLOW, "#9ca3af": palette.GREY,
                    "#b91c1c": palette.VERMILLION, "#475569": palette.GREY,
                    "#d1d5db": "#CCCCCC", "#111827": palette.BLACK}
