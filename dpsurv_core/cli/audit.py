"""``audit``: membership-inference diagnostics and an empirical epsilon for one mechanism (docs/mechanisms.md).

Runs the mechanism R times on the data D and R times on D' (D without the target subject; for
randomized response, D with the target's group label changed), with seeded simulation noise, and
reports the target and why it was chosen, the influential points (curves), and, as the headline,
the strongest attack: its held-out advantage TPR - FPR with a 95% interval (``advantage``,
``advantage_lower``, ``advantage_upper``) and the AUC of its ROC (``auc``); beside them the empirical
epsilon lower bound (``empirical_epsilon_lower``) next to the charged epsilon, with the TPR/FPR of the
test behind it (``tpr``, ``fpr``) and their Clopper-Pearson bounds. An audit is a simulation for the
data holder, not a release: nothing is charged.

The attack scores the whole record a release would make, not only the mechanism's output: for ``km`` and
``logrank`` the audit builds the command's own release plan (:func:`dpsurv_core.cli.km.plan`) from the same options,
reruns its mechanism's draw on D and on D' and the plan's reader on each output with the plan's public inputs, and
attacks every numeric field of ``released`` and ``derived`` and each warning (``attacked_fields``), on
``--record-trials`` runs per data set (default the smaller of ``--trials`` and 200: a reader runs once per record).
Weibull and regression records come from their readers (:mod:`dpsurv_core.weibull.readout`,
:mod:`dpsurv_core.regression.readout`) with the public inputs of D's release (60 runs by default). The attack
on the mechanism's output alone, on all ``--trials`` runs, is ``output_attack``.

Mechanism options are borrowed from the ``km`` (time-indexed), ``weibull`` and ``regression``
commands so each keeps one definition.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from dpsurv_core.audit import runner as core
from dpsurv_core.audit.record import RECORD_TRIALS, AuditNoise, Publisher, reader_publisher
from dpsurv_core.cli.common import add_data_options, epsilon_value, positive_float, positive_int, row_number, split_list

NAME = "audit"
HELP = ("privacy audit: the strongest membership attack's advantage and AUC, and an empirical epsilon lower bound "
        "next to the charged epsilon")


def _all_mechanisms() -> list[str]:
    names: list[str] = []
    for analysis in core.ANALYSES:
        names += [m for m in core.mechanisms_for(analysis) if m not in names]
    return names


def _trials(text: str) -> int:
    v = positive_int(text)
    if v < 4:
        raise argparse.ArgumentTypeError(f"needs at least 4 runs per data set, got {text}")
    return v


def _record_trials(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of runs") from None
    if v != 0 and v < 4:
        raise argparse.ArgumentTypeError(f"needs 0 (no record attack) or at least 4 runs per data set, got {text}")
    return v


def plan_publisher(args: argparse.Namespace, adapter: core.Adapter) -> Publisher | None:
    """The record the ``km`` (``logrank``) command would make with these options: its release plan
    (:func:`dpsurv_core.cli.km.plan`) gives the public inputs, the reader and the mechanism whose draw the audit
    reruns on D and on D' (the plan's publish needs one release for its group names: a seeded simulation, never
    charged). Other analyses keep the adapter's publisher."""
    if args.analysis not in ("km", "logrank") or adapter.publisher is None:
        return adapter.publisher
    import math

    from dpsurv_core.cli import km
    from dpsurv_core.privacy import catalogue

    tests = {"null_draws": getattr(args, "null_draws", None)} if args.analysis == "logrank" else None
    p, cohort, public, _ = (km.plan(args) if tests is None else
                            km.plan(args, analysis="log-rank tests", min_groups=2, tests=tests))
    assert p.publish is not None  # km.plan's plans publish through their reader
    _, inputs = p.publish(p.compute(AuditNoise(args.seed), 1))
    entry = catalogue.get(catalogue.CURVES, args.mechanism)
    # curve mechanisms with draw (the base type has none)
    noiseless: Any = entry.build(math.inf, **km.mechanism_build(args, cohort, public)) if entry.formal else p.mechanism
    mech: Any = p.mechanism
    return reader_publisher(p.kind or "curves", lambda c, noise: mech.draw(c, public, noise, 1, False), inputs,
                            source=f"the {args.analysis} command's release plan (cli.km.plan): its mechanism, reader "
                                   "and public inputs",
                            exact=lambda c, noise: noiseless.draw(c, public, noise, 1, False))


