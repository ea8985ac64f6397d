"""The publication figure of a stored curve release: curves, band and the KMunicate number-at-risk table.

What survminer's ``ggsurvplot(risk.table = TRUE)`` and the KMunicate layout (Morris et al. 2019) give readers of a
trial: the survival curve of each group with its 95% band, and under the time axis, aligned with its ticks, a table
of the numbers at risk with the cumulative events and censorings of each group. Here everything in the figure is read
from the stored ledger record of the release (:mod:`dpsurv_core.publication`): the curves and the noise-aware band
from its ``derived`` part, the table from its released noisy counts and declared grid (:func:`_risk_rows`, as
:func:`dpsurv_core.report.stored.number_at_risk` reads them), the calibrated log-rank p-value the record carries, a
hazard ratio computed from the released counts (:mod:`dpsurv_core.curves.hazard_ratio`) and a caption from its cost
and guarantee as run. No data set, cohort or exact number is in reach, so the figure is post-processing of the release
(Dwork and Roth 2014, Proposition 2.1): it may be rebuilt at any time, for free, and two data sets whose releases came
out the same give the same file, byte for byte (:func:`figure_file` takes plotly's random element ids and the PDF's
dates out of the file).

Files are made by plotly's static export (kaleido >= 1, which drives Debian's chromium): SVG, PDF, and PNG at 300 dots
per inch (:data:`DPI`, also written into the PNG). :func:`export_problem` says in one sentence what is missing where
they cannot be made.
"""

from __future__ import annotations

import re
import struct
import textwrap
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import entry_from_body
from dpsurv_core.report.figures import _nobody_left, band_trace, step_xy
from dpsurv_core.report.palette import COLOURS
from dpsurv_core.report.text import plain_label

FORMATS = ("svg", "png", "pdf")
DPI = 300
CSS_DPI = 96  # plotly's pixels are CSS pixels: 96 to the inch
WIDTH = 672  # CSS pixels: 7 inches, a journal page's width (within the printed report's)
CURVE_HEIGHT = 380
ROW = 17  # one row of the number-at-risk table, in CSS pixels
FONT = dict(family="Arial, Helvetica, sans-serif", size=12, color="#000000")
CAPTION_CHARS = 106  # caption characters to a line at WIDTH
CURVE_KINDS = ("curves", "logrank")
BAND_NOISE = "noise-aware 95% band"


@dataclass(frozen=True)
class RiskRows:
    """The KMunicate table of a release: at each time of ``times``, per group, the numbers at risk and the cumulative
    events and censorings, read from the released counts (None where the counts cannot tell)."""

    times: list[float]
    groups: list[str]
    at_risk: list[list[float | None]]
    events: list[list[float | None]]
    censored: list[list[float | None]]
    estimated: bool  # read from noisy or altered counts: estimates, rounded and monotone


@dataclass(frozen=True)
class Shown:
    """What a publication figure shows, for the command line's JSON and the tests."""

    record_id: int | None
    groups: list[str]
    time_unit: str
    band: str
    risk: RiskRows | None
    p_value: float | None
    hazard_ratios: list[dict[str, Any]] = field(default_factory=list)
    caption: str = ""

    def to_dict(self) -> dict[str, Any]:
        risk = None if self.risk is None else {
            "times": self.risk.times, "estimated_from_noisy_counts": self.risk.estimated,
            "groups": {g: {"at_risk": self.risk.at_risk[i], "events": self.risk.events[i],
                           "censored": self.risk.censored[i]} for i, g in enumerate(self.risk.groups)}}
        return {"record_id": self.record_id, "curves": "released survival curve per group (steps on the release's "
                "grid)", "groups": self.groups, "time_unit": self.time_unit, "band": self.band,
                "number_at_risk": risk, "logrank_p_value": self.p_value, "hazard_ratios": self.hazard_ratios,
                "caption": self.caption}


