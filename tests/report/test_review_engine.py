"""The review report's non-private comparison for a server table kept in DuckDB past the memory limit: the exact curves
are counted in the engine (no rows read), equal to the in-memory comparison; a pooled release is said, not raised."""

from __future__ import annotations

import numpy as np
import pytest

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import default_mapping, load_bundled
from dpsurv_core.engines import open_cohort
from dpsurv_core.engines.source import Source
from dpsurv_core.limits import CLI_CELLS_ENV
from dpsurv_core.report.html import ReleaseItem, curve_comparison


def item(groups: list[str], survival: np.ndarray) -> ReleaseItem:
    time = [100.0 * k for k in range(1, 11)]
    return ReleaseItem("curves", None, outputs={"groups": groups, "time": time, "edges": [0.0, *time],
                                                 "survival": survival.tolist()})


@pytest.fixture
def kept(tmp_path, monkeypatch):
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    monkeypatch.setenv(CLI_CELLS_ENV, "100")  # far below lung's rows: reading them would be refused
    return open_cohort(Source("parquet", str(path)), "duckdb", default_mapping("lung", group="sex"), "lung")


def test_review_compares_a_kept_table_from_engine_counts(kept):
    private = np.full((2, 10), 0.5)
    fig, table = curve_comparison(item(["1", "2"], private), kept)
    _, expected = curve_comparison(item(["1", "2"], private), load_bundled("lung", group="sex"))
    np.testing.assert_allclose(table["RMSE"], expected["RMSE"], rtol=1e-12)
    assert len(fig.data) == 4


def test_review_of_a_pooled_release_on_a_grouped_kept_table_is_a_sentence(kept):
    said = curve_comparison(item(["all"], np.full((1, 10), 0.5)), kept)
    assert isinstance(said, str) and said.startswith("No comparison") and "group column" in said
