"""Imports, while the server is idle, the heavy libraries the analysis pages need on their first view.

A page's first view on a freshly started server pays for every library it is the first to import: SciPy's optimize
package (the isotonic regression that reads laplace-counts' curves), pandas' Styler (which imports matplotlib's
pyplot), Streamlit's emoji table, lifelines and scipy.stats (the Weibull page's lifelines fit), plotly's subplots and
templates. Measured with ``python -X importtime`` after the Data page had run, these were 0.3 to 1.3 s of the first
views of Survival curves, Group comparison and Weibull parameters. Here one thread per server process imports them,
one module at a time, only while no script runs (``app.py`` brackets each run's page with :func:`script_started` and
:func:`script_finished`); a run that starts during such an import waits for it to finish, so a page and this thread
never import at the same time (two threads importing the same packages could otherwise meet in importlib's
deadlock detection). Nothing is computed and no process is started: only modules are loaded, and a module that is
missing is skipped (the page that needs it says so). (Starting the Weibull page's background worker here as well, so
that its first view could simulate its intervals there, made that first view slower on two shared cores.)
"""

from __future__ import annotations

import ast
import importlib
import sys
import threading
import time
from collections.abc import Callable
from functools import partial, wraps
from typing import Any

# in the order the pages need them (Survival curves, Group comparison, Weibull parameters); large packages are split
# into the steps their own imports take, so that a run starting meanwhile waits for a short step only
MODULES: tuple[str, ...] = (
    "scipy.linalg", "scipy.optimize",  # laplace-counts' isotonic regression (dpsurv_core.curves.clamping)
    "dpsurv_core.cli.km", "plotly.subplots", "dpsurv_app.curves_view", "dpsurv_core.report.palette", "kaleido",
    "streamlit.emojis",  # an alert with an emoji icon
    "matplotlib", "matplotlib.pyplot", "pandas.io.formats.style",  # a Styler (highlighted table rows)
    "scipy.special", "scipy.integrate", "scipy.interpolate", "scipy.stats", "autograd", "lifelines",
    "dpsurv_core.weibull.inference", "dpsurv_core.weibull.readout",
    # the Weibull page starts its worker with them (dpsurv_app.cache)
    "concurrent.futures.process", "multiprocessing.spawn", "multiprocessing.resource_tracker",
)
IDLE_S = 0.3  # how long no script must have run before the next import
WAIT_S = 10.0  # the longest a starting run waits for an import under way
STALE_S = 120.0  # a run not seen to finish (its script stopped before the bracket's end) counts this long at most

_AST_LOCK = threading.RLock()


def _serialise_ast_parse() -> None:
    """Let one thread at a time run :func:`ast.parse` in this process (Python before 3.13).

    CPython 3.11 and 3.12 keep the depth counter of the AST-to-object conversion in interpreter-wide state, so two
    threads parsing at once can fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython issue
    gh-106905). Streamlit parses every page script (its "magic" pass) in the script thread before the page runs, and
    matplotlib's import, one of this thread's steps, parses its style cycles; the two met on a page's first run.
    A direct ``compile(..., ast.PyCF_ONLY_AST)`` is not covered (anyio's lazy imports make one, at the server's start,
    before this thread runs): a step added to :data:`MODULES` must not import such a module.
    """
    if sys.version_info >= (3, 13) or getattr(ast.parse, "_dpsurv_serialised", False):
        return
    parse = ast.parse

    @wraps(parse)
    def serialised(*args: Any, **kwargs: Any) -> Any:
        with _AST_LOCK:
            return parse(*args, **kwargs)

    serialised._dpsurv_serialised = True  # type: ignore[attr-defined]
    ast.parse = serialised


_serialise_ast_parse()

_cond = threading.Condition()
_runs: dict[str, float] = {}  # session id -> when its current run started
_importing = False
_last_run = time.monotonic()
_thread: threading.Thread | None = None


def _session() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return ctx.session_id if ctx is not None else threading.current_thread().name


def script_started() -> None:
    """A script run of this session begins: wait for an import under way (at most :data:`WAIT_S`), then hold further
    imports until :func:`script_finished`."""
    session = _session()
    with _cond:
        _runs[session] = time.monotonic()  # first, so that no further import begins
        _cond.wait_for(lambda: not _importing, timeout=WAIT_S)


def script_finished() -> None:
    """This session's run has ended (normally, stopped or rerun): imports may resume once no run has been seen for
    :data:`IDLE_S`."""
    global _last_run
    session = _session()
    with _cond:
        _runs.pop(session, None)
        _last_run = time.monotonic()
        _cond.notify_all()


def start() -> None:
    """Start this process's warm-up thread (once; later calls do nothing)."""
    global _thread
    with _cond:
        if _thread is not None:
            return
        _thread = threading.Thread(target=_work, name="dpsurv-warmup", daemon=True)
    _thread.start()


def _running() -> bool:  # with _cond held
    now = time.monotonic()
    return any(now - t < STALE_S for t in _runs.values())


def _idle() -> bool:  # with _cond held
    return not _running() and time.monotonic() - _last_run >= IDLE_S


def _step(work: Callable[[], object]) -> None:
    """Run ``work`` once the server is idle, holding back script runs that start meanwhile."""
    global _importing
    with _cond:
        while not _idle():
            _cond.wait(timeout=1.0 if _running() else 0.05)
        _importing = True
    try:
        work()
    except Exception:  # noqa: BLE001, S110 - an optional library missing or broken: the page that needs it says so
        pass
    finally:
        with _cond:
            _importing = False
            _cond.notify_all()


def _work() -> None:
    for name in MODULES:
        _step(partial(importlib.import_module, name))


def done() -> bool:
    """Whether every module of :data:`MODULES` has been imported (or skipped) in this process."""
    return _thread is not None and not _thread.is_alive()
