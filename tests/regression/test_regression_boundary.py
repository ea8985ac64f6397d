"""The publication boundary of the regression family (dpsurv_core.publication).

A regression release reads nothing off the data that it publishes or calibrates with, unless the data holder accepts
it: n (the objective's normaliser), the covariates' ranges, the categories of a categorical covariate and the horizon
(which sets the person-period intervals) are declared or refused. Its record holds the noisy coefficients
(``released``), the declared values (``public_inputs``) and what people read (``derived``), and the reader
(dpsurv_core.regression.readout) recomputes ``derived`` from the first two alone, with no data module in reach.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from dpsurv_core.cli import main
from dpsurv_core.data import datasets
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.publication import derive, rederive
from dpsurv_core.regression import readout

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["time", "status", "age", "sex", "ph.ecog"]


def lung_csv(path: Path, drop: int | None = None) -> Path:
    """lung's outcome and three covariates as an uploaded CSV (complete cases), less the subject at row ``drop``."""
    frame = datasets.load("lung")[COLUMNS].dropna().reset_index(drop=True)
    if drop is not None:
        frame = frame.drop(index=drop)
    frame.to_csv(path, index=False)
    return path


def upload(path: Path, *extra: str) -> list[str]:
    return ["regression", "--data", str(path), "--time", "time", "--event", "status", "--covariates", "age,sex",
            "--categorical", "sex", "--categories", "sex:1,2", "--mechanism", "output", "--epsilon", "1",
            "--horizon", "1100", "--range", "age:18:100", *extra]


def cli(capsys, argv: list[str]) -> tuple[int, dict | str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else err)


def release_records(path: Path) -> list:
    return [r for r in LedgerStore(path).records() if r.kind == RELEASE]


