"""The optional extras of the ``dpsurv`` package: which command or engine needs which one, checked without importing.

The core (the command line's releases, readings, budget and planning) needs only the dependencies of
``pip install dpsurv``. The HTML report and the publication figure draw with plotly (extra ``app``), a PDF report prints
through Playwright (extra ``pdf``), ``--engine spark`` runs on PySpark (extra ``spark``) and a ``postgresql://`` ledger
talks to its server through psycopg (extra ``postgres``): each is imported only where it is used, and where it is missing the command exits 2 with one sentence naming the extra to install.
"""

from __future__ import annotations

import importlib.util

# the Python module -> the extra of ``pip install dpsurv[EXTRA]`` that installs it
EXTRA_OF = {"plotly": "app", "kaleido": "app", "streamlit": "app", "authlib": "app", "playwright": "pdf",
            "pyspark": "spark", "psycopg": "postgres"}


def installed(module: str) -> bool:
    """Whether ``module`` can be imported here (found, not imported: importing PySpark or plotly takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def install_hint(module: str) -> str:
    """The pip command that installs ``module`` with dpsurv, e.g. ``pip install 'dpsurv[spark]'``."""
    return f"pip install 'dpsurv[{EXTRA_OF[module]}]'"


def missing_sentence(what: str, module: str) -> str | None:
    """None when ``module`` is installed; otherwise one sentence: ``what`` needs it and how to install it."""
    if installed(module):
        return None
    return f"{what} needs the Python package {module}, which is not installed: {install_hint(module)}."
