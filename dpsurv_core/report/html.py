"""Self-contained HTML report and the release bundle.

* :class:`Report` assembles sections (text, tables, plotly figures) into one HTML file with
  plotly's bundled JavaScript inlined, so it opens with no network. A *release* report may hold
  private outputs only: adding a non-private section raises. A *review* report may compare with
  non-private results and then says "CONFIDENTIAL" at the top, in every section, and on every
  printed page.
* :func:`ledger_report` builds the app's report from records of the persistent ledger: the chosen
  releases' stored ``outputs`` (the numbers published when they were released, never a new draw),
  the ledger table of the chosen records and the composed totals of the whole data set. The sections are made by
  :mod:`dpsurv_core.report.stored`, which the command line's ``report`` renders its release with too.
* :func:`export_bundle` (chosen ledger records) and :func:`release_bundle` (the command line's
  numbers) turn released numbers into CSV and JSON (private outputs only).

The released numbers as rows (:func:`output_records`, :func:`release_bundle`) are in
:mod:`dpsurv_core.report.release_records`, the tables read off a record's derived part (:func:`derived_tables`)
in :mod:`dpsurv_core.report.derived_tables`; this module re-exports them.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.offline

from dpsurv_core import __version__
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import RELEASE, Ledger, LedgerEntry, Record, as_run, entry_from_body, record_outputs
from dpsurv_core.report.comparisons import (  # noqa: F401 (re-exported: the review's comparisons were defined here)
    curve_comparison,
    parameter_comparison,
    test_comparison,
)
from dpsurv_core.report.derived_tables import (  # noqa: F401 (re-exported: the command line, stored and the tests)
    band_sentence,
    derived_tables,
    landmark_table,
    logrank_tables,
    median_table,
    records_table,
    rmst_table,
)
from dpsurv_core.report.figures import ledger_figure, outputs_figure
from dpsurv_core.report.release_records import (  # noqa: F401 (re-exported: the command line and the tests)
    COLUMNS,
    _check_private,
    _csv,
    _default,
    curve_records,
    output_records,
    release_bundle,
)
from dpsurv_core.report.text import timestamp

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24}
h1{font-size:1.6em} h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em;display:block;max-width:100%;overflow-x:auto}
td,th{overflow-wrap:anywhere} @media print{table{display:table;table-layout:fixed;width:100%}} th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f4f6} td:first-child,th:first-child{text-align:left}
.confidential{background:#b91c1c;color:#fff;font-weight:700;text-align:center;padding:.35em;letter-spacing:.08em}
.section-flag{color:#b91c1c;font-weight:700;font-size:.85em}
.meta{color:#555;font-size:.9em} .note{background:#f8fafc;border-left:4px solid #64748b;padding:.5em 1em}
.notdp{border-left-color:#b91c1c;color:#7f1d1d;background:#fef2f2}
.warning{background:#fffbeb;border-left:4px solid #d97706;padding:.5em 1em}
@media print{.confidential.page{position:fixed;top:0;left:0;right:0} body{margin-top:2.5em} h2{break-after:avoid}}
"""


@dataclass
class Section:
    title: str
    parts: list[str] = field(default_factory=list)
    confidential: bool = False
    tables: list[tuple[str | None, pd.DataFrame]] = field(default_factory=list)  # (caption, table) as added


