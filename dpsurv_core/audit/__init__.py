"""Privacy audit: membership-inference diagnostics and an empirical epsilon next to the charged one.

Modules:
  attack   the distinguishing test: scores, thresholds, TPR/FPR with Clopper-Pearson bounds, ROC and
           the empirical epsilon lower bound
  targets  the target subject, its neighbouring data set D', and the influential points
  runner   simulated releases on D and D' for each analysis (adapters) and :func:`~.runner.audit`
  figures  plotly figures, the summary table and the report section
"""
