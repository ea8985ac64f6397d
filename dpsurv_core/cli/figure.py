"""``figure --record N --out FILE.svg|png|pdf``: the publication figure of a stored curve release.

The figure (:mod:`dpsurv_core.report.publication_figure`) is drawn from ledger record N alone: its released survival
curves per group with the noise-aware 95% band its derived part holds, the KMunicate number-at-risk table (at risk,
cumulative events and censored, read from the released counts; Morris et al. 2019) under the time axis, the
calibrated log-rank p-value the record carries, a hazard ratio computed from the released counts, and a caption with
the mechanism, epsilon and the guarantee as run. No data is read, nothing is drawn or charged and no record is
written: it is post-processing of what was published. Files are made by kaleido (SVG, PDF, 300-dpi PNG); without it
the command exits 2, saying what to install, before anything is written.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from dpsurv_core.cli.common import add_ledger_options, positive_int, store_from_args
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import RELEASE

NAME = "figure"
HELP = "the publication figure of a stored curve release (curves, band, number-at-risk table) as SVG, PNG or PDF"
SUFFIXES = {".svg": "svg", ".png": "png", ".pdf": "pdf"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--record", type=positive_int, required=True, metavar="N",
                   help="the curve release record to draw (its id, from `budget show --data D`); no data is read")
    p.add_argument("--out", required=True, metavar="FILE.svg|FILE.png|FILE.pdf",
                   help="where to write the figure: .svg, .pdf, or .png (300 dots per inch)")
    p.add_argument("--force", action="store_true", help="replace an existing file (symbolic links are never followed "
                                                        "or replaced)")
    add_ledger_options(p)


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dpsurv_core.report.files import Reserved
    from dpsurv_core.report.publication_figure import export_problem, figure_file, figure_shows, publication_figure

    out = Path(args.out)
    fmt = SUFFIXES.get(out.suffix.lower())
    if fmt is None:
        raise ParameterError(f"--out {args.out!r} must name an .svg, .png or .pdf file.")
    if (problem := export_problem()) is not None:  # before the ledger is read or anything is written
        raise ParameterError(problem)
    store = store_from_args(args)
    chain = store.verify()
    record = next((r for r in store.records() if r.id == args.record), None)
    if record is None:
        raise ParameterError(f"The ledger {str(store.path)!r} has no record {args.record}: `budget show --data D` "
                             "lists the releases.")
    if record.kind != RELEASE:
        raise ParameterError(f"Record {args.record} is a {record.kind} record, not a release: there is no figure to "
                             "draw.")
    fig = publication_figure(record.body, record.id)  # refuses a record that is not a curve release
    shows = figure_shows(record.body, record.id)
    reserved = Reserved(out, force=args.force)  # a path that cannot be written is refused before the export
    try:
        data = figure_file(fig, fmt, str(record.body.get("time") or record.time))
        reserved.write(data)
    finally:
        reserved.discard()
    warnings = [] if chain.ok else [f"The ledger chain is broken ({chain.message}): the record may have been edited."]
    return {"out": str(out), "format": fmt, "record_id": record.id, "new_release": False, "epsilon_spent": 0.0,
            "charged": f"nothing: a figure of release {record.id} (post-processing of its stored output and declared "
                       "values; no data read)",
            "mechanism": record.body.get("mechanism"), "dataset": record.body.get("dataset"), "chain": chain.status,
            "shows": shows.to_dict(), "warnings": warnings}
