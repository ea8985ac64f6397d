"""The plain sentences beside a private Weibull release: where its intervals cannot be read, and why."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpsurv_core.plain_numbers import plain_number
from dpsurv_core.weibull.mechanisms import (
    LaplaceWeibull,
    SampleAggregateWeibull,
    WeibullMechanism,
)

if TYPE_CHECKING:  # a type only
    from dpsurv_core.weibull.inference import ParameterInterval


def _plain(x: float) -> str:
    """A number as a clinician reads it: 48,000 and 0.83, not 4.8e+04 (whole above 1,000, else
    :func:`~dpsurv_core.plain_numbers.plain_number`)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else plain_number(x)


def weibull_warnings(mech: WeibullMechanism, shape: ParameterInterval, scale_normalised: ParameterInterval,
                     horizon: float) -> list[str]:
    """Plain sentences when the release cannot be read, each saying what to do next."""
    out: list[str] = []
    baseline = isinstance(mech, (LaplaceWeibull, SampleAggregateWeibull))
    why = ""
    if isinstance(mech, LaplaceWeibull):
        why = (f" The Laplace baseline adds noise scaled to the global sensitivity gamma / (epsilon/2) = "
               f"{mech.gamma / mech.epsilon_shape:.3g} (a parameter may be anywhere in [0, gamma]), whatever the data; "
               "use lsp-tll, whose noise follows the data's local sensitivity.")
    elif isinstance(mech, SampleAggregateWeibull):
        why = (" Sample-and-aggregate adds noise scaled to gamma / (blocks x epsilon/2), large unless there are many "
               "blocks of about 500 records; use lsp-tll.")
    if shape.estimate <= 0 or scale_normalised.estimate <= 0:
        out.append("The released shape or scale is not positive, so it describes no Weibull curve: the noise swamped "
                   "the estimate, and its interval (the values that make such a release typical) need not hold it."
                   + (why or " Spend more epsilon or use a larger cohort."))
    for label, p, unit in (("shape", shape, 1.0), ("scale", scale_normalised, horizon)):
        # the error the interval states: its half-width, larger than the estimate itself
        if (p.upper - p.lower) / 2 > abs(p.estimate) and p.estimate > 0:
            out.append(f"The {label}'s error is larger than the {label} itself: its 95% interval runs from "
                       f"{_plain(p.lower * unit)} to {_plain(p.upper * unit)} around {_plain(p.estimate * unit)}; "
                       "read it as noise, not as an estimate." + (why or " Spend more epsilon or use a larger cohort."))
    g = mech.gamma
    for label, p, unit in (("shape", shape, 1.0), ("scale", scale_normalised, horizon)):
        if p.estimate > g:
            out.append(f"The released {label} ({p.estimate * unit:.3g}) lies above the largest value the mechanism "
                       f"considers (gamma = {g:g}{'' if unit == 1.0 else ' times the horizon'}): it is mostly noise, and "
                       "its interval lists the values that make such a release typical, so it need not hold the "
                       "estimate." + (why or " Spend more epsilon or use a larger cohort."))
    if not baseline and shape.upper >= g * (1 - 1e-9) and shape.lower < g:
        out.append(f"The shape's interval reaches gamma = {g:g}, the largest shape the mechanism can release: this "
                   "release does not bound the shape from above; spend more epsilon or use a larger cohort.")
    if not baseline and scale_normalised.upper >= g * (1 - 1e-9) and scale_normalised.lower < g:
        out.append(f"The scale's interval reaches gamma times the horizon ({_plain(g * horizon)}), the largest scale "
                   "the mechanism can release: this release does not bound the scale from above (heavy censoring "
                   "leaves it unknown how long the typical patient lives); spend more epsilon, use a larger cohort "
                   "or a longer follow-up.")
    if shape.lower < 1.0 < shape.upper and shape.upper - shape.lower > 0.5 and not baseline:
        out.append(f"The shape's interval ({shape.lower:.2f} to {shape.upper:.2f}) includes 1, so this release cannot "
                   "tell whether the hazard rises or falls over time; spend more epsilon or use a larger cohort.")
    return out


def floor_warning(weibull_lower: float, weibull_upper: float, fit_lower: float, fit_upper: float, floor_share: float,
                  omega: float, horizon: float) -> str:
    """The sentence beside a shape interval that was widened for the floor of the normalised times
    (:func:`dpsurv_core.weibull.simulation.fitted_limit`): Weibull times of the shapes in [weibull_lower,
    weibull_upper] would put about ``floor_share`` of the records at the floor e^-omega horizons, where the fit reads
    each as that time, and their fit converges to [fit_lower, fit_upper] instead. Post-processing: the released
    values, the interval and the public horizon and omega only."""
    return (f"About {floor_share:.0%} of the times the fitted Weibull describes lie before the earliest time the fit "
            f"reads (e^-{omega:g} of the horizon, {_plain(math.exp(-omega) * horizon)}), where each is read as that "
            "time, so the released shape is that of the best Weibull fit to the times as the fit reads them, above the "
            f"shape of the Weibull law itself: if the times are Weibull, their shape lies from {_plain(weibull_lower)} to "
            f"{_plain(weibull_upper)}; whatever their law, the best fit's shape lies from {_plain(fit_lower)} to "
            f"{_plain(fit_upper)}. The interval holds both; if a Kaplan-Meier curve of the data does not look Weibull, "
            "read the shape as the best fit's, a summary of the curve, not as the hazard's true shape.")
