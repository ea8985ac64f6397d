"""Refusals and checks read the declared values, not the data: a refusal decided by a value that occurs in the data is
itself a function of the data. With categories declared, a log-rank release counts the declared groups (not the ones
that occur) and a group column with many labels is no refusal; sample and aggregate's bound on the blocks reads the
declared n; a regression keeps a declared covariate that happens to be constant, a declared reference level nobody
has, and one complete subject when n is declared. A declared category is matched by number as well as by text
(``1.0`` names the code 1), and one that no row holds is said in the confidential block only, never in the record."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.data import datasets
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.cli_run import fails, run

CSV = ("--time", "time", "--event", "status")
GRID = ("--grid", "0:1000:10")
NO_ROW = "No row of 'sex' holds the declared category"


def _cohort(tmp_path, name: str, sex, n: int = 80) -> str:
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"time": rng.integers(1, 1000, n), "status": rng.integers(0, 2, n),
                          "sex": np.resize(np.asarray(sex), n)})
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return str(path)


def _records() -> list[dict]:
    return [r.body for r in LedgerStore().records() if r.kind == RELEASE]


def _not_published(out: dict, text: str) -> None:
    """``text`` is nowhere in what is published: the output's publishable block, its top-level warnings, the record."""
    assert text not in json.dumps(out["publishable"]) and text not in json.dumps(out.get("warnings"))
    assert all(text not in json.dumps(body) for body in _records())


# ------------------------------------------------------------------------------------------ group categories
def test_a_log_rank_release_counts_the_declared_groups_not_those_that_occur(capsys, tmp_path):
    one = _cohort(tmp_path, "one", [1])
    out = run(capsys, "logrank", "--data", one, *CSV, "--group", "sex", "--categories", "sex:1,2", *GRID)
    assert out["release"] is True and out["groups"] == ["1", "2"]
    assert out["publishable"]["public_inputs"]["categories"] == ["1", "2"]
    assert any(w.startswith(NO_ROW + " 2 ") for w in out["confidential"]["data_warnings"])
    _not_published(out, NO_ROW)
    # nothing declared: the groups are read off the data, and one group is refused before anything is drawn
    assert "at least 2 groups" in fails(capsys, "logrank", "--data", one, *CSV, "--group", "sex", *GRID)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_declared_categories_are_matched_by_number(capsys, tmp_path, engine):
    """``--categories sex:1.0,2.0`` on a column of integer codes 1, 2 names them (it matched nothing and released
    pure noise): the exact curves equal those of ``sex:1,2``, and a release counts the rows."""
    two = _cohort(tmp_path, "two", [1, 2])
    exact = {}
    for cats in ("1,2", "1.0,2.0"):
        o = run(capsys, "km", "--data", two, *CSV, "--group", "sex", "--categories", f"sex:{cats}", *GRID,
                "--epsilon", "inf", "--engine", engine)
        exact[cats] = [c["survival"] for c in o["curves"]]
    assert exact["1.0,2.0"] == exact["1,2"] and min(exact["1,2"][0]) < 0.5
    out = run(capsys, "km", "--data", two, *CSV, "--group", "sex", "--categories", "sex:1.0,2.0", *GRID,
              "--engine", engine)
    assert out["groups"] == ["1.0", "2.0"] and not any(NO_ROW in w for w in out["confidential"].get("data_warnings", []))
    assert all(n > 20 for n in out["publishable"]["released"]["counts"]["n"][0])  # 40 each, noise of scale 2


def test_a_declared_category_no_row_holds_is_said_to_the_data_holder_only(capsys, tmp_path):
    two = _cohort(tmp_path, "two", [1, 2])
    out = run(capsys, "km", "--data", two, *CSV, "--group", "sex", "--categories", "sex:1,2,3", *GRID)
    (warning,) = [w for w in out["confidential"]["data_warnings"] if NO_ROW in w]
    assert warning.startswith(NO_ROW + " 3 ") and "holds 1, 2" in warning
    assert out["publishable"]["public_inputs"]["categories"] == ["1", "2", "3"]
    _not_published(out, NO_ROW)


