"""Reports: self-contained HTML (and PDF) reports of releases and audits, and the publication figure.

A :class:`Report` collects sections; :func:`ledger_report` and :func:`record_report` write one from stored ledger
records (nothing re-read from the data), :func:`export_bundle` the report with its files. :func:`figure_file` writes
a stored curve release's publication figure (:mod:`~dpsurv_core.report.publication_figure`). Drawing needs plotly
(the ``app`` extra) and PDF Playwright (the ``pdf`` extra); names are imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.report.figures import curves_figure
    from dpsurv_core.report.files import Outputs
    from dpsurv_core.report.html import AuditItem, ReleaseItem, Report, export_bundle, ledger_report, session_report
    from dpsurv_core.report.pdf import PdfUnavailable, html_to_pdf
    from dpsurv_core.report.publication_figure import figure_file
    from dpsurv_core.report.stored import record_report

__all__ = ["AuditItem", "Outputs", "PdfUnavailable", "ReleaseItem", "Report", "curves_figure", "export_bundle",
           "figure_file", "html_to_pdf", "ledger_report", "record_report", "session_report"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "figures": ["curves_figure"],
    "files": ["Outputs"],
    "html": ["AuditItem", "ReleaseItem", "Report", "export_bundle", "ledger_report", "session_report"],
    "pdf": ["PdfUnavailable", "html_to_pdf"],
    "publication_figure": ["figure_file"],
    "stored": ["record_report"],
})
