"""``logrank``: pairwise and overall k-group log-rank tests from released per-group counts.

The tests are post-processing of the released numbers at risk and events (docs/mechanisms.md):
laplace-counts and adaptive-km (noisy counts), rrr (counts per reported group; protects the label
only), nonprivate (exact, on the data's event times, equal to lifelines). time-indexed releases no
counts and is refused.

``p_value`` is the calibrated p-value (:mod:`dpsurv_core.curves.logrank_test`): ``statistic`` compared
with its null distribution simulated from the released pooled hazard and the public noise law
(``null_draws`` draws, seeded from the released values). For laplace-counts ``statistic`` is the
noise-adjusted log-rank statistic (O - E)' (V + V_noise)^-1 (O - E), otherwise the plain one.
``chi2_tail_ignoring_noise`` is the chi-square tail of the plain statistic of the released counts
(``statistic_ignoring_noise``), which treats the noisy counts as exact: not a p-value when there is
noise. Without noise (nonprivate, ``--epsilon inf``) they are all equal, and the test is R's survdiff on the data's
event times.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpsurv_core.cli import reading
from dpsurv_core.cli.common import add_data_options, add_release_options, add_timefix_option, positive_int
from dpsurv_core.cli.km import (
    NO_NOISE_FIELDS,
    add_group_labels,
    add_labels_option,
    add_mechanism_options,
    build_mechanism,
    group_labels_of,
    header,
    load,
    named_groups,
    no_noise,
    number_at_risk,
    release,
    set_group_help,
)
from dpsurv_core.curves import logrank_test
from dpsurv_core.curves.logrank_readout import _finite, calibrated_fields, released_tests  # noqa: F401 (re-exported)
from dpsurv_core.curves.result import exact_counts, exact_source, risk_counts, tile_trials
from dpsurv_core.curves.timefix import timefixed
from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.release import not_private_fields

NAME = "logrank"
HELP = "pairwise and overall log-rank tests between groups from private counts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=True)
    add_timefix_option(p)
    add_release_options(p, catalogue.ids(catalogue.CURVES, "logrank"), default=catalogue.default_id(catalogue.CURVES), grid=True,
                        horizon=True)
    set_group_help(p, required=True)
    add_mechanism_options(p)
    p.add_argument("--null-draws", type=positive_int, default=None, metavar="B",
                   help="null draws of the calibrated test (default 999 for one release, fewer with --repeat; at "
                        "least 19)")
    add_labels_option(p)
    reading.add_from_record(p)


def run(args: argparse.Namespace) -> dict[str, Any]:
    reading.check(args, "logrank", needs_group=True)
    if args.from_record is not None:
        return reading.from_record(args, "logrank")
    private = catalogue.get(catalogue.CURVES, args.mechanism).private
    if not private:
        cohort, public, extra = load(args)
        source, grid = exact_source(cohort)  # a table kept in an engine is counted there: no row read
        counts = tile_trials(exact_counts(source, grid, public), 1)
        mech = catalogue.get(catalogue.CURVES, args.mechanism).build(rows_per_subject=cohort.rows_per_subject)
        law = logrank_test.noise_law(mech)
        out = {"mechanism": mech.name, "epsilon_spent": mech.cost.epsilon, "protects": mech.cost.protects,
               "neighbouring": mech.cost.neighbouring, "cost": mech.cost.sentence(), "parameters": {},
               "disclosures": [d.to_dict() for d in [*extra, Disclosure("release", "not DP: exact, non-private "
                                                                        "tests on the data's event times.", dp=False)]],
               "noise": "none", "dataset": cohort.name, "groups": list(counts.groups), "trials": 1,
               **not_private_fields(), **NO_NOISE_FIELDS}
    else:
        draws = args.null_draws
        rel, cohort, public, extra, fields = release(
            args, analysis="log-rank tests", min_groups=2,
            tests={"null_draws": draws})
        if rel.counts is None:
            raise ParameterError(f"{args.mechanism} releases no counts, so there is no log-rank test on its output: use "
                                 "laplace-counts or rrr.")
        counts = rel.counts
        _, mech = build_mechanism(args.mechanism, args, cohort, public)
        law = logrank_test.noise_law(mech, rel.extra)
        out = header(rel, cohort, public, extra)
        out.update(fields)
        # the curve release's notes about its bands: a log-rank output has no bands
        out["notes"] = [n for n in out.get("notes", []) if "bands" not in n.lower()]
    if len(counts.groups) < 2:
        raise ParameterError("A log-rank test needs at least two groups: choose a --group column with two or more values.")
    out["number_at_risk"] = number_at_risk(counts.groups, cohort, public, risk_counts(rel) if private else counts,
                                           out.get("epsilon_spent"), counts.n.shape[0] if counts.n.ndim > 1 else 1)
    tested = counts
    if private and no_noise(rel.cost.epsilon):  # noise switched off: R's survdiff on the data's event times, as the
        # non-private test (the binned counts' test moves with the bins and with how a bin's censorings are counted)
        tested = tile_trials(exact_counts(*exact_source(timefixed(cohort)), public), 1)
        law = logrank_test.noise_law(catalogue.get(catalogue.CURVES, "nonprivate").build())
    trials = tested.n.shape[0]
    draws = args.null_draws or logrank_test.default_draws(trials, len(tested.groups), tested.grid.bins)
    results = logrank_test.calibrated_tests(tested, law, draws=draws)
    ov = results[-1]
    tests, out["overall"] = _trial_fields(results, trials)
    out["tests"] = tests
    names = group_labels_of(args, counts.groups)
    more_warnings: list[str] = []
    debiased_counts = rel.extra.get("debiased_counts") if private and tested is counts else None
    if debiased_counts is not None:  # rrr: the tests on the de-biased counts too, as the page and the record show
        deb_law = logrank_test.noise_law(mech, rel.extra, debiased=True)
        deb = logrank_test.calibrated_tests(debiased_counts, deb_law, draws=draws)
        out["debiased_tests"], out["debiased_overall"] = _trial_fields(deb, trials)
        out["debiased_test_method"] = deb[-1].method
        more_warnings = logrank_test.warnings_for(named_groups(debiased_counts, names), deb_law,
                                                  logrank_test.with_group_names(deb, names), out.get("epsilon_spent"),
                                                  mech, general=False)
    if out.get("simulation"):  # a preview, for the data holder only: the exact tests on the data's event times beside
        exact = logrank_test.calibrated_tests(
            tile_trials(exact_counts(*exact_source(timefixed(cohort)), public), 1),
            logrank_test.noise_law(catalogue.get(catalogue.CURVES, "nonprivate").build()))
        by_pair = {(r.group_a, r.group_b): _finite(float(r.p_value[0])) for r in exact}
        for d in tests:
            if d["trial"] == 0:
                d["p_value_nonprivate"] = by_pair.get((d["group_a"], d["group_b"]))
        out["overall"][0]["p_value_nonprivate"] = by_pair.get((exact[-1].group_a, exact[-1].group_b))
        out["p_value_note"] = ("p_value: the private log-rank test, which keeps its level with the privacy noise ("
                               + ("calibrated by simulating the release's public law, its noise or rule" if law.noisy
                                  else "no calibration needed: "
                                  "randomizing the labels leaves the statistic's null distribution unchanged")
                               + "); p_value_nonprivate (first "
                               "trial, preview only: it reads the data) is the exact test on the data's event times, as "
                               "R's survdiff, for comparison")
    out["test_method"] = ov.method
    out["null_draws"] = ov.null_draws
    out["noise_law"] = law.description
    # the p-values carry the noise (rrr's without calibration: see test_method); exact tests where there is none
    out["interval_includes_noise"] = bool(law.noisy) or (private and not no_noise(out.get("epsilon_spent")))
    out["warnings"] = logrank_test.warnings_for(named_groups(tested, names), law,
                                                logrank_test.with_group_names(results, names), out.get("epsilon_spent"),
                                                mech)
    out["warnings"] += [w for w in more_warnings if w not in out["warnings"]]
    return add_group_labels(out, names)


def _trial_fields(results: list[logrank_test.CalibratedTest], trials: int) -> tuple[list[dict[str, Any]],
                                                                                list[dict[str, Any]]]:
    """(each pairwise test per trial, ordered by trial; the overall test per trial) as ``logrank --json`` prints them."""
    pairs = sorted(({"trial": t, "group_a": r.group_a, "group_b": r.group_b, **calibrated_fields(r, t)}
                    for r in results[:-1] for t in range(trials)), key=lambda d: d["trial"])
    return pairs, [{"trial": t, **calibrated_fields(results[-1], t)} for t in range(trials)]
