"""Reports rendered from stored ledger records: the one path by which a release is reported.

The Ledger and report page and the command line's ``report`` both render a release from its stored record alone: the
record's ``released``, ``public_inputs`` and ``derived`` parts (:mod:`dpsurv_core.publication`), its cost and the
guarantee as run (its disclosures), and the ledger's totals; never from a release object or the data, so that a report
rebuilt after the data is gone is the report that was first written. A review adds, for the data holder and marked
confidential, the comparisons with the non-private analysis (given the cohort) and the privacy audits, each tied to
the epsilon the releases were made at (:func:`chosen_audits`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import (
    GROUP_LABEL,
    Ledger,
    LedgerEntry,
    PrivacyCost,
    Record,
    charged_sentence,
    not_dp_disclosure,
)
from dpsurv_core.report.comparisons import curve_comparison, curve_outputs, parameter_comparison, test_comparison
from dpsurv_core.report.html import (
    AuditItem,
    ReleaseItem,
    Report,
    band_sentence,
    derived_tables,
    record_item,
    records_table,
)

CURVE_KINDS = ("curves", "logrank")  # the readers whose records keep a curve release's noisy counts


def release_kind(cost: PrivacyCost, disclosures: Any) -> str:
    """What a release's tables are, in words: private (epsilon-DP for the subject), label-private (only the group label
    protected), not DP as run (a disclosure voided the guarantee), or disclosure control."""
    if not cost.formal:
        return "disclosure control, no formal guarantee"
    if not_dp_disclosure(disclosures, cost.protects):
        return "released with noise, not differentially private as run"
    return "label-private: the group label is protected, not the subject" if cost.protects == GROUP_LABEL else "private"


def time_unit_of(body: dict[str, Any] | None) -> str:
    """The time unit a release was declared with (its public inputs), or "" when its record does not say."""
    inputs = (body or {}).get("public_inputs")
    if not isinstance(inputs, dict):
        return ""
    reading = inputs.get("reading")
    if not isinstance(reading, dict):
        reading = {}
    return str(reading.get("time_unit") or inputs.get("time_unit") or "")


def number_at_risk(body: dict[str, Any] | None) -> tuple[pd.DataFrame, str] | None:
    """The number-at-risk table ``km`` prints for a curve release, read from its record's released counts and public
    inputs alone (the release as its mechanism reads it back, :func:`dpsurv_core.curves.readout.curve_release`):
    estimates on the grid's table times, whole, non-negative and non-increasing. None for a record without released
    counts (time-indexed, Weibull, regression) or made before records had three parts."""
    body = body or {}
    if body.get("kind") not in CURVE_KINDS or not isinstance(body.get("released"), dict) \
            or not isinstance(body.get("public_inputs"), dict):
        return None
    from dpsurv_core.curves import readout
    from dpsurv_core.curves.readings import no_noise
    from dpsurv_core.curves.result import risk_counts
    from dpsurv_core.curves.summary import at_risk_at, risk_table, table_times

    inputs = body["public_inputs"]
    try:
        rel = readout.curve_release(body["released"], inputs)
        public = readout.public_parameters(inputs)
    except (DpsurvError, KeyError, TypeError, ValueError):  # a record this version cannot read: no table, not an error
        return None
    counts = risk_counts(rel)
    if counts is None:
        return None
    times = table_times(public.grid)
    inside = times <= float(public.horizon) + 1e-9
    times = times[inside] if inside.any() else times
    risk = risk_table(times, tuple(rel.curves.groups), at_risk_at(counts, times), exact=False,
                      altered=not no_noise(rel.cost.epsilon))
    if risk is None:
        return None
    names = (inputs.get("reading") or {}).get("names") or {}
    rows = [[names.get(str(r["group"]), str(r["group"])), *("unknown" if v is None else f"{v:,.0f}" for v in r["at_risk"])]
            for r in risk["rows"] if r["trial"] == 0]
    return (pd.DataFrame(rows, columns=["group", *[f"{t:.4g}" for t in risk["times"]]]),
            f"Number at risk ({risk['definition']})")


def _total_after(ledger: Ledger | None, entry: LedgerEntry) -> float | None:
    """The data set's composed epsilon for what ``entry`` protects over the records up to and including it."""
    if ledger is None or entry.record_id is None:
        return None
    upto = [e for e in ledger.entries if e.cost.protects == entry.cost.protects and e.record_id is not None
            and e.record_id <= entry.record_id]
    total = Ledger.composed(upto)
    return None if total is None or total.epsilon is None else float(total.epsilon)  # composed: formal costs only


