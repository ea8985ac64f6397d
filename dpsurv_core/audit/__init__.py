"""Privacy audit: membership-inference diagnostics and an empirical epsilon next to the charged one.

Modules:
  attack   the distinguishing test: scores, thresholds, TPR/FPR with Clopper-Pearson bounds, ROC and
           the empirical epsilon lower bound
  targets  the target subject, its neighbouring data set D', and the influential points
  runner   simulated releases on D and D' for each analysis and :func:`~.runner.audit`
  result   the audit's result (:class:`~.result.AuditResult`): attacks, headline, tables, plain sentence
  adapters what the audit needs from an analysis: the curve and log-rank adapters
  model_adapters  the Weibull and regression adapters
  record   the audit of stored ledger records (the reader's output, not the mechanism's)
  exposure what a suppressed or rounded table still gives away (differencing)
  figures  plotly figures, the summary table and the report section

The entry points (:func:`audit`, :func:`record_audit`, :func:`empirical_epsilon`, :func:`compare`) and their result
types are re-exported here, imported on first use.
"""

from typing import TYPE_CHECKING

from dpsurv_core._lazy import attach

if TYPE_CHECKING:
    from dpsurv_core.audit.attack import Attack, clopper_pearson, empirical_epsilon, epsilon_lower_bound
    from dpsurv_core.audit.comparison import Comparison, ComparisonRow, compare
    from dpsurv_core.audit.exposure import Differencing, Exposure, differencing
    from dpsurv_core.audit.record import RecordAudit, record_audit
    from dpsurv_core.audit.runner import AuditResult, audit
    from dpsurv_core.audit.targets import Target

__all__ = ["Attack", "AuditResult", "Comparison", "ComparisonRow", "Differencing", "Exposure", "RecordAudit", "Target",
           "audit", "clopper_pearson", "compare", "differencing", "empirical_epsilon", "epsilon_lower_bound",
           "record_audit"]

__getattr__, __dir__ = attach(__name__, __all__, {
    "attack": ["Attack", "clopper_pearson", "empirical_epsilon", "epsilon_lower_bound"],
    "comparison": ["Comparison", "ComparisonRow", "compare"],
    "exposure": ["Differencing", "Exposure", "differencing"],
    "record": ["RecordAudit", "record_audit"],
    "runner": ["AuditResult", "audit"],
    "targets": ["Target"],
})
