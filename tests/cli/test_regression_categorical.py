"""``regression --categorical``: categorical covariates as indicators against a reference level, exactly as the
Regression page encodes them, so that the page's "reproduce on the command line" gives the page's fit."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_core.cli.regression import categorical_option
from dpsurv_core.data import datasets
from dpsurv_core.data import labels as value_labels
from dpsurv_core.data.cohort import build_cohort, default_mapping
from dpsurv_core.regression.model import fit_nonprivate
from dpsurv_core.regression.person_period import person_period
from ui import session
from ui.data_view import categorical_codes

ROOT = Path(__file__).resolve().parents[2]
COVS = ["age", "sex", "ph.ecog"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpsurv_core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def cli_json(argv: list[str]) -> dict:
    out = run_cli(*argv)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.fixture(scope="module")
def page_command() -> list[str]:
    """The Regression page's reproduce command on lung with age, sex and ph.ecog (sex and ph.ecog categorical)."""
    at = AppTest.from_file(str(ROOT / "pages" / "5_Regression.py"), default_timeout=120)
    at.session_state["data_choice"] = session.bundled_choice("lung")
    at.session_state["rg_covs"] = COVS
    at.session_state["rg_mechs"] = ["output"]
    at.session_state["rg_trials"] = 10
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    (line,) = [c.value for c in at.caption if c.value.startswith("Reproduce on the command line")]
    argv = shlex.split(line.split("`")[1])
    assert argv[:4] == ["python", "-m", "dpsurv_core", "regression"]
    return argv[3:]  # "regression" and its options


def page_fit(argv: list[str], lam: float):
    """The page's own encoding (ui.data_view.categorical_codes with lung's labels) and its discrete-time fit."""
    frame, labels = datasets.load("lung"), value_labels.bundled("lung")
    cats = categorical_codes(frame, COVS, labels)
    cohort = build_cohort(cats.frame, default_mapping("lung", covariates=tuple(COVS)), "lung",
                          datasets.info("lung").time_unit)
    pp = person_period(cohort, COVS, intervals=int(option(argv, "--intervals")), knots=int(option(argv, "--knots")),
                       levels=cats.levels, n_public=int(option(argv, "--n-public")))
    tab = fit_nonprivate(pp, lam).table()
    return dict(zip(tab.covariate, tab.coefficient)), cats


def test_the_page_passes_its_categories_and_reference_levels(page_command):
    assert option(page_command, "--categorical") == "sex:1,ph.ecog:0"
    assert categorical_option(datasets.load("lung"), ["sex", "ph.ecog"], value_labels.bundled("lung")) == \
        "sex:1,ph.ecog:0"


def test_the_page_command_without_noise_gives_the_page_fit(page_command):
    # the page's command with the noise off (epsilon inf: not recorded) is the ridge fit the page perturbs
    out = cli_json([*page_command[:-1], "--epsilon", "inf", "--json"])
    expected, cats = page_fit(page_command, float(option(page_command, "--lambda")))
    (got,) = [e["coefficients"] for e in out["estimates"]]
    assert list(got) == list(expected)
    assert list(got)[:3] == ["age", "sex=Female", "ph.ecog=ECOG 1: symptomatic, fully ambulatory"]
    np.testing.assert_allclose(list(got.values()), list(expected.values()), rtol=1e-9, atol=1e-12)
    assert out["reference_levels"] == {"sex": "Male", "ph.ecog": "ECOG 0: asymptomatic"} == cats.references
    assert not any(d["parameter"].startswith("levels:") for d in out["disclosures"])  # labels declare the levels


def test_nonprivate_fit_matches_the_page_and_an_explicit_reference_flips_the_sign(page_command):
    argv = [a for a in page_command if a != "--json"]
    for name in ("--mechanism", "--epsilon", "--lambda"):
        i = argv.index(name)
        del argv[i:i + 2]
    out = cli_json([*argv, "--mechanism", "nonprivate", "--json"])
    expected, _ = page_fit(page_command, 0.0)
    got = out["estimates"][0]["coefficients"]
    assert list(got) == list(expected)
    np.testing.assert_allclose(list(got.values()), list(expected.values()), rtol=1e-9, atol=1e-12)
    i = argv.index("--categorical")
    argv[i + 1] = "sex:2,ph.ecog"
    flipped = cli_json([*argv, "--mechanism", "nonprivate", "--json"])["estimates"][0]["coefficients"]
    assert "sex=Male" in flipped and "sex=Female" not in flipped
    assert flipped["sex=Male"] == pytest.approx(-got["sex=Female"], rel=1e-4)
    assert flipped["age"] == pytest.approx(got["age"], rel=1e-4)


def test_unlabelled_codes_are_named_by_column_and_code_and_a_moved_reference_is_disclosed(tmp_path):
    csv = tmp_path / "trial.csv"
    datasets.load("lung")[["time", "status", "age", "sex"]].dropna().to_csv(csv, index=False)
    base = ["regression", "--data", str(csv), "--time", "time", "--event", "status", "--covariates", "age,sex",
            "--mechanism", "nonprivate", "--json"]
    out = cli_json([*base, "--categorical", "sex"])
    assert out["covariates"] == ["age", "sex=sex 2"] and out["reference_levels"] == {"sex": "sex 1"}
    assert any(d["parameter"] == "levels:sex" for d in out["disclosures"])
    moved = cli_json([*base, "--categorical", "sex:2"])
    assert moved["covariates"] == ["age", "sex=sex 1"]
    assert [d for d in moved["disclosures"] if d["parameter"] == "levels:sex"][0]["message"].startswith(
        "The categories of 'sex' (sex 2, sex 1) were read off the data")


@pytest.mark.parametrize(("categorical", "message"), [
    ("wt.loss", "--categorical names 'wt.loss', which is not among --covariates"),
    ("sex:7", "The reference level '7' is not a value of column 'sex': choose one of 1, 2."),
    ("sex,sex", "--categorical names 'sex' twice"),
])
def test_bad_categorical_options_are_one_sentence_and_exit_2(categorical, message):
    out = run_cli("regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate",
                  "--categorical", categorical, "--json")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in out.stderr