def _privacy_lines(rep: Report, item: ReleaseItem, ledger: Ledger | None) -> None:
    """What the release is, its guarantee as run and what it charged, from its record."""
    entry, cost = item.entry, item.entry.cost
    disclosures = item.disclosures or entry.disclosures
    record = f", ledger record {entry.record_id}" if entry.record_id is not None else ""
    rep.add_text(f"Released {entry.time.replace('T', ' ')[:19]} UTC with {entry.mechanism}{record}: "
                 f"{release_kind(cost, disclosures)}.")
    not_dp = cost.formal and not_dp_disclosure(disclosures, cost.protects) is not None
    rep.add_text(f"Privacy: {charged_sentence(cost, disclosures)}.", "note notdp" if not_dp else "note")
    if entry.note.startswith(("as planned", "deviation from plan")):  # the cap came from a plan (budget set --plan)
        rep.add_text(f"Plan: {entry.note}.", "warning" if entry.note.startswith("deviation") else "note")
    if not cost.formal:
        rep.add_text("No epsilon charged: disclosure control has no formal guarantee.")
        return
    total = _total_after(ledger, entry)
    if total is not None:
        rep.add_text(f"Charged epsilon {cost.epsilon:.4g} to this data set's total for {cost.protects}, "
                     f"{total:.4g} after this release" + ("; as run, the release protects no one formally."
                                                          if not_dp else "."))


def _review_comparison(rep: Report, item: ReleaseItem, cohort: Any) -> None:
    """The release beside the non-private analysis of ``cohort`` (a confidential section), when they compare."""
    comp = curve_comparison(item, cohort)
    if comp is None:
        comp = parameter_comparison(item, cohort)
    if comp is None:
        return
    rep.add_section(f"{item.title}: comparison with the non-private analysis", confidential=True)
    if isinstance(comp, str):
        rep.add_text(comp)
    elif isinstance(comp, tuple):
        rep.add_figure(comp[0])
        rep.add_table(comp[1], "Error of the private curve at the released time points")
    else:
        rep.add_table(comp, "Private estimate and the non-private fit")
    tests = test_comparison(item, cohort)
    if tests is not None:
        rep.add_table(tests, "Log-rank tests: the released (calibrated) test beside the exact test on the same public "
                             "grid; a flip means a reader of the release would draw the opposite conclusion")


def _publication_figure(rep: Report, item: ReleaseItem) -> None:
    """A curve release's publication figure (:mod:`dpsurv_core.report.publication_figure`: curves, band, the
    KMunicate number-at-risk table, p-value and hazard ratio), from its record alone, and how to write it to a file."""
    from dpsurv_core.report.publication_figure import is_curve_record, publication_figure

    if not is_curve_record(item.body):
        return
    rid = item.entry.record_id
    rep.add_text("Publication figure (KMunicate layout: Morris et al. 2019), drawn from the record alone"
                 + (f"; as a file: python -m dpsurv_core figure --record {rid} --out FIGURE.svg (or .pdf, .png)."
                    if rid is not None else "."), "note")
    assert item.body is not None  # a curve record has a body
    rep.add_figure(publication_figure(item.body, rid))


