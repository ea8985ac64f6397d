"""Competing risks from any file whose event column holds the outcomes: ``--event-codes A,B`` with several codes and
``--estimand cumulative-incidence`` makes each code a declared event type, ``--censor-codes`` declares the censoring
codes (default 0 and 'censored'), and a value in neither list is refused with exit 2 naming it and its rows, in
memory and in DuckDB alike. The cumulative incidence equals R survival's ``survfit`` with a factor status (fixture of
``tools/r_reference/timefix_censored.R``), and the same as ``--event-type COL --event-types A,B`` on that column."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.data.cohort import ColumnMap, validate
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.publication import rederive
from tests.cli_run import fails, run

R = json.loads((Path(__file__).parents[1] / "curves" / "r_reference" / "timefix_censored.json").read_text())["competing"]
CIF = ("km", "--time", "time", "--event", "cause", "--estimand", "cumulative-incidence", "--mechanism", "nonprivate")


def _file(tmp_path, spelled: int = 0) -> str:
    """R's competing-risks cohort (censored, relapse, death), with ``spelled`` of its censored rows written 'censor'."""
    cause = list(R["data"]["cause"])
    for i in [i for i, c in enumerate(cause) if c == "censored"][:spelled]:
        cause[i] = "censor"
    frame = pd.DataFrame({"time": [float.fromhex(h) for h in R["data"]["time"]], "cause": cause})
    path = tmp_path / f"outcomes{spelled}.csv"
    frame.to_csv(path, index=False)  # whole days: exact in a CSV
    return str(path)


def test_each_event_code_is_an_event_type_equal_to_r(capsys, tmp_path):
    out = run(capsys, *CIF, "--data", _file(tmp_path), "--event-codes", "relapse,death", "--censor-codes", "censored")
    (curve,) = out["curves"]
    assert list(curve["cumulative_incidence"]) == ["relapse", "death"]
    r_time = np.array([float.fromhex(h) for h in R["time"]])
    for k, t in enumerate(curve["time"]):
        (i,) = np.flatnonzero(r_time == t)
        for kind in ("relapse", "death"):
            for ours, theirs in ((curve["cumulative_incidence"][kind][k], R[kind][i]),
                                 (curve["cumulative_incidence_lower"][kind][k], R[f"{kind}_lower"][i]),
                                 (curve["cumulative_incidence_upper"][kind][k], R[f"{kind}_upper"][i])):
                if theirs is None:  # R's NA (no interval while the incidence is 0)
                    assert ours is None, (t, kind)
                else:
                    assert ours == pytest.approx(theirs, rel=1e-8, abs=1e-12), (t, kind)


def test_the_new_options_equal_the_type_column_options(capsys, tmp_path):
    data = _file(tmp_path)
    new = run(capsys, *CIF, "--data", data, "--event-codes", "relapse,death", "--censor-codes", "censored")
    old = run(capsys, *CIF, "--data", data, "--event-codes", "relapse,death", "--censor-codes", "censored",
              "--event-type", "cause", "--event-types", "relapse,death", "--type-censor-codes", "censored")
    assert new["curves"] == old["curves"]


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_a_value_in_neither_list_is_refused_naming_it_and_its_rows(capsys, tmp_path, engine):
    data = _file(tmp_path, spelled=12)
    error = fails(capsys, *CIF, "--data", data, "--event-codes", "relapse,death", "--censor-codes", "censored",
                  "--engine", engine)
    assert error == ("error: The column 'cause' holds 'censor' (12 rows), which is neither an event code (relapse, "
                     "death) nor a censoring code (censored): add it to the censoring codes (--censor-codes) or to "
                     "the event codes (--event-codes), or fix those rows; nothing is analysed until then.")
    # without --censor-codes the censoring codes are 0 and 'censored': still refused, never a third event type
    assert "holds 'censor' (12 rows)" in fails(capsys, *CIF, "--data", data, "--event-codes", "relapse,death",
                                                "--engine", engine)
    # the Kaplan-Meier of any event checks the declared codes the same way
    assert "holds 'censor' (12 rows)" in fails(capsys, "km", "--time", "time", "--event", "cause", "--mechanism",
                                                "nonprivate", "--data", data, "--event-codes", "relapse,death",
                                                "--censor-codes", "censored", "--engine", engine)
    out = run(capsys, *CIF, "--data", data, "--event-codes", "relapse,death", "--censor-codes", "censored,censor",
              "--engine", engine)
    assert list(out["curves"][0]["cumulative_incidence"]) == ["relapse", "death"]


def test_a_code_in_both_lists_is_one_sentence(capsys, tmp_path):
    error = fails(capsys, *CIF, "--data", _file(tmp_path), "--event-codes", "relapse,death",
                  "--censor-codes", "censored,death")
    assert "'death'" in error and "both --event-codes and --censor-codes" in error


def test_a_release_declares_the_codes_and_rederives(capsys, tmp_path):
    out = run(capsys, "km", "--time", "time", "--event", "cause", "--estimand", "cumulative-incidence",
              "--data", _file(tmp_path), "--event-codes", "relapse,death", "--censor-codes", "censored",
              "--mechanism", "laplace-counts", "--epsilon", "1", "--horizon", "1500", "--grid", "0:1500:10")
    (record,) = [r for r in LedgerStore().records() if r.kind == RELEASE]
    assert out["record_id"] == record.id
    inputs = record.body["public_inputs"]
    assert inputs["event_types_from_data"] is False
    assert [t["code"] for t in inputs["event_types"]] == ["relapse", "death"]
    assert rederive(record.body)["identical"] is True


def test_core_names_every_unlisted_value_with_its_rows():
    df = pd.DataFrame({"t": np.arange(1.0, 11.0), "e": ["x"] * 4 + ["y"] * 3 + ["z"] * 2 + ["Z "]})
    cohort, problems = validate(df, ColumnMap("t", "e", event_codes=("x",), censor_codes=("y",)))
    assert cohort is None
    (p,) = problems
    assert p.message.startswith("The column 'e' holds 'Z' (1 row) and 'z' (2 rows), which are neither an event "
                                "code (x) nor a censoring code (y): add them")
