"""Self-contained HTML report and the release bundle (issue 7).

* :class:`Report` assembles sections (text, tables, plotly figures) into one HTML file with
  plotly's bundled JavaScript inlined, so it opens with no network. A *release* report may hold
  private outputs only: adding a non-private section raises. A *review* report may compare with
  non-private results and then says "CONFIDENTIAL" at the top, in every section, and on every
  printed page.
* :func:`release_bundle` turns released numbers into CSV and JSON (private outputs only).
"""

from __future__ import annotations

import html
import io
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.offline

from dpsurv_core import __version__
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.report.figures import ledger_figure

PAPERS = {
    "000": "T. T. Nguyen and S. C. Hui. Privacy-Preserving Mechanisms for Parametric Survival Analysis with Weibull "
           "Distribution.",
    "001": "Differentially Private Regression for Discrete-Time Survival Analysis.",
    "002": "F. L. De Faveri, G. Faggioli, N. Ferro and R. Spizzo. \"Dead or Alive, we can deny it\": A Differentially "
           "Private Approach to Survival Analysis. SEBD 2024.",
    "003": "L. Gondara and K. Wang. Differentially Private Survival Function Estimation.",
    "004": "A Differentially Private Kaplan-Meier Estimator for Privacy-Preserving Survival Analysis. arXiv:2412.05164, "
           "2024.",
}

