"""``report``: run a curve release (and log-rank tests with --group), charge a ledger, write an HTML or PDF report.

A release report (the default) holds private outputs only; ``--review`` adds the non-private
comparison and marks every page confidential. ``--out FILE.pdf`` prints the same HTML report to PDF
with Debian's chromium (:mod:`dpsurv_core.report.pdf`); without a browser it exits 2 before anything is
released. ``--bundle PREFIX`` also writes PREFIX.csv and PREFIX.json with the released numbers (the JSON with
the report's private tables too).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd

from dpsurv_core.audit import comparison
from dpsurv_core.audit.figures import comparison_section, report_section
from dpsurv_core.cli import km
from dpsurv_core.cli.common import add_data_options, add_release_options, run_plan, store_from_args
from dpsurv_core.cli.delivery import Charge, delivering
from dpsurv_core.curves import result as curves
from dpsurv_core.curves.kaplan_meier import CONF_TYPES
from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import GROUP_LABEL, SUBJECT, as_run, not_dp_disclosure
from dpsurv_core.report.figures import curves_figure
from dpsurv_core.report.files import Outputs
from dpsurv_core.report.html import (
    Report,
    band_sentence,
    export_bundle,
    landmark_table,
    logrank_tables,
    median_table,
    rmst_table,
)
from dpsurv_core.report.pdf import html_to_pdf, pdf_problem

NAME = "report"
HELP = "release survival curves (and log-rank tests) and write a self-contained HTML (or PDF) report"
SUFFIXES = {".html": "html", ".htm": "html", ".pdf": "pdf"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p)
    add_release_options(p, catalogue.ids(catalogue.CURVES, "report", private=True), default=catalogue.default_id(catalogue.CURVES),
                        grid=True, simulation=False)
    km.set_group_help(p)
    km.add_mechanism_options(p)
    p.add_argument("--conf-type", choices=CONF_TYPES, default="log",
                   help="pointwise 95%% band as R survfit's conf.type (default log): plain, log, log-log, logit, arcsin")
    p.add_argument("--landmarks", type=km.parse_landmarks, metavar="T1,T2",
                   help="a table of survival with its interval at these times, e.g. 365,730")
    p.add_argument("--rmst", type=km.positive_time, metavar="T",
                   help="restricted mean survival time to T with its 95%% interval")
    km.add_labels_option(p)
    p.add_argument("--out", required=True, metavar="FILE.html|FILE.pdf",
                   help="where to write the report: .html, or .pdf (the same report printed by chromium)")
    p.add_argument("--review", action="store_true", help="include non-private comparisons (marked confidential)")
    p.add_argument("--bundle", metavar="PREFIX",
                   help="also write PREFIX.csv and PREFIX.json with the released numbers (the JSON also holds the "
                        "report's private tables: medians, landmarks, RMST, log-rank tests)")
    p.add_argument("--force", action="store_true", help="replace existing output files (symbolic links are never "
                                                        "followed or replaced)")


def _label(names: dict[str, str], group: str) -> str:
    return names.get(str(group), str(group))


def release_kind(release: curves.CurveResult) -> str:
    """What a release's tables are, in the words their captions use: private (epsilon-DP for the subject), label-private
    (only the group label protected), not DP as run (a disclosure voided the guarantee), or disclosure control."""
    if not release.cost.formal:
        return "disclosure control, no formal guarantee"
    if not_dp_disclosure(release.disclosures, release.cost.protects):
        return "released with noise, not differentially private as run"
    return "label-private: the group label is protected, not the subject" if release.cost.protects == GROUP_LABEL \
        else "private"


def _curve_sections(rep: Report, release: curves.CurveResult, cohort, public, args: argparse.Namespace,
                    private: bool) -> list[str]:
    """The curve figure with the band ``km`` prints (its type named, and whether it carries the noise), the median
    table, landmarks, RMST and the number at risk; returns ``km``'s warnings."""
    conf_type = args.conf_type
    noisy = km.includes_noise(release) if private else False
    coarse = private and public.grid.kind != "event-times"
    main = km.band_curves(release)
    lo, up = km.conf_bands(main, conf_type, noisy)
    names = km.group_labels_of(args, main.groups)
    labelled = replace(km.named_groups(main, names), lower=lo, upper=up)
    what = release_kind(release) if private else "non-private"
    method = km.interval_method(release, conf_type)
    sentence = band_sentence(conf_type, noisy, method)
    rep.add_figure(curves_figure({what: labelled}, cohort.time_unit, title=sentence.split(". ")[0]))
    rep.add_text(sentence, "note")
    entries = km.curve_entries(main, "survival", conf_type, noisy, coarse, km.quantile_curves(release, main))
    rep.add_table(median_table(entries, names, cohort.time_unit), f"Median survival ({what}, 95% CI)")
    # the report shows rrr's de-biased curves only: no sentence on its reported-label curves
    read = km.readings(release, **km.reading_options(args, release, cohort, public), raw_labels_shown=False)
    if "landmarks" in read:
        rep.add_table(landmark_table(read["landmarks"], names), f"Survival at the landmark times ({what}, 95% CI)")
    if "rmst" in read:
        rep.add_table(rmst_table(read["rmst"], names, cohort.time_unit),
                      f"Restricted mean survival time ({what}, 95% CI)")
    risk = km.number_at_risk(release.curves.groups, cohort, public, curves.risk_counts(release),
                             release.cost.epsilon if private else math.inf, release.trials)
    if risk is not None:
        table = pd.DataFrame([[_label(names, r["group"]), *("unknown" if v is None else f"{v:,.0f}" for v in r["at_risk"])]
                              for r in risk["rows"] if r["trial"] == 0],
                             columns=["group", *[f"{t:.4g}" for t in risk["times"]]])
        rep.add_table(table, f"Number at risk ({risk['definition']})")
    return read["warnings"]


