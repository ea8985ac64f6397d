"""``report``: run a curve release (and log-rank tests with --group), charge a ledger, write an HTML or PDF report.

The report is rendered from the release's ledger record, read back from the ledger after the charge, by the code that
renders the Ledger and report page's reports (:func:`dpsurv_core.report.stored.record_report`): what it shows is what
the record holds (released, public inputs, derived, cost, guarantee as run), so the same report can be rebuilt from
the record once the data is gone, and no exact count of the data reaches it. A release report (the default) holds
private outputs only; ``--review`` adds the non-private comparison, the privacy audit of the record at the epsilon
released and the board's comparison of methods, and marks every page confidential. ``--out FILE.pdf`` prints the same
HTML report to PDF with Debian's chromium (:mod:`dpsurv_core.report.pdf`); without a browser it exits 2 before
anything is released. ``--bundle PREFIX`` also writes PREFIX.csv and PREFIX.json with the released numbers (the JSON
with the report's private tables too).
"""

from __future__ import annotations

import argparse
import math
from dataclasses import replace
from pathlib import Path

import pandas as pd

from dpsurv_core.audit import comparison
from dpsurv_core.audit.figures import comparison_section, report_section
from dpsurv_core.audit.record import stored_publisher
from dpsurv_core.cli import km
from dpsurv_core.cli.common import add_data_options, add_release_options, run_plan, store_from_args
from dpsurv_core.cli.delivery import Charge, delivering
from dpsurv_core.curves import result as curves
from dpsurv_core.curves.kaplan_meier import CONF_TYPES
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.chain import CAP_LOWER, CAP_RAISE, CAP_SET
from dpsurv_core.privacy.ledger import SUBJECT, Record, record_outputs
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
from dpsurv_core.report.stored import record_report

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


def _nonprivate_sections(rep: Report, exact: curves.CurveResult, cohort, public, args: argparse.Namespace) -> None:
    """A review's exact analysis of the data as ``km`` prints it (confidential): the curve with R's band, the
    median table, landmarks, RMST and the number at risk counted on the data."""
    conf_type = args.conf_type
    main = km.band_curves(exact)
    lo, up = km.conf_bands(main, conf_type, False)
    names = km.group_labels_of(args, main.groups)
    labelled = replace(km.named_groups(main, names), lower=lo, upper=up)
    sentence = band_sentence(conf_type, False, km.interval_method(exact, conf_type))
    rep.add_figure(curves_figure({"non-private": labelled}, cohort.time_unit, title=sentence.split(". ")[0]))
    rep.add_text(sentence, "note")
    entries = km.curve_entries(main, "survival", conf_type, False, False, km.quantile_curves(exact, main))
    rep.add_table(median_table(entries, names, cohort.time_unit), "Median survival (non-private, 95% CI)")
    read = km.readings(exact, **km.reading_options(args, exact, cohort, public), raw_labels_shown=False)
    if "landmarks" in read:
        rep.add_table(landmark_table(read["landmarks"], names), "Survival at the landmark times (non-private, 95% CI)")
    if "rmst" in read:
        rep.add_table(rmst_table(read["rmst"], names, cohort.time_unit),
                      "Restricted mean survival time (non-private, 95% CI)")
    risk = km.number_at_risk(exact.curves.groups, cohort, public, curves.risk_counts(exact), math.inf, exact.trials)
    if risk is not None:
        table = pd.DataFrame([[_label(names, r["group"]), *("unknown" if v is None else f"{v:,.0f}" for v in r["at_risk"])]
                              for r in risk["rows"] if r["trial"] == 0],
                             columns=["group", *[f"{t:.4g}" for t in risk["times"]]])
        rep.add_table(table, f"Number at risk ({risk['definition']})")


def _review_sections(rep: Report, record: Record, cohort, public, mech, args: argparse.Namespace) -> None:
    """What a review adds after the record's own sections (which compare it with the exact curve and tests): the
    exact analysis, the privacy audit of the record at its released epsilon, and the board's comparison of methods
    at that epsilon (all confidential, simulations and counts on the data)."""
    from dpsurv_core.cli.logrank import released_tests

    exact = curves.NonPrivate().compute(cohort, public)
    names = km.group_labels_of(args, exact.curves.groups)
    rep.add_section("The non-private analysis", confidential=True)
    _nonprivate_sections(rep, exact, cohort, public, args)
    if exact.counts is not None and len(exact.curves.groups) > 1:
        for table, caption in logrank_tables(released_tests(exact, curves.NonPrivate(), names)):
            rep.add_table(table, caption.replace("Log-rank tests (", "Log-rank tests (non-private, exact counts on "
                                                                    "the grid: ", 1))
    # the attack on the record as stored (its reader and public inputs, its mechanism rebuilt from them) at its epsilon
    report_section(rep, cohort, public, mech, names=names, publisher=stored_publisher(record.body),
                   record_id=record.id)
    entry = catalogue.get(catalogue.CURVES, args.mechanism)
    dp = (entry.id,) if entry.formal and entry.protects == SUBJECT else comparison.DP_DEFAULT
    comparison_section(rep, comparison.compare(cohort, public, args.epsilon, dp=dp, trials=200))


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


def _stored_record(store, fingerprint: str, fields: dict) -> Record:
    """The ledger record a release just wrote, read back from the ledger store."""
    rid = fields.get("record_id")
    found = [r for r in store.records(fingerprint) if r.id == rid]
    if not found:
        raise ParameterError(f"Ledger record {rid} cannot be read back from {str(store.path)!r}.")
    return found[0]


def _release_and_write(args: argparse.Namespace, out: Path, fmt: str, outputs: Outputs, charge: Charge) -> dict:
    """Release, charge, read the record back from the ledger, render the report from it alone and write it (and the
    bundle) into the outputs reserved beforehand."""
    # its record keeps the calibrated tests too (with two or more groups), as a logrank release's does
    plan, cohort, public, extra = km.plan(args, tests={"null_draws": None})
    mech = plan.mechanism
    _, fields = run_plan(args, plan)
    charge.recorded(fields)
    store = store_from_args(args)
    ledger = store.ledger(plan.fingerprint)
    stored = _stored_record(store, plan.fingerprint, fields)
    kind = "review" if args.review else "release"
    # the stored record alone (released, public inputs, derived, cost, guarantee as run), rendered by the code that
    # renders the Ledger and report page's reports: neither the data nor the release object is in reach
    dataset = str(stored.body.get("dataset") or cohort.name)
    caps = [r for r in store.records(plan.fingerprint) if r.kind in (CAP_SET, CAP_RAISE, CAP_LOWER)]
    rep = record_report(f"Survival analysis of {dataset}", dataset, ledger, [stored], kind=kind,
                        cohort=cohort if args.review else None, cap_history=caps,
                        below=("audit", "comparison") if args.review else ())
    if args.review:
        _review_sections(rep, stored, cohort, public, mech, args)
    kept = record_outputs(stored.body) or {}
    warnings = [*(kept.get("warnings") or []), *(kept.get("test_warnings") or [])]
    outputs.write(out, html_to_pdf(rep.to_html()) if fmt == "pdf" else rep.to_html())
    written = [str(out)]
    if args.bundle:  # the numbers the ledger record keeps (band of the type asked, its method, the warnings), as the
        # Ledger and report page exports them
        record = [stored]
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
            "disclosures": list(stored.body.get("disclosures") or [])}
