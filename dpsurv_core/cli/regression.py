"""``regression``: discrete-time survival regression, private (output / objective perturbation, pSGLD) or not, and Cox."""

from __future__ import annotations

import argparse
import dataclasses
import math
from typing import Any

from dpsurv_core.cli.common import (
    add_data_options,
    add_release_options,
    check,
    check_repeat,
    cohort_from_args,
    dataset_fingerprint,
    needs_fingerprint,
    number,
    parse_categories,
    positive_float,
    positive_int,
    reproduce_command,
    run_plan,
    split_list,
)
from dpsurv_core.cli.km import add_labels_option, value_labels
from dpsurv_core.data.labels import encode_categories
from dpsurv_core.errors import ParameterError
from dpsurv_core.limits import MAX_INTERVALS
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import ADD_REMOVE, APPROXIMATE_MCMC, SUBJECT
from dpsurv_core.privacy.release import Plan, not_private_fields
from dpsurv_core.publication import derive
from dpsurv_core.regression import readout
from dpsurv_core.regression.cox import TIES
from dpsurv_core.regression.inference import nonprivate_p_values
from dpsurv_core.regression.levels import declared_levels
from dpsurv_core.regression.model import fit_cox, fit_nonprivate, wald_fit
from dpsurv_core.regression.person_period import DEFAULT_INTERVALS, DEFAULT_KNOTS, person_period

interval_count = number(int, lambda v: 2 <= v <= MAX_INTERVALS, f"T must be between 2 and {MAX_INTERVALS}",
                        "a whole number")

information_share = number(float, lambda v: 0.0 <= v <= 0.9, "RHO must be from 0 to 0.9", "a number")

NAME = "regression"
HELP = "discrete-time survival regression (output/objective perturbation, pSGLD) against Cox"
DEFAULT_LAMBDA = 0.01


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=False, covariates=True)
    add_release_options(p, catalogue.ids(catalogue.REGRESSION, "regression"))
    g = p.add_argument_group("model")
    g.add_argument("--intervals", type=interval_count, default=DEFAULT_INTERVALS, metavar="T",
                   help=f"number of discrete intervals of (0, horizon] (default 20, at most {MAX_INTERVALS}; subjects x T "
                        "must stay within DPSURV_MAX_PERSON_PERIOD_ROWS)")
    g.add_argument("--knots", type=positive_int, default=DEFAULT_KNOTS, metavar="Q",
                   help="knots of the natural cubic spline baseline (default 5)")
    g.add_argument("--lambda", dest="lam", type=float, default=None, metavar="L",
                   help=f"ridge penalty Lambda (default {DEFAULT_LAMBDA} for the private fits, 0 for nonprivate)")
    g.add_argument("--range", action="append", default=[], metavar="COL:LO:HI",
                   help="public range of a numeric covariate (repeatable); undeclared ranges are read off the data "
                        "and disclosed")
    g.add_argument("--categorical", metavar="COL[:REF],...",
                   help="covariates that enter as 0/1 indicators against a reference level (R's treatment contrasts), "
                        "e.g. sex,ph.ecog:1 or sex:Male; REF is a code of the column or its label (default: the "
                        "labels' declared reference level, else the smallest code). Categories are named by the "
                        "labels (sex=Female: --labels, over a bundled data set's own), else by column and code "
                        "(sex=sex 2), as on the Regression page")
    add_labels_option(p)
    g.add_argument("--ties", choices=TIES, default=None,
                   help="tied event times in the Cox model (--mechanism cox): efron (default, as R's coxph) or breslow")
    g.add_argument("--n-public", type=positive_int, metavar="N",
                   help="public cohort size n normalising the objective (default: the data's, disclosed)")
    s = p.add_argument_group("pSGLD")
    s.add_argument("--sanitizer-bound", type=positive_float, metavar="B", help="B of phi(x) = B tanh(x/B) (default T log 2)")
    s.add_argument("--prior-sd", type=positive_float, default=20.0, metavar="S", help="prior standard deviation (default 20)")
    s.add_argument("--epochs", type=positive_int, default=60, help="chain length in epochs (default 60)")
    s.add_argument("--burn-in", type=int, default=30, help="epochs discarded as burn-in (default 30)")
    s.add_argument("--batch", type=positive_int, default=None,
                   help="subjects per minibatch (default n/10, at most 512)")
    s.add_argument("--step", type=positive_float, default=8.0, help="step size a of the schedule a (1 + t/b)^-gamma (default 8)")
    s.add_argument("--step-decay", type=positive_float, default=100.0, help="b of the step schedule (default 100)")
    s.add_argument("--step-gamma", type=float, default=0.55, help="gamma of the step schedule (default 0.55)")
    s.add_argument("--draws", type=positive_int, default=1, metavar="K",
                   help="posterior draws released, each at epsilon/K (epsilon in total); K > 1 gives posterior intervals "
                        "from the draws' spread (default 1: an interval as wide as the prior; 5 is the measured choice)")
    o = p.add_argument_group("objective perturbation")
    o.add_argument("--information-share", type=information_share, default=0.0, metavar="RHO",
                   help="share of epsilon spent on a noisy information matrix for narrower intervals (Wang, Kifer and "
                        "Lee 2019), the rest on the coefficients; epsilon is charged in total (default 0; 0.2 narrows "
                        "the intervals 4 to 7 times at n = 2,000 and by a third at n = 200)")


