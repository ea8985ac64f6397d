"""How an audit is shown: plotly figures (ROC, empirical against charged epsilon, influential points),
the summary table, and the confidential "Privacy audit" section of an HTML review report.

The ROC figure draws the region an eps-DP release allows: TPR <= min(e^eps FPR, 1 - e^-eps (1 - FPR))
(Kairouz et al. 2015).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dpsurv_core.audit.attack import advantage_bound
from dpsurv_core.audit.record import Publisher
from dpsurv_core.audit.runner import AuditResult, CurveAdapter, audit, curve_publisher
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy import catalogue
from dpsurv_core.report.text import plain_label


def roc_figure(result: AuditResult) -> go.Figure:
    """Held-out ROC of the strongest attack's score, the chance diagonal and the eps-DP region for the charged
    epsilon, with the strongest attack's test and the test behind the empirical epsilon lower bound (its ROC
    may be another score's) and their 95% intervals: the headline attack (on the whole record when there is one)."""
    a = result.headline
    fig = go.Figure()
    eps = result.cost.epsilon
    if eps is not None and math.isfinite(eps):
        f = np.linspace(0.0, 1.0, 201)
        bound = np.minimum(np.minimum(math.exp(eps) * f, 1.0 - math.exp(-eps) * (1.0 - f)), 1.0)
        fig.add_trace(go.Scatter(x=f, y=bound, mode="lines", name=f"most an epsilon {eps:g} release allows",
                                 line={"color": "#9ca3af", "dash": "dot"}))
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="coin toss", line={"color": "#d1d5db"}))
    fig.add_trace(go.Scatter(x=a.roc_fpr, y=a.roc_tpr, mode="lines", name=f"attack (AUC {a.auc:.2f})",
                             line={"color": "#d62728", "width": 2.5}))
    fig.add_trace(go.Scatter(x=[a.adv_fpr], y=[a.adv_tpr], mode="markers", marker={"size": 11, "color": "#d62728",
                                                                                  "symbol": "diamond"},
                             name=f"strongest attack (advantage {100 * max(a.advantage, 0):.0f}%)",
                             error_x={"type": "data", "symmetric": False, "array": [a.adv_fpr_ci[1] - a.adv_fpr],
                                      "arrayminus": [a.adv_fpr - a.adv_fpr_ci[0]]},
                             error_y={"type": "data", "symmetric": False, "array": [a.adv_tpr_ci[1] - a.adv_tpr],
                                      "arrayminus": [a.adv_tpr - a.adv_tpr_ci[0]]}))
    fig.add_trace(go.Scatter(x=[a.fpr], y=[a.tpr], mode="markers", name="test for the epsilon lower bound",
                             marker={"size": 10, "color": "#1f77b4"},
                             error_x={"type": "data", "symmetric": False, "array": [a.fpr_ci[1] - a.fpr],
                                      "arrayminus": [a.fpr - a.fpr_ci[0]]},
                             error_y={"type": "data", "symmetric": False, "array": [a.tpr_ci[1] - a.tpr],
                                      "arrayminus": [a.tpr - a.tpr_ci[0]]}))
    fig.update_layout(height=420, template="plotly_white", margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      xaxis_title="false positive rate", yaxis_title="true positive rate",
                      legend={"orientation": "h", "y": -0.2}, title="Attack on held-out runs (ROC)")
    fig.update_xaxes(range=[0, 1])
    fig.update_yaxes(range=[0, 1.02])
    return fig


def epsilon_figure(result: AuditResult) -> go.Figure:
    """The charged epsilon next to the empirical one: the 95% lower bound and the point estimate of the attack (the
    headline attack; with a record, the output attack's bound on all the runs beside it)."""
    a = result.headline
    eps = result.cost.epsilon
    has_eps = eps is not None and math.isfinite(eps)
    fig = go.Figure()
    top = max(a.epsilon_lower, a.epsilon_point if math.isfinite(a.epsilon_point) else 0.0,
              eps if eps is not None and has_eps else 0.0, 0.1) * 1.15
    if has_eps:
        fig.add_trace(go.Bar(y=["charged"], x=[eps], orientation="h", marker={"color": "#9ca3af"},
                             name="charged by the mechanism", hovertemplate="charged epsilon %{x:.3g}<extra></extra>"))
    point = a.epsilon_point if math.isfinite(a.epsilon_point) else top
    fig.add_trace(go.Bar(y=["empirical"], x=[a.epsilon_lower], orientation="h", name="empirical (95% lower bound)",
                         marker={"color": "#d62728" if result.within_charge is False or eps is None else "#1f77b4"},
                         hovertemplate="empirical epsilon, 95% lower bound %{x:.3g}<extra></extra>"))
    if result.record is not None:
        o = result.attack
        top = max(top, o.epsilon_lower * 1.15)
        fig.add_trace(go.Bar(y=["output only"], x=[o.epsilon_lower], orientation="h",
                             name="mechanism's output alone (95% lower bound)", marker={"color": "#6baed6"},
                             hovertemplate="mechanism's output alone, 95% lower bound %{x:.3g}<extra></extra>"))
    if not result.uninformative_test:  # a threshold that labels every run alike estimates nothing
        fig.add_trace(go.Scatter(y=["empirical"], x=[point], mode="markers", name="point estimate of the attack",
                                 marker={"symbol": "line-ns-open", "size": 18, "color": "#111827"},
                                 hovertemplate="point estimate %{x:.3g}<extra></extra>"))
    fig.update_layout(height=200, template="plotly_white", barmode="overlay", margin={"l": 10, "r": 10, "t": 10, "b": 10},
                      xaxis_title="epsilon", legend={"orientation": "h", "y": -0.45}, xaxis_range=[0, top])
    return fig