def release_sections(rep: Report, items: Sequence[ReleaseItem], kind: str, cohort: Any = None,
                     ledger: Ledger | None = None, time_unit: str = "") -> None:
    """A section per release from what its record holds: what it is and its guarantee as run, its disclosures, the
    released curve with its band, the warnings, the derived tables (tests, medians, landmarks, RMST, intervals), the
    number at risk, the released numbers and the command that runs its plan again; in a review with ``cohort``, the
    comparison with the non-private analysis. ``ledger`` gives the totals each release brought the data set to."""
    from dpsurv_core.regression.inference import labelled_quantities  # a category as the tables above name it

    for item in items:
        unit = time_unit_of(item.body) or time_unit
        rep.add_section(item.title)
        _privacy_lines(rep, item, ledger)
        rep.add_disclosures(item.disclosures or item.entry.disclosures)
        if item.figure is not None:
            rep.add_figure(item.figure)
        out = item.outputs if isinstance(item.outputs, dict) else {}
        if isinstance(out.get("interval_method"), str):
            if curve_outputs(out):
                rep.add_text(band_sentence(out.get("conf_type", "log"), bool(out.get("interval_includes_noise")),
                                           out["interval_method"]), "note")
            else:
                rep.add_text(f"95% intervals that carry the privacy noise: {out['interval_method']}.", "note")
        for w in [*(out.get("warnings") or []), *(out.get("test_warnings") or [])]:
            rep.add_text(f"Read with care: {w}", "warning")
        for frame, caption in derived_tables(out, unit):
            rep.add_table(frame, caption)
        if (risk := number_at_risk(item.body)) is not None:
            rep.add_table(*risk)
        _publication_figure(rep, item)
        table = records_table(labelled_quantities(item.records, out))
        if not table.empty:
            rep.add_table(table, "Released numbers")
        elif item.outputs is None:
            rep.add_text("The record holds no released numbers.")
        if item.entry.command:
            rep.add_text(f"Run again as a new, charged release: {item.entry.command}")
        if kind == "review" and cohort is not None:
            _review_comparison(rep, item, cohort)


# ------------------------------------------------------------------------------------------- audits
def _mechanism_id(name: str) -> str:
    entry = catalogue.find(name)
    return entry.id if entry is not None else name


