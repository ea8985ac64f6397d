"""The bridge between the Python API and the command line: one road to every number.

Each fitter of :mod:`dpsurv_core.api` writes its parameters as the command line's options, parses them with the
command's own parser (so defaults and checks are the CLI's) and runs the command through
:func:`dpsurv_core.cli.run_parsed`, exactly as ``python -m dpsurv_core`` does: a release goes through the release
protocol (:func:`dpsurv_core.privacy.release.release`) and the ledger, a simulation draws seeded noise and touches no
ledger. A DataFrame is handed to the command as the rows of ``--data`` (named by ``dataset``), without a file.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Self

import pandas as pd

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.release import option_text, option_words

DEFAULT_NAME = "dataframe"


def grid_text(grid: Any) -> str | None:
    """``(start, stop, bins)`` as ``START:STOP:BINS``; a string (``"event-times"``) as it is."""
    if grid is None or isinstance(grid, str):
        return grid
    try:
        start, stop, bins = grid
    except (TypeError, ValueError):
        raise ParameterError(f"grid={grid!r} is not (start, stop, bins) nor 'event-times'.") from None
    return f"{option_text(float(start))}:{option_text(float(stop))}:{int(bins)}"


def data_options(df: Any, duration_col: str | None, event_col: str | None, group_col: str | None,
                 dataset: str | None) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """The ``--data`` options of ``df`` and the frame handed over with them (None for a name or a path): a
    :class:`~dpsurv_core.api.datasets.Dataset` is its bundled data set, a string is ``--data`` itself, a DataFrame is
    read as a data file's rows, named ``dataset``."""
    from dpsurv_core.api.datasets import Dataset
    from dpsurv_core.data import datasets

    cols = {"time": duration_col, "event": event_col, "group": group_col}
    if isinstance(df, Dataset):
        return {"data": df.name, **cols}, None
    if isinstance(df, str):
        return {"data": df, **cols}, None
    if not isinstance(df, pd.DataFrame):
        raise ParameterError(f"df must be a pandas DataFrame, a bundled data set or a file path, got "
                             f"{type(df).__name__}.")
    name = dataset or DEFAULT_NAME
    if name in datasets.DATASETS:
        raise ParameterError(f"dataset={name!r} names a bundled data set: pass load_dataset({name!r}) as df to use it, "
                             "or give your own rows another name.")
    if not duration_col or not event_col:
        raise ParameterError("A DataFrame needs duration_col and event_col naming its time and event columns.")
    return {"data": name, **cols}, df


def run(command: str, options: Mapping[str, Any], frame: pd.DataFrame | None = None) -> dict[str, Any]:
    """Run ``command`` with ``options`` as ``python -m dpsurv_core COMMAND ... --json`` would, returning its printed
    JSON as Python objects (errors raised: :class:`~dpsurv_core.errors.BudgetExceededError`, ...)."""
    from dpsurv_core.cli import UsageError, _clean, build_parser, run_parsed

    argv = [command, *option_words(options), "--json"]
    try:
        args = build_parser(command).parse_args(argv)
    except UsageError as exc:
        raise ParameterError(str(exc)) from None
    args._argv = list(argv)
    if frame is not None:
        args._frame = frame
    result = run_parsed(args)
    return json.loads(json.dumps(_clean(result), allow_nan=False))


def record_body(record_id: int, ledger: str | None = None) -> dict[str, Any]:
    """The stored body of ledger record ``record_id`` (the ledger ``ledger``, else ``$DPSURV_LEDGER``'s)."""
    from dpsurv_core.privacy.ledger import LedgerStore

    record = next((r for r in LedgerStore(ledger).records() if r.id == record_id), None)
    if record is None:
        raise ParameterError(f"The ledger has no record {record_id}.")
    return record.body