def test_many_labels_in_the_data_are_no_refusal_when_the_groups_are_declared(capsys, tmp_path):
    many = _cohort(tmp_path, "many", list(range(1, 26)), n=200)
    assert "looks continuous" in fails(capsys, "km", "--data", many, *CSV, "--group", "sex", *GRID)
    out = run(capsys, "km", "--data", many, *CSV, "--group", "sex", "--categories", "sex:1,2", *GRID)
    assert out["groups"] == ["1", "2"]
    assert "at most 20 groups" in fails(capsys, "km", "--data", many, *CSV, "--group", "sex", "--categories",
                                        "sex:" + ",".join(map(str, range(1, 23))), *GRID)


# ------------------------------------------------------------------------------------------ Weibull: saa's blocks
def _lung_rows(tmp_path, rows: int | None = None, **columns) -> str:
    frame = datasets.load("lung")
    frame = (frame if rows is None else frame.iloc[:rows]).assign(**columns)
    path = tmp_path / f"lung-{rows}-{'-'.join(columns)}.csv"
    frame.to_csv(path, index=False)
    return str(path)


SAA = ("weibull", *CSV, "--horizon", "1100", "--censoring", "0.3", "--mechanism", "saa", "--blocks", "5")


def test_sample_and_aggregate_bounds_its_blocks_by_the_declared_n(capsys, tmp_path):
    six = _lung_rows(tmp_path, 6)
    out = run(capsys, *SAA, "--data", six, "--n-public", "200")  # 5 blocks for 6 records: the declared 200 allow it
    assert out["release"] is True and out["publishable"]["public_inputs"]["n"] == 200
    (warning,) = [w for w in out["confidential"]["data_warnings"] if "blocks for the" in w]
    assert "5 blocks for the 6 records" in warning
    _not_published(out, "records read")
    refused = fails(capsys, *SAA, "--data", _lung_rows(tmp_path), "--n-public", "6")  # 228 records, 6 declared
    assert "6 declared subjects" in refused and "228" not in refused


# ------------------------------------------------------------------------------------------ regression
REGRESSION = ("regression", *CSV, "--horizon", "1100", "--covariates", "age,sex", "--range", "age:39:82",
              "--n-public", "228", "--intervals", "10", "--mechanism", "output", "--epsilon", "1")


def test_a_declared_covariate_constant_in_the_data_is_kept(capsys, tmp_path):
    const = _lung_rows(tmp_path, sex=1, age=60)
    out = run(capsys, *REGRESSION, "--data", const, "--categorical", "sex:2", "--categories", "sex:1,2")
    assert out["release"] is True and list(out["estimates"][0]["coefficients"]) == ["age", "sex=sex 1"]
    warnings = out["confidential"]["data_warnings"]
    assert any(w.startswith(NO_ROW + " 2 ") for w in warnings)  # the declared reference level nobody has
    assert any("'age' is constant" in w for w in warnings)
    _not_published(out, NO_ROW)
    # a range read off the data is no declaration: that constant covariate is still refused
    assert "is constant" in fails(capsys, *[a for a in REGRESSION if a != "age:39:82" and a != "--range"],
                                  "--data", const, "--range", "sex:1:2")


def test_one_complete_subject_is_enough_when_n_is_declared(capsys, tmp_path):
    ages = datasets.load("lung")["age"].astype(float).to_numpy().copy()
    ages[1:] = np.nan
    one = _lung_rows(tmp_path, age=ages)
    out = run(capsys, *REGRESSION, "--data", one, "--range", "sex:1:2")
    assert out["release"] is True and out["confidential"]["n"] == 1
    # a fit without noise is for the data holder's eyes: it refuses what it cannot estimate
    assert "is constant" in fails(capsys, *REGRESSION[:-4], "--mechanism", "nonprivate", "--data", one, "--range",
                                  "sex:1:2")