# ------------------------------------------------------------------------------------------- reading the record
def _check_curve_record(body: dict[str, Any], record_id: int | None = None) -> None:
    """Refuse, in one sentence, a record that is not a stored survival-curve release with three parts."""
    which = f"Record {record_id}" if record_id is not None else "This record"
    kind = body.get("kind")
    if kind not in CURVE_KINDS:
        what = f"a {kind} release" if kind else f"a {body.get('analysis') or 'non-curve'} release"
        raise ParameterError(f"{which} is {what}, not a survival-curve release: the publication figure draws the "
                             "curves and number-at-risk table of a `km` or `logrank` release.")
    derived = body.get("derived")
    if not isinstance(body.get("released"), dict) or not isinstance(body.get("public_inputs"), dict) \
            or not isinstance(derived, dict):
        raise ParameterError(f"{which} predates three-part release records (released, public inputs, derived): "
                             "there is nothing to draw it from.")
    if body["public_inputs"].get("competing"):
        raise ParameterError(f"{which} is a competing-risks release (cumulative incidence): the publication figure "
                             "draws survival curves; read it on the Ledger and report page's report.")
    if not all(isinstance(derived.get(k), list) for k in ("groups", "time", "survival")):
        raise ParameterError(f"{which} holds no released survival curves to draw.")


def _group_names(body: dict[str, Any]) -> list[str]:
    """The groups as the release declared their labels (its value labels), else their codes."""
    derived = body["derived"]
    names = ((body.get("public_inputs") or {}).get("reading") or {}).get("names") or {}
    labels = derived.get("group_labels")
    codes = [str(g) for g in derived["groups"]]
    if isinstance(labels, list) and len(labels) == len(codes):
        return [str(x) for x in labels]
    return [str(names.get(g, g)) for g in codes]


def _cumulative(values: np.ndarray) -> list[float | None]:
    """Cumulative released counts as a table shows them: whole, at least 0 and never falling (a running maximum)."""
    v = np.fmax.accumulate(np.maximum(np.rint(values), 0.0))
    return [None if np.isnan(x) else float(x) for x in v]


def _risk_rows(body: dict[str, Any]) -> RiskRows | None:
    """The at-risk, events and censored rows of a curve release at its table times (the axis ticks), read from its
    released counts and declared grid alone, as :func:`dpsurv_core.report.stored.number_at_risk` reads the numbers
    at risk: whole, non-negative and non-increasing where the counts carry noise. None without released counts (a
    time-indexed release)."""
    from dpsurv_core.curves import readout
    from dpsurv_core.curves.readings import no_noise
    from dpsurv_core.curves.result import risk_counts
    from dpsurv_core.curves.summary import at_risk_at, at_risk_display, table_times
    from dpsurv_core.errors import DpsurvError

    inputs = body["public_inputs"]
    try:
        rel = readout.curve_release(body["released"], inputs)
        public = readout.public_parameters(inputs)
    except (DpsurvError, KeyError, TypeError, ValueError):  # a record this version cannot read: no table
        return None
    counts = risk_counts(rel)
    if counts is None:
        return None
    times = table_times(public.grid)
    inside = times <= float(public.horizon) + 1e-9
    times = times[inside] if inside.any() else times
    estimated = not no_noise(rel.cost.epsilon)
    at_risk = at_risk_at(counts, times)[0]
    if estimated:
        at_risk = at_risk_display(at_risk)
    edges = counts.grid.edges
    k = np.clip(np.searchsorted(edges, times, side="right") - 1, 0, edges.size - 1)
    known = (k >= 1) | (edges[0] <= 0)

    def upto(x: np.ndarray) -> np.ndarray:  # counts in the bins ending at or before each time (G, T)
        cum = np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x, axis=-1)], axis=-1)
        return np.where(known, cum[..., k], np.nan)

    events, censored = upto(np.asarray(counts.events_total[0], float)), upto(np.asarray(counts.censored[0], float))
    names = dict(zip([str(g) for g in body["derived"]["groups"]], _group_names(body)))
    return RiskRows([float(t) for t in times], [names.get(str(g), str(g)) for g in counts.groups],
                    [[None if np.isnan(x) else float(np.rint(x)) for x in row] for row in at_risk],
                    [_cumulative(row) for row in events], [_cumulative(row) for row in censored], estimated)