def influential_figure(result: AuditResult) -> go.Figure:
    """Influential points per run for each threshold (box plots over the R paired runs)."""
    fig = go.Figure()
    if result.influential_per_trial is None:
        fig.add_annotation(text="no curve is released by this analysis", showarrow=False, x=0.5, y=0.5,
                           xref="paper", yref="paper")
    else:
        alone = result.influential_noise_alone
        first = next(iter(result.influential_per_trial), None)  # one legend entry per kind of pair
        for t, v in result.influential_per_trial.items():
            fig.add_trace(go.Box(y=v, x=[f"> {t:g}"] * len(v), name="D against D'", boxmean=True,
                                 marker={"color": "#0072B2"}, legendgroup="d", showlegend=t == first))
            if alone is not None:
                fig.add_trace(go.Box(y=alone[t], x=[f"> {t:g}"] * len(alone[t]), name="D against D (noise alone)",
                                     boxmean=True, marker={"color": "#999999"}, legendgroup="a",
                                     showlegend=t == first))
    fig.update_layout(height=380, template="plotly_white", boxmode="group", margin={"l": 10, "r": 10, "t": 30, "b": 10},
                      title="Influential points per run", xaxis_title="threshold on the difference between two curves",
                      yaxis_title="grid points per run", legend=dict(orientation="h", y=-0.25))
    return fig


def summary_table(result: AuditResult, label: Callable[[str], str] = str) -> pd.DataFrame:
    """The audit's numbers as a two-column table (for the report and the page): the strongest attack first
    (advantage with its 95% interval, AUC), then the empirical epsilon lower bound and the test behind it; what was
    attacked (the whole record's fields, or the mechanism's output) and, beside a record's, the output's bound."""
    a = result.headline
    eps = result.cost.epsilon
    rows = [("attacker's advantage, strongest attack (95% CI)",
             f"{a.advantage:.3f} ({a.advantage_lower:.3f} to {a.advantage_upper:.3f})"),
            ("advantage an epsilon-DP release allows at most",
             "no bound: no formal guarantee" if eps is None else "no bound: no noise, not private"
             if math.isinf(eps) else f"no bound: {result.as_run['sentence']}" if not result.formal_guarantee
             else f"{advantage_bound(eps):.3f}"),
            ("AUC of the strongest attack (Mann-Whitney)", f"{a.auc:.3f}"),
            ("strongest attack: true / false positive rate", f"{a.adv_tpr:.3f} / {a.adv_fpr:.3f}"),
            ("strongest attack: score", a.adv_score),
            ("epsilon charged by the mechanism", "none: no formal guarantee" if eps is None
             else "no noise: not private" if math.isinf(eps) else f"{eps:.4g}"),
            ("empirical epsilon lower bound (95%)", "infinite: the two releases never coincide" if result.certain
             else f"{a.epsilon_lower:.3f}"),
            ("within the charge", ("no guarantee to be within: a disclosure that is not DP voids it"
                                   if eps is not None and math.isfinite(eps) and not result.formal_guarantee
                                   else "no charge to be within") if result.within_charge is None
             else "yes" if result.within_charge else "NO: a bug to fix"),
            ("epsilon test: true positive rate (95% CI)", f"{a.tpr:.3f} ({a.tpr_ci[0]:.3f} to {a.tpr_ci[1]:.3f})"),
            ("epsilon test: false positive rate (95% CI)", f"{a.fpr:.3f} ({a.fpr_ci[0]:.3f} to {a.fpr_ci[1]:.3f})"),
            ("epsilon test: advantage", f"{a.epsilon_test_advantage:.3f}"),
            ("epsilon test: score", a.score),
            ("runs per data set (held out)", f"{result.headline_trials} ({a.runs})"),
            ("attacked", (f"the whole release record: {len(result.attacked_fields)} fields "
                          f"({result.record.varying} varied between runs)") if result.record is not None
             else f"the mechanism's output only: {len(result.attacked_fields)} values")]
    if result.record is not None:
        o = result.attack
        rows.append(("mechanism's output alone: empirical epsilon lower bound (runs per data set)",
                     f"{'infinite' if result.certain else f'{o.epsilon_lower:.3f}'} ({result.trials})"))
        if result.record.separating:
            rows.append(("fields never overlapping between D and D'", ", ".join(result.record.separating[:5])
                         + (" ..." if len(result.record.separating) > 5 else "")))
    if result.exposure is not None:
        rows.append(("exposed share: subjects revealed with certainty",
                     f"{100 * result.exposure.share:.1f}% ({result.exposure.exposed} of {result.exposure.units})"))
    if result.differencing is not None:
        rows.append(("differencing pair (D and D without the target)", result.differencing.named(label)))
    if result.influential is not None:
        rows += [(f"influential points > {t:g} (total over runs)", str(c)) for t, c in result.influential.items()]
    return pd.DataFrame(rows, columns=["quantity", "value"])


