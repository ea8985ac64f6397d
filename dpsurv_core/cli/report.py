"""``report``: run a curve release (and log-rank tests with --group), charge a ledger, write an HTML or PDF report.

A release report (the default) holds private outputs only; ``--review`` adds the non-private
comparison and marks every page confidential. ``--out FILE.pdf`` prints the same HTML report to PDF
with Debian's chromium (:mod:`dpsurv_core.report.pdf`); without a browser it exits 2 before anything is
released. ``--bundle PREFIX`` also writes PREFIX.csv and PREFIX.json with the released numbers.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpsurv_core.audit import comparison
from dpsurv_core.audit.figures import comparison_section, report_section
from dpsurv_core.cli import km
from dpsurv_core.cli.common import add_data_options, add_release_options, run_plan, store_from_args
from dpsurv_core.curves import logrank_test
from dpsurv_core.curves import release as curves
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import SUBJECT
from dpsurv_core.report.figures import curves_figure
from dpsurv_core.report.files import write_new
from dpsurv_core.report.html import Report, curve_records, release_bundle
from dpsurv_core.report.pdf import PdfUnavailable, html_to_pdf, pdf_problem

NAME = "report"
HELP = "release survival curves (and log-rank tests) and write a self-contained HTML (or PDF) report"
SUFFIXES = {".html": "html", ".htm": "html", ".pdf": "pdf"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    add_release_options(p, catalogue.ids(catalogue.CURVES, "report", private=True), default=catalogue.default_id(catalogue.CURVES), grid=True)
    km.set_group_help(p)
    km.add_mechanism_options(p)
    p.add_argument("--out", required=True, metavar="FILE.html|FILE.pdf",
                   help="where to write the report: .html, or .pdf (the same report printed by chromium)")
    p.add_argument("--review", action="store_true", help="include non-private comparisons (marked confidential)")
    p.add_argument("--bundle", metavar="PREFIX", help="also write PREFIX.csv and PREFIX.json with the released numbers")
    p.add_argument("--force", action="store_true", help="replace existing output files (symbolic links are never "
                                                        "followed or replaced)")


def _median_table(release: curves.CurveRelease, unit: str) -> pd.DataFrame:
    med, lo, hi = release.curves.median()
    fmt = lambda v: "not reached" if not np.isfinite(v) else f"{v:.4g}"  # noqa: E731
    return pd.DataFrame({"group": list(release.curves.groups), f"median ({unit})": [fmt(v) for v in med[0]],
                         "95% CI lower": [fmt(v) for v in lo[0]], "95% CI upper": [fmt(v) for v in hi[0]]})


def _logrank_table(counts, mech, extra=None) -> pd.DataFrame:
    """Pairwise and overall log-rank tests, p-values calibrated for the mechanism's public noise (the chi-square
    tail when there is none)."""
    law = logrank_test.noise_law(mech, extra or {})
    rows = [{"comparison": t.label if t.group_b is not None else f"overall ({t.dof} df)",
             "statistic": float(t.statistic[0]), "p-value": float(t.p_value[0]), "test": t.method}
            for t in logrank_test.calibrated_tests(counts, law)]
    return pd.DataFrame(rows)


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    fmt = SUFFIXES.get(out.suffix.lower())
    if fmt is None:
        raise ParameterError(f"--out {args.out!r} must name an .html or a .pdf file.")
    if fmt == "pdf" and (problem := pdf_problem()) is not None:  # before anything is released or charged
        raise ParameterError(f"{problem.rstrip('.')}; or choose --out FILE.html for the HTML report.")
    if not out.parent.exists():
        raise ParameterError(f"The folder {str(out.parent)!r} does not exist: create it or choose another --out.")
    if args.repeat != 1 or args.seed is not None:
        raise ParameterError("A report is one release drawn with OpenDP's samplers: drop --repeat and --seed.")
    if not catalogue.get(catalogue.CURVES, args.mechanism).private or math.isinf(args.epsilon):
        raise ParameterError("A report releases private results: choose a private --mechanism and a finite --epsilon "
                             "(non-private numbers appear only with --review).")
    if args.bundle and not Path(args.bundle).parent.exists():
        raise ParameterError(f"The folder of --bundle {args.bundle!r} does not exist: create it or choose another prefix.")
    targets = [out] + ([Path(args.bundle + ".csv"), Path(args.bundle + ".json")] if args.bundle else [])
    for t in targets:  # before anything is released or charged
        if t.is_symlink():
            raise ParameterError(f"{str(t)!r} is a symbolic link: dpsurv does not write through links; choose a plain "
                                 "file path.")
        if t.exists() and not args.force:
            raise ParameterError(f"{str(t)!r} exists already: choose another name, or add --force to replace it.")
    plan, cohort, public, extra = km.plan(args)
    mech = plan.mechanism
    release, fields = run_plan(args, plan)
    ledger = store_from_args(args).ledger(plan.fingerprint)
    kind = "review" if args.review else "release"
    rep = Report(f"Survival analysis of {cohort.name}", cohort.name, ledger, kind)
    rep.add_section(f"Private survival curves ({mech.name})" if mech.cost.formal
                    else f"Survival curves with disclosure control, no formal guarantee ({mech.name})")
    rep.add_text(f"Privacy: {release.cost.sentence()}.")
    rep.add_disclosures(release.disclosures)
    rep.add_figure(curves_figure({"private": release.curves}, cohort.time_unit))
    rep.add_table(_median_table(release, cohort.time_unit), "Median survival (private)")
    if release.counts is not None and len(release.curves.groups) > 1:
        rep.add_section("Private log-rank tests")
        rep.add_table(_logrank_table(release.counts, mech, release.extra))
    if args.review:
        exact = curves.NonPrivate().release(cohort, public)
        rep.add_section("Comparison with the non-private analysis", confidential=True)
        rep.add_figure(curves_figure({"private": release.curves, "non-private": exact.curves}, cohort.time_unit))
        err = curves.rmse(release.curves.survival[0], exact.curves.survival[0])
        rep.add_table(pd.DataFrame({"group": list(release.curves.groups), "RMSE": err,
                                    "sup-norm": curves.sup_norm(release.curves.survival[0], exact.curves.survival[0])}),
                      "Error of the private curve on the public grid")
        rep.add_table(_median_table(exact, cohort.time_unit), "Median survival (non-private)")
        if exact.counts is not None and len(exact.curves.groups) > 1:
            rep.add_table(_logrank_table(exact.counts, curves.NonPrivate()), "Log-rank tests (non-private, exact counts on the grid)")
    if args.review:
        report_section(rep, cohort, public, mech)
        entry = catalogue.get(catalogue.CURVES, args.mechanism)
        dp = (entry.id,) if entry.formal and entry.protects == SUBJECT else comparison.DP_DEFAULT
        comparison_section(rep, comparison.compare(cohort, public, args.epsilon, dp=dp, trials=200))
    if fmt == "pdf":
        try:
            pdf = html_to_pdf(rep.to_html())
        except PdfUnavailable as exc:
            raise ParameterError(f"The release was recorded (record {fields.get('record_id')}) but its PDF could not "
                                 f"be made: {exc} The Ledger and report page rebuilds the report from that record."
                                 ) from exc
        write_new(out, pdf, force=args.force)
    else:
        write_new(out, rep.to_html(), force=args.force)
    written = [str(out)]
    if args.bundle:
        csv_text, json_text = release_bundle(curve_records(release), ledger, release.disclosures)
        write_new(args.bundle + ".csv", csv_text, force=args.force)
        write_new(args.bundle + ".json", json_text, force=args.force)
        written += [args.bundle + ".csv", args.bundle + ".json"]
    return fields | {"out": str(out), "format": fmt, "pdf": str(out) if fmt == "pdf" else None, "kind": kind,
                     "files": written, "mechanism": mech.name,
            "epsilon_spent": mech.cost.epsilon, "protects": mech.cost.protects, "neighbouring": mech.cost.neighbouring,
            "ledger": ledger.to_dict(), "sections": [s.title for s in rep.sections]}
