"""``logrank``: pairwise and overall k-group log-rank tests from released per-group counts.

The tests are post-processing of the released numbers at risk and events (docs/mechanisms.md):
laplace-counts (noisy counts), rrr (counts per reported group; protects the label only),
nonprivate (exact, on the data's event times, equal to lifelines). time-indexed releases no
counts and is refused.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpsurv_core.cli.common import add_data_options, add_release_options
from dpsurv_core.cli.km import (
    NO_NOISE_FIELDS,
    add_mechanism_options,
    header,
    load,
    number_at_risk,
    release,
    set_group_help,
)
from dpsurv_core.curves.logrank import overall, pairwise
from dpsurv_core.curves.release import event_times_grid, exact_counts, tile_trials
from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.release import not_private_fields

NAME = "logrank"
HELP = "pairwise and overall log-rank tests between groups from private counts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=True)
    add_release_options(p, catalogue.ids(catalogue.CURVES, "logrank"), default=catalogue.default_id(catalogue.CURVES), grid=True,
                        horizon=True)
    set_group_help(p, required=True)
    add_mechanism_options(p)


def run(args: argparse.Namespace) -> dict[str, Any]:
    if not catalogue.get(catalogue.CURVES, args.mechanism).private:
        cohort, public, extra = load(args)
        grid = event_times_grid(cohort)
        counts = tile_trials(exact_counts(cohort, grid, public), 1)
        mech = catalogue.get(catalogue.CURVES, args.mechanism).build()
        out = {"mechanism": mech.name, "epsilon_spent": mech.cost.epsilon, "protects": mech.cost.protects,
               "neighbouring": mech.cost.neighbouring, "cost": mech.cost.sentence(), "parameters": {},
               "disclosures": [d.to_dict() for d in [*extra, Disclosure("release", "not DP: exact, non-private "
                                                                        "tests on the data's event times.", dp=False)]],
               "noise": "none", "dataset": cohort.name, "groups": list(counts.groups), "trials": 1,
               **not_private_fields(), **NO_NOISE_FIELDS}
    else:
        rel, cohort, public, extra, fields = release(args, analysis="log-rank tests", min_groups=2)
        if rel.counts is None:
            raise ParameterError(f"{args.mechanism} releases no counts, so there is no log-rank test on its output: use "
                                 "laplace-counts or rrr.")
        counts = rel.counts
        out = header(rel, cohort, public, extra)
        out.update(fields)
    if len(counts.groups) < 2:
        raise ParameterError("A log-rank test needs at least two groups: choose a --group column with two or more values.")
    out["number_at_risk"] = number_at_risk(counts.groups, cohort, public, counts,
                                           out.get("epsilon_spent"), counts.n.shape[0] if counts.n.ndim > 1 else 1)
    tests = []
    for res in pairwise(counts):
        stat, p = res.statistic.tolist(), res.p_value.tolist()
        tests += [{"trial": t, "group_a": res.group_a, "group_b": res.group_b, "statistic": stat[t], "p_value": p[t],
                   "dof": res.dof} for t in range(len(stat))]
    tests.sort(key=lambda d: d["trial"])
    res = overall(counts)
    stat, p = res.statistic.tolist(), res.p_value.tolist()
    out["tests"] = tests
    out["overall"] = [{"trial": t, "statistic": stat[t], "p_value": p[t], "dof": res.dof} for t in range(len(stat))]
    return out