REPORT_RECORD_TRIALS = 60  # a report's record attack: a reader per record (a log-rank record's about 60 ms on lung)
PARTS = {"released": "released", "derived": "derived", "public_inputs": "public inputs"}


def attacked_sentence(result: AuditResult) -> str:
    """Which fields the audit attacked, by part of the record, and the output attack beside it, in one sentence."""
    if result.record is None:
        return (f"Attacked: the mechanism's output only ({len(result.attacked_fields)} values): no reader makes this "
                "mechanism's release record here, so what a release would publish around it is not attacked.")
    r, o = result.record, result.attack
    fields = result.attacked_fields
    flags = sum(1 for f in fields if " has " in f or " = " in f or f.endswith(" is null"))
    parts = ", ".join(f"{sum(1 for f in fields if f.startswith(k))} {v}" for k, v in PARTS.items())
    kinds = ("derived.medians", "derived.tests", "derived.warnings has", "derived.lower", "released.")
    examples = [f for f in (next((f for f in fields if f.startswith(k)), None) for k in kinds) if f][:3] or fields[:3]
    out = "infinite" if result.certain else f"{o.epsilon_lower:.3f}"
    return (f"Attacked: the whole release record, {len(fields)} fields ({r.varying} varied between runs): {parts}; "
            f"{flags} of them texts and nulls (each warning's presence), e.g. {', '.join(examples)}; on {r.trials} "
            f"runs per data set. The mechanism's output alone: {len(result.output_fields)} values on {result.trials} "
            f"runs, empirical epsilon lower bound {out}. Within the charge only if both attacks are.")


def verdict(result: AuditResult) -> str:
    """Within the charge, in words: both attacks (the record's and the output's) must be."""
    if result.within_charge is None:
        return "no charge to be within" if result.formal_guarantee or result.cost.epsilon is None else \
            "no guarantee to be within"
    return "yes (the record's attack and the output's)" if result.within_charge else "NO: a bug to fix"


