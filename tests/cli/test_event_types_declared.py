"""Competing-event types are declared or refused, like group categories: a file declares its event-type column
(``--event-type``), its types (``--event-types A=NAME,B``) and the column's censoring codes (``--type-censor-codes``).
Types read off the data are refused before any noise unless accepted (``--accept-disclosure event-types``: then not DP
as run); declared types release and re-derive, and D and D minus one subject (the only one with a type) give the same
public inputs. A row whose code is neither declared nor a censoring code is one sentence for the data holder, never a
new type; bundled data sets that document their types need no flag."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.cli_run import fails, run

CIF = ("km", "--time", "time", "--event", "status", "--estimand", "cumulative-incidence", "--event-type", "cause",
       "--grid", "0:1000:10")
DECLARED = ("--event-types", "relapse=Relapse,death=Death,other=Other cause")


def _trial(tmp_path, name: str = "trial", drop_last: bool = False, cause: list[str] | None = None) -> str:
    """Eighty subjects in two arms, censored (0), relapse or death; the last is the only one with the 'other' cause."""
    rng = np.random.default_rng(11)
    n = 80 if cause is None else len(cause)
    kinds = cause or [*rng.choice(["0", "relapse", "death"], n - 1, p=[0.3, 0.4, 0.3]).tolist(), "other"]
    frame = pd.DataFrame({"time": np.round(rng.exponential(300, n)) + 1, "cause": kinds,
                          "arm": np.where(np.arange(n) % 2 == 0, "A", "B")})
    frame["status"] = (frame["cause"].astype(str) != "0").astype(int)
    if drop_last:
        frame = frame.iloc[:-1]
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return str(path)


def _releases() -> list[dict]:
    return [r.body for r in LedgerStore().records() if r.kind == RELEASE]


def test_event_types_read_off_the_data_are_refused_naming_event_types(capsys, tmp_path):
    data = _trial(tmp_path)
    error = fails(capsys, *CIF, "--data", data)
    assert "the competing-event types (event-types: declare it with --event-types" in error
    assert "--accept-disclosure event-types" in error and "nothing was drawn or charged" in error
    assert _releases() == []


def test_declared_event_types_release_and_rederive(capsys, tmp_path):
    out = run(capsys, *CIF, "--data", _trial(tmp_path), *DECLARED)
    assert out["release"] is True and "not DP" not in out["guarantee"]
    inputs = out["publishable"]["public_inputs"]
    assert inputs["event_types"] == [{"code": "relapse", "name": "Relapse"}, {"code": "death", "name": "Death"},
                                     {"code": "other", "name": "Other cause"}]  # in the order declared
    assert inputs["event_types_from_data"] is False
    assert out["publishable"]["released"]["counts"]["event_types"] == ["Relapse", "Death", "Other cause"]
    assert "--event-types" in out["reproduce"] and "--accept-disclosure" not in out["reproduce"]
    rederived = run(capsys, "budget", "rederive", "--record", str(out["record_id"]))
    assert rederived["identical"] is True


def test_accepted_event_types_are_published_as_read_and_not_dp(capsys, tmp_path):
    out = run(capsys, *CIF, "--data", _trial(tmp_path), "--accept-disclosure", "event-types")
    assert out["guarantee"].startswith("none: not differentially private") and "event-types" in out["guarantee"]
    (body,) = _releases()
    assert body["public_inputs"]["event_types_from_data"] is True
    assert any(d["parameter"] == "event-types" and d["dp"] is False for d in body["disclosures"])
    assert run(capsys, "budget", "rederive", "--record", str(out["record_id"]))["identical"] is True


def test_a_neighbour_gives_the_same_public_inputs_when_everything_is_declared(capsys, tmp_path):
    """D and D minus its last subject (the only one with the 'other' cause): with the horizon, grid, categories and
    event types declared, the public inputs are identical, and so is the shape of what is released (one cell per
    declared type, whether or not a row holds it)."""
    declared = (*CIF, "--group", "arm", "--categories", "arm:A,B", "--horizon", "1000", *DECLARED)
    full = run(capsys, *declared, "--data", _trial(tmp_path, "full"))
    less = run(capsys, *declared, "--data", _trial(tmp_path, "less", drop_last=True))
    assert full["publishable"]["public_inputs"] == less["publishable"]["public_inputs"]
    a, b = (o["publishable"]["released"]["counts"] for o in (full, less))
    assert a["event_types"] == b["event_types"] and np.shape(a["events"]) == np.shape(b["events"])


def test_a_code_spelled_otherwise_is_one_sentence_never_a_new_type(capsys, tmp_path):
    cause = ["0", "relapse", "death", "Death ", "dead", "cens"] * 10
    data = _trial(tmp_path, "spelled", cause=cause)
    error = fails(capsys, *CIF, "--data", data, "--event-types", "relapse,death")
    # each value named with its rows ('Death ' is death: case and blanks aside)
    assert "The column 'cause' holds 'cens' (10 rows) and 'dead' (10 rows), which are neither" in error
    assert "a declared event type (relapse, death) nor a censoring code (0, censored)" in error
    assert "--type-censor-codes" in error and _releases() == []
    error = fails(capsys, *CIF, "--data", data, "--event-types", "relapse,death", "--type-censor-codes", "0,cens")
    assert "holds 'dead' (10 rows), which is neither" in error
    out = run(capsys, *CIF, "--data", data, "--event-types", "relapse,death=Death,dead=Death (other)",
              "--type-censor-codes", "0,cens", "--epsilon", "inf")
    assert list(out["curves"][0]["cumulative_incidence"]) == ["relapse", "Death", "Death (other)"]
    assert "declared both as an event type and as a censoring code" in fails(
        capsys, *CIF, "--data", data, "--event-types", "relapse,death,dead,cens", "--type-censor-codes", "0,cens")


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_declared_types_count_alike_in_memory_and_in_the_engine(capsys, tmp_path, engine):
    data = _trial(tmp_path)
    out = run(capsys, *CIF, "--data", data, "--event-types", "Relapse,DEATH,other", "--epsilon", "inf",
              "--engine", engine)
    incidence = out["curves"][0]["cumulative_incidence"]
    assert list(incidence) == ["Relapse", "DEATH", "other"]  # matched up to case, named as declared
    assert incidence["other"][-1] > 0
    expected = run(capsys, *CIF, "--data", data, "--event-types", "relapse,death,other", "--epsilon", "inf")
    assert [v[-1] for v in incidence.values()] == pytest.approx(
        [v[-1] for v in expected["curves"][0]["cumulative_incidence"].values()])
    error = fails(capsys, *CIF, "--data", data, "--event-types", "relapse,death", "--engine", engine)
    assert "The column 'cause' holds 'other' (1 row), which is neither a declared event type" in error


def test_a_bundled_data_set_declares_its_documented_types_without_a_flag(capsys):
    out = run(capsys, "km", "--data", "pbc", "--estimand", "cumulative-incidence", "--grid", "0:4000:10")
    inputs = out["publishable"]["public_inputs"]
    assert inputs["event_types"] == [{"code": "1", "name": "transplant"}, {"code": "2", "name": "death"}]
    assert inputs["event_types_from_data"] is False and "not DP" not in out["guarantee"]
    assert "--event-type" not in out["reproduce"]
    # another column of a bundled data set as the event type: read off the data, refused
    assert "event-types" in fails(capsys, "km", "--data", "pbc", "--estimand", "cumulative-incidence", "--grid",
                                  "0:4000:10", "--event-type", "edema")