class Report:
    """An HTML report: ``add_section``, then ``add_text`` / ``add_table`` / ``add_figure`` into it."""

    def __init__(self, title: str, dataset: str, ledger: Ledger, kind: str = "release",
                 entries: list[LedgerEntry] | None = None) -> None:
        """``ledger`` is the data set's whole ledger (its totals and cap are reported); ``entries`` are the releases
        the report's ledger table lists (default: every release of ``ledger``)."""
        if kind not in ("release", "review"):
            raise ParameterError("A report is either a 'release' (private outputs only) or a 'review' (confidential).")
        self.title, self.dataset, self.ledger, self.kind = title, dataset, ledger, kind
        self.entries = list(ledger.entries) if entries is None else list(entries)
        self.sections: list[Section] = []

    @property
    def confidential(self) -> bool:
        return self.kind == "review"

    def add_section(self, title: str, confidential: bool = False) -> Section:
        """A section; ``confidential`` marks one that shows non-private results."""
        if confidential and self.kind == "release":
            raise ParameterError("A release report holds private outputs only: put non-private comparisons in a review "
                                 "report, which is marked confidential.")
        sec = Section(title, [], confidential)
        self.sections.append(sec)
        return sec

    def _current(self) -> Section:
        if not self.sections:
            self.add_section("Results")
        return self.sections[-1]

    def add_text(self, text: str, css_class: str | None = None) -> None:
        cls = f' class="{css_class}"' if css_class else ""
        self._current().parts.append(f"<p{cls}>{html.escape(text)}</p>")

    def add_table(self, frame: pd.DataFrame, caption: str | None = None) -> None:
        self._current().tables.append((caption, frame.copy()))
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        table = frame.to_html(index=False, na_rep="—", float_format=lambda v: f"{v:.4g}", border=0)
        self._current().parts.append(table.replace(">", ">" + cap, 1) if cap else table)

    def private_tables(self) -> list[dict[str, Any]]:
        """The tables of the sections that are not confidential (numbers derived from the releases, such as medians,
        landmarks, RMST and log-rank tests: post-processing, no extra cost), as records for a bundle."""
        return [{"section": sec.title, "title": caption, "rows": _json_safe(frame.to_dict("records"))}
                for sec in self.sections if not sec.confidential for caption, frame in sec.tables]

    def add_disclosures(self, disclosures: list[Any]) -> None:
        """Every public value read off the data; the ones that make a release not DP in red."""
        for d in disclosures:
            d = d if isinstance(d, dict) else d.to_dict()
            if d.get("dp", True):
                self._current().parts.append(f"<p class='note'>Disclosure ({html.escape(d['parameter'])}): "
                                             f"{html.escape(d['message'])}</p>")
            else:
                self._current().parts.append(f"<p class='note notdp'><b>Not differentially private</b> "
                                             f"({html.escape(d['parameter'])}): {html.escape(d['message'])}</p>")

    def add_figure(self, fig: go.Figure) -> None:
        self._current().parts.append(fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))

    def _ledger_section(self) -> str:
        rows = [{"id": e.record_id or i + 1, "time": timestamp(e.time), "mechanism": e.mechanism, "analysis": e.analysis,
                 "data": e.dataset, "epsilon": "none (no formal guarantee)" if e.cost.epsilon is None else e.cost.epsilon,
                 "delta": e.cost.delta, "guarantee": as_run(e.cost, e.disclosures)["guarantee"],
                 "protects": as_run(e.cost, e.disclosures)["protects"], "neighbouring": e.cost.neighbouring,
                 "parameters": json.dumps({k: v for k, v in e.parameters.items()}, default=str),
                 "reproduce": e.command or "—"}
                for i, e in enumerate(self.entries)]
        parts = ["<h2>Privacy ledger</h2>"]
        totals = self.ledger.totals()
        n_all = len(self.ledger.entries)
        if not rows:
            parts.append("<p>No release is listed in this report.</p>")
        else:
            parts.append(pd.DataFrame(rows).to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}"))
        if len(rows) != n_all:
            parts.append(f"<p class='meta'>This report lists {len(rows)} of the data set's {n_all} release(s); the "
                         "totals below compose all of them.</p>")
        if n_all:
            tot = "; ".join(f"{unit}: epsilon {t['epsilon']:.4g}" + (f", delta {t['delta']:.3g}" if t["delta"] else "")
                            for unit, t in totals.items())
            cap = f" against a cap of {self.ledger.cap:g}" if self.ledger.cap else " (no cap set)"
            parts.append(f"<p><b>Total of every release of this data set (sequential composition; parallel over "
                         f"disjoint groups)</b>{cap}: {html.escape(tot)}.</p>")
            sdc = self.ledger.disclosure_control()
            if sdc:
                parts.append(f"<p class='note notdp'><b>{len(sdc)} release(s) used statistical disclosure control "
                             "(suppression, rounding, cell keys or step smoothing)</b>: they have no epsilon and no "
                             "formal guarantee, so they are not in the totals; a subject whose removal changes such a "
                             "table is revealed to anyone who knows the other records.</p>")
            reasons = self.ledger.void_reasons()
            if reasons:
                parts.append("<p class='note notdp'><b>The subject has no differential-privacy guarantee from this "
                             "data set's releases.</b> " + html.escape("; ".join(reasons)) + ".</p>")
        else:
            parts.append("<p>No release of this data set has been charged.</p>")
        if rows:
            parts.append(ledger_figure(self.ledger, self.entries).to_html(full_html=False, include_plotlyjs=False))
        return "\n".join(parts)

    def _methods_section(self) -> str:
        used = []
        for e in self.entries:
            if e.mechanism not in used:
                used.append(e.mechanism)
        items, cited = [], []
        for name in used:
            entry = catalogue.find(name)
            paper = entry.paper if entry is not None and entry.private else None
            text = entry.summary if entry is not None else ""
            ref = ""
            if paper:
                if paper not in cited:
                    cited.append(paper)
                ref = f" [{cited.index(paper) + 1}]"
            label = entry.name if entry is not None else name
            items.append(f"<li><b>{html.escape(label)}</b>: {html.escape(text)}{ref}</li>")
        refs = "".join(f"<li>{html.escape(p)}</li>" for p in cited)
        return ("<h2>Methods</h2><ul>" + "".join(items) + "</ul>"
                "<p class='note'>Neighbouring data sets differ by one subject (added or removed) unless stated; the "
                "privacy unit is the subject. Public parameters (time grid, horizon, group categories, covariate "
                "ranges) are declared, and values read off the data are listed as disclosures. Post-processing of "
                "released numbers (confidence intervals, tests, plots) costs no budget.</p>"
                + (f"<h3>References</h3><ol>{refs}</ol>" if refs else ""))

    def to_html(self) -> str:
        banner = '<div class="confidential page">CONFIDENTIAL: contains non-private results; do not release</div>' \
            if self.confidential else ""
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        body = [banner, f"<h1>{html.escape(self.title)}</h1>",
                f"<p class='meta'>Data: {html.escape(self.dataset)} · {'review report (confidential)' if self.confidential else 'release report (private outputs only)'}"
                f" · generated {when} by dpsurv {__version__}</p>"]
        for sec in self.sections:
            flag = "<span class='section-flag'>CONFIDENTIAL · </span>" if self.confidential else ""
            body.append(f"<h2>{flag}{html.escape(sec.title)}</h2>")
            body.extend(sec.parts)
        body.append(self._ledger_section())
        body.append(self._methods_section())
        if self.confidential:
            body.append('<div class="confidential">CONFIDENTIAL</div>')
        js = plotly.offline.get_plotlyjs()
        return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
                f"<title>{html.escape(self.title)}</title><style>{CSS}</style>"
                f"<script type='text/javascript'>{js}</script></head><body>" + "\n".join(body) + "</body></html>")


