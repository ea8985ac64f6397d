"""The two-sided standard normal quantile ``z = ndtri(1 - alpha / 2)`` of the curves' bands and limits, without
importing SciPy for the usual levels.

SciPy's special functions take a good part of a second to import, more than a release's own work on a registry file.
The usual levels' quantiles are kept here as SciPy computes them (bit for bit: ``tests/curves/test_normal_quantile.py``
checks each against ``scipy.special.ndtri``), and any other level is computed by SciPy as before.
"""

from __future__ import annotations

# alpha -> scipy.special.ndtri(1 - alpha / 2), as the float SciPy returns
Z_TWO_SIDED = {
    0.01: 2.5758293035489004,
    0.05: 1.959963984540054,
    0.1: 1.6448536269514722,
    0.2: 1.2815515655446004,
}


def two_sided_z(alpha: float) -> float:
    """``scipy.special.ndtri(1 - alpha / 2)``: read from :data:`Z_TWO_SIDED` for the usual levels, else computed."""
    z = Z_TWO_SIDED.get(float(alpha))
    if z is None:
        from scipy.special import ndtri

        z = float(ndtri(1 - alpha / 2))
    return z
