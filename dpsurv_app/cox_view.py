"""The Regression page's Cox settings and its robust (cluster) table: widgets and formatting only.

The numbers come from :func:`dpsurv_core.regression.model.fit_cox` (R's ``coxph``: Efron or Breslow ties, and with a
subject id ``coxph(..., cluster = id)``'s robust variance, the dfbeta residuals summed within subject); this module
chooses, formats and draws them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core.regression.inference import format_ratio_ci
from dpsurv_core.report.text import markdown_literal, p_value

TIES = {"efron": "Efron (R's coxph default)", "breslow": "Breslow"}
TIES_HELP = ("How the Cox partial likelihood counts patients whose events share a time: Efron's approximation (R's "
             "coxph default) or Breslow's (SAS, Stata and older software). Without tied event times both are the same.")


def ties_choice(container: Any) -> str:
    """The Cox ties method the user picks (``efron`` by default) in ``container`` (a Streamlit container)."""
    return str(container.radio("Cox regression: tied event times", list(TIES), format_func=TIES.get, horizontal=True,
                               key="rg_ties", help=TIES_HELP))


def robust_wanted(id_column: str | None) -> bool | None:
    """What the page asks of the Cox fit: the robust variance when a subject id is mapped (as the command line does
    with ``--id``: R's ``coxph(..., cluster = id)``), else only when some subject has several rows (None)."""
    return True if id_column else None


def significant(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, or a dash when it is not a number."""
    return f"{float(x):.{digits}g}" if x is not None and np.isfinite(float(x)) else "–"


def robust_table(cox_table: pd.DataFrame, name: Callable[[str], str]) -> pd.DataFrame | None:
    """The Cox rows with the model-based and the robust (cluster) standard errors side by side, the hazard ratio with
    its robust 95% interval exp(beta -/+ 1.96 robust se) and its robust Wald p-value; None when the fit has no robust
    variance (no subject id)."""
    if "robust_se" not in cox_table.columns:
        return None
    t = cox_table
    return pd.DataFrame({
        "Covariate": t.covariate.map(name),
        "Hazard ratio (robust 95% CI)": [format_ratio_ci(r, lo, up) for r, lo, up in
                                         zip(t.odds_ratio, t.robust_lower, t.robust_upper)],
        "Coefficient": t.coefficient.map(significant),
        "SE (model)": t.se.map(significant),
        "Robust SE": t.robust_se.map(significant),
        "Robust p": [p_value(float(p)) if np.isfinite(float(p)) else "–" for p in t.robust_p_value],
    })


def robust_caption(id_column: str, subjects: int | None, rows: int, ties: str) -> str:
    """The sentence under the robust table: what it is, as R computes it."""
    who = f"{subjects:,} subjects in {rows:,} rows" if subjects is not None else f"{rows:,} rows"
    return (f"Robust (cluster) standard errors, as R's coxph(..., ties = \"{ties}\", cluster = "
            f"{markdown_literal(id_column)}): the dfbeta residuals summed within each subject of "
            f"'{markdown_literal(id_column)}' ({who}), so that a subject's several rows count as one patient's "
            "correlated outcomes (Lin & Wei 1989). Non-private, like the Cox row above: private fits have no robust "
            "variance (docs/inference.md says why).")