@dataclass
class ReleaseItem:
    """One release in a report: its ledger entry, released numbers (long format), figure and stored outputs."""

    title: str
    entry: Any
    records: list[dict[str, Any]] = field(default_factory=list)
    figure: go.Figure | None = None
    result: Any = None
    disclosures: list[Any] = field(default_factory=list)
    outputs: Any = None
    body: dict[str, Any] | None = None  # the stored record's body (released, public inputs, derived), when from one


@dataclass
class AuditItem:
    """A privacy-audit result to file with the report: summary numbers and figures."""

    title: str
    summary: dict[str, Any]
    figures: list[go.Figure] = field(default_factory=list)
    tables: list[pd.DataFrame] = field(default_factory=list)  # e.g. the board's comparison of methods
    texts: list[str] = field(default_factory=list)  # plain paragraphs shown under the figures
    # what was audited, to tie the audit to the releases of a report: the mechanisms (catalogue ids) run at
    # ``epsilon`` (None: disclosure control, or not said), and the kind of audit (``km``, ``logrank``, the board ...)
    mechanisms: tuple[str, ...] = ()
    epsilon: float | None = None
    analysis: str = ""


def record_item(record: Record, time_unit: str = "") -> ReleaseItem:
    """A release record of the ledger database as a report item, built from the outputs it stored."""
    if record.kind != RELEASE:
        raise ParameterError(f"Record {record.id} is a {record.kind} record, not a release.")
    entry = entry_from_body(record.body, record.id, record.time)
    outputs = record_outputs(record.body)
    rows = output_records(outputs, entry.analysis, entry.mechanism, record.id)
    return ReleaseItem(f"Release {record.id}: {entry.analysis} ({entry.mechanism})", entry, rows,
                       outputs_figure(outputs, time_unit), None, list(entry.disclosures), outputs, record.body)


def ledger_report(title: str, dataset: str, ledger: Ledger, records: list[Record], audits: Sequence[AuditItem] = (),
                  kind: str = "release", cohort: Any = None, time_unit: str = "", cap_history: Sequence[Record] = ()
                  ) -> str:
    """The app's report from records of the ledger database (:func:`dpsurv_core.report.stored.record_report`, the
    command line's ``report`` renders its release the same way).

    Parameters
    ----------
    title : str
        The report's title.
    dataset : str
        The data set's name.
    ledger : Ledger
        The ledger the records are in.
    records : list of Record
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

    Returns
    -------
    str
        The report as a self-contained HTML page.
    """
    from dpsurv_core.report.stored import record_report

    return record_report(title, dataset, ledger, records, audits, kind, cohort, time_unit, cap_history).to_html()