def _p_value_of(body: dict[str, Any]) -> tuple[float | None, str]:
    """The calibrated log-rank p-value the record carries (the overall test of its groups) and what it is; None
    when the record carries no tests."""
    overall = body["derived"].get("overall")
    if not isinstance(overall, dict) or overall.get("p_value") is None:
        return None, ""
    groups = body["derived"]["groups"]
    what = "log-rank test" if len(groups) == 2 else f"log-rank test of the {len(groups)} groups"
    draws = overall.get("null_draws")
    how = f"calibrated for the noise, {draws} null draws" if draws else "no noise to calibrate for"
    return float(overall["p_value"]), f"{what} ({how})"


def p_text(p: float) -> str:
    """A p-value as the figure prints it."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}" if p < 0.1 else f"p = {p:.2f}"


def _ratios_of(body: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """The hazard ratios of each group against the first, from the released counts (or why there are none)."""
    from dpsurv_core.curves.hazard_ratio import METHOD, released_hazard_ratios
    from dpsurv_core.errors import DpsurvError

    try:
        ratios, why = released_hazard_ratios(body["released"], body["public_inputs"])
    except (DpsurvError, KeyError, TypeError, ValueError):
        return [], "No hazard ratio: this version cannot read the release's counts."
    names = dict(zip([str(g) for g in body["derived"]["groups"]], _group_names(body)))
    return [{"group": names.get(h.group, h.group), "reference": names.get(h.reference, h.reference),
             "hazard_ratio": h.estimate, "lower": h.lower, "upper": h.upper, "method": METHOD} for h in ratios], why


def time_unit(body: dict[str, Any]) -> str:
    """The time unit the release declared (its public inputs), or ""."""
    from dpsurv_core.report.stored import time_unit_of

    return time_unit_of(body)


# ------------------------------------------------------------------------------------------- the caption
def caption(body: dict[str, Any], record_id: int | None, risk: RiskRows | None, ratios: list[dict[str, Any]],
            no_ratio: str | None, p_what: str) -> str:
    """Mechanism, epsilon and the guarantee as run (the ledger's sentence), the band, where the table's numbers come
    from, the tests' and the ratio's method."""
    from dpsurv_core.report.stored import release_kind

    entry = entry_from_body(body, record_id or 0, str(body.get("time") or ""))
    run = entry.as_run()
    rec = f" (ledger record {record_id})" if record_id is not None else ""
    eps = "no epsilon" if entry.cost.epsilon is None else f"epsilon {entry.cost.epsilon:g}"
    parts = [f"Survival curves released by {entry.mechanism} at {eps}{rec}: {release_kind(entry.cost, entry.disclosures)}"
             f"; guarantee as run: {run['sentence']}."]
    derived = body["derived"]
    conf = derived.get("conf_type") or "log"
    if derived.get("interval_includes_noise"):
        parts.append(f"Shaded: {BAND_NOISE} (pointwise, R survfit conf.type {conf}), which carries the privacy noise.")
    else:
        parts.append(f"Shaded: pointwise 95% band (R survfit conf.type {conf}); it does not carry the release's noise "
                     "or changes.")
    if risk is not None:
        parts.append("Number at risk, events and censored (cumulative) at each tick, read from the released "
                     + ("noisy counts: estimates, whole and monotone." if risk.estimated else "counts.")
                     + ("" if isinstance(derived.get("debiased_survival"), list)
                        else " Curves end where the released counts leave nobody at risk."))
    else:
        parts.append("No number-at-risk table: this release holds no counts.")
    if p_what:
        parts.append(f"p: {p_what}.")
    if ratios:
        parts.append("HR: log-rank (Peto) estimate exp((O-E)/V) from the released counts, 95% CI with the noise's "
                     "variance added to V (Peto et al. 1977; Berry, Kitchin and Mock 1991).")
    elif no_ratio and len(derived["groups"]) > 1:
        parts.append(no_ratio)
    return " ".join(parts)


# ------------------------------------------------------------------------------------------- the figure
def _curves(fig: go.Figure, body: dict[str, Any], names: list[str]) -> None:
    derived = body["derived"]
    time = np.asarray(derived["time"], float)
    debiased = isinstance(derived.get("debiased_survival"), list)  # rrr: the de-biased curves carry the band
    prefix = "debiased_" if debiased else ""
    surv = np.asarray(derived[prefix + "survival"], float)
    bands = [np.asarray([[np.nan if x is None else x for x in row] for row in derived[prefix + k]], float)
             if isinstance(derived.get(prefix + k), list) else None for k in ("lower", "upper")]
    cut = None if debiased else _nobody_left(derived, surv.shape)  # no band once the counts leave nobody at risk
    for gi, name in enumerate(names):
        colour = COLOURS[gi % len(COLOURS)]
        label = plain_label(name)
        # the curve and its band end where the released counts leave nobody at risk, as a Kaplan-Meier curve ends
        # at the last follow-up
        keep = slice(None) if cut is None or not cut[gi].any() else slice(0, int(np.argmax(cut[gi])))
        if bands[0] is not None and bands[1] is not None and bands[0].shape == surv.shape and time[keep].size:
            fig.add_trace(band_trace(time[keep], bands[0][gi][keep], bands[1][gi][keep], colour, label))
        t, v = step_xy(time[keep], surv[gi][keep] * 100, 100.0)
        fig.add_trace(go.Scatter(x=t, y=v, mode="lines", name=label, line=dict(color=colour, width=2),
                                 legendrank=gi, hovertemplate=f"{label}<br>%{{x:.4g}}: %{{y:.3g}}%<extra></extra>"))


def _count(v: float | None) -> str:
    return "–" if v is None else f"{v:,.0f}"


def _table(fig: go.Figure, risk: RiskRows) -> list[str]:
    """The KMunicate rows under the axis: per group a heading and at risk, events, censored (cumulative); returns
    the row labels, top to bottom."""
    labels: list[str] = []
    for gi, group in enumerate(risk.groups):
        colour = COLOURS[gi % len(COLOURS)]
        labels.append(f"<b>{plain_label(group)}</b>")
        for what, values in (("At risk", risk.at_risk[gi]), ("Events", risk.events[gi]),
                             ("Censored", risk.censored[gi])):
            row = len(labels)
            labels.append(what)
            fig.add_trace(go.Scatter(x=risk.times, y=[row] * len(risk.times), mode="text",
                                     text=[_count(v) for v in values], textfont=dict(FONT, size=11, color=colour),
                                     cliponaxis=False, showlegend=False, hoverinfo="skip", xaxis="x2", yaxis="y2"))
    return labels


def publication_figure(body: dict[str, Any], record_id: int | None = None) -> go.Figure:
    """The publication figure of the stored curve release ``body`` (ledger record ``record_id``), from the record
    alone: released curves and band per group, the KMunicate table under the time axis, the calibrated log-rank
    p-value and the hazard ratio in the plot, and the caption below. A record that is not a curve release is refused
    in one sentence (``ParameterError``)."""
    return _build(body, record_id)[0]


def figure_shows(body: dict[str, Any], record_id: int | None = None) -> Shown:
    """What :func:`publication_figure` draws for ``body``, as numbers and words."""
    return _build(body, record_id)[1]


def _build(body: dict[str, Any], record_id: int | None) -> tuple[go.Figure, Shown]:
    _check_curve_record(body, record_id)
    names = _group_names(body)
    unit = time_unit(body)
    risk = _risk_rows(body)
    p, p_what = _p_value_of(body)
    ratios, no_ratio = _ratios_of(body) if len(names) > 1 else ([], None)
    text = caption(body, record_id, risk, ratios, no_ratio, p_what)
    lines = textwrap.wrap(text, CAPTION_CHARS, break_on_hyphens=False)

    fig = go.Figure()
    _curves(fig, body, names)
    rows = _table(fig, risk) if risk is not None else []
    table_h = ROW * (len(rows) + 1) if rows else 0
    axis_h = 64  # tick labels and the axis title under the curves
    plot_h = CURVE_HEIGHT + axis_h + table_h
    caption_h = 16 * len(lines) + 16
    top = 44
    fig.update_layout(width=WIDTH, height=top + plot_h + caption_h, template="plotly_white", font=FONT,
                      margin=dict(l=110, r=24, t=top, b=caption_h),
                      legend=dict(orientation="h", x=0, y=1.0, xanchor="left", yanchor="bottom",
                                  traceorder="normal", font=dict(FONT, size=12)))
    derived = body["derived"]
    grid_end = float(np.asarray(derived["time"], float).max(initial=0.0))
    ticks = risk.times if risk is not None else None
    end = max([grid_end, *(ticks or [])])
    pad = 0.03 * end if end > 0 else 1.0
    curve_low = (axis_h + table_h) / plot_h
    fig.update_layout(
        xaxis=dict(range=[-pad, end + pad], title=dict(text=plain_label(f"Time ({unit})" if unit else "Time")),
                   tickvals=ticks, ticktext=None if ticks is None else [f"{t:g}" for t in ticks], showline=True,
                   linecolor="#000000", ticks="outside", zeroline=False, anchor="y"),
        yaxis=dict(domain=[curve_low, 1.0], range=[0, 101], title=dict(text="Survival (%)"), showline=True,
                   linecolor="#000000", ticks="outside", zeroline=False))
    if rows:
        fig.update_layout(
            xaxis2=dict(matches="x", anchor="y2", visible=False),
            yaxis2=dict(domain=[0.0, table_h / plot_h], range=[len(rows) - 0.5, -1.2], tickvals=list(range(len(rows))),
                        ticktext=rows, showgrid=False, zeroline=False, showline=False, ticks="", ticklabelstandoff=14,
                        tickfont=dict(FONT, size=11)))
        fig.add_annotation(text="Number at risk (events and censored: cumulative)", xref="paper", yref="y2", x=0,
                           y=-1.2, xanchor="left", yanchor="middle", showarrow=False, font=dict(FONT, size=11))
    inside = []
    if p is not None:
        inside.append(f"Log-rank {p_text(p)}")
    for h in ratios:
        inside.append(f"HR {plain_label(h['group'])} vs {plain_label(h['reference'])}: {h['hazard_ratio']:.2f} "
                      f"(95% CI {h['lower']:.2f} to {h['upper']:.2f})")
    if inside:
        fig.add_annotation(text="<br>".join(inside), xref="x domain", yref="y domain", x=0.99, y=0.98,
                           xanchor="right", yanchor="top", align="right", showarrow=False,
                           bgcolor="rgba(255,255,255,0.85)", font=dict(FONT, size=12))
    fig.add_annotation(text="<br>".join(plain_label(x) for x in lines), xref="paper", yref="paper", x=0, y=0,
                       yshift=-10, xanchor="left", yanchor="top", align="left", showarrow=False,
                       font=dict(FONT, size=11, color="#333333"))
    for i, trace in enumerate(fig.data):  # plotly would name each trace by a random id, in the SVG too
        trace.uid = f"dpsurv{i:03d}"
    band = BAND_NOISE if derived.get("interval_includes_noise") else "pointwise 95% band (without the release's noise)"
    return fig, Shown(record_id, names, unit, band, risk, p, ratios, text)


# ------------------------------------------------------------------------------------------- files
def export_problem() -> str | None:
    """None when figure files can be made here; otherwise one sentence saying what to install. Starts no browser."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return ("A figure file needs the Python package kaleido (`pip install kaleido`) and a Chromium browser "
                "(`apt-get install chromium`); kaleido is not installed.")
    try:
        from choreographer.browsers.chromium import Chromium

        browser = Chromium.find_browser(skip_local=False)
    except Exception as exc:  # a broken install of kaleido's browser driver: still a sentence
        return f"A figure file cannot be made here ({type(exc).__name__}): reinstall kaleido (`pip install kaleido`)."
    if not browser:
        return ("A figure file needs a Chrome or Chromium browser for kaleido (`apt-get install chromium`, or set "
                "BROWSER_PATH to one); none was found.")
    return None