def report_section(report: Any, cohort: Cohort, public: PublicParameters, mechanism: Any,
                   trials: int = 500, seed: int = 0, names: dict[str, str] | None = None,
                   publisher: Publisher | None = None, record_trials: int | None = None,
                   record_id: int | None = None) -> AuditResult:
    """Add a "Privacy audit" section (text, ROC and influential-point figures, a table) to a
    :class:`~dpsurv_core.report.html.Report` for a curve mechanism. The audit reads the raw data, so the
    section is confidential: only a review report can hold it. ``names``: the group codes' value labels.

    The attack scores the whole record a release makes (``publisher``: by default a ``km`` release's record of the
    mechanism, :func:`~dpsurv_core.audit.runner.curve_publisher`; a stored record's,
    :func:`~dpsurv_core.audit.record.stored_publisher`) on ``record_trials`` runs per data set (default the smaller of
    ``trials`` and :data:`REPORT_RECORD_TRIALS`), beside the attack on the mechanism's output on ``trials`` runs; the
    verdict needs both. ``record_id``: the ledger record released at the mechanism's epsilon, named as audited."""
    adapter = CurveAdapter(mechanism, cohort, public)
    if publisher is None and (entry := catalogue.find(getattr(mechanism, "name", ""))) is not None:
        publisher = curve_publisher(entry.id, mechanism.cost.epsilon, cohort, public)
    adapter.publisher = publisher
    n_records = min(int(trials), REPORT_RECORD_TRIALS) if record_trials is None else record_trials
    result = audit(adapter, trials=trials, seed=seed, record_trials=n_records)
    report.add_section("Privacy audit", confidential=True)
    eps = result.cost.epsilon
    at = "no epsilon (disclosure control)" if eps is None else f"epsilon {eps:g}"
    report.add_text(f"Audited at {at}" + (f", the epsilon released as ledger record {record_id}." if record_id
                                          is not None else "."), "note")
    names = names or {}
    report.add_text(f"Target: {result.target.why_named(lambda code: names.get(code, code))}")
    report.add_text(result.sentence())
    a = result.headline
    whole = " on the whole release record" if result.record is not None else ""
    report.add_text(f"Strongest attack{whole}: advantage {100 * a.advantage:.0f}% (95% CI {100 * a.advantage_lower:.0f}% "
                    f"to {100 * a.advantage_upper:.0f}%), AUC {a.auc:.2f}, on {a.runs} held-out runs per data set.")
    report.add_text(attacked_sentence(result))
    emp = "infinite (the two releases never coincide)" if result.certain else f"{a.epsilon_lower:.3f}"
    report.add_text(f"Empirical epsilon lower bound (95%) {emp} against the charged {result.cost.sentence()}; within "
                    f"the charge: {verdict(result)}. The audit is a simulation on the data ({trials} runs on D and on "
                    f"D'{f', {result.record.trials} release records each' if result.record else ''}, seeded), not a "
                    "release: it is not charged to the ledger and must not be published.", "note")
    report.add_figure(roc_figure(result))
    report.add_figure(influential_figure(result))
    report.add_table(summary_table(result, lambda code: names.get(code, code)), "Privacy audit")
    return result


# ------------------------------------------------------------------------------------------- the board's comparison
def comparison_figure(comp: Any) -> go.Figure:
    """Error against the non-private curve (RMSE) against the share of patients exposed with certainty, one point per
    method: DP mechanisms in blue, disclosure control in red; the hover gives the attack's advantage."""
    from dpsurv_core.audit.comparison import short

    fig = go.Figure()
    for kind, colour, symbol in (("differential privacy", "#1f77b4", "circle"),
                                 ("disclosure control", "#d62728", "diamond")):
        rows = [r for r in comp.rows if r.kind == kind]
        if not rows:
            continue
        fig.add_trace(go.Scatter(
            x=[r.rmse for r in rows], y=[100 * r.exposed_share for r in rows], mode="markers+text",
            text=[short(r.method) for r in rows], textposition="top center", name=kind,
            marker={"size": 13, "color": colour, "symbol": symbol},
            customdata=[[100 * max(r.advantage, 0.0), r.max_gap] for r in rows],
            hovertemplate="%{text}<br>RMSE %{x:.3f}, largest gap %{customdata[1]:.3f}<br>exposed %{y:.0f}%"
                          "<br>strongest attack advantage %{customdata[0]:.0f}%<extra></extra>"))
    fig.update_layout(height=420, template="plotly_white", margin={"l": 10, "r": 10, "t": 40, "b": 10},
                      title=f"Error against exposure ({plain_label(comp.dataset)}, DP at epsilon {comp.epsilon:g})",
                      xaxis_title="error of the survival curve (RMSE against the non-private curve)",
                      yaxis_title="patients exposed with certainty (%)", legend={"orientation": "h", "y": -0.2})
    fig.update_yaxes(range=[-5, 108])
    return fig


def comparison_section(report: Any, comp: Any) -> None:
    """The board's comparison as a confidential report section: the table, the figure and the plain paragraph."""
    from dpsurv_core.audit.comparison import paragraph

    report.add_section("Differential privacy against today's disclosure control", confidential=True)
    report.add_text(f"Every method below ran on the same data ({comp.n_subjects} subjects) and public grid; DP "
                    f"mechanisms at epsilon {comp.epsilon:g}; {comp.trials} simulated runs per data set for the "
                    "attack on each method's output"
                    + (f" and {comp.record_trials} for the attack on the whole record a release of it makes (released "
                       "counts, everything derived from them, each warning): the strongest attack, the empirical "
                       "epsilon and 'attacked' are the record's, and a method is within its charge only if both "
                       "attacks are" if getattr(comp, "record_trials", 0) else "")
                    + ". A simulation on the raw data: nothing is charged and none of it may be published.", "note")
    report.add_table(comp.table(), "Error, exposure, attack and guarantee of each method")
    report.add_figure(comparison_figure(comp))
    report.add_text(paragraph(comp))