def _same_epsilon(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _epsilon(value: float | None) -> str:
    return "no epsilon (disclosure control)" if value is None else f"epsilon {value:g}"


def _releases(entries: Sequence[LedgerEntry]) -> str:
    ids = [str(e.record_id) for e in entries if e.record_id is not None]
    if not ids:
        return f"{len(entries)} release(s) of this report"
    return f"release {ids[0]}" if len(ids) == 1 else f"releases {', '.join(ids[:-1])} and {ids[-1]}"


def _audited_releases(audit: AuditItem, entries: Sequence[LedgerEntry]) -> tuple[list[LedgerEntry], list[LedgerEntry]]:
    """The releases among ``entries`` made with one of the audit's mechanisms: those at the epsilon the audit ran at,
    and those at another epsilon."""
    ids = set(audit.mechanisms)
    same = [e for e in entries if _mechanism_id(e.mechanism) in ids]
    at = [e for e in same if _same_epsilon(e.cost.epsilon, audit.epsilon)]
    return at, [e for e in same if not any(e is a for a in at)]


def _tie(audit: AuditItem, entries: Sequence[LedgerEntry]) -> tuple[str, bool]:
    """The sentence tying an audit to the releases (and whether it is a warning)."""
    if not audit.mechanisms:
        return ("This audit does not say at which epsilon it was run: it may not measure the releases of this report "
                "as they were made.", True)
    at, other = _audited_releases(audit, entries)
    if at:
        return f"Run at {_epsilon(audit.epsilon)}, as released in {_releases(at)}.", False
    if other:
        made = "; ".join(f"release {e.record_id} at {_epsilon(e.cost.epsilon)}" for e in other)
        return (f"This audit was run at {_epsilon(audit.epsilon)}, not at the epsilon released ({made}): it does not "
                "measure the release as it was made. Run the audit again at the released epsilon on the Privacy "
                "audit page before relying on it.", True)
    return (f"No release in this report was made with {', '.join(audit.mechanisms)}: this audit (at "
            f"{_epsilon(audit.epsilon)}) measures a release that was not made.", True)


def chosen_audits(audits: Sequence[AuditItem], entries: Sequence[LedgerEntry]) -> list[tuple[AuditItem, str, bool]]:
    """The audits a report shows of the releases ``entries``, each with the sentence that ties it to them and whether
    that sentence is a warning. Of the audits of one kind (analysis and mechanisms) those run at an epsilon one of the
    releases was made at are shown; when none was, the latest, with a warning that it ran at another epsilon."""
    kinds: dict[tuple[str, tuple[str, ...]], list[int]] = {}
    for i, a in enumerate(audits):
        kinds.setdefault((a.analysis, tuple(a.mechanisms)), []).append(i)
    shown: dict[int, tuple[str, bool]] = {}
    for (_, mechanisms), idx in kinds.items():
        matched = [i for i in idx if mechanisms and _audited_releases(audits[i], entries)[0]]
        for i in matched or (idx if not mechanisms else idx[-1:]):
            shown[i] = _tie(audits[i], entries)
    return [(audits[i], *shown[i]) for i in sorted(shown)]


def audit_sections(rep: Report, audits: Sequence[AuditItem], kind: str, entries: Sequence[LedgerEntry] = ()) -> None:
    """A section per audit chosen for the releases ``entries`` (:func:`chosen_audits`), confidential in a review."""
    for audit, sentence, warn in chosen_audits(audits, entries):
        rep.add_section(f"Privacy audit: {audit.title}", confidential=kind == "review")
        rep.add_text(sentence, "warning" if warn else "note")
        shown = {k: v for k, v in audit.summary.items() if not isinstance(v, (list, dict))}
        # one measure per row: a wide one-row table ran off the page's edge
        rep.add_table(pd.DataFrame({"Measure": [str(k).replace("_", " ") for k in shown], "Value": list(shown.values())}))
        for table in audit.tables:
            rep.add_table(table)
        for fig in audit.figures:
            rep.add_figure(fig)
        for text in audit.texts:
            rep.add_text(text)


def record_report(title: str, dataset: str, ledger: Ledger, records: Sequence[Record], audits: Sequence[AuditItem] = (),
                  kind: str = "release", cohort: Any = None, time_unit: str = "", cap_history: Sequence[Record] = (),
                  below: Sequence[str] = ()) -> Report:
    """The report of stored release records: a section per record from what it holds (:func:`release_sections`: each
    record's own time unit, else ``time_unit``), the audits tied to their epsilon (:func:`audit_sections`), the ledger
    table of these records with the whole data set's totals; for a review with ``cohort`` (the data as mapped now)
    the non-private comparisons, marked confidential.

    Parameters
    ----------
    title : str
        The report's title.
    dataset : str
        The data set's name.
    ledger : Ledger
        The ledger the records are in.
    records : sequence of Record
        The release records reported.
    audits : sequence of AuditItem, default ()
        Audits to show beside them.
    kind : {"release", "review"}, default "release"
        A release report holds published numbers only; a review adds confidential non-private comparisons.
    cohort : Cohort, optional
        The data as mapped now (a review's comparisons).
    time_unit : str, default ""
        The time unit of records that do not say theirs.
    cap_history : sequence of Record, default ()
        The data set's cap records (set, raise, lower), in order.
    below : sequence of str, default ()
        Sections a review adds after the records' own (``"audit"``, ``"comparison"``).

    Returns
    -------
    Report
        The report (:meth:`Report.to_html` writes it).
    """
    items = [record_item(r, time_unit_of(r.body) or time_unit) for r in records]
    rep = Report(title, dataset, ledger, kind, [i.entry for i in items])
    _board_section(rep, items, ledger, kind, chosen_audits(audits, [i.entry for i in items]), cap_history, below)
    release_sections(rep, items, kind, cohort, ledger, time_unit)
    audit_sections(rep, audits, kind, [i.entry for i in items])
    if not items and not audits:
        rep.add_section("Results")
        rep.add_text("No release was chosen for this report.")
    return rep


def _board_section(rep: Report, items: Sequence[ReleaseItem], ledger: Ledger, kind: str,
                   audits: Sequence[tuple[AuditItem, str, bool]], cap_history: Sequence[Record],
                   below: Sequence[str] = ()) -> None:
    """The report's first section, for the board (:func:`dpsurv_core.report.board.board_summary`)."""
    from dpsurv_core.report.board import TITLE, board_summary

    rep.add_section(TITLE)
    for what, value in board_summary(items, ledger, kind, audits, cap_history, below):
        if what == "table":
            rep.add_table(value, "Budget cap: every change, with its reason")
        else:
            rep.add_text(value, "warning" if what == "warning" else None)
