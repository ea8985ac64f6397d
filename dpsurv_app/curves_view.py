"""Drawing and formatting for the survival-curve pages, plus the glue of "explore freely, release once".

No statistics here: every number comes from ``dpsurv_core`` (curves, curve_summary, logrank).
This module turns them into plotly figures and display tables, reads the mechanism choices, names
and papers from the catalogue, and builds each page's release :class:`~dpsurv_core.privacy.release.Plan`
with the command line that reproduces it. Pages show the plan's preview (seeded simulation noise,
no charge, never exported) and charge the ledger only through ``release_panel.release_button``.

The code lives in modules named for what they hold; this module re-exports their names, as the pages
(``from dpsurv_app import curves_view as cv``) and the tests read them here:

- :mod:`dpsurv_app.curve_format`: formatting and the pages' constants
- :mod:`dpsurv_app.curve_figures`: the plotly figures
- :mod:`dpsurv_app.curve_readings`: bands, quantiles, RMST and landmarks read off a release
- :mod:`dpsurv_app.curve_tables`: at-risk, comparison and log-rank tables
- :mod:`dpsurv_app.curve_mechanisms`: the catalogue's curve mechanisms and engine-kept tables
- :mod:`dpsurv_app.exact_curves`: the exact curves, cached
- :mod:`dpsurv_app.curve_plans`: release plans and their command lines
- :mod:`dpsurv_app.curve_release`: preview, release, option widgets and the privacy card
"""

from dpsurv_app.curve_figures import (  # noqa: F401 (re-exported: pages and tests import them from here)
    band_cut,
    curve_figure,
    figure_notes,
    off_scale,
    recolour,
    rrr_figure,
)
from dpsurv_app.curve_format import (  # noqa: F401 (re-exported: pages and tests import them from here)
    COLOURS,
    CONF_TYPE_NAMES,
    EPSILONS,
    NOT_RELEASED,
    QUANTILES,
    UNKNOWN_AT_RISK,
    estimand_axis,
    fmt_ci_time,
    fmt_interval,
    fmt_p,
    fmt_pct,
    fmt_stat,
    fmt_time,
    group_name,
    session_labels,
    uninformative,
)
from dpsurv_app.curve_mechanisms import (  # noqa: F401 (re-exported: pages and tests import them from here)
    ENGINE_BASELINE,
    engine_mechanisms,
    engine_note,
    has_groups,
    in_engine,
    label_only,
    mechanism_choices,
    mechanism_entry,
    mechanism_name,
    releases_counts,
    without_counts,
)
from dpsurv_app.curve_plans import (  # noqa: F401 (re-exported: pages and tests import them from here)
    command_line,
    curve_plan,
    data_options,
    event_type_options,
    grid_options,
    pooled,
    reading_mechanism,
    reading_names,
    reading_options,
    record_curves,
    timefix_option,
)
from dpsurv_app.curve_readings import (  # noqa: F401 (re-exported: pages and tests import them from here)
    band_arrays,
    band_caption,
    estimand_landmarks,
    incidence_caption,
    landmark_times_used,
    noise_in_band,
    quantiles,
    read_on_grid,
    readability_warnings,
    reading_curves,
    rmst_with_ci,
    survival_landmarks,
)
from dpsurv_app.curve_release import (  # noqa: F401 (re-exported: pages and tests import them from here)
    cached_preview,
    competing_cohort,
    declared_censoring_input,
    declared_sizes_input,
    explore_or_release,
    option_widgets,
    preview_spread_of,
    privacy_card,
)
from dpsurv_app.curve_tables import (  # noqa: F401 (re-exported: pages and tests import them from here)
    NON_PRIVATE,
    GroupTests,
    at_risk_table,
    comparison_table,
    exact_at_risk,
    group_tests,
    literal_table,
    logrank_table,
    named_groups,
    released_part,
    show_table,
    style_flips,
    test_label,
)
from dpsurv_app.exact_curves import (  # noqa: F401 (re-exported: pages and tests import them from here)
    counts_of_exact,
    data_key,
    empty_groups_warning,
    exact_results,
)
from dpsurv_core.curves.kaplan_meier import CONF_TYPES  # noqa: F401 (re-exported for the pages)
from dpsurv_core.privacy.release import cli_command  # noqa: F401 (re-exported for the pages)
