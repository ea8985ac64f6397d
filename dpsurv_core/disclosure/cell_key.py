"""The cell key method (ONS census tables, ABS TableBuilder): the same cell is always perturbed the same way.

Each record has a fixed record key u_i in [0, 1): here a keyed hash of the record's own values (time, event, group,
subject id) under a data-holder secret, so removing one subject leaves every other key as it was, and nobody without
the secret can recompute the keys. The secret is 32 random bytes in a file beside the ledger database
(``cell-key-secret``; ``$DPSURV_CELL_KEY_SECRET`` names another file), created on first use; the rows never leave.

A cell's key is the sum of its records' keys modulo 1; the published perturbation table below maps (cell count,
cell key) to a perturbation: the cell key picks the perturbation by the table's cumulative probabilities. Every row
of the table has mean 0 (unbiased) and never makes a count negative. Records with identical values get identical
keys (only the subject id tells two such records apart).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.disclosure.base import DisclosureControl
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import NoiseSource

SECRET_ENV = "DPSURV_CELL_KEY_SECRET"

# The published perturbation table: for a cell count (rows 0, 1, and 2 or more), the perturbations and their
# probabilities. The cell key k in [0, 1) selects the perturbation whose cumulative-probability interval holds k.
PTABLE: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {
    "0": ((0,), (1.0,)),
    "1": ((-1, 0, 1), (0.25, 0.5, 0.25)),
    "2+": ((-2, -1, 0, 1, 2), (0.05, 0.2, 0.5, 0.2, 0.05)),
}


def perturbation(count: np.ndarray, key: np.ndarray) -> np.ndarray:
    """The published table's perturbation for each (count, cell key), vectorised."""
    count = np.asarray(count, float)
    key = np.asarray(key, float)
    out = np.zeros(np.broadcast(count, key).shape)
    for row, mask in (("1", count == 1), ("2+", count >= 2)):
        values, probs = PTABLE[row]
        cut = np.cumsum(probs)[:-1]
        pick = np.asarray(values)[np.searchsorted(cut, key, side="right")]
        out = np.where(mask, pick, out)
    return out


def _secret_path() -> Path:
    """``$DPSURV_CELL_KEY_SECRET``, else ``cell-key-secret`` beside the ledger database."""
    from dpsurv_core.privacy.ledger import default_path

    env = os.environ.get(SECRET_ENV)
    return Path(env).expanduser() if env else default_path().parent / "cell-key-secret"


def _data_holder_secret(path: str | Path | None = None) -> bytes:
    """The data holder's secret (created with 32 bytes of OS entropy the first time, readable by the owner only)."""
    p = Path(path) if path else _secret_path()
    if not p.exists():
        p.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(32))
    data = p.read_bytes()
    if len(data) < 16:
        raise ParameterError(f"The cell-key secret {str(p)!r} is too short: delete it to make a new one.")
    return data


_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def _labels(values: np.ndarray | None, n: int) -> np.ndarray:
    if values is None:
        return np.zeros(n, dtype=np.uint64)
    return pd.util.hash_array(np.asarray(values).astype(str).astype(object)).astype(np.uint64)


