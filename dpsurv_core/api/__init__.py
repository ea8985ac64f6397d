"""The public Python API: lifelines-style fitters whose releases go through the same protocol and ledger as the CLI.

Each fitter runs the matching command (``km``, ``logrank``, ``weibull``, ``regression``) with its parameters as
options, so that its numbers are the command's: ``.release(df, ...)`` is a charged, recorded release;
``.simulate(df, ..., seed=...)`` a seeded simulation, never recorded. :class:`Audit` runs ``audit``: a simulation,
never charged.
"""

from dpsurv_core.api.audit import Audit
from dpsurv_core.api.curves import PrivateKaplanMeier
from dpsurv_core.api.datasets import Dataset, load_dataset
from dpsurv_core.api.logrank import PrivateLogRank
from dpsurv_core.api.regression import PrivateDiscreteTimeRegression
from dpsurv_core.api.weibull import PrivateWeibull

__all__ = ["Audit", "Dataset", "PrivateDiscreteTimeRegression", "PrivateKaplanMeier", "PrivateLogRank", "PrivateWeibull",
           "load_dataset"]
