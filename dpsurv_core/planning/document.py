"""The plan as a document for an ethics application or a data access request: Markdown, HTML, or PDF.

Sections: the study as declared (public knowledge only, no data read), each planned release (analysis, mechanism,
epsilon, the targets it serves and the precision simulated releases achieve there: median with the 10th and 90th
percentiles), the total against the cap (sequential composition), each mechanism's guarantee in words, and how the
numbers were simulated. The PDF is the HTML printed by the report's headless chromium
(:func:`dpsurv_core.report.pdf.html_to_pdf`).
"""

from __future__ import annotations

import html
import math
from typing import Any

Block = tuple[str, Any]  # ("h1" | "h2" | "p" | "ul", text or items) or ("table", (header, rows))


def _num(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "not reached"
    return f"{float(x):.{digits}g}"


def _achieved(a: dict[str, Any], power: bool) -> str:
    if power:
        return f"{_pct(a.get('median'))} (Monte Carlo 80% interval {_pct(a.get('p10'))} to {_pct(a.get('p90'))})"
    where = f" (group {a['group']})" if a.get("group") else ""
    return f"+-{_num(a.get('median'))}{where}; 10% of releases +-{_num(a.get('p10'))} or better, 90% +-{_num(a.get('p90'))} or better"


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.0f}%"


def blocks(plan: dict[str, Any], title: str = "Privacy plan") -> list[Block]:
    """The document's blocks from a plan (:func:`dpsurv_core.planning.plan.make_plan`)."""
    study = plan["study"]
    unit = study.get("time_unit", "days")
    budget = plan["budget"]
    out: list[Block] = [("h1", title)]
    out.append(("p", "This plan was made before any data were read. Every number below comes from cohorts simulated "
                     "from the study as declared, released with each mechanism's own code and read as a published "
                     "release is read; nothing was released and no privacy budget was spent."))
    out.append(("h2", "Study declaration (public knowledge only)"))
    surv = study["survival"]
    law = {"exponential": f"exponential, median {surv.get('median')} {unit}",
           "weibull": f"Weibull, shape {surv.get('shape')}, scale {surv.get('scale')} {unit}"}.get(
        surv["kind"], f"a public curve of {len(surv.get('times', []))} points ({surv.get('source') or 'table'})")
    out.append(("table", (["Item", "Declared value"], [
        ["Subjects", f"{study['n']} ({', '.join(f'{g}: {s}' for g, s in zip(study['groups'], study['sizes']))})"],
        ["Follow-up (horizon)", f"{study['horizon']:g} {unit}"],
        ["Public time grid (start:stop:bins)", study["grid"]],
        ["Share censored by the horizon", f"{100 * study['censoring']:.0f}%"],
        ["Expected survival (reference group)", law]])))
    out.append(("h2", "Planned releases"))
    rows = []
    for r in budget["releases"]:
        for t in r["targets"]:
            tline = next(x for x in plan["targets"] if x["target"] == t["target"])
            power = tline["kind"] == "logrank-power"
            rows.append([str(r["release"]), r["analysis"], r["mechanism"], f"{r['epsilon']:g}", tline["description"],
                         _achieved(t["achieved"], power), "yes" if t["met"] else "no"])
    out.append(("table", (["Release", "Analysis", "Mechanism", "Epsilon", "Target", "Achieved (simulated)", "Met"],
                          rows)))
    total = budget["total"]
    cap = budget.get("cap")
    cap_text = (f"The releases add up to epsilon {total:g}" + (f" against a cap of {cap:g}." if cap is not None
                                                               else "; no separate cap was declared, so the plan's "
                                                                    "total is the cap it asks for."))
    out.append(("p", cap_text + " " + budget["composition"][0].upper() + budget["composition"][1:] + "."))
    if budget.get("objective"):
        out.append(("p", "Split under the cap: " + budget["objective"] + "."))
    missed = [x for x in plan["targets"] if not x.get("reachable", True)]
    if missed:
        out.append(("h2", "Targets that cannot be met"))
        out.append(("ul", [x.get("note") or x["target"] for x in missed]))
    out.append(("h2", "What each mechanism guarantees"))
    seen = set()
    items = []
    for r in plan["releases"]:
        if r["mechanism"] in seen:
            continue
        seen.add(r["mechanism"])
        g = r["guarantee"]
        items.append(f"{g['name']} ({r['mechanism']}; {g['source']}) at epsilon {r['epsilon']:g}: protects "
                     f"{g['protects']}, neighbouring data sets: {g['neighbouring']}, guarantee {g['guarantee']}. "
                     f"{g['in_words']}")
    out.append(("ul", items))
    sim = plan["simulation"]
    cohorts = sim["cohorts"]
    out.append(("h2", "How the numbers were computed"))
    out.append(("p", f"Simulated cohorts per epsilon: {cohorts['curves']} for curves, {cohorts['power']} for log-rank "
                     f"power ({sim['null_draws_per_test']} null draws per calibrated test), {cohorts['weibull']} for "
                     f"Weibull, {cohorts['regression']} x {sim['regression_releases_per_cohort']} for regression; seed "
                     f"{sim['seed']}. A half-width target is met when the median over simulated releases is at most "
                     "the target in every group; a power target when the share of rejecting tests is at least the "
                     f"target. Epsilons were searched from {sim['epsilons_searched'][0]:g} to "
                     f"{sim['epsilons_searched'][-1]:g}; {sim['interpolation']}. The precision of the real release "
                     "will vary around the simulated median as the 10th and 90th percentiles show, and depends on "
                     "the declared survival, censoring and sizes being close to the study's."))
    return out