METHOD_NOTES = {
    "nonprivate": (None, "Exact estimates (equal to lifelines / R survival). Not differentially private: for the data "
                         "holder's eyes only."),
    "laplace-counts": ("003", "Per-group counts of subjects, events and censorings on public time bins, each with "
                              "(discrete) Laplace noise of scale 2m/epsilon (L1 sensitivity 2 per subject, m rows per "
                              "subject); Kaplan-Meier, Nelson-Aalen, cumulative incidence, medians and log-rank tests "
                              "are computed from the noisy counts at no extra cost."),
    "time-indexed": ("004", "Laplace noise on the survival curve at each public checkpoint with scale "
                            "1/(e(1 + alpha i)), clipping, a rolling mean and a running minimum. The ledger charges the "
                            "true total e n (1 + alpha (n+1)/2), not the per-step e the paper's plots are labelled by."),
    "rrr": ("002", "Randomized response on the group label: each subject keeps its group with probability p = "
                   "(e^eps - 1)/(e^eps - 1 + k). It protects the group label only; times and events are published as "
                   "they are. The seed slides' epsilon formula understates the loss; dpsurv uses "
                   "ln((kp + 1 - p)/(1 - p))."),
    "adaptive-km": ("003", "dpsurv's own design: bins and counts chosen and released with shares of the budget that "
                           "add up to epsilon (see the mechanism's documentation), then Kaplan-Meier from the noisy "
                           "counts with free post-processing."),
    "lsp-tll": ("000", "Shape by the Local Sensitivity Pyramid (exponential mechanism over nested rungs, eps/2), "
                       "scale by Truncated Laplace on the likelihood terms (eps/2)."),
    "laplace": ("000", "Baseline: Laplace noise of scale gamma/(eps/2) on each maximum-likelihood parameter."),
    "saa": ("000", "Baseline: sample-and-aggregate over blocks of about 500 records, clipped, averaged, Laplace noise."),
    "output": ("001", "Output perturbation: the regularised discrete-time logistic fit plus noise with density "
                      "proportional to exp(-eps ||b|| / sensitivity)."),
    "objective": ("001", "Objective perturbation: a random linear term added to the regularised objective before "
                         "minimisation."),
    "psgld": ("001", "Posterior sampling with preconditioned stochastic-gradient Langevin dynamics: approximate DP "
                     "(MCMC), exact only if the sampler had converged."),
}

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#1b1f24}
h1{font-size:1.6em} h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em} th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th{background:#f3f4f6} td:first-child,th:first-child{text-align:left}
.confidential{background:#b91c1c;color:#fff;font-weight:700;text-align:center;padding:.35em;letter-spacing:.08em}
.section-flag{color:#b91c1c;font-weight:700;font-size:.85em}
.meta{color:#555;font-size:.9em} .note{background:#f8fafc;border-left:4px solid #64748b;padding:.5em 1em}
.notdp{border-left-color:#b91c1c;color:#7f1d1d;background:#fef2f2}
@media print{.confidential.page{position:fixed;top:0;left:0;right:0} body{margin-top:2.5em} h2{break-after:avoid}}
"""


@dataclass
class Section:
    title: str
    parts: list[str] = field(default_factory=list)
    confidential: bool = False


class Report:
    """An HTML report: ``add_section``, then ``add_text`` / ``add_table`` / ``add_figure`` into it."""

    def __init__(self, title: str, dataset: str, ledger: Ledger, kind: str = "release") -> None:
        if kind not in ("release", "review"):
            raise ParameterError("A report is either a 'release' (private outputs only) or a 'review' (confidential).")
        self.title, self.dataset, self.ledger, self.kind = title, dataset, ledger, kind
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
        cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
        table = frame.to_html(index=False, na_rep="—", float_format=lambda v: f"{v:.4g}", border=0)
        self._current().parts.append(table.replace(">", ">" + cap, 1) if cap else table)

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
        rows = [{"#": i + 1, "mechanism": e.mechanism, "analysis": e.analysis, "data": e.dataset,
                 "epsilon": e.cost.epsilon, "delta": e.cost.delta, "guarantee": e.cost.guarantee,
                 "protects": e.cost.protects, "neighbouring": e.cost.neighbouring,
                 "parameters": json.dumps({k: v for k, v in e.parameters.items()}, default=str), "time": e.time}
                for i, e in enumerate(self.ledger.entries)]
        parts = ["<h2>Privacy ledger</h2>"]
        totals = self.ledger.totals()
        if not rows:
            parts.append("<p>No release has been charged.</p>")
        else:
            parts.append(pd.DataFrame(rows).to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}"))
            tot = "; ".join(f"{unit}: epsilon {t['epsilon']:.4g}" + (f", delta {t['delta']:.3g}" if t["delta"] else "")
                            for unit, t in totals.items())
            cap = f" against a cap of {self.ledger.cap:g}" if self.ledger.cap else ""
            parts.append(f"<p><b>Total (sequential composition; parallel over disjoint groups)</b>{cap}: "
                         f"{html.escape(tot)}.</p>")
            reasons = self.ledger.void_reasons()
            if reasons:
                parts.append("<p class='note notdp'><b>The subject has no differential-privacy guarantee from this "
                             "set of releases.</b> " + html.escape("; ".join(reasons)) + ".</p>")
            parts.append(ledger_figure(self.ledger).to_html(full_html=False, include_plotlyjs=False))
        return "\n".join(parts)

    def _methods_section(self) -> str:
        used = []
        for e in self.ledger.entries:
            if e.mechanism not in used:
                used.append(e.mechanism)
        items, cited = [], []
        for name in used:
            paper, text = METHOD_NOTES.get(name, (None, ""))
            ref = ""
            if paper:
                if paper not in cited:
                    cited.append(paper)
                ref = f" [{cited.index(paper) + 1}]"
            items.append(f"<li><b>{html.escape(name)}</b>: {html.escape(text)}{ref}</li>")
        refs = "".join(f"<li>{html.escape(PAPERS[p])}</li>" for p in cited)
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


def release_bundle(records: list[dict[str, Any]], ledger: Ledger, disclosures: list[Any] = ()) -> tuple[str, str]:
    """CSV and JSON of released numbers. Each record: analysis, mechanism, trial, group, quantity, time, value.
    The JSON also holds the ledger (each entry with its disclosures) and the given disclosures."""
    for r in records:
        if r.get("mechanism") == "nonprivate":
            raise ParameterError("The release bundle holds private outputs only: leave non-private results out.")
    frame = pd.DataFrame(records, columns=["analysis", "mechanism", "trial", "group", "quantity", "time", "value"])
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    payload = {"ledger": json.loads(ledger.to_json()), "released": records,
               "disclosures": [d if isinstance(d, dict) else d.to_dict() for d in disclosures]}
    return buf.getvalue(), json.dumps(payload, indent=2, default=_default)


def curve_records(release: Any, analysis: str = "survival curves") -> list[dict[str, Any]]:
    """Long-format records of a :class:`~dpsurv_core.curves.release.CurveRelease` (first trial)."""
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


def parameter_records(analysis: str, mechanism: str, values: dict[str, float]) -> list[dict[str, Any]]:
    """Long-format records of released parameters (Weibull shape and scale, regression coefficients)."""
    return [{"analysis": analysis, "mechanism": mechanism, "trial": 0, "group": None, "quantity": name, "time": None,
             "value": float(v)} for name, v in values.items()]


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


@dataclass
class ReleaseItem:
    """One charged release of a session: its ledger entry, released numbers, figure and result object."""

    title: str
    entry: Any
    records: list[dict[str, Any]] = field(default_factory=list)
    figure: go.Figure | None = None
    result: Any = None
    disclosures: list[Any] = field(default_factory=list)


@dataclass
class AuditItem:
    """A privacy-audit result to file with the report: summary numbers and figures."""

    title: str
    summary: dict[str, Any]
    figures: list[go.Figure] = field(default_factory=list)


def records_table(records: list[dict[str, Any]]) -> pd.DataFrame:
    """Released numbers as a wide table: one row per (group, time), one column per quantity."""
    if not records:
        return pd.DataFrame()
    frame = pd.DataFrame(records)
    idx = [c for c in ("group", "time") if c in frame and frame[c].notna().any()]
    if not idx:
        return frame[["quantity", "value"]]
    wide = frame.pivot_table(index=idx, columns="quantity", values="value", aggfunc="first").reset_index()
    wide.columns.name = None
    return wide


def curve_comparison(item: ReleaseItem, cohort: Any, public: Any) -> tuple[go.Figure, pd.DataFrame] | None:
    """For a curve release: private vs non-private figure and error table (for a confidential review)."""
    from dataclasses import replace

    from dpsurv_core.curves.release import CurveRelease, NonPrivate, rmse, sup_norm

    rel = item.result
    if not isinstance(rel, CurveRelease) or cohort is None:
        return None
    if tuple(rel.curves.groups) == ("all",) and cohort.group is not None:
        cohort = replace(cohort, group=None)  # the release pooled the groups: compare with the pooled curve
    exact = NonPrivate().release(cohort, public)
    if exact.curves.survival.shape[1:] != rel.curves.survival.shape[1:]:
        return None
    from dpsurv_core.report.figures import curves_figure

    fig = curves_figure({"private": rel.curves, "non-private": exact.curves}, cohort.time_unit)
    table = pd.DataFrame({"group": list(rel.curves.groups), "RMSE": rmse(rel.curves.survival[0], exact.curves.survival[0]),
                          "sup-norm": sup_norm(rel.curves.survival[0], exact.curves.survival[0])})
    return fig, table


def parameter_comparison(item: ReleaseItem, cohort: Any) -> pd.DataFrame | None:
    """For a Weibull or regression release: private values next to the non-private fit (confidential review)."""
    res = item.result
    if cohort is None or res is None:
        return None
    if hasattr(res, "shape") and hasattr(res, "scale_normalised") and hasattr(res, "horizon"):
        from dpsurv_core.weibull.mechanisms import NonPrivateMLE

        mle = NonPrivateMLE(res.horizon, rows_per_subject=cohort.rows_per_subject)
        fit = mle.release_many(mle.prepare(cohort), None, 1)
        return pd.DataFrame({"parameter": ["shape", "scale"], "private": [float(res.shape[0]), float(res.scale[0])],
                             "non-private (MLE)": [float(fit.shape[0]), float(fit.scale[0])]})
    if hasattr(res, "pp") and hasattr(res, "coefficients"):
        from dpsurv_core.regression.model import fit_nonprivate

        exact = fit_nonprivate(res.pp).coefficients
        private = res.coefficients[0]
        return pd.DataFrame({"coefficient": list(private), "private": list(private.values()),
                             "non-private": [exact.get(k, float("nan")) for k in private]})
    return None


def session_report(title: str, dataset: str, ledger: Ledger, items: list[ReleaseItem], audits: list[AuditItem] = (),
                   kind: str = "release", cohort: Any = None, public: Any = None) -> str:
    """The app's report: every release of the session (private outputs), audits, and for a review the
    non-private comparisons, marked confidential."""
    rep = Report(title, dataset, ledger, kind)
    for item in items:
        rep.add_section(item.title)
        cost = item.entry.cost
        rep.add_text(f"Released with {item.entry.mechanism}: {cost.sentence()}.")
        rep.add_disclosures(item.disclosures or item.entry.disclosures)
        if item.figure is not None:
            rep.add_figure(item.figure)
        table = records_table(item.records)
        if not table.empty:
            rep.add_table(table, "Released numbers")
        if kind == "review" and cohort is not None and item.entry.dataset == getattr(cohort, "name", None):
            comp = curve_comparison(item, cohort, public)
            if comp is not None:
                rep.add_section(f"{item.title}: comparison with the non-private analysis", confidential=True)
                rep.add_figure(comp[0])
                rep.add_table(comp[1], "Error of the private curve on the public grid")
            table = parameter_comparison(item, cohort) if comp is None else None
            if table is not None:
                rep.add_section(f"{item.title}: comparison with the non-private fit", confidential=True)
                rep.add_table(table)
    for audit in audits:
        rep.add_section(f"Privacy audit: {audit.title}", confidential=kind == "review")
        rep.add_table(pd.DataFrame([{k: v for k, v in audit.summary.items() if not isinstance(v, (list, dict))}]))
        for fig in audit.figures:
            rep.add_figure(fig)
    if not items and not audits:
        rep.add_section("Results")
        rep.add_text("No release has been made in this session yet.")
    return rep.to_html()