def _borrow_options(p: argparse.ArgumentParser, add_arguments: Callable[[argparse.ArgumentParser], None],
                   skip: tuple[str, ...] = ("data", "release")) -> None:
    """Add the option groups another command defines (except ``skip``) to ``p``, keeping their
    definitions in one place; options ``p`` already has are left out."""
    tmp = argparse.ArgumentParser(add_help=False)
    add_arguments(tmp)
    have = {s for a in p._actions for s in a.option_strings}
    for grp in tmp._action_groups:
        if grp.title in skip:
            continue
        actions = [a for a in grp._group_actions if a.option_strings and not set(a.option_strings) & have]
        if not actions:
            continue
        target = p.add_argument_group(grp.title)
        for a in actions:
            target._add_action(a)
            have |= set(a.option_strings)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from dpsurv_core.cli import km, regression, weibull

    add_data_options(p, group=True, covariates=True)
    km.set_group_help(p)
    g = p.add_argument_group("audit")
    g.add_argument("--analysis", required=True, choices=core.ANALYSES,
                   help="what is released: km (curves), logrank (tests), weibull (parameters), regression")
    g.add_argument("--mechanism", required=True, choices=_all_mechanisms(),
                   help="the mechanism to audit; it must be one of --analysis's (km and logrank: the curve mechanisms; "
                        "weibull: mle, lsp-tll, laplace, saa; regression: the regression mechanisms)")
    g.add_argument("--epsilon", type=epsilon_value, default=1.0, metavar="E", help="the mechanism's epsilon (default 1)")
    g.add_argument("--grid", default=None, metavar="START:STOP:BINS|event-times",
                   help="public time grid; default 20 bins up to the horizon")
    g.add_argument("--horizon", type=positive_float, metavar="T",
                   help="public horizon (default: read off the data, disclosed)")
    g.add_argument("--trials", type=_trials, default=core.DEFAULT_TRIALS, metavar="R",
                   help=f"runs on D and on D' each; half fit the attack, half test it (default {core.DEFAULT_TRIALS})")
    g.add_argument("--record-trials", type=_record_trials, default=None, metavar="R",
                   help="runs on D and on D' each of the attack on the whole release record (released and derived "
                        f"fields, warnings); default the smaller of --trials and {RECORD_TRIALS} ({core.WEIBULL_RECORD_TRIALS} "
                        f"for weibull, {core.REGRESSION_RECORD_TRIALS} for regression: their readers simulate); 0 "
                        "attacks the mechanism's output only")
    g.add_argument("--target", type=row_number, metavar="ROW",
                   help="audit this row's subject (0-based row of the data) instead of the most exposed one")
    g.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the simulation noise (default 0)")
    km.add_mechanism_options(p)
    _borrow_options(p, weibull.add_arguments)
    _borrow_options(p, regression.add_arguments)


def _options_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """Mechanism options by keyword, as :func:`dpsurv_core.audit.runner.make_adapter` takes them."""
    from dpsurv_core.cli.regression import _ranges

    keys = ("alpha", "tau_start", "tau_end", "window", "edge_mode", "base_epsilon", "omega", "gamma", "rungs",
            "blocks", "block_size", "lam", "intervals", "knots", "n_public", "prior_sd", "epochs", "burn_in", "batch",
            "step", "step_decay", "step_gamma", "threshold", "base", "k", "information_share", "sample_size",
            "censoring")
    out = {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}
    out["covariates"] = split_list(getattr(args, "covariates", None))
    out["ranges"] = _ranges(getattr(args, "range", None) or [])
    if getattr(args, "sanitizer_bound", None) is not None:
        out["bound_B"] = args.sanitizer_bound
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dpsurv_core.cli.km import load

    cohort, public, extra = load(args)
    record = getattr(args, "record_trials", None) != 0
    adapter = core.make_adapter(args.analysis, args.mechanism, args.epsilon, cohort, public, record=record,
                                **_options_from_args(args))
    if record:
        adapter.publisher = plan_publisher(args, adapter)
    result = core.audit(adapter, trials=args.trials, seed=args.seed, target_row=args.target, disclosures=extra,
                        record_trials=getattr(args, "record_trials", None))
    out = {"command": NAME, **result.to_dict()}
    out["cost"] = result.cost.sentence()  # worded as run (voided by a not-DP disclosure) with every command's labels
    out["disclosures"] = [d.to_dict() for d in result.disclosures]
    out["grid"] = {"kind": public.grid.kind, "bins": public.grid.bins, "points": public.grid.points}
    out["horizon"] = public.horizon
    out["time_unit"] = cohort.time_unit
    target = out.get("target") or {}
    if target.get("group") is not None:  # the target's group as every other output calls it (its value label)
        from dpsurv_core.cli.km import group_labels_of

        codes = [str(target[k]) for k in ("group", "new_group") if target.get(k) is not None]
        names = group_labels_of(args, codes)
        target["group_label"] = names.get(str(target["group"]))
        if target.get("new_group") is not None:
            target["new_group_label"] = names.get(str(target["new_group"]))
        target["why"] = result.target.why_named(lambda code: names.get(code, code))
    return out