class Fitter:
    """What every fitter shares: its options, ``release`` and ``simulate``, and the command's output.

    Subclasses set ``command`` and read the output into lifelines-like attributes in ``_read``.
    """

    command: str = ""

    def __init__(self, mechanism: str, epsilon: float, **options: Any) -> None:
        self.mechanism = mechanism
        self.epsilon = epsilon
        self.options = dict(options)
        self.result_: dict[str, Any] = {}
        self.record_id_: int | None = None
        self.publishable_: dict[str, Any] | None = None
        self.ledger_: str | None = None

    def __repr__(self) -> str:
        done = f", record_id_={self.record_id_}" if self.record_id_ is not None else ""
        return f"<{type(self).__name__} mechanism={self.mechanism!r} epsilon={self.epsilon!r}{done}>"

    def _options(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "epsilon": self.epsilon, **self.options}

    def _run(self, df: Any, duration_col: str | None, event_col: str | None, group_col: str | None,
             dataset: str | None, more: dict[str, Any]) -> Self:
        data, frame = data_options(df, duration_col, event_col, group_col, dataset)
        out = run(self.command, {**data, **self._options(), **more}, frame)
        self.result_ = out
        self.publishable_ = out.get("publishable")
        self.record_id_ = out.get("record_id") if self.publishable_ is not None else None
        self.ledger_ = out.get("ledger_path")
        self._read(out)
        return self

    def release(self, df: Any, duration_col: str | None = None, event_col: str | None = None,
                group_col: str | None = None, ledger: str | None = None, dataset: str | None = None,
                cap: float | None = None) -> Self:
        """Release through the release protocol and the ledger, as the command line does: the cost is checked
        against the data set's cap before anything is drawn, the noise comes from the release source (never a seed)
        and the release is recorded, hash-chained, with its publication.

        Parameters
        ----------
        df : Dataset, pandas.DataFrame or str
            A bundled data set (:func:`~dpsurv_core.api.datasets.load_dataset`), a DataFrame of one row per
            subject (or several with ``id=``), or what ``--data`` takes (a bundled name or a file path).
        duration_col, event_col : str, optional
            The time and event columns (a bundled data set has documented ones).
        group_col : str, optional
            The group column.
        ledger : str, optional
            The ledger database; default ``$DPSURV_LEDGER``, as on the command line.
        dataset : str, optional
            The name of a DataFrame's data set in the ledger (default ``"dataframe"``); the budget is keyed by the
            rows' content fingerprint, as for a file.
        cap : float, optional
            Set the data set's budget cap if it has none (``--cap``); a different existing cap is refused.

        Returns
        -------
        self
            With ``record_id_``, ``publishable_`` and the fitted attributes read from the record.

        Raises
        ------
        dpsurv_core.errors.BudgetExceededError
            When the release would exceed the data set's cap: nothing is drawn or recorded.
        dpsurv_core.errors.ParameterError, dpsurv_core.errors.DataError
            For options or data the command line would refuse, with its sentence.

        Examples
        --------
        >>> from dpsurv_core import PrivateKaplanMeier, load_dataset
        >>> km = PrivateKaplanMeier(epsilon=0.5, grid=(0, 150, 5))
        >>> km.release(load_dataset("leukemia"), group_col="x", cap=1.0).record_id_ == km.publishable_["record_id"]
        True

        References
        ----------
        .. [1] Dwork C. & Roth A. (2014), The Algorithmic Foundations of Differential Privacy (sequential
           composition, which the ledger's cap enforces).
        """
        more = {"ledger": ledger, "cap": cap}
        return self._run(df, duration_col, event_col, group_col, dataset, more)

    def simulate(self, df: Any, duration_col: str | None = None, event_col: str | None = None,
                 group_col: str | None = None, dataset: str | None = None, seed: int = 0) -> Self:
        """A seeded simulation of the release (``--seed``): the same computation with simulation noise, never
        recorded in any ledger and not for publication (``record_id_`` stays None).

        Parameters
        ----------
        df, duration_col, event_col, group_col, dataset
            As for :meth:`release`.
        seed : int, default 0
            The simulation's seed: the same seed gives the same numbers as ``--seed`` on the command line.

        Returns
        -------
        self
            With the fitted attributes of the simulated release.

        Examples
        --------
        >>> from dpsurv_core import PrivateKaplanMeier, load_dataset
        >>> a = PrivateKaplanMeier(grid=(0, 150, 5)).simulate(load_dataset("leukemia"), seed=2)
        >>> b = PrivateKaplanMeier(grid=(0, 150, 5)).simulate(load_dataset("leukemia"), seed=2)
        >>> a.survival_function_.equals(b.survival_function_), a.record_id_
        (True, None)

        References
        ----------
        .. [1] Dwork C. & Roth A. (2014), The Algorithmic Foundations of Differential Privacy.
        """
        return self._run(df, duration_col, event_col, group_col, dataset, {"seed": int(seed)})

    @property
    def released_(self) -> dict[str, Any] | None:
        """The release's publication as the ledger record holds it (None for a simulation or a non-private run)."""
        return self.publishable_

    def _read(self, out: dict[str, Any]) -> None:  # pragma: no cover - every subclass reads its output
        raise NotImplementedError

    def _derived(self) -> dict[str, Any] | None:
        return None if self.publishable_ is None else self.publishable_["derived"]