def target_rows(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target, as the app's table shows it: the smallest epsilon meeting it alone, the release epsilon
    planned, and what releases achieve there (a power in %; a half-width in the target's unit)."""
    rows = []
    for t in plan["targets"]:
        power = t["kind"] == "logrank-power"
        a = t.get("achieved_as_planned") or t["achieved"]
        show = (lambda x: None if x is None else round(100 * float(x), 1)) if power else \
            (lambda x: None if x is None else float(f"{float(x):.4g}"))
        met = next((x["met"] for r in plan["budget"]["releases"] for x in r["targets"] if x["target"] == t["target"]),
                   None)
        rows.append({"Target": t["description"], "Mechanism": t.get("mechanism", plan.get("mechanism")),
                     "Smallest epsilon": t["epsilon"], "Planned epsilon": t.get("planned_epsilon", plan["epsilon"]),
                     "Achieved (median)": show(a.get("median")), "p10": show(a.get("p10")), "p90": show(a.get("p90")),
                     "Unit": "% power" if power else ("share" if t["kind"] == "survival" else "time"),
                     "Met": "yes" if met else "no", "Note": t.get("note", "")})
    return rows


def to_markdown(items: list[Block]) -> str:
    lines: list[str] = []
    for kind, value in items:
        if kind in ("h1", "h2"):
            lines += [("# " if kind == "h1" else "## ") + value, ""]
        elif kind == "p":
            lines += [value, ""]
        elif kind == "ul":
            lines += [f"- {v}" for v in value] + [""]
        elif kind == "table":
            header, rows = value
            cell = lambda s: str(s).replace("|", "\\|")  # noqa: E731
            lines += ["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
            lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows] + [""]
    return "\n".join(lines)


def to_html(items: list[Block]) -> str:
    e = html.escape
    parts = ['<!doctype html><html><head><meta charset="utf-8"><title>Privacy plan</title><style>'
             "body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse}th,td{border:1px solid #999;padding:.3em .5em;text-align:left}"
             "</style></head><body>"]
    for kind, value in items:
        if kind in ("h1", "h2", "p"):
            parts.append(f"<{kind}>{e(value)}</{kind}>")
        elif kind == "ul":
            parts.append("<ul>" + "".join(f"<li>{e(v)}</li>" for v in value) + "</ul>")
        elif kind == "table":
            header, rows = value
            parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>"
                         + "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
                         + "</table>")
    return "".join(parts) + "</body></html>"


def document(plan: dict[str, Any], fmt: str = "md") -> bytes:
    """The plan's document as ``fmt`` ("md", "html" or "pdf") bytes; a PDF needs the report's chromium (else one
    sentence: :class:`dpsurv_core.report.pdf.PdfUnavailable`)."""
    items = blocks(plan)
    if fmt == "md":
        return to_markdown(items).encode("utf-8")
    if fmt == "html":
        return to_html(items).encode("utf-8")
    from dpsurv_core.report.pdf import html_to_pdf

    return html_to_pdf(to_html(items))
