"""The app's session state: current data set, column map, public parameters, ledger.

Uploaded bytes live only in ``st.session_state`` (this browser session's memory): never written
to disk or logged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeGuard

import pandas as pd
import streamlit as st

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import Cohort, ColumnMap, Problem, default_mapping, validate
from dpsurv_core.data.labels import ValueLabels
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy.fingerprint import fingerprint
from dpsurv_core.privacy.ledger import Ledger, LedgerStore
from dpsurv_core.privacy.noise import preview_seed_for
from dpsurv_core.privacy.roles import Actor, load_roles, local_actor
from dpsurv_core.report.text import markdown_literal

if TYPE_CHECKING:  # a value type only: the engines are imported when a server table is opened
    from dpsurv_core.engines.cohort import EngineCohort

DEFAULT_DATASET = "lung"


@dataclass
class DataChoice:
    """What the Data page decided: the table, its mapping and the declared public parameters."""

    name: str
    frame: pd.DataFrame
    mapping: ColumnMap
    time_unit: str
    bundled: bool
    horizon: float | None = None  # declared; None = derive from data (disclosed)
    bins: int = 20
    group_categories: tuple[str, ...] | None = None
    covariate_ranges: dict[str, tuple[float, float]] = field(default_factory=dict)
    source_unit: str | None = None  # unit of the time column in the file; ``frame`` holds it in ``time_unit``
    event_time_grid: bool = False  # use the data's event times as the grid ("not DP", disclosed)
    fingerprint: str = ""  # content fingerprint of the table as loaded (the key of its budget in the ledger)
    # a server table too large to read into memory: its validated EngineCohort (dpsurv_core.engines); ``frame`` then
    # holds no rows (only the table's column names) and the counting pages query the engine
    engine: EngineCohort | None = None
    # declared on the Data page (never read off the data; a bundled data set's documented design prefills them):
    grid: str | None = None  # the time grid START:STOP:BINS in ``time_unit``; None: ``bins`` equal bins to the horizon
    categories: dict[str, tuple[str, ...]] = field(default_factory=dict)  # declared categories per column
    n_public: int | None = None  # the number of subjects, as the study design (or the R package) gives it
    censoring: float | None = None  # the censoring share the study design expects (0 to 1)

    def __post_init__(self) -> None:
        if not self.fingerprint:
            self.fingerprint = fingerprint(self.frame)

    @property
    def rows(self) -> int:
        """Rows of the table in use (read, or counted in the engine for a server table kept there)."""
        return int(self.engine.summary.rows_in_source) if self.engine is not None else len(self.frame)


def _bundled_choice(name: str) -> DataChoice:
    """A bundled data set with what its documentation declares: the covariates' bounds, the codes its R
    documentation lists for each labelled column (the group categories among them) and its published size; nothing
    documents a horizon, a grid or a censoring share, so those stay undeclared."""
    d = datasets.info(name)
    group = d.groups[0] if d.groups else None
    documented = {str(c): tuple(str(k) for k in codes) for c, codes in d.labels.values.items() if codes}
    return DataChoice(name, datasets.load(name), default_mapping(name, group=group, covariates=d.covariates[:2]),
                      d.time_unit, True, group_categories=documented.get(group) if group else None,
                      covariate_ranges=dict(d.bounds), source_unit=d.time_unit, categories=documented,
                      n_public=datasets.published_size(name))


def data_choice() -> DataChoice:
    """The current data choice (lung, bundled, until the Data page changes it)."""
    if "data_choice" not in st.session_state:
        st.session_state["data_choice"] = _bundled_choice(DEFAULT_DATASET)
    return st.session_state["data_choice"]


def set_data_choice(choice: DataChoice) -> None:
    """Make ``choice`` the data every page analyses."""
    st.session_state["data_choice"] = choice


def bundled_choice(name: str) -> DataChoice:
    """A bundled data set with its declared columns, first group column and first two covariates."""
    return _bundled_choice(name)


def validated() -> tuple[Cohort | None, list[Problem]]:
    """The current cohort (None if the mapping has errors) and every problem found. A server table kept in the engine
    was validated there (the same sentences) when the Data page opened it: its EngineCohort."""
    choice = data_choice()
    if choice.engine is not None:
        return choice.engine, []
    cohort, problems = validate(choice.frame, choice.mapping)
    if cohort is not None:
        cohort.name, cohort.time_unit = choice.name, choice.time_unit
    return cohort, problems


def current_cohort() -> Cohort | None:
    """The current cohort, or None when the mapping has errors."""
    return validated()[0]


def require_cohort() -> Cohort:
    """The current cohort, or stop the page with a message pointing to the Data page (also while an upload's guessed
    columns wait for the user's confirmation there)."""
    if needs_confirmation():
        st.info(f"The columns of '{markdown_literal(data_choice().name)}' were guessed from the file: check and confirm "
                "them on the Data page (section 2) before analysing it.", icon=":material/fact_check:")
        st.stop()
    cohort, problems = validated()
    if cohort is None:
        first = next(p for p in problems if p.severity == "error")
        st.error(f"The current data cannot be analysed: {markdown_literal(first.message)} Fix it on the Data page.")
        st.stop()
    return cohort


def _kept_in_engine(cohort: Cohort) -> TypeGuard[EngineCohort]:
    """Whether ``cohort`` is a server table kept in an engine (it derives its public parameters from its summary)."""
    return hasattr(cohort, "public_parameters")


def public_parameters(cohort: Cohort | None = None) -> PublicParameters:
    """The declared public parameters; anything not declared is derived from the data and disclosed."""
    cohort = cohort or require_cohort()
    c = data_choice()
    grid = declared_grid(c)
    horizon = c.horizon if c.horizon is not None or grid is None else float(grid.edges[-1])  # as --grid alone
    if _kept_in_engine(cohort):  # kept in an engine: the same derivation from its summary
        grid = cohort.event_time_grid() if c.event_time_grid else grid
        return cohort.public_parameters(horizon=horizon, bins=c.bins, grid=grid, group_categories=c.group_categories)
    ranges = {k: v for k, v in c.covariate_ranges.items() if k in cohort.covariates.columns}
    grid = TimeGrid.event_times(cohort) if c.event_time_grid else grid
    return PublicParameters.derive(cohort, horizon=horizon, bins=c.bins, grid=grid,
                                   group_categories=c.group_categories, covariate_ranges=ranges,
                                   source_factor=source_factor(c))


def declared_grid(c: DataChoice) -> TimeGrid | None:
    """The time grid declared on the Data page (``START:STOP:BINS`` in the unit the pages show), or None."""
    return TimeGrid.parse(c.grid) if c.grid else None


def source_factor(c: DataChoice) -> float:
    """Multiply a time in the unit the pages show by this to get it in the unit the file stores (1 when they agree
    or either is not a unit dpsurv knows): what the command line, which reads the file's own unit, is given."""
    from dpsurv_core.data.summary import factor_or_one

    return factor_or_one(c.time_unit, c.source_unit or c.time_unit)


def analysis_inputs() -> tuple[Cohort, DataChoice, PublicParameters]:
    """What every analysis page starts from: the validated cohort, the Data page's choice and the public
    parameters; or the page stops with a sentence pointing to the Data page."""
    from dpsurv_core.errors import DpsurvError

    cohort = require_cohort()
    try:
        public = public_parameters(cohort)
    except DpsurvError as exc:
        st.error(f"{markdown_literal(exc)} Fix the public parameters on the Data page.")
        st.stop()
    return cohort, data_choice(), public


def store() -> LedgerStore:
    """The persistent ledger database shared with the command line (``$DPSURV_LEDGER`` or the default path), acting
    as this session's person (:func:`actor`): the store refuses acts their role does not allow."""
    return LedgerStore(actor=actor())


def sign_in_required() -> bool:
    """Whether this app is served with OpenID Connect sign-in (an ``[auth]`` section in its secrets)."""
    from dpsurv_app.serving import sign_in_configured

    return sign_in_configured(st.secrets)


def signed_in_names() -> tuple[str, list[str], list[str]]:
    """(shown name, names the roles file may use, groups) of the signed-in user, from the provider's claims."""
    user = st.user
    names = [str(v) for v in (user.get("email"), user.get("preferred_username"), user.get("sub")) if v]
    claimed: object = user.get("groups") or []
    groups = [str(g) for g in (claimed if isinstance(claimed, list) else [claimed])]
    return (names[0] if names else "unknown user"), names, groups


def actor() -> Actor:
    """The person acting in this session: on this machine without sign-in, the data holder with every role; in a
    served app, the signed-in user with the role the roles file gives them (none: :data:`NO_ROLE`)."""
    if not sign_in_required():
        return local_actor()
    if not st.user.is_logged_in:
        return Actor("not signed in", NO_ROLE, False)
    shown, names, groups = signed_in_names()
    role = load_roles().role_of(names, groups)
    return Actor(shown, role or NO_ROLE, True)


NO_ROLE = "none"


def may(act: str) -> bool:
    """Whether this session's person may perform ``act`` (:mod:`dpsurv_core.privacy.roles`)."""
    return actor().may(act)


def cli_data(choice: DataChoice | None = None) -> str:
    """What ``--data`` names the current data set on the command line: its bundled name, a server table's path (or
    ``duckdb:PATH:TABLE``), or the uploaded file's path (a placeholder: the app never learns where the file lives)."""
    import shlex

    choice = choice or data_choice()
    on_server = choice.engine is not None or st.session_state.get("server_source_name") == choice.name
    if choice.bundled or on_server:  # a server table: the CLI reads the same path or DuckDB table
        return shlex.quote(choice.name)
    return shlex.quote(f"PATH/TO/{choice.name.split(' [')[0]}")


def cli_budget_command(action: str, extra: str = "") -> str:
    """The ``budget`` command line for the current data set, e.g. ``cli_budget_command("set", "--cap C")``."""
    choice = data_choice()
    sheet = ""
    if not choice.bundled and choice.name.endswith("]") and " [" in choice.name:
        import shlex

        sheet = " --sheet " + shlex.quote(choice.name.rsplit(" [", 1)[1][:-1])
    return f"python -m dpsurv_core budget {action} --data {cli_data(choice)}{sheet}{' ' + extra if extra else ''}"


def ledger() -> Ledger:
    """The current data set's ledger, read from the database: its cap and every release recorded for it, by this
    tab, another tab, another process or the command line."""
    return store().ledger(data_choice().fingerprint)


def preview_seed(key: Mapping[str, Any]) -> int:
    """The seed of one preview, derived from this session's 128-bit secret (``st.session_state["preview_seed"]``,
    ``secrets.randbits(128)`` on first use) and the preview's ``key`` (mechanism, epsilon, settings) by
    :func:`~dpsurv_core.privacy.noise.preview_seed_for`: the same settings show the same draw (moving a widget back
    shows it again), and previews at two epsilons have independent noise, so they cannot be combined into the exact
    value."""
    if "preview_seed" not in st.session_state:
        import secrets

        st.session_state["preview_seed"] = secrets.randbits(128)
    return preview_seed_for(st.session_state["preview_seed"], key)


# ---------------------------------------------------------------------- value labels and the upload's confirmation
_LABELS, _UNCONFIRMED = "value_labels", "unconfirmed_upload"


def value_labels(choice: DataChoice | None = None) -> ValueLabels:
    """The value labels and column kinds of the data in use: for a bundled data set the R documentation's, with the
    user's changes on top; for an upload the user's (starting from what the upload guess proposed). They live in
    this session only (never on disk), keyed by the table's fingerprint."""
    choice = choice or data_choice()
    own = st.session_state.get(_LABELS, {}).get(choice.fingerprint, ValueLabels())
    if choice.bundled:
        return datasets.info(choice.name).labels.merged(own)
    return own


def labels_file(choice: DataChoice | None = None) -> str:
    """The file name the Data page's 'Labels as JSON' saves under, which the commands it prints read (--labels)."""
    from dpsurv_app.downloads import file_stem

    return f"{file_stem((choice or data_choice()).name)}-labels.json"


def relabelled(columns: Any, choice: DataChoice | None = None) -> list[str]:
    """Those of ``columns`` whose labels in this session differ from what the command line knows without a file
    (a bundled data set's own labels; none for anything else)."""
    from dpsurv_core.data.labels import bundled

    choice = choice or data_choice()
    own, shipped = value_labels(choice), bundled(choice.name)
    return [c for c in columns if c is not None and own.labels_for(c) != shipped.labels_for(c)]


def set_value_labels(labels: ValueLabels, choice: DataChoice | None = None) -> None:
    """Keep ``labels`` for the data in use (for a bundled data set: the changes on top of its shipped labels)."""
    choice = choice or data_choice()
    st.session_state.setdefault(_LABELS, {})[choice.fingerprint] = labels


def has_own_labels(choice: DataChoice | None = None) -> bool:
    """True when the user has kept labels (or kinds) for this table in this session."""
    choice = choice or data_choice()
    return choice.fingerprint in st.session_state.get(_LABELS, {})


def group_label(code: object, choice: DataChoice | None = None) -> str:
    """The label of a code of the current group column (the code itself when it has none)."""
    choice = choice or data_choice()
    return value_labels(choice).label(choice.mapping.group, code)


def mark_unconfirmed(choice: DataChoice) -> None:
    """An upload whose columns were guessed: analysis pages wait until :func:`confirm` (the Data page's button)."""
    st.session_state[_UNCONFIRMED] = choice.fingerprint


def confirm() -> None:
    st.session_state.pop(_UNCONFIRMED, None)


def needs_confirmation(choice: DataChoice | None = None) -> bool:
    """True while the data in use is an upload whose guessed columns the user has not confirmed."""
    choice = choice or data_choice()
    return not choice.bundled and st.session_state.get(_UNCONFIRMED) == choice.fingerprint


# ---------------------------------------------------------------------- a server table kept in the engine
COUNTING_PAGES = (("pages/2_Survival_curves.py", "Survival curves"), ("pages/3_Group_comparison.py", "Group comparison"),
                  ("pages/4_Weibull_parameters.py", "Weibull parameters"))


def in_engine(choice: DataChoice | None = None) -> bool:
    """True when the data in use is a server table kept in the engine (too large to read into memory)."""
    return (choice or data_choice()).engine is not None


def kept_engine(choice: DataChoice | None = None) -> EngineCohort:
    """The server table kept in the engine that the data in use is (for code that runs only when :func:`in_engine`)."""
    engine = (choice or data_choice()).engine
    if engine is None:
        raise RuntimeError("The data in use is not a server table kept in an engine.")
    return engine


def engine_cohort(mapping: ColumnMap) -> Cohort:
    """The server table in use with another column map (e.g. without its group), validated in the same engine;
    kept per session, keyed by the source and the map (dpsurv_app.cache.session_cache)."""
    from dpsurv_app.cache import session_cache
    from dpsurv_core.engines import open_cohort

    base = kept_engine()
    if mapping == base.mapping:
        return base

    def build() -> Cohort:
        return open_cohort(base.engine.source, base.engine, mapping, base.name, base.time_unit, base.purpose,
                           base.chunk_rows)

    return session_cache(("engine_cohort", base.engine.source, base.name, base.time_unit, mapping), build)


def row_limit(cohort: EngineCohort) -> tuple[int, int]:
    """The app's in-memory row limit for a server table (every column read: ``DPSURV_MAX_CLI_CELLS`` / columns) and
    its number of columns."""
    from dpsurv_core import limits

    columns = max(len(cohort.engine.columns()), 1)
    return limits.max_cli_cells() // columns, columns


def too_large_sentence(choice: DataChoice, analysis: str, plural: bool = False) -> str:
    """The one sentence a page (or a mechanism: ``plural`` for several) that needs each subject's values says about a
    server table kept in the engine: the table's rows against the app's row limit and its variable."""
    from dpsurv_core.limits import CLI_CELLS_ENV

    limit, columns = row_limit(kept_engine(choice))
    return (f"'{markdown_literal(choice.name)}' lives on the server and is too large for {analysis} here: its "
            f"{choice.rows:,} rows are more than the {limit:,} rows of {columns} columns the app reads into memory "
            f"({CLI_CELLS_ENV}), and {analysis} {'need' if plural else 'needs'} each subject's values.")


def require_rows(analysis: str) -> None:
    """Stop a page that needs each subject's values when the data in use is a server table kept in the engine: one
    sentence naming the limit, then what is possible (the counting pages; a smaller extract or a higher limit)."""
    choice = data_choice()
    if choice.engine is None:
        return
    from streamlit.errors import StreamlitAPIException

    from dpsurv_core.privacy import catalogue

    def in_engine(family: str, command: str) -> str:  # the catalogue's mechanisms that run from an engine's counts
        return "; ".join(e.name for e in catalogue.entries(family, command) if "duckdb" in e.engines)

    st.info(too_large_sentence(choice, analysis), icon=":material/dns:")
    st.markdown(f"What works on it here, from the counts DuckDB computes in the file: **Survival curves** and **Group "
                f"comparison** ({in_engine(catalogue.CURVES, 'km')}) and **Weibull parameters** "
                f"({in_engine(catalogue.WEIBULL, 'weibull')}). For {analysis}, choose a smaller extract of the table "
                "on the Data page, or ask the administrator to raise the limit.")

    for page, label in COUNTING_PAGES:
        try:
            st.page_link(page, label=label, icon=":material/arrow_forward:")
        except StreamlitAPIException:  # a page run on its own (outside app.py's navigation) has no link targets
            break
    st.stop()


# a page's settings (epsilon, mechanism, grouping, options, declared sizes): its widget keys, buttons and downloads left out
_SETTING = re.compile(r"^(sc|gc|wb|rg|to|au|pl)_[A-Za-z0-9_]+$")
_NOT_SETTING = re.compile(r"(^wb_run_study$|^rg_run_(study|chains)$|^to_run$|^to_csv$|^au_run$|^rg_partial_)")


def keep_settings() -> None:
    """Keep every page's settings while the person visits other pages (this session only): Streamlit drops a widget's
    value when a run does not draw it, so each page would come back at its defaults. Setting a key through
    ``st.session_state`` at the top of each run keeps it (Streamlit's documented way across pages); only value widgets
    are kept (never a button, a download or a long study's switch)."""
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and _SETTING.match(key) and not _NOT_SETTING.search(key):
            st.session_state[key] = st.session_state[key]
