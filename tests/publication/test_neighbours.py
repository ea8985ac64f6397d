"""Neighbouring cohorts publish the same declared values: for every mechanism in the catalogue, a release on D and
one on D minus one subject (an event, a censored subject, the last follow-up, a subject with a missing covariate),
with every public value declared, record identical ``public_inputs``, and each record re-derives exactly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpsurv_core.cli import main
from dpsurv_core.data import datasets
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.publication import rederive

LUNG = datasets.load("lung")
DECLARED = ["--time", "time", "--event", "status"]


def _neighbours() -> dict[str, int]:
    """Which row each neighbour drops."""
    status, time = LUNG["status"].to_numpy(), LUNG["time"].to_numpy()
    return {"event": int(np.flatnonzero(status == 1)[0]), "censored": int(np.flatnonzero(status == 0)[0]),
            "last follow-up": int(np.argmax(time)), "missing covariate": int(np.flatnonzero(LUNG["ph.ecog"].isna())[0])}


NEIGHBOURS = _neighbours()


def _argv(family: str, mechanism: str) -> list[str]:
    if family == catalogue.CURVES:
        return ["km", "--group", "sex", "--categories", "sex:1,2", "--grid", "0:1100:20", "--mechanism", mechanism,
                *([] if not catalogue.get(family, mechanism).formal else ["--epsilon", "1"])]
    if family == catalogue.WEIBULL:
        return ["weibull", "--mechanism", mechanism, "--epsilon", "1", "--horizon", "1100", "--censoring", "0.3",
                "--n-public", "228", *(["--blocks", "2"] if mechanism == "saa" else [])]
    return ["regression", "--covariates", "age,ph.ecog", "--range", "age:18:100", "--range", "ph.ecog:0:5",
            "--n-public", "228", "--horizon", "1100", "--mechanism", mechanism, "--epsilon", "1"]


def _released_mechanisms() -> list[tuple[str, str]]:
    out = []
    for family in (catalogue.CURVES, catalogue.WEIBULL, catalogue.REGRESSION):
        for mid in catalogue.ids(family):
            entry = catalogue.get(family, mid)
            if entry.private:
                out.append((family, mid))
    return out


def _release(capsys, tmp_path, ledger: str, argv: list[str], rows) -> dict:
    path = tmp_path / f"cohort-{len(rows)}.csv"
    rows.to_csv(path, index=False)
    code = main([argv[0], "--data", str(path), *DECLARED, *argv[1:], "--ledger", ledger, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _allow(capsys, ledger: str, rows, tmp_path, entry) -> None:
    """Label-only and disclosure-control releases need their recorded allowance first."""
    path = tmp_path / f"cohort-{len(rows)}.csv"
    rows.to_csv(path, index=False)
    act = "allow-label-only" if entry.formal else "allow-disclosure-control"
    if entry.id == "rrr" or not entry.formal:
        assert main(["budget", act, "--data", str(path), "--reason", "neighbour test", "--ledger", ledger,
                     "--json"]) == 0
        capsys.readouterr()


FAST = {("curves", "laplace-counts"), ("curves", "suppress-small-cells")}
CASES = [pytest.param(f, m, marks=() if (f, m) in FAST else pytest.mark.slow, id=f"{f}-{m}")
         for f, m in _released_mechanisms()]


@pytest.mark.parametrize("family, mechanism", CASES)
def test_neighbours_publish_the_same_declared_values_and_re_derive(capsys, tmp_path, family, mechanism):
    entry = catalogue.get(family, mechanism)
    ledger = str(tmp_path / "ledger.sqlite3")
    argv = _argv(family, mechanism)
    _allow(capsys, ledger, LUNG, tmp_path, entry)
    first = _release(capsys, tmp_path, ledger, argv, LUNG)["publishable"]
    for name, row in NEIGHBOURS.items():
        smaller = LUNG.drop(index=row)
        _allow(capsys, ledger, smaller, tmp_path, entry)
        other = _release(capsys, tmp_path, ledger, argv, smaller)["publishable"]
        assert other["public_inputs"] == first["public_inputs"], name
    for record in LedgerStore(ledger).records():
        if record.kind == RELEASE:
            assert rederive(record.body)["identical"] is True, record.id
