"""A hazard ratio from released counts alone: the log-rank (Peto) estimate and its 95% interval.

For two groups, with O the observed and E the expected events of the compared group under H0 and V the log-rank
variance of O - E (:mod:`dpsurv_core.curves.logrank`), the one-step estimate of the log hazard ratio is

    log HR = (O - E) / V,   95% CI  exp((O - E) / V +- 1.96 / sqrt(V))

(Peto et al. 1977; Berry, Kitchin and Mock 1991, who show it is close to Cox's estimate when the hazard ratio is
between about 1/3 and 3 and the groups are of similar size, and biased towards 1 beyond). From a private release O,
E and V are read off the released noisy counts, and the noise adds to the variance of O - E: the interval here
adds the public noise covariance V_noise that the calibrated test uses (:func:`~dpsurv_core.curves.logrank.
noise_covariance`), so its half-width is 1.96 sqrt(V + V_noise) / V; without noise it is the formula above.

Everything here is post-processing of a stored release (its released counts and its declared public inputs):
:func:`released_hazard_ratios` reads no data. A ratio is given only where the release's noise has a per-cell variance
the test models (Laplace counts, adaptive-km's merged bins) or there is none; label-private releases (their counts
are of reported labels, which pull the ratio towards 1) and disclosure control (no variance model for its rule) get a
sentence saying why there is none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

Z95 = 1.959963984540054  # the standard normal's 97.5% point
METHOD = ("log-rank (Peto) estimate exp((O - E)/V) from the released counts, 95% CI exp((O - E)/V +- 1.96 "
          "sqrt(V + V_noise)/V) with the privacy noise's variance added (Peto et al. 1977; Berry, Kitchin and Mock "
          "1991)")


@dataclass(frozen=True)
class HazardRatio:
    """The hazard ratio of ``group`` against ``reference`` with its 95% interval, and what it was computed from."""

    group: str
    reference: str
    estimate: float
    lower: float
    upper: float
    observed: float
    expected: float
    variance: float
    noise_variance: float = 0.0


def peto_hazard_ratio(observed: float, expected: float, variance: float, noise_variance: float = 0.0,
                      group: str = "", reference: str = "") -> HazardRatio | None:
    """exp((O - E)/V) with the 95% interval exp((O - E)/V +- 1.96 sqrt(V + V_noise)/V) (Peto et al. 1977; Berry,
    Kitchin and Mock 1991); ``noise_variance`` 0 gives the usual 1.96/sqrt(V). None when V is not positive or a
    value is not finite (no events, or nobody at risk in a group)."""
    o, e, v, vn = (float(x) for x in (observed, expected, variance, noise_variance))
    if not all(math.isfinite(x) for x in (o, e, v, vn)) or v <= 0 or vn < 0:
        return None
    log_hr = (o - e) / v
    half = Z95 * math.sqrt(v + vn) / v
    if abs(log_hr) + half > 700:  # beyond what a float's exponential holds: no meaningful ratio
        return None
    return HazardRatio(group, reference, math.exp(log_hr), math.exp(log_hr - half), math.exp(log_hr + half), o, e, v,
                       vn)


def released_hazard_ratios(released: dict[str, Any], public_inputs: dict[str, Any]
                           ) -> tuple[list[HazardRatio], str | None]:
    """:func:`hazard_ratios` of a stored release: its released output and declared public inputs alone."""
    from dpsurv_core.curves.readout import curve_release, mechanism_of

    return hazard_ratios(curve_release(released, public_inputs), mechanism_of(public_inputs))


def hazard_ratios(rel: Any, mech: Any, trial: int = 0) -> tuple[list[HazardRatio], str | None]:
    """The hazard ratio of every group against the first (the reference), each from the two groups' released counts
    of the release ``rel`` (a :class:`~dpsurv_core.curves.result.CurveResult` of the mechanism ``mech``) in
    ``trial``, read as its calibrated log-rank test reads them (the same numbers at risk, merged bins and noise
    covariance); and None, or the sentence saying why there is no ratio.

    Parameters
    ----------
    rel : CurveResult
        The release.
    mech : object
        The curve mechanism that made it.
    trial : int, default 0
        The draw read.

    Returns
    -------
    tuple
        ``(ratios, reason)``: a :class:`HazardRatio` per group after the first, and None or why there is none.
    """
    from dpsurv_core.curves import logrank, logrank_test

    counts = rel.counts
    if counts is None:
        return [], "No hazard ratio: the release holds no counts."
    if len(counts.groups) < 2:
        return [], "No hazard ratio: the release has one group."
    if "debiased_counts" in rel.extra:
        return [], ("No hazard ratio: the counts of a label-private release are of reported group labels, which "
                    "pull a hazard ratio towards 1.")
    law = logrank_test.noise_law(mech, rel.extra)
    if (law.noisy and law.cell_variance <= 0) or not law.separable:
        return [], (f"No hazard ratio: the changes {law.mechanism} makes to the counts have no variance model, so "
                    "no interval would be honest.")
    one = slice(trial, trial + 1)
    first = replace(counts, n=counts.n[one], events=counts.events[one], censored=counts.censored[one])
    merged = law.test_view is not None and law.noisy  # adaptive-km: its merged bins, each at its last public bin
    if merged:
        assert law.test_view is not None  # merged implies a test view
        first = law.test_view(first) if trial == 0 else first  # the view holds the first trial's merged bins
    r, d = logrank._at_risk_events(first, law.shifted, exposure=merged)
    kept = None if law.kept is None or not law.noisy else np.asarray(law.kept, bool)[one]
    share = None if kept is None else (kept.astype(float) if merged
                                       else logrank.width_shares(np.diff(first.grid.edges), kept))
    variance = law.cell_variance if law.noisy else 0.0
    out = []
    for b in range(1, len(first.groups)):
        pair_r, pair_d = r[..., [0, b], :], d[..., [0, b], :]
        o, e, v = logrank._components(pair_r, pair_d)
        vn = logrank.noise_covariance(pair_r, variance, kept, share) if variance > 0 else np.zeros_like(v)
        hr = peto_hazard_ratio(o[0, 1], e[0, 1], v[0, 1, 1], vn[0, 1, 1], first.groups[b], first.groups[0])
        if hr is not None:
            out.append(hr)
    return out, None if out else "No hazard ratio: the released counts leave no events to compare."
