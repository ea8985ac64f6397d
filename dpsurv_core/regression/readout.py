"""The reader of a regression release record: ``read(released, public_inputs) -> derived``.

A private regression releases the noisy coefficient vector w~ of each trial on the scale the mechanism works on
(covariates in the unit ball, then the q spline coefficients of the baseline), and, where the mechanism releases them,
objective perturbation's noisy information matrix H~ (an information share) or pSGLD's k draws (``--draws``).
Everything people read is computed here from those numbers and the declared values alone
(:mod:`dpsurv_core.publication`): the coefficients in the covariates' own units, their odds ratios, the 95% intervals
and calibrated p-values that carry the noise (:func:`dpsurv_core.regression.inference.draw_inference`: the noise's
public law, simulated with a seed taken from the released numbers), the warnings and the ratio's name.

No interval here reads the data: the sampling part of a perturbation's interval is the public bound 1/(4 n Lambda)
(n declared), the information matrix is the released noisy one, never the data's. The non-private p-value a preview
shows beside a private one reads the data, so it is never part of a release.

This module imports no data module (a test walks its imports): the mechanisms are rebuilt from the declared design
(:meth:`~dpsurv_core.regression.mechanisms.DesignBounds.declared`), which gives their noise scales bit for bit.
:func:`publication` is the other direction, used at release time: it splits a release into the two parts this reader
takes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsurv_core.errors import ParameterError
from dpsurv_core.regression.design import original_factors
from dpsurv_core.regression.inference import (
    LEVEL,
    SIMULATIONS,
    CoefficientInference,
    PublicDesign,
    draw_inference,
)
from dpsurv_core.regression.mechanisms import (
    PSGLD,
    DesignBounds,
    ObjectivePerturbation,
    OutputPerturbation,
    RegressionResult,
    _RegressionMechanism,
)

KIND = "regression"
SCALE = ("w: the released coefficient vector of each trial on the scale the noise was drawn on (each covariate "
         "rescaled into the unit ball by its declared range and divided by the square root of the number of "
         "covariates; then the spline coefficients of the baseline)")
PSGLD_OPTIONS = ("bound_B", "prior_sd", "epochs", "burn_in", "batch", "step", "step_decay", "step_gamma", "rms_decay",
                 "draws")


# ------------------------------------------------------------------------------------------------ release time

def publication(entry_id: str, mech: _RegressionMechanism, release: RegressionResult,
                labels: dict[str, str] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(released, public_inputs) of a private regression release (the :class:`~dpsurv_core.privacy.release.Plan`'s
    ``publish``): the mechanism's noisy output, and the declared values the reader needs. ``labels`` names each
    coefficient as readers say it (``sex=Female`` -> ``sex: Female vs Male``): public, from the declared levels."""
    return released_part(release), public_inputs(entry_id, mech, release.pp, labels)


def released_part(release: RegressionResult) -> dict[str, Any]:
    """The noisy output itself: w~ per trial (the whole vector, spline coefficients included) and, where the
    mechanism releases them, the noisy information matrices or the posterior draws. Nothing exact."""
    out: dict[str, Any] = {"w": np.asarray(release.W, dtype=float).tolist()}
    if "information" in release.diagnostics:
        out["information"] = np.asarray(release.diagnostics["information"], dtype=float).tolist()
    if "draws_W" in release.diagnostics:
        out["draws"] = np.asarray(release.diagnostics["draws_W"], dtype=float).tolist()
    return out


def public_inputs(entry_id: str, mech: _RegressionMechanism, pp: Any, labels: dict[str, str] | None = None
                  ) -> dict[str, Any]:
    """The declared values a regression release used (``pp``: the person-period design, read for its public
    constants only: never its rows, its number of subjects or anything else counted in the data)."""
    b = mech.bounds
    levels = dict(pp.encoding.levels)
    covariates: list[dict[str, Any]] = []
    for col in pp.encoding.columns:
        if col.kind == "numeric":
            lo, hi = col.bounds if col.bounds is not None else (col.centre - col.half_range, col.centre + col.half_range)
            covariates.append({"name": col.source, "kind": "numeric", "range": [float(lo), float(hi)]})
        elif not covariates or covariates[-1]["name"] != col.source:
            levs = list(levels[col.source])
            covariates.append({"name": col.source, "kind": "categorical", "levels": levs, "reference": levs[0]})
    options: dict[str, Any] = {}
    if isinstance(mech, (OutputPerturbation, ObjectivePerturbation)):
        options["lambda"] = mech.lam
    if isinstance(mech, ObjectivePerturbation):
        options["information_share"] = mech.information_share
    if isinstance(mech, PSGLD):
        options.update({"bound_B": mech.bound_B, "prior_sd": mech.prior_sd, "epochs": mech.epochs,
                        "burn_in": mech.burn_in, "batch": mech.batch, "step": mech.step,
                        "step_decay": mech.step_decay, "step_gamma": mech.step_gamma, "rms_decay": mech.rms_decay,
                        "draws": mech.draws})
    names = list(pp.encoding.names)
    return {"mechanism": entry_id, "epsilon": mech.cost.epsilon, "delta": mech.cost.delta,
            "n_public": int(b.n_public), "horizon": float(b.horizon), "intervals": int(b.intervals),
            "knots": int(b.knots), "rows_per_subject": int(b.rows_per_subject), "covariates": covariates,
            "coefficients": names, "labels": {n: (labels or {}).get(n, n) for n in names}, "options": options,
            "scale": SCALE, "inference": {"level": LEVEL, "simulations": SIMULATIONS}}


