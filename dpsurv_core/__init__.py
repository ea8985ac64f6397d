"""dpsurv_core: differentially private survival analysis.

Never imports Streamlit. The public Python API is re-exported here (:mod:`dpsurv_core.api`, imported on first use):
``PrivateKaplanMeier``, ``PrivateLogRank``, ``PrivateWeibull``, ``PrivateDiscreteTimeRegression``, ``Audit`` and
``load_dataset``. Sub-packages:

- ``api``: the lifelines-style fitters, which run the command-line commands' release path;
- ``cli``: ``python -m dpsurv_core <command>``, one module per command;
- ``data``: reading files, the bundled data sets, cohorts, declared (public) parameters;
- ``engines``: statistics computed where the data lives (pandas, DuckDB, Spark);
- ``privacy``: the mechanism catalogue, the ledger, the release protocol, noise sources, fingerprints;
- ``publication``: what a release record holds and how its readable part is derived;
- ``curves``: survival curves, cumulative incidence and log-rank tests, private and exact;
- ``weibull`` and ``regression``: parametric and regression mechanisms;
- ``disclosure``: statistical disclosure control, audited beside DP;
- ``audit``: membership-inference audits and an empirical epsilon;
- ``planning``: the epsilon a study needs, from its declaration alone;
- ``report``: HTML reports and the publication figure.

Modules ``errors`` (the errors a user can fix), ``limits``, ``extras`` and ``tradeoff`` sit at the top.

Each sub-package names its public API in ``__all__`` (``from dpsurv_core.curves import LaplaceCounts``), imported on
first use; docs/reference.md documents those names. Any other name is internal and may change.
"""

from typing import Any

__version__ = "0.1.0"

__all__ = ["Audit", "PrivateDiscreteTimeRegression", "PrivateKaplanMeier", "PrivateLogRank", "PrivateWeibull", "__version__",
           "load_dataset"]


def __getattr__(name: str) -> Any:
    """The API's names, imported on first use (the command line starts without pandas' import time)."""
    if name in __all__ and name != "__version__":
        from dpsurv_core import api

        return getattr(api, name)
    raise AttributeError(f"module 'dpsurv_core' has no attribute {name!r}")
