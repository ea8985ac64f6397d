"""The uncertainty of a curve release, by concept: the bootstrap bands of a counts release
(:mod:`dpsurv_core.curves.bootstrap`), time-indexed's inverted band (:mod:`dpsurv_core.curves.time_indexed_bands`),
intervals read off a band (:mod:`dpsurv_core.curves.intervals`), what clamping does (:mod:`dpsurv_core.curves.clamping`)
and the sentences beside a release (:mod:`dpsurv_core.curves.curve_warnings`). This module re-exports their names for
the pages that read them from one place.
"""

from dpsurv_core.curves.bootstrap import (  # noqa: F401
    BOOTSTRAP_METHOD,
    DEFAULT_DRAWS,
    DRAW_BUDGET,
    INVERSION_METHOD,
    MIN_DRAWS,
    NOISE_ONLY,
    SAMPLING_INVERSION_METHOD,
    Bootstrap,
    _rrr_by_type,
    bootstrap_curves,
    carry_upper,
    draws_for,
    log_variance_from,
    monotone_band,
    plugin_parameters,
    redraw_counts,
    seed_from,
    simulate_counts,
    widen_between,
    with_bootstrap_bands,
)
from dpsurv_core.curves.clamping import (  # noqa: F401
    ClampingBias,
    _rrr_cell_bias,
    clamping_bias,
    declamped,
    laplace_clamping,
    rrr_clamping,
)
from dpsurv_core.curves.curve_warnings import (  # noqa: F401
    FEW_AT_RISK,
    RULES,
    _asked_and_used,
    _clamping_warnings,
    _disclosure_control_warnings,
    _empty_risk_set_warnings,
    _fmt,
    _index_at,
    _random_rounding_warnings,
    at_risk_notes,
    curve_warnings,
)
from dpsurv_core.curves.intervals import (  # noqa: F401
    incidence_band,
    incidence_limits,
    linear_crossing,
    nobody_left,
    quantile_limits,
    rmst_interval,
    rmst_sampling_variance,
    rmst_weights,
)
from dpsurv_core.curves.time_indexed_bands import (  # noqa: F401
    BAND_SHAPES,
    CENSORING_STEPS,
    FAMILY_SIZE,
    _cohort_curves,
    _family,
    _Key,
    _monotone_in_s,
    _pipeline_ranges,
    acceptance_ranges,
    sampled_curves,
    time_indexed_bands,
)