def run(args: argparse.Namespace) -> dict:
    out = Path(args.out)
    fmt = SUFFIXES.get(out.suffix.lower())
    if fmt is None:
        raise ParameterError(f"--out {args.out!r} must name an .html or a .pdf file.")
    if fmt == "pdf" and (problem := pdf_problem()) is not None:  # before anything is released or charged
        raise ParameterError(f"{problem.rstrip('.')}; or choose --out FILE.html for the HTML report.")
    if not catalogue.get(catalogue.CURVES, args.mechanism).private or math.isinf(args.epsilon):
        raise ParameterError("A report releases private results: choose a private --mechanism and a finite --epsilon "
                             "(non-private numbers appear only with --review).")
    targets = [out] + ([Path(args.bundle + ".csv"), Path(args.bundle + ".json")] if args.bundle else [])
    # every output checked and its temporary file made before anything is released or charged; a failure after the
    # charge says the release was recorded, under which record, and how to rebuild its report without a new charge
    with Outputs(targets, force=args.force) as outputs, delivering(args.data) as charge:
        return _release_and_write(args, out, fmt, outputs, charge)


def _release_and_write(args: argparse.Namespace, out: Path, fmt: str, outputs: Outputs, charge: Charge) -> dict:
    """Release, charge, render the report and write it (and the bundle) into the outputs reserved beforehand."""
    from dpsurv_core.cli.logrank import released_tests

    # its record keeps the calibrated tests too (with two or more groups), as a logrank release's does
    plan, cohort, public, extra = km.plan(args, tests={"null_draws": None})
    mech = plan.mechanism
    release, fields = run_plan(args, plan)
    charge.recorded(fields)
    ledger = store_from_args(args).ledger(plan.fingerprint)
    kind = "review" if args.review else "release"
    rep = Report(f"Survival analysis of {cohort.name}", cohort.name, ledger, kind)
    kind_words = release_kind(release)
    # the disclosures as the record holds them (a value read off the data only with the data holder's acceptance, and
    # named, never counted), so the report says what the ledger says
    recorded = fields.get("publishable", {}).get("disclosures")
    if recorded is not None:
        release = replace(release, disclosures=[Disclosure(d["parameter"], d["message"], d.get("dp", True))
                                                for d in recorded])
        kind_words = release_kind(release)
    rep.add_section(f"Survival curves ({mech.name}): {kind_words}" if kind_words != "private"
                    else f"Private survival curves ({mech.name})")
    not_dp = not_dp_disclosure(release.disclosures, release.cost.protects) if release.cost.formal else None
    privacy = f"not differentially private as run: {not_dp[1]}" if not_dp else as_run(release.cost,
                                                                                        release.disclosures)["sentence"]
    rep.add_text(f"Privacy: {privacy}.", "note notdp" if not_dp else None)
    if "record_id" in fields:  # what the ledger holds: the record a reader can look up, and what it charged
        if release.cost.formal:
            cap = fields.get("cap")
            total = f"{fields.get('spent', 0):.4g}" + (f" of its cap {cap:.4g}" if isinstance(cap, (int, float))
                                                        else " (no cap set)")
            whose = release.cost.protects
            rep.add_text(f"Ledger record {fields['record_id']}: charged epsilon {release.cost.epsilon:.4g} to this "
                         f"data set's total for {whose}, now {total}"
                         + ("; as run, the release protects no one formally." if not_dp else "."))
        else:
            rep.add_text(f"Ledger record {fields['record_id']}: no epsilon charged (no formal guarantee).")
    rep.add_disclosures(release.disclosures)
    names = km.group_labels_of(args, release.curves.groups)
    warnings = _curve_sections(rep, release, cohort, public, args, private=True)
    if release.counts is not None and len(release.curves.groups) > 1:
        rep.add_section("Private log-rank tests" if kind_words == "private" else f"Log-rank tests ({kind_words})")
        tested = released_tests(release, mech, names)  # as the release's record keeps them
        for table, caption in logrank_tables(tested):
            rep.add_table(table, caption)
        warnings += tested.get("test_warnings", [])
    if warnings:
        rep.add_section("Read with care")
        for w in dict.fromkeys(warnings):
            rep.add_text(w, "warning")
    if args.review:
        exact = curves.NonPrivate().compute(cohort, public)
        rep.add_section("Comparison with the non-private analysis", confidential=True)
        read = km.band_curves(release)  # rrr: the de-biased curves, which the numbers above are read from
        rep.add_figure(curves_figure({"private": km.named_groups(read, names),
                                      "non-private": km.named_groups(exact.curves, names)}, cohort.time_unit,
                                     bands="none", title="Private and non-private curves on the public grid"))
        err = curves.rmse(read.survival[0], exact.curves.survival[0])
        rep.add_table(pd.DataFrame({"group": [_label(names, g) for g in read.groups], "RMSE": err,
                                    "sup-norm": curves.sup_norm(read.survival[0], exact.curves.survival[0])}),
                      "Error of the private curve on the public grid")
        _curve_sections(rep, exact, cohort, public, args, private=False)
        if exact.counts is not None and len(exact.curves.groups) > 1:
            for table, caption in logrank_tables(released_tests(exact, curves.NonPrivate(), names)):
                rep.add_table(table, caption.replace("Log-rank tests (", "Log-rank tests (non-private, exact counts on "
                                                                        "the grid: ", 1))
    if args.review:
        report_section(rep, cohort, public, mech, names=names)
        entry = catalogue.get(catalogue.CURVES, args.mechanism)
        dp = (entry.id,) if entry.formal and entry.protects == SUBJECT else comparison.DP_DEFAULT
        comparison_section(rep, comparison.compare(cohort, public, args.epsilon, dp=dp, trials=200))
    outputs.write(out, html_to_pdf(rep.to_html()) if fmt == "pdf" else rep.to_html())
    written = [str(out)]
    if args.bundle:  # the numbers the ledger record keeps (band of the type asked, its method, the warnings), as the
        # Ledger and report page exports them
        store = store_from_args(args)
        record = [r for r in store.records(plan.fingerprint) if r.id == fields.get("record_id")]
        check = store.verify()  # the chain's state, as the Ledger and report page puts it in its export
        chain = {"ok": check.ok, "records": check.records, "head": store.head(), "message": check.message}
        csv_text, json_text = export_bundle(record, ledger, cohort.name, store.key(plan.fingerprint), chain,
                                            derived=rep.private_tables(), report_warnings=list(dict.fromkeys(warnings)))
        outputs.write(args.bundle + ".csv", csv_text)
        outputs.write(args.bundle + ".json", json_text)
        written += [args.bundle + ".csv", args.bundle + ".json"]
    return fields | {"out": str(out), "format": fmt, "pdf": str(out) if fmt == "pdf" else None, "kind": kind,
                     "files": written, "mechanism": mech.name,
            "epsilon_spent": mech.cost.epsilon, "protects": mech.cost.protects, "neighbouring": mech.cost.neighbouring,
            "ledger": ledger.to_dict(), "sections": [s.title for s in rep.sections],
            "disclosures": [d.to_dict() for d in release.disclosures]}