def test_a_release_on_an_upload_without_n_public_is_refused_naming_it(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite3"
    code, err = cli(capsys, [*upload(lung_csv(tmp_path / "lung.csv")), "--ledger", str(ledger)])
    assert code == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert "--n-public N" in err and "nothing was drawn or charged" in err and "--accept-disclosure n" in err
    assert not ledger.exists() or release_records(ledger) == []


@pytest.mark.parametrize("mechanism", [["output"], ["objective", "--information-share", "0.2"],
                                       ["psgld", "--epochs", "8", "--burn-in", "2", "--draws", "3"]],
                         ids=["output", "objective-information", "psgld-draws"])
def test_a_declared_release_is_rederived_identically_and_prints_the_records_numbers(tmp_path, capsys, mechanism):
    ledger = tmp_path / "ledger.sqlite3"
    argv = upload(lung_csv(tmp_path / "lung.csv"), "--n-public", "228", "--ledger", str(ledger))
    argv[argv.index("--mechanism") + 1:argv.index("--mechanism") + 2] = mechanism
    code, out = cli(capsys, argv)
    assert code == 0, out
    (record,) = release_records(ledger)
    body = record.body
    assert body["kind"] == "regression" and rederive(body) == {"identical": True, "first_difference": None,
                                                               "kind": "regression"}
    # the stored record is what the command called publishable, and the command's numbers are the record's
    pub = out["publishable"]
    assert pub["derived"] == body["derived"] and pub["public_inputs"] == body["public_inputs"]
    assert out["estimates"] == [readout.estimates(body["derived"], 0) | (
        {"information_matrix": body["released"]["information"][0]} if "information" in body["released"] else {})]
    assert out["warnings"] == body["derived"]["warnings"] and out["interval_method"] == body["derived"]["interval_method"]
    assert {"mechanism", "epsilon_spent", "guarantee", "parameters", "estimates"} <= set(out)
    assert set(out["estimates"][0]["coefficients"]) == {"age", "sex=sex 2"}
    assert out["guarantee"] in ("exact", "approximate (MCMC)") and out["disclosures"] == []
    # exact values stay with the data holder: never at the top level of a release, never in the record
    assert {"n", "rows", "dropped_incomplete"}.isdisjoint(out) and "p_value_nonprivate" not in json.dumps(pub)
    assert out["confidential"]["note"].startswith("exact values about the data")
    # the public inputs are the declared values, the mechanism's settings and how to read them; nothing counted
    assert set(body["public_inputs"]) == {"mechanism", "epsilon", "delta", "n_public", "horizon", "intervals", "knots",
                                          "rows_per_subject", "covariates", "coefficients", "labels", "options",
                                          "scale", "inference", "reader_version"}
    assert body["public_inputs"]["n_public"] == 228 and body["public_inputs"]["horizon"] == 1100.0
    assert body["public_inputs"]["covariates"] == [
        {"name": "age", "kind": "numeric", "range": [18.0, 100.0]},
        {"name": "sex", "kind": "categorical", "levels": ["sex 1", "sex 2"], "reference": "sex 1"}]
    released = body["released"]
    assert set(released) <= {"w", "information", "draws"} and len(released["w"][0]) == 2 + 5
    if "draws" in released:
        assert len(released["draws"][0]) == 3
    # the reader is deterministic: the same two parts give the same derived, to the last bit
    assert derive("regression", released, body["public_inputs"]) == body["derived"]


def test_neighbouring_cohorts_with_the_same_declarations_publish_the_same_public_inputs(tmp_path, capsys):
    """lung against lung less its only subject with ECOG 3: with n, the ranges, the categories and
    the horizon declared, the public inputs of the two releases are the same value, categories included (read off
    the data, ECOG 3 would vanish with that subject and change the release's shape)."""
    frame = datasets.load("lung")[COLUMNS].dropna().reset_index(drop=True)
    only = int(frame.index[frame["ph.ecog"] == 3][0])
    records = []
    for i, drop in enumerate((None, only)):
        ledger = tmp_path / f"ledger{i}.sqlite3"
        argv = upload(lung_csv(tmp_path / f"lung{i}.csv", drop), "--n-public", "228", "--ledger", str(ledger))
        argv[argv.index("--covariates") + 1] = "age,sex,ph.ecog"
        argv[argv.index("--categorical") + 1] = "sex,ph.ecog"
        argv += ["--categories", "ph.ecog:0,1,2,3"]
        code, out = cli(capsys, argv)
        assert code == 0, out
        (record,) = release_records(ledger)
        records.append(record.body)
    assert records[0]["public_inputs"] == records[1]["public_inputs"]
    assert records[0]["public_inputs"]["coefficients"] == ["age", "sex=sex 2", "ph.ecog=ph.ecog 1",
                                                           "ph.ecog=ph.ecog 2", "ph.ecog=ph.ecog 3"]
    assert all(rederive(b)["identical"] for b in records)


def test_accepting_n_publishes_it_as_read_and_the_record_says_not_dp(tmp_path, capsys):
    ledger = tmp_path / "ledger.sqlite3"
    code, out = cli(capsys, [*upload(lung_csv(tmp_path / "lung.csv")), "--accept-disclosure", "n",
                             "--ledger", str(ledger)])
    assert code == 0, out
    (record,) = release_records(ledger)
    assert [d["parameter"] for d in record.body["disclosures"] if not d["dp"]] == ["n"]
    assert record.body["public_inputs"]["n_public"] == 227  # the complete subjects, as counted
    assert out["guarantee"].startswith("none: not differentially private")
    assert out["publishable"]["subject_protected"] is False and rederive(record.body)["identical"]


def test_bundled_categories_are_every_documented_code_in_a_private_fit(capsys):
    """lung's ph.ecog documents ECOG 0 to 4, and nobody in lung has ECOG 4: a private fit still has its indicator (its
    coefficient is noise alone), so whether anyone has a code never shapes a release; a fit without noise (for the
    data holder's eyes) keeps the codes that occur."""
    base = ["regression", "--data", "lung", "--covariates", "age,ph.ecog", "--categorical", "ph.ecog",
            "--horizon", "1100", "--n-public", "228", "--range", "age:18:100"]
    code, private = cli(capsys, [*base, "--mechanism", "objective", "--epsilon", "1", "--seed", "2"])
    assert code == 0, private
    assert private["covariates"][-1] == "ph.ecog=ECOG 4: bedbound" and len(private["covariates"]) == 5
    assert not any(d["parameter"].startswith("levels:") for d in private["disclosures"])
    code, exact = cli(capsys, [*base, "--mechanism", "nonprivate"])
    assert code == 0 and len(exact["covariates"]) == 4 and "ph.ecog=ECOG 4: bedbound" not in exact["covariates"]


def test_declared_categories_leave_out_other_rows_and_undeclared_ones_are_refused(tmp_path, capsys):
    path = lung_csv(tmp_path / "lung.csv")
    argv = upload(path, "--n-public", "228", "--seed", "1")
    argv[argv.index("--covariates") + 1] = "age,ph.ecog"
    argv[argv.index("--categorical") + 1] = "ph.ecog"
    argv[argv.index("--categories") + 1] = "ph.ecog:0,1,2"
    code, out = cli(capsys, argv)
    assert code == 0, out
    # a simulation keeps one block (for the data holder's eyes) and says so
    assert out["simulation"] is True and out["release"] is False and "confidential" not in out
    assert out["outside_declared_categories"] == 1 and out["dropped_incomplete"] == 1  # the one ECOG 3 subject
    assert out["covariates"] == ["age", "ph.ecog=ph.ecog 1", "ph.ecog=ph.ecog 2"]
    # without --categories an upload's unlabelled codes are read off the data: a release is refused naming them
    release = [a for a in upload(path, "--n-public", "228", "--ledger", str(tmp_path / "l.sqlite3"))]
    i = release.index("--categories")
    del release[i:i + 2]
    code, err = cli(capsys, release)
    assert code == 2 and "--categories sex:A,B" in err and "levels:sex" in err


def test_a_simulation_reads_each_draw_as_a_release_would(tmp_path, capsys):
    """A seeded simulation's intervals are the reader's on each simulated draw; only the first draw's non-private
    p-value (it reads the data) is added beside them, and never reaches a release."""
    code, out = cli(capsys, [*upload(lung_csv(tmp_path / "lung.csv"), "--n-public", "228"), "--seed", "4",
                             "--repeat", "2"])
    assert code == 0, out
    assert [e["trial"] for e in out["estimates"]] == [0, 1]
    assert "p_value_nonprivate" in out["estimates"][0] and "p_value_nonprivate" not in out["estimates"][1]
    assert {"n", "rows", "dropped_incomplete"} <= set(out) and out["n"] == 227
    assert all(0 < p <= 1 for e in out["estimates"] for p in e["p_value"].values())
    assert not math.isnan(out["estimates"][1]["lower"]["age"])


def test_the_reader_imports_no_data_module():
    """``dpsurv_core.regression.readout`` (and everything it imports) reaches no data module and no engine: a reader
    gets two JSON dicts and nothing else."""
    code = ("import sys, dpsurv_core.regression.readout as r, dpsurv_core.publication as p; "
            "p.readers.reader('regression'); "
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('dpsurv_core'))))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert done.returncode == 0, done.stderr
    loaded = done.stdout.split()
    assert "dpsurv_core.regression.readout" in loaded
    assert not [m for m in loaded if m.startswith(("dpsurv_core.data", "dpsurv_core.engines"))], loaded