_UID = re.compile(rb'id="defs-([0-9a-f]+)"')
_PDF_DATE = re.compile(rb"\(D:\d{14}[+-]\d\d'\d\d'\)")


def _png_dpi(png: bytes, dpi: int) -> bytes:
    """``png`` with a pHYs chunk saying ``dpi`` dots per inch (replacing one it has), right after its header."""
    sig, pos, chunks = png[:8], 8, []
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind = png[pos + 4:pos + 8]
        end = pos + 12 + length
        if kind != b"pHYs":
            chunks.append(png[pos:end])
        pos = end
    per_metre = round(dpi / 0.0254)
    data = struct.pack(">IIB", per_metre, per_metre, 1)
    phys = struct.pack(">I", len(data)) + b"pHYs" + data + struct.pack(">I", zlib.crc32(b"pHYs" + data) & 0xFFFFFFFF)
    return sig + chunks[0] + phys + b"".join(chunks[1:])


def _pdf_date(stamp: str) -> bytes | None:
    """The record's time (ISO, UTC) as a PDF date ``(D:YYYYMMDDHHMMSS+00'00')``, or None."""
    digits = re.sub(r"\D", "", stamp or "")[:14]
    return f"(D:{digits}+00'00')".encode() if len(digits) == 14 else None


def figure_file(fig: go.Figure, fmt: str, stamp: str = "") -> bytes:
    """``fig`` as an SVG, PDF or 300-dpi PNG file (kaleido). The same figure gives the same bytes: plotly's random
    element id of the plot in an SVG is replaced by one computed from the file (the traces have fixed ids), and a PDF's creation and modification dates are
    ``stamp`` (the record's time; 2000-01-01 without it).

    Parameters
    ----------
    fig : plotly.graph_objects.Figure
        The figure.
    fmt : {"svg", "png", "pdf"}
        The file format.
    stamp : str, default ""
        The PDF's creation and modification time.

    Returns
    -------
    bytes
        The file's bytes.

    Raises
    ------
    dpsurv_core.errors.ParameterError
        For another format, or when the figure cannot be written here (no kaleido or browser).
    """
    if fmt not in FORMATS:
        raise ParameterError(f"{fmt!r} is not a figure format dpsurv writes: use svg, png or pdf.")
    problem = export_problem()
    if problem is not None:
        raise ParameterError(problem)
    width, height = int(fig.layout.width or WIDTH), int(fig.layout.height or 600)
    data = fig.to_image(format=fmt, width=width, height=height, scale=DPI / CSS_DPI if fmt == "png" else 1)
    if fmt == "png":
        return _png_dpi(data, DPI)
    if fmt == "svg":
        found = _UID.search(data)
        if found:
            uid = found.group(1)
            crc = zlib.crc32(data.replace(uid, b"")) & (16 ** len(uid) - 1)
            fixed = f"{crc:0{len(uid)}x}".encode()
            data = data.replace(uid, fixed)
        return data
    date = _pdf_date(stamp) or b"(D:20000101000000+00'00')"
    return _PDF_DATE.sub(lambda m: date if len(m.group(0)) == len(date) else m.group(0), data)


def _figure_name(record_id: int | None, fmt: str) -> str:
    """A file name for the figure of a record."""
    return f"dpsurv-figure-record-{record_id}.{fmt}" if record_id is not None else f"dpsurv-figure.{fmt}"


def is_curve_record(body: dict[str, Any] | None) -> bool:
    """Whether ``body`` is a record :func:`publication_figure` draws."""
    try:
        _check_curve_record(body or {})
    except ParameterError:
        return False
    return True