def _ranges(specs: list[str]) -> dict[str, tuple[float, float]]:
    out = {}
    for spec in specs:
        parts = spec.rsplit(":", 2)
        try:
            if len(parts) != 3:
                raise ValueError
            out[parts[0]] = (float(parts[1]), float(parts[2]))
        except ValueError:
            raise ParameterError(f"--range {spec!r} is not COL:LO:HI (for example age:40:100).") from None
    return out


def _categorical_specs(text: str | None, covariates: tuple[str, ...]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for spec in split_list(text):
        col, _, ref = spec.partition(":")
        col, ref = col.strip(), ref.strip()
        if col not in covariates:
            raise ParameterError(f"--categorical names {col!r}, which is not among --covariates "
                                 f"({', '.join(covariates)}): add it there or remove it here.")
        if col in out:
            raise ParameterError(f"--categorical names {col!r} twice: name each column once.")
        out[col] = ref or None
    return out


CONFIDENTIAL_NOTE = ("exact values about the data, for the data holder's eyes only: not part of the release and not "
                      "covered by its guarantee; publish only the 'publishable' block")


ROBUST_COLUMNS = ("robust_se", "robust_lower", "robust_upper", "robust_p_value")
ROBUST_NOTE = ("several rows per subject: robust_se, robust_lower, robust_upper, robust_p_value and the robust_wald "
               "and robust_score tests use R's coxph(..., cluster = id) sandwich variance (dfbeta residuals summed "
               "within subject; Lin & Wei 1989), which allows for rows of one subject being dependent; se, lower, "
               "upper, p_value and the wald, score and likelihood-ratio tests treat the rows as independent")


def run(args: argparse.Namespace) -> dict:
    covariates = split_list(args.covariates)
    if not covariates:
        raise ParameterError("--covariates is required: name one or more covariate columns, for example age,sex.")
    check_repeat(args)
    check(getattr(args, "ties", None) is None or args.mechanism == "cox", "--ties applies to --mechanism cox only.")
    specs = _categorical_specs(getattr(args, "categorical", None), covariates)
    declared = parse_categories(getattr(args, "categories", None))
    cohort = cohort_from_args(args)
    labels = value_labels(args)  # read even when unused: a bad --labels file is a sentence, not silently ignored
    entry = catalogue.get(catalogue.REGRESSION, args.mechanism)
    # noise is drawn: the categories are the declared ones (every documented code a level), never those that occur
    noisy = entry.private and not math.isinf(args.epsilon)
    if declared and not specs:
        raise ParameterError(f"--categories names {next(iter(declared))!r}, but no covariate is categorical: add it to "
                             "--categorical (and --covariates) or remove --categories.")
    # a declared column's codes and reference are checked against the declaration, never against the codes that occur
    found = encode_categories(cohort.covariates, {c: r for c, r in specs.items() if c not in declared}, labels)
    levels = declared_levels(cohort.covariates, found, labels, declared, specs, extend_to_labels=noisy)
    cats = levels.categories
    if specs:
        cohort = dataclasses.replace(cohort, covariates=cats.frame)
    pp = person_period(cohort, covariates, horizon=args.horizon, intervals=args.intervals, knots=args.knots,
                       ranges=_ranges(args.range), levels=cats.levels, n_public=args.n_public, strict=not noisy)
    # what the data hold against the declared design: for the data holder's eyes only (the confidential block)
    args._data_warnings = [*getattr(args, "_data_warnings", []), *levels.warnings]
    if cats.disclosures:
        pp.disclosures = [*cats.disclosures, *pp.disclosures]
    exact = {"n": pp.n, "rows": int(pp.y.size), "dropped_incomplete": pp.dropped}
    if levels.left_out:
        exact["outside_declared_categories"] = levels.left_out
    out: dict = {"mechanism": args.mechanism, "data": cohort.name, **exact, "covariates": pp.encoding.names,
                 "disclosures": [d.to_dict() for d in pp.disclosures]}
    if specs:
        out["reference_levels"] = cats.references
        out["reference_codes"] = cats.reference_codes
        out["categories"] = {c: {"reference": cat.reference, "reference_label": cat.reference_name,
                                 "levels": dict(zip(cat.codes, cat.names, strict=True))}
                             for c, cat in cats.columns.items()}
        out["covariate_labels"] = {n: cats.names.get(n, n) for n in pp.encoding.names}
    if not entry.private:
        lam = 0.0 if args.lam is None else args.lam
        discrete_time = entry.id == catalogue.reference_id(catalogue.REGRESSION)
        cox_fields: dict[str, Any] = {}
        warnings: list[str] = []
        if discrete_time:
            fit = fit_nonprivate(pp, lam)
            tab = fit.table()
            params = {"lambda": lam, "intervals": pp.intervals, "knots": pp.knots, "horizon": pp.horizon,
                      "link": "logit", "n_public": pp.n_public}
        else:
            ties = args.ties or "efron"
            # several rows per subject (--id, or a bundled data set's id with repeated rows): R's cluster = id
            cox = fit_cox(cohort, pp, ties, robust=True if getattr(args, "id", None) else None)
            tab, model, warnings = cox.table, cox.model, list(cox.warnings)
            assert model is not None  # fit_cox always keeps its model
            params = {"model": f"Cox partial likelihood, Newton-Raphson as R's coxph ({ties.capitalize()} ties)",
                      "ties": ties, "horizon": pp.horizon}
            cox_fields = {"not_estimated": cox.not_estimated, "loglik": list(model.loglik),
                          "iterations": model.iterations,
                          "tests": {"likelihood_ratio": model.likelihood_ratio_test.to_dict(),
                                    "wald": model.wald_test.to_dict(), "score": model.score_test.to_dict()}}
            if model.robust_wald_test is not None and model.robust_score_test is not None:
                cox_fields["tests"].update(robust_wald=model.robust_wald_test.to_dict(),
                                           robust_score=model.robust_score_test.to_dict())
                cox_fields.update(clusters=model.clusters, robust_note=ROBUST_NOTE)
        # n scales the noise of the private fits only: read off the data it is no disclosure for a fit without noise
        out["disclosures"] = [d for d in out["disclosures"] if d["parameter"] != "n"]
        out.update({"epsilon_spent": math.inf, "guarantee": "none: not differentially private", "protects": "nothing",
                    "neighbouring": ADD_REMOVE, "privacy": "not private: for the data holder's eyes only",
                    "noise": "none", "interval_includes_noise": False,
                    "interval_method": "Wald 95% interval from the fit's information matrix: sampling error only",
                    "warnings": warnings,
                    "parameters": params, "estimates": [{
                        "trial": 0, "coefficients": dict(zip(tab.covariate, tab.coefficient)),
                        "ratios": dict(zip(tab.covariate, tab.odds_ratio)),
                        "lower": dict(zip(tab.covariate, tab.lower)), "upper": dict(zip(tab.covariate, tab.upper)),
                        "p_value": dict(zip(tab.covariate, tab.p_value)),
                        **({"se": dict(zip(tab.covariate, tab.se))} if cox_fields else {}),
                        **{k: dict(zip(tab.covariate, tab[k])) for k in ROBUST_COLUMNS if k in tab}}],
                    "ratio_kind": "odds ratio" if discrete_time else "hazard ratio",
                    **cox_fields, **not_private_fields()})
        return out
    lam = DEFAULT_LAMBDA if args.lam is None else args.lam
    psgld = dict(bound_B=args.sanitizer_bound, prior_sd=args.prior_sd, epochs=args.epochs, burn_in=args.burn_in,
                 batch=args.batch, step=args.step, step_decay=args.step_decay, step_gamma=args.step_gamma)
    check(not args.information_share or "information_share" in entry.options,
          "--information-share applies to objective only.")
    mech: Any = entry.build(args.epsilon, pp=pp, lam=lam, information_share=args.information_share,
                            **psgld)  # a regression mechanism
    if args.draws != 1:
        check(hasattr(mech, "set_draws"), "--draws applies to psgld only.")
        mech.set_draws(args.draws)
    # each coefficient as readers say it (sex: Female vs Male): public, from the declared levels
    names = {n: cats.names.get(n, n) for n in pp.encoding.names}
    plan = Plan(entry, mech, cohort.name, dataset_fingerprint(args) if needs_fingerprint(args, entry) else "",
                lambda noise, trials: mech.compute(pp, noise, trials=trials), disclosures=list(pp.disclosures),
                command=reproduce_command(args), analysis="regression", kind=readout.KIND,
                publish=lambda rel: readout.publication(entry.id, mech, rel, names))
    rel, fields = run_plan(args, plan)
    out.update(fields)
    if not plan.private:  # epsilon = inf: n scales no noise
        out["disclosures"] = [d for d in out["disclosures"] if d["parameter"] != "n"]
    cost = mech.cost
    out.update({"epsilon_spent": cost.epsilon, "guarantee": cost.guarantee, "protects": SUBJECT if cost.protects == SUBJECT
                else cost.protects, "neighbouring": cost.neighbouring, "privacy": cost.sentence(),
                "noise": (f"simulation: numpy Generator, seed {args.seed}" if fields["simulation"] else "none"
                          if not plan.private else entry.noise), "parameters": mech.parameters(), "ratio_kind": "odds ratio"})
    if not plan.private:  # no noise: the private fit is the non-private maximum-likelihood fit, with its Wald interval
        estimates = [{"trial": i, "coefficients": c, "ratios": {k: math.exp(min(v, 700)) for k, v in c.items()}}
                     for i, c in enumerate(rel.coefficients)]
        out.update(_ridge_fit_fields(pp, mech.ridge_without_noise, rel.W[0], estimates))
        out["warnings"] = []
    elif fields.get("release"):
        out.update(_release_fields(out, fields["publishable"]))
    else:  # a seeded simulation: the reader on each simulated draw, and the non-private p-value beside the first
        released, public = readout.publication(entry.id, mech, rel, names)
        derived = [derive(readout.KIND, {k: v[i:i + 1] for k, v in released.items()}, public) for i in range(len(rel.W))]
        out["estimates"] = [readout.estimates(d, i) for i, d in enumerate(derived)]
        first = nonprivate_p_values(pp)
        if first is not None:
            out["estimates"][0]["p_value_nonprivate"] = dict(zip(pp.encoding.names, first.tolist()))
        if "information" in released:  # the noisy information matrix (normalised scale, w's order)
            for e, H in zip(out["estimates"], released["information"]):
                e["information_matrix"] = H
            out["information_matrix_order"] = pp.names
        out.update({"interval_includes_noise": True, "interval_method": derived[0]["interval_method"],
                    "warnings": list(derived[0]["warnings"]),
                    "p_value_note": ("p_value: Wald test of no effect calibrated for the privacy noise; "
                                     "p_value_nonprivate (first trial, simulation only: it reads the data) is the "
                                     "ordinary Wald p-value of the non-private fit, for comparison")})
    if mech.cost.guarantee == APPROXIMATE_MCMC:
        out["note"] = "approximate DP (MCMC): the chain only approximates the exponential mechanism's density"
    return out


def _release_fields(out: dict[str, Any], publishable: dict[str, Any]) -> dict[str, Any]:
    """A release's numbers are its record's: the estimates, interval method and warnings from the reader's
    ``derived``, the information matrices from ``released``, the disclosures as recorded. What was read off the data
    (counts, rows left out, the data's own warnings, the disclosures with the values they read) moves to
    ``confidential``, for the data holder's eyes only."""
    derived, released = publishable["derived"], publishable["released"]
    estimates = [readout.estimates(derived, i) for i in range(len(derived["coefficients"]))]
    fields: dict[str, Any] = {"estimates": estimates}
    if "information" in released:
        for e, H in zip(estimates, released["information"]):
            e["information_matrix"] = H
        fields["information_matrix_order"] = list(publishable["public_inputs"]["coefficients"]) + [
            f"spline{j + 1}" for j in range(int(publishable["public_inputs"]["knots"]))]
    # the exact counts (n, rows, dropped_incomplete) and the data's warnings move to ``confidential`` in
    # dpsurv_core.cli.split_publishable, with every release's; the rows outside the declared categories and the
    # disclosures as read (their messages give the values read) join them
    fields["confidential"] = {"note": CONFIDENTIAL_NOTE, "disclosures_as_read": out["disclosures"],
                              **({"outside_declared_categories": out.pop("outside_declared_categories")}
                                 if "outside_declared_categories" in out else {})}
    fields.update({"disclosures": list(publishable["disclosures"]), "ratio_kind": derived["ratio_kind"],
                   "interval_includes_noise": True,
                   "interval_method": derived["interval_method"], "warnings": list(derived["warnings"])})
    return fields


def _ridge_fit_fields(pp: Any, ridge: float, w: Any, estimates: list[dict[str, Any]]) -> dict[str, Any]:
    """A private fit without noise (epsilon = inf) is the non-private fit: ``w`` with ridge ``ridge`` (0 for every
    mechanism: the ridge Lambda only bounds one subject's influence for the noise, so without noise it is dropped and
    the fit is the maximum-likelihood one). Beside its coefficients, that fit's Wald intervals and p-values (sampling
    error only), as ``regression --mechanism nonprivate`` prints them."""
    tab = wald_fit(pp, w, ridge).table()
    fields = {"lower": dict(zip(tab.covariate, tab.lower)), "upper": dict(zip(tab.covariate, tab.upper))}
    if "p_value" in tab:
        fields["p_value"] = dict(zip(tab.covariate, tab.p_value))
    fit = (f"ridge fit (Lambda = {ridge:g})" if ridge else
           "maximum-likelihood fit (Lambda = 0: the ridge only bounds one subject's influence for the noise, so "
           "without noise it is not applied and the fit is the non-private one, as --mechanism nonprivate gives it)")
    return {"estimates": [e | fields for e in estimates], "interval_includes_noise": False,
            "interval_method": f"Wald 95% interval of the {fit} from its information matrix: sampling error only (no "
                               "noise was added)"}
