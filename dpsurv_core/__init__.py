"""dpsurv_core: differentially private survival analysis.

Never imports Streamlit. Modules hold one concept each: ``io`` and ``cohort`` (data layer),
``public`` (declared parameters), ``ledger`` (privacy accounting), ``noise`` (release and
simulation random sources), and one module per estimator or mechanism family.
"""

__version__ = "0.1.0"