def record_keys(cohort: Cohort, secret: bytes) -> np.ndarray:
    """u_i in [0, 1) per row: a keyed hash (64-bit key from SHA-256 of the secret) of the row's time, event, group and
    subject id. Deterministic: the same row always gets the same key."""
    seed = np.uint64(int.from_bytes(hashlib.sha256(secret).digest()[:8], "little"))
    h = _mix(np.ascontiguousarray(cohort.time, dtype=np.float64).view(np.uint64) ^ seed)
    for part in (np.asarray(cohort.event, dtype=np.uint64), _labels(cohort.group, cohort.n),
                 _labels(cohort.subject, cohort.n)):
        with np.errstate(over="ignore"):
            h = _mix(h ^ part ^ (seed * np.uint64(0x9E3779B97F4A7C15)))
    return (h >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


class CellKey(DisclosureControl):
    """Perturb every cell by the published table, selected by the cell key (sum of record keys modulo 1).

    Parameters
    ----------
    secret : bytes or None, default None
        The data holder's secret the record keys are hashed under (never published); None reads the secret file
        beside the ledger database (``$DPSURV_CELL_KEY_SECRET`` names another), creating it on first use.
    rows_per_subject : int, default 1
        m, the most rows one subject has; recorded with the release (the rule acts on the cells alone).

    Privacy
    -------
    Cost: no epsilon: statistical disclosure control, not differential privacy.
    Neighbours: none: no formal guarantee.
    Protects: no formal guarantee (a fixed perturbation per cell, the same every time).
    Source: Fraser B. & Wooton J. (2005); the cell key method of the ABS TableBuilder and the ONS 2021 census tables.
    """

    name = "cell-key"
    what = "cell key perturbation"
    interval_includes_noise = True
    engines = ("pandas",)  # a key per subject: the rows are read (bounded) when kept in an engine

    def __init__(self, secret: bytes | None = None, rows_per_subject: int = 1) -> None:
        super().__init__(rows_per_subject)
        self._secret = secret

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            self._secret = _data_holder_secret()
        return self._secret

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "ptable": {k: {"perturbations": list(v), "probabilities": list(p)}
                                                   for k, (v, p) in PTABLE.items()},
                "record_key": "keyed hash of each row's values under the data holder's secret (not published)"}

    def keyed_cells(self, cohort: Cohort, public: PublicParameters, competing: bool = False
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, BinnedCounts]:
        """Per row: its cells (rows, C) as 0/1 and its key; the unit of each row; and the exact counts."""
        from dpsurv_core.curves.leave_one_out import _units, leave_one_out_counts

        solo = Cohort(cohort.time, cohort.event, cohort.group, None, cohort.event_type, cohort.event_type_labels,
                      name=cohort.name)
        exact, contrib, _, _ = leave_one_out_counts(solo, public, competing)
        unit, _ = _units(cohort)
        return contrib.cells(), record_keys(cohort, self.secret), unit, np.asarray(exact.cells(), float), exact

    @staticmethod
    def _apply(counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
        return np.maximum(counts + perturbation(counts, np.mod(keys, 1.0)), 0.0)

    def alter(self, exact: BinnedCounts, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None,
              trials: int) -> tuple[BinnedCounts, dict[str, Any]]:
        competing = exact.events.shape[-2] > 1 or exact.event_types != ("event",)
        cells, keys, _, base, _ = self.keyed_cells(cohort, public, competing)
        key_sum = keys @ cells
        out = self._apply(exact.cells().astype(float), np.broadcast_to(key_sum, exact.cells().shape))
        return exact.from_cells(out), {"cell_keys": np.broadcast_to(np.mod(key_sum, 1.0), out.shape).copy()}

    def null_alter(self, exact: BinnedCounts, noise: NoiseSource) -> BinnedCounts:
        """Simulated counts have no records: their cell keys are drawn uniform on [0, 1), as real cell keys are. Only
        the calibrated log-rank test's null simulations call this (with SimulationNoise); a release never does."""
        cells = exact.cells().astype(float)
        return exact.from_cells(self._apply(cells, np.asarray(noise.uniform(0.0, 1.0, cells.shape), float)))

    def leave_one_out(self, cohort: Cohort, public: PublicParameters) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        from dpsurv_core.curves.leave_one_out import _first_rows

        cells, keys, unit, base_counts, _ = self.keyed_cells(cohort, public)
        n_units = int(unit.max()) + 1 if unit.size else 0
        c_unit = np.zeros((n_units, cells.shape[1]))
        k_unit = np.zeros((n_units, cells.shape[1]))
        np.add.at(c_unit, unit, cells)
        np.add.at(k_unit, unit, cells * keys[:, None])
        key_sum = keys @ cells
        base = self._apply(base_counts, key_sum)
        loo = self._apply(base_counts[None] - c_unit, key_sum[None] - k_unit)
        return base, loo, _first_rows(unit, n_units)
