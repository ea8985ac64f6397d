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
from dpsurv_core.privacy.ledger import (
    RELEASE,
    Ledger,
    LedgerEntry,
    Record,
    as_run,
    entry_from_body,
    record_outputs,
)
from dpsurv_core.report.comparisons import (  # noqa: F401 (re-exported: the review's comparisons were defined here)
    curve_comparison,
    parameter_comparison,
    test_comparison,
)
from dpsurv_core.report.figures import ledger_figure, outputs_figure
from dpsurv_core.report.files import safe_csv
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


COLUMNS = ["record", "analysis", "mechanism", "trial", "group", "quantity", "time", "value"]


def _check_private(records: list[dict[str, Any]]) -> None:
    for r in records:
        if r.get("mechanism") == "nonprivate":
            raise ParameterError("The release bundle holds private outputs only: leave non-private results out.")


def _csv(records: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(records, columns=COLUMNS)
    frame["record"] = frame["record"].astype("Int64")
    return safe_csv(frame)


def release_bundle(records: list[dict[str, Any]], ledger: Ledger, disclosures: Sequence[Any] = ()) -> tuple[str, str]:
    """CSV and JSON of released numbers. Each record: (record,) analysis, mechanism, trial, group, quantity, time,
    value. The JSON also holds the ledger (each entry with its disclosures) and the given disclosures."""
    _check_private(records)
    payload = {"ledger": json.loads(ledger.to_json()), "released": records,
               "disclosures": [d if isinstance(d, dict) else d.to_dict() for d in disclosures]}
    return _csv(records), json.dumps(payload, indent=2, default=_default)


def curve_records(release: Any, analysis: str = "survival curves") -> list[dict[str, Any]]:
    """Long-format records of a :class:`~dpsurv_core.curves.result.CurveResult` (first trial)."""
    cur = release.curves
    out = []
    fields = [("survival", cur.survival), ("lower", cur.lower), ("upper", cur.upper)]
    if release.counts is not None:
        fields += [("at_risk", cur.at_risk), ("events", cur.events)]
    for quantity, arr in fields:
        a = arr[0]
        for gi, g in enumerate(cur.groups):
            for t, v in zip(cur.time, a[gi]):
                if np.isfinite(v):
                    out.append({"analysis": analysis, "mechanism": release.mechanism, "trial": 0, "group": g,
                                "quantity": quantity, "time": float(t), "value": float(v)})
    return out


def _parameter_records(analysis: str, mechanism: str, values: dict[str, float]) -> list[dict[str, Any]]:
    """Long-format records of released parameters (Weibull shape and scale, regression coefficients)."""
    return [{"analysis": analysis, "mechanism": mechanism, "trial": 0, "group": None, "quantity": name, "time": None,
             "value": float(v)} for name, v in values.items()]


# ------------------------------------------------------------------------------- released numbers of a record

_CURVE_KEYS = ("groups", "time")
_PUBLIC_KEYS = ("edges", "group_labels")  # the public grid: a parameter of the release, not a released number
# how the bands were made and the warnings: shown beside the numbers, not numbers themselves
_NOTE_KEYS = ("conf_type", "interval_includes_noise", "interval_method", "warnings", "event_free")
# computed from the released numbers and kept beside them (tests, noise-aware intervals): shown as their own tables
_DERIVED_KEYS = ("tests", "overall", "test_method", "debiased_tests", "debiased_overall", "debiased_test_method",
                 "test_warnings", "intervals", "medians", "landmarks", "rmst", "curve")
# kept as tables in every record that has them (a record before tests were kept listed its tests among its numbers)
_ALWAYS_DERIVED = {"intervals", "medians", "landmarks", "rmst", "curve"}


def _number(v: Any) -> float | None:
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(float(v)):
        return float(v)
    return None


def output_records(outputs: Any, analysis: str = "", mechanism: str = "", record: int | None = None
                   ) -> list[dict[str, Any]]:
    """The numbers a ledger record's ``outputs`` hold, one long-format row per number (the CSV's rows).

    Curves (``{"groups", "time", "survival", "at_risk", ...}``, arrays of groups x time points) give one row per
    group, quantity and time; a list of per-trial dicts (Weibull: shape, scale) one row per key; anything else one
    row per number, named by its path (``coefficients.age``). Missing (NaN) values are left out."""
    rows: list[dict[str, Any]] = []
    # derived tables kept beside the numbers; a record written before they were kept (no test_method) listed its
    # tests among its numbers, and still does
    derived = set(_DERIVED_KEYS) if isinstance(outputs, dict) and "test_method" in outputs else _ALWAYS_DERIVED

    def add(quantity: str, value: Any, group: Any = None, time: Any = None, trial: int = 0) -> None:
        v = _number(value)
        if v is not None:
            rows.append({"record": record, "analysis": analysis, "mechanism": mechanism, "trial": trial,
                         "group": None if group is None else str(group), "quantity": quantity,
                         "time": None if time is None else float(time), "value": v})

    def curves(obj: dict[str, Any], trial: int) -> None:
        # groups by their value labels where the record keeps them (the names the warnings beside them use)
        groups, time = list(obj.get("group_labels") or obj["groups"]), list(obj["time"])
        for key, value in obj.items():
            if key in _CURVE_KEYS or key in _PUBLIC_KEYS or key in _NOTE_KEYS or key in derived:
                continue
            if isinstance(value, list) and len(value) == len(groups) and all(isinstance(r, list) for r in value):
                for g, row in zip(groups, value):
                    # a row per group: numbers on the time points, or (events by type) one such list per type
                    series = [(key, row)] if not any(isinstance(v, list) for v in row) else \
                        [(key if len(row) == 1 else f"{key}[{k}]", sub) for k, sub in enumerate(row)]
                    for quantity, values in series:
                        points = time if len(values) == len(time) else [None] * len(values)
                        for t, v in zip(points, values):
                            add(quantity, v, g, t, trial)
            elif isinstance(value, list) and len(value) == len(groups) and all(_number(v) is not None or v is None
                                                                                  for v in value):
                for g, v in zip(groups, value):  # one number per group (a median, a count; at risk: at time 0)
                    add(key, v, g, 0.0 if key == "at_risk" else None, trial)
            else:
                walk(value, key, trial)

    def walk(obj: Any, path: str, trial: int) -> None:
        if isinstance(obj, dict):
            if all(k in obj for k in (*_CURVE_KEYS, "survival")):
                curves(obj, trial)
                return
            for k, v in obj.items():
                if k == "trial" or (not path and (k in derived or k in _NOTE_KEYS)):
                    continue
                # a Weibull record's per-trial estimates keep their plain names (shape, scale)
                walk(v, "" if (not path and k == "estimates") else f"{path}.{k}" if path else str(k), trial)
        elif isinstance(obj, (list, tuple)):
            several = len(obj) > 1 and all(isinstance(o, dict) for o in obj)
            for i, o in enumerate(obj):
                walk(o, path, i if several else trial)
        else:
            add(path or "value", obj, trial=trial)

    walk(outputs, "", 0)
    return rows


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


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


def records_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Released numbers as a wide table: one row per (group, time), one column per quantity."""
    if not records:
        return pd.DataFrame()
    frame = pd.DataFrame(records)
    idx = [c for c in ("trial", "group", "time")
           if c in frame and frame[c].notna().any() and (c != "trial" or frame[c].nunique() > 1)]
    if not idx:
        return frame[["quantity", "value"]]
    frame[idx] = frame[idx].astype(object).where(frame[idx].notna(), "—")
    wide = frame.pivot_table(index=idx, columns="quantity", values="value", aggfunc="first", sort=False).reset_index()
    wide.columns.name = None
    return wide


def median_table(entries: list[dict[str, Any]], names: dict[str, str], unit: str = "") -> pd.DataFrame:
    """Median and quartiles (first trial) with the limits ``km`` prints (the band's crossings; on a public grid read
    linearly between grid points); "not reached" where R gives NA."""
    fmt = lambda v: "not reached" if v is None or not np.isfinite(v) else f"{v:.4g}"  # noqa: E731
    unit = f" ({unit})" if unit else ""
    rows = []
    for e in entries:
        if e.get("trial", 0) != 0:
            continue
        q = {round(float(x["probability"]), 2): x for x in e.get("quantiles") or []}
        row = {"group": names.get(str(e["group"]), str(e["group"])), f"median{unit}": fmt(e["median"]),
               "95% CI lower": fmt(e["median_lower"]), "95% CI upper": fmt(e["median_upper"])}
        for p, name in ((0.25, "first quartile"), (0.75, "third quartile")):
            if p in q:  # one column whether or not a group's limits exist ("no interval" where R gives NA)
                limits = (f" ({fmt(q[p].get('lower'))} to {fmt(q[p].get('upper'))})"
                          if q[p].get("lower") is not None or q[p].get("upper") is not None else " (no interval)")
                row[f"{name}{unit} (95% CI)"] = fmt(q[p].get("time")) + limits
        rows.append(row)
    return pd.DataFrame(rows)


def landmark_table(entries: list[dict[str, Any]], names: dict[str, str]) -> pd.DataFrame:
    """Landmark survival (first trial) as ``km --landmarks`` gives it: the time asked, the time used, the 95% limits
    (NaN where R gives NA)."""
    return pd.DataFrame([{"group": names.get(str(e["group"]), str(e["group"])), "time asked": e["time_requested"],
                          "time used": e["time_used"], "survival": e["survival"], "95% CI lower": _nan(e["lower"]),
                          "95% CI upper": _nan(e["upper"])} for e in entries if e.get("trial", 0) == 0])


def rmst_table(entries: list[dict[str, Any]], names: dict[str, str], unit: str = "") -> pd.DataFrame:
    """Restricted mean survival time (first trial) as ``km --rmst`` gives it, with its 95% limits."""
    up_to = f"up to ({unit})" if unit else "up to"
    return pd.DataFrame([{"group": names.get(str(e["group"]), str(e["group"])), up_to: e["time_used"],
                          "RMST": e["rmst"], "95% CI lower": _nan(e["lower"]), "95% CI upper": _nan(e["upper"])}
                         for e in entries if e.get("trial", 0) == 0])


def _nan(v: float | None) -> float:
    return math.nan if v is None else v


def _curve_summary_tables(out: dict[str, Any], time_unit: str = "") -> list[tuple[pd.DataFrame, str]]:
    """A curve record's medians and quartiles, landmark survival and RMST with their intervals (first trial), groups
    by their labels, as ``km`` printed them."""
    labels = dict(zip(map(str, out.get("groups") or []), out.get("group_labels") or out.get("groups") or []))
    first = lambda key: [e for e in out.get(key) or [] if isinstance(e, dict) and e.get("trial", 0) == 0]  # noqa: E731
    which = "de-biased curves, " if "debiased_survival" in out else ""
    noise = "carrying the noise" if out.get("interval_includes_noise") else "sampling error only"
    tables: list[tuple[pd.DataFrame, str]] = []
    free = out.get("event_free")  # competing events: time to the first event of any type
    survival = "event-free survival (time to the first event of any type)" if free else "survival"
    if medians := first("medians"):
        tables.append((median_table(medians, labels, time_unit), f"Median {survival} and quartiles ({which}95% intervals "
                                                      f"{noise})"))
    if landmarks := first("landmarks"):
        tables.append((landmark_table(landmarks, labels), f"{survival[0].upper() + survival[1:]} at the landmark "
                                                          f"times ({which}95% intervals {noise})"))
    if rmst := first("rmst"):
        tables.append((rmst_table(rmst, labels, time_unit), f"Restricted mean {'event-free ' if free else ''}survival time (95% "
                                                 f"intervals {noise})"))
    return tables


def _logrank_tests_table(tests: list[dict[str, Any]], overall: dict[str, Any] | None, method: str) -> pd.DataFrame:
    """Pairwise tests and (with more than two groups) the overall test as ``logrank`` gives them: the statistic, the
    value it must exceed at 5% and the p-value. The chi-square tail of a noisy statistic is no p-value and is left out;
    a noise-adjusted statistic is named so, as it has a scale of its own."""
    chi = "chi-square (noise-adjusted)" if "noise-adjusted" in method else "chi-square"
    p = "p (calibrated)" if "Monte Carlo" in method else "p"
    row = lambda what, t: {"comparison": what, chi: t.get("statistic"),  # noqa: E731
                           "needed at 5%": t.get("critical_value_95"), "df": t.get("dof"), p: t.get("p_value")}
    label = lambda t, side: t.get(f"group_{side}_label") or t.get(f"group_{side}")  # noqa: E731
    rows = [row(f"{label(t, 'a')} vs {label(t, 'b')}", t) for t in tests]
    if overall and len(tests) > 1:
        rows.append(row("all groups", overall))
    return pd.DataFrame(rows)


def logrank_tables(out: dict[str, Any]) -> list[tuple[pd.DataFrame, str]]:
    """The log-rank tables of a record's outputs (``logrank``'s fields: ``tests``, ``overall``, ``test_method``, and
    rrr's ``debiased_`` ones), each captioned with its method."""
    tables: list[tuple[pd.DataFrame, str]] = []
    for prefix, what in (("", "Log-rank tests"), ("debiased_", "Log-rank tests on the de-biased counts")):
        tests = out.get(prefix + "tests")
        if not (out.get(prefix + "test_method") and tests):
            continue
        method = str(out[prefix + "test_method"])
        tables.append((_logrank_tests_table(tests, out.get(prefix + "overall"), method), f"{what} ({method})"))
    return tables


def derived_tables(outputs: Any, time_unit: str = "") -> list[tuple[pd.DataFrame, str]]:
    """The tables a record keeps beside its released numbers, computed from them when it was released: the log-rank
    tests calibrated for the noise, a Weibull release's noise-aware intervals, a regression release's coefficients
    with their ratios, intervals and calibrated p-values."""
    out = outputs if isinstance(outputs, dict) else {}
    tables = logrank_tables(out)
    tables += _curve_summary_tables(out, time_unit)
    intervals = out.get("intervals")
    if isinstance(intervals, list) and intervals and isinstance(intervals[0], dict):
        first = intervals[0]
        if "shape" in first and isinstance(first["shape"], dict):  # Weibull
            rows = [{"parameter": f"scale ({time_unit})" if k == "scale" and time_unit else k,
                     "released": first[k]["estimate"], "95% lower": first[k]["lower"], "95% upper": first[k]["upper"]}
                    for k in ("shape", "scale")]
            tables.append((pd.DataFrame(rows), "Weibull parameters with 95% intervals that carry the noise"))
        elif "covariate" in first:  # regression, one row per covariate, in the Regression page's words and numbers
            from dpsurv_core.regression.inference import report_table

            tables.append((report_table(out), "Coefficients with 95% intervals that carry the noise"))
    return tables


def band_sentence(conf_type: str, includes_noise: bool, method: str) -> str:
    """What the bands drawn beside a curve are: R's type and whether they carry the noise, and how they were made."""
    if method.startswith("no interval"):
        return f"No band: {method.removeprefix('no interval: ')}."
    if "does not apply" in method:  # time-indexed: inverted from its noise law, no variance, no conf.type
        return f"95% bands {method.removeprefix('pointwise 95% band ')}."
    noise = ", including the privacy noise" if includes_noise else ", not including any noise"
    return f"95% bands: R's {conf_type} type{noise}. Method: {method}."


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
