"""Read with care, on the row: a short phrase per coefficient of a private fit, beside its number in a table.

The same rules as the sentences of :func:`dpsurv_core.regression.inference.coefficient_warnings` (which say what to do
next, gathered after the table): the sign flips in at least FLIP_SHARE of plausible noise draws; the ratio's 95%
interval spans 1 widely (its ends more than WIDE_RATIO apart); the noise's standard deviation on the log ratio is
larger than the estimate. Post-processing of the released coefficients and the public noise law only.
"""

from __future__ import annotations

from dpsurv_core.regression.inference import FLIP_SHARE, WIDE_RATIO, CoefficientInference, _exp


def row_cautions(inf: CoefficientInference) -> list[str]:
    """One phrase per covariate (in ``inf.names`` order), "" where the row can be read as it stands."""
    out = []
    for j in range(len(inf.names)):
        lo, hi = _exp(inf.lower[j]), _exp(inf.upper[j])
        said = []
        if inf.sign_flip[j] >= FLIP_SHARE:
            said.append(f"sign flips in {inf.sign_flip[j]:.0%} of noise draws: direction unknown")
        if lo <= 1.0 <= hi and (lo == 0 or hi / max(lo, 1e-300) > WIDE_RATIO):
            said.append("interval spans 1 widely")
        if inf.noise_se[j] > abs(inf.estimate[j]):
            said.append("mostly noise")
        out.append("; ".join(said))
    return out