# ------------------------------------------------------------------------------------------------ the reader

def mechanism(public: dict[str, Any]) -> tuple[_RegressionMechanism, PublicDesign]:
    """The mechanism a record's public inputs describe, rebuilt from them (its noise scales are functions of the
    declared values only), and the public design its intervals read."""
    covariates = public["covariates"]
    names: list[str] = []
    half: list[float] = []
    for cov in covariates:
        if cov["kind"] == "numeric":
            lo, hi = map(float, cov["range"])
            names.append(cov["name"])
            half.append((hi - lo) / 2)
        else:
            levels = list(cov["levels"])
            names += [f"{cov['name']}={lev}" for lev in levels[1:]]
            half += [1.0] * (len(levels) - 1)
    if names != list(public["coefficients"]):
        raise ParameterError("The record's covariates do not give its coefficients: it cannot be read.")
    bounds = DesignBounds.declared(public["intervals"], public["knots"], public["horizon"], len(names),
                                   public["n_public"], public.get("rows_per_subject", 1))
    eps = math.inf if public["epsilon"] is None else float(public["epsilon"])
    o = public.get("options") or {}
    kind = public["mechanism"]
    if kind == "output":
        mech: _RegressionMechanism = OutputPerturbation(eps, o["lambda"], bounds)
    elif kind == "objective":
        mech = ObjectivePerturbation(eps, o["lambda"], bounds, o.get("information_share", 0.0))
    elif kind == "psgld":
        mech = PSGLD(eps, bounds, **{k: o[k] for k in PSGLD_OPTIONS if k in o})
    else:
        raise ParameterError(f"A regression record of mechanism {kind!r} has no reader: it is not a private release.")
    design = PublicDesign(tuple(names), original_factors(half, len(covariates)), bounds.dim, bounds.n_public)
    return mech, design


def read(released: dict[str, Any], public_inputs: dict[str, Any]) -> dict[str, Any]:
    """``derived`` of a regression release: per trial the coefficients in the covariates' units; for the first (a
    release has one) the rows people read (coefficient, odds ratio, 95% limits that carry the noise, standard errors,
    calibrated p-value, share of sign flips; each covariate by its label), the interval's method and the warnings."""
    mech, design = mechanism(public_inputs)
    W = np.asarray(released["w"], dtype=float)
    if W.ndim != 2 or W.shape[1] != design.dim:
        raise ParameterError(f"The record's released coefficients are not {design.dim} numbers per trial: it cannot "
                             "be read.")
    info = released.get("information")
    draws = released.get("draws")
    inference = public_inputs.get("inference") or {}
    labels = dict(public_inputs.get("labels") or {})
    inf = draw_inference(mech, design, W[0], None if info is None else np.asarray(info[0], dtype=float),
                         None if draws is None else np.asarray(draws[0], dtype=float),
                         int(inference.get("simulations", SIMULATIONS)), float(inference.get("level", LEVEL)), labels)
    f = design.factors
    coefficients = [dict(zip(design.names, (w[: design.p] * f).tolist())) for w in W]
    return {"coefficients": coefficients, "intervals": _interval_rows(inf, labels), "ratio_kind": inf.ratio_kind,
            "interval_includes_noise": True, "interval_method": inf.method, "warnings": list(inf.warnings)}


def _interval_rows(inf: CoefficientInference, labels: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """One row per covariate (the first trial): coefficient and its limits, odds ratio and its limits, standard
    errors, calibrated p-value and share of sign flips, and the covariate as readers say it (``covariate_label``)."""
    names = {**inf.labels, **(labels or {})}
    rows = [{k: v for k, v in r.items() if k != "p_value_nonprivate"} for r in inf.records()]
    for r in rows:
        if r["covariate"] in names:
            r["covariate_label"] = names[r["covariate"]]
    return rows


def estimates(derived: dict[str, Any], trial: int = 0) -> dict[str, Any]:
    """A trial's numbers as ``regression`` prints them (``estimates[i]``), taken from ``derived`` (so the command's
    numbers are the record's): coefficients, ratios, ratio limits (``lower``, ``upper``), coefficient limits,
    standard errors, calibrated p-values and sign-flip shares, each a dict by covariate."""
    coefs = derived["coefficients"][0 if len(derived["coefficients"]) == 1 else trial]
    out: dict[str, Any] = {"trial": trial, "coefficients": dict(coefs),
                           "ratios": {k: math.exp(min(v, 700.0)) for k, v in coefs.items()}}
    rows = derived.get("intervals") or []
    for key, src in (("lower", "ratio_lower"), ("upper", "ratio_upper"), ("coefficient_lower", "lower"),
                     ("coefficient_upper", "upper"), ("se", "se"), ("noise_se", "noise_se"), ("p_value", "p_value"),
                     ("sign_flip_share", "sign_flip_share")):
        if rows and src in rows[0]:
            out[key] = {r["covariate"]: r[src] for r in rows}
    return out