def session_report(title: str, dataset: str, ledger: Ledger, items: list[ReleaseItem], audits: Sequence[AuditItem] = (),
                   kind: str = "release", cohort: Any = None, public: Any = None) -> str:
    """A report of release items held in memory (every release of ``ledger`` in its ledger table); items that carry
    stored ``outputs`` get the review's non-private comparisons.

    Parameters
    ----------
    title : str
        The report's title.
    dataset : str
        The data set's name.
    ledger : Ledger
        The ledger the records are in.
    items : list of ReleaseItem
        The releases reported.
    audits : sequence of AuditItem, default ()
        Audits to show beside them.
    kind : {"release", "review"}, default "release"
        A release report holds published numbers only; a review adds confidential non-private comparisons.
    cohort : Cohort, optional
        The data (a review's comparisons).
    public : PublicParameters, optional
        Its declared parameters.

    Returns
    -------
    str
        The report as a self-contained HTML page.
    """
    from dpsurv_core.report.stored import audit_sections, release_sections

    rep = Report(title, dataset, ledger, kind)
    release_sections(rep, items, kind, cohort, ledger)
    audit_sections(rep, audits, kind, [i.entry for i in items])
    if not items and not audits:
        rep.add_section("Results")
        rep.add_text("No release has been made yet.")
    return rep.to_html()


def export_bundle(records: list[Record], ledger: Ledger, dataset: str = "", fingerprint: str = "",
                  chain: dict[str, Any] | None = None, derived: list[dict[str, Any]] | None = None,
                  report_warnings: list[str] | None = None) -> tuple[str, str]:
    """CSV and JSON of the chosen release records' stored outputs (private outputs only).

    The CSV has one row per released number; the JSON holds each chosen record (id, time, hash, mechanism, cost,
    parameters, disclosures, reproduce command, outputs), those rows, the composed totals of the whole data set, and
    ``derived``: the tables a report computed from the releases (:meth:`Report.private_tables`), and
    ``report_warnings``: its "Read with care" sentences; by default the tables and warnings the records keep
    beside their numbers (:func:`derived_tables`: tests, intervals), as a report built from them shows.

    Parameters
    ----------
    records : list of Record
        The chosen release records.
    ledger : Ledger
        The ledger they are in.
    dataset, fingerprint : str
        The data set's name and fingerprint.
    chain : dict, optional
        The hash chain's verification.
    derived : list of dict, optional
        The tables a report computed from the releases.
    report_warnings : list of str, optional
        The report's "Read with care" sentences.

    Returns
    -------
    tuple of str
        ``(csv, json)`` texts.
    """
    rows: list[dict[str, Any]] = []
    releases = []
    kept_tables: list[dict[str, Any]] = []
    kept_warnings: list[str] = []
    for r in records:
        item = record_item(r)
        rows += item.records
        kept_tables += [{"section": item.title, "title": caption, "rows": _json_safe(frame.to_dict("records"))}
                        for frame, caption in derived_tables(item.outputs)]
        out = item.outputs if isinstance(item.outputs, dict) else {}
        kept_warnings += [w for w in [*(out.get("warnings") or []), *(out.get("test_warnings") or [])]
                          if w not in kept_warnings]
        body = {k: v for k, v in r.body.items() if k not in ("time", "record_id")}
        releases.append({"id": r.id, "time": r.time, "hash": r.hash, **body})
    _check_private(rows)
    whole = ledger.to_dict()
    payload = {"dataset": dataset, "fingerprint": fingerprint, "exported": datetime.now(UTC).isoformat(timespec="seconds"),
               "records": [r.id for r in records], "releases": releases, "released": rows,
               "data_set_ledger": {"cap": whole["cap"], "totals": whole["totals"],
                                   "subject_guarantee": whole["subject_guarantee"], "releases": len(ledger.entries)},
               "chain": chain or {}}
    payload["derived_tables"] = kept_tables if derived is None else derived
    payload["report_warnings"] = kept_warnings if report_warnings is None else report_warnings
    return _csv(rows), json.dumps(_json_safe(payload), indent=2, default=_default, allow_nan=False)


def _json_safe(obj: Any) -> Any:
    """NaN and infinities (a median not reached, a count the mechanism does not release) as null: strict JSON."""
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj
