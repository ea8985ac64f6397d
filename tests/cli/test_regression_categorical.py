"""``regression --categorical``: categorical covariates as indicators against a reference level, encoded by the one
core function the Regression page also uses (:func:`dpsurv_core.data.labels.encode_categories`), named by the same
labels (a bundled data set's own, or the Data page's saved with 'Labels as JSON' and given as ``--labels``), so that
the page's "reproduce on the command line" gives the page's fit under the page's names."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.data import datasets
from dpsurv_core.data import labels as value_labels
from dpsurv_core.data.cohort import build_cohort, default_mapping
from dpsurv_core.data.labels import ValueLabels, categorical_columns, encode_categories
from dpsurv_core.regression.model import fit_nonprivate
from dpsurv_core.regression.person_period import person_period
from tests.app.tables import shown
from tests.cli_run import completed

ROOT = Path(__file__).resolve().parents[2]
COVS = ["age", "sex", "ph.ecog"]
# lung's sex and ECOG renamed on the Data page (the reference of sex moved to women)
OWN = (value_labels.bundled("lung").with_labels("sex", {1: "Men", 2: "Women"})
       .with_labels("ph.ecog", {0: "fit", 1: "ambulatory", 2: "in bed < 50%", 3: "in bed > 50%"})
       .with_reference("sex", 2))


def run_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return completed(*args, cwd=cwd)


def cli_json(argv: list[str], cwd: Path = ROOT) -> dict:
    out = run_cli(*argv, cwd=cwd)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def save_labels(labels: ValueLabels, path: Path) -> Path:
    """The file the Data page's 'Labels as JSON' button saves (pages/1_Data.py: the same ``json.dumps`` call)."""
    path.write_text(json.dumps(labels.to_json(), indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def nonprivate(argv: list[str]) -> list[str]:
    """A page command turned into the non-private discrete-time fit (no mechanism, epsilon or Lambda)."""
    argv = [a for a in argv if a != "--json"]
    for name in ("--mechanism", "--epsilon", "--lambda"):
        i = argv.index(name)
        del argv[i:i + 2]
    return [*argv, "--mechanism", "nonprivate", "--json"]


def page_run(covs: list[str], labels: ValueLabels | None = None) -> AppTest:
    """The Regression page on lung with ``covs`` (and the Data page's ``labels``, as it keeps them in the session)."""
    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "5_Regression.py"), default_timeout=120)
    choice = session.bundled_choice("lung")
    at.session_state["data_choice"] = choice
    if labels is not None:
        at.session_state["value_labels"] = {choice.fingerprint: labels}
    at.session_state["rg_covs"] = covs
    at.session_state["rg_mechs"] = ["output"]
    at.session_state["rg_trials"] = 10
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def page_command(at: AppTest) -> list[str]:
    (line,) = [c.value for c in at.caption if c.value.startswith("Reproduce on the command line")]
    argv = shlex.split(line.split("`")[1])
    assert argv[:4] == ["python", "-m", "dpsurv_core", "regression"]
    return argv[3:]  # "regression" and its options


def assert_page_table_is_the_cli_fit(at: AppTest, out: dict, names: list[str]) -> None:
    """The page's coefficient table, non-private discrete-time rows: the CLI's coefficients (``--mechanism
    nonprivate``) under the CLI's ``covariate_labels``, which are ``names``."""
    table = shown(at.table[0].value)  # as displayed: st.table cells are escaped Markdown
    rows = table[table.Estimate.str.startswith("Discrete-time")].set_index("Covariate")
    assert list(rows.index) == [out["covariate_labels"][c] for c in out["covariates"]] == names
    np.testing.assert_allclose(rows["Coefficient (log ratio)"].to_numpy(dtype=float),
                               [out["estimates"][0]["coefficients"][c] for c in out["covariates"]], rtol=0,
                               atol=5.01e-5)  # the page shows four decimals


@pytest.fixture(scope="module")
def lung_command() -> list[str]:
    """The Regression page's reproduce command on lung with age, sex and ph.ecog (sex and ph.ecog categorical)."""
    return page_command(page_run(COVS))


def page_fit(argv: list[str], lam: float, labels: ValueLabels):
    """The page's own encoding (the core's encode_categories with the page's labels) and its discrete-time fit."""
    frame = datasets.load("lung")
    cats = encode_categories(frame, dict.fromkeys(categorical_columns(frame, COVS, labels)), labels)
    cohort = build_cohort(cats.frame, default_mapping("lung", covariates=tuple(COVS)), "lung",
                          datasets.info("lung").time_unit)
    ranges = {}  # the page's declared ranges (the bundled data set's documented bounds)
    for i, a in enumerate(argv):
        if a == "--range":
            col, lo, hi = argv[i + 1].rsplit(":", 2)
            ranges[col] = (float(lo), float(hi))
    pp = person_period(cohort, COVS, intervals=int(option(argv, "--intervals")), knots=int(option(argv, "--knots")),
                       levels=cats.levels, n_public=int(option(argv, "--n-public")), ranges=ranges)
    tab = fit_nonprivate(pp, lam).table()
    return dict(zip(tab.covariate, tab.coefficient)), cats


def test_the_page_passes_its_categories_and_reference_levels(lung_command):
    assert option(lung_command, "--categorical") == "sex:1,ph.ecog:0"
    assert "--labels" not in lung_command  # the bundled data set's own labels: the command line ships them


def test_the_page_command_without_noise_gives_the_page_fit(lung_command):
    # the page's command with the noise off (epsilon inf: not recorded) is the page's non-private fit: without noise
    # the ridge (there only to bound one subject's influence for the noise) is not applied
    out = cli_json([*lung_command[:-1], "--epsilon", "inf", "--json"])
    expected, cats = page_fit(lung_command, 0.0, value_labels.bundled("lung"))
    (got,) = [e["coefficients"] for e in out["estimates"]]
    assert list(got) == list(expected)
    assert list(got)[:3] == ["age", "sex=Female", "ph.ecog=ECOG 1: symptomatic, fully ambulatory"]
    np.testing.assert_allclose(list(got.values()), list(expected.values()), rtol=1e-9, atol=1e-12)
    assert out["reference_levels"] == {"sex": "Male", "ph.ecog": "ECOG 0: asymptomatic"} == cats.references
    assert out["reference_codes"] == {"sex": "1", "ph.ecog": "0"}
    assert out["categories"]["sex"] == {"reference": "1", "reference_label": "Male",
                                        "levels": {"1": "Male", "2": "Female"}}
    assert out["covariate_labels"]["sex=Female"] == "sex: Female vs Male"
    assert not any(d["parameter"].startswith("levels:") for d in out["disclosures"])  # labels declare the levels


def test_nonprivate_fit_matches_the_page_and_an_explicit_reference_flips_the_sign(lung_command):
    argv = nonprivate(lung_command)
    out = cli_json(argv)
    expected, _ = page_fit(lung_command, 0.0, value_labels.bundled("lung"))
    got = out["estimates"][0]["coefficients"]
    assert list(got) == list(expected)
    np.testing.assert_allclose(list(got.values()), list(expected.values()), rtol=1e-9, atol=1e-12)
    i = argv.index("--categorical")
    for ref in ("sex:2,ph.ecog", "sex:Female,ph.ecog"):  # the reference as its code or as its label
        argv[i + 1] = ref
        flipped = cli_json(argv)
        coefs = flipped["estimates"][0]["coefficients"]
        assert "sex=Male" in coefs and "sex=Female" not in coefs
        assert coefs["sex=Male"] == pytest.approx(-got["sex=Female"], rel=1e-4)
        assert coefs["age"] == pytest.approx(got["age"], rel=1e-4)
        assert flipped["categories"]["sex"]["reference"] == "2"
        assert flipped["reference_levels"]["sex"] == "Female"


def test_labels_set_on_the_data_page_name_the_categories_as_the_page_does(tmp_path):
    """The page with its own labels for lung's sex and ECOG (women the reference): its command names the labels
    file; run with the file the Data page saves, the CLI gives the page's names and numbers."""
    at = page_run(["age", "sex"], OWN)
    argv = page_command(at)
    assert option(argv, "--labels") == "lung-labels.json" and option(argv, "--categorical") == "sex:2"
    assert any("lung-labels.json" in c.value and "Labels as JSON" in c.value for c in at.caption)
    save_labels(OWN, tmp_path / "lung-labels.json")
    out = cli_json(nonprivate(argv), cwd=tmp_path)  # run where the labels file was saved
    assert out["covariates"] == ["age", "sex=Men"]
    assert out["reference_levels"] == {"sex": "Women"}
    assert out["categories"]["sex"] == {"reference": "2", "reference_label": "Women", "levels": {"2": "Women", "1": "Men"}}
    assert_page_table_is_the_cli_fit(at, out, ["age", "sex: Men vs Women"])
    assert any("Reference levels" in m.value and "sex: Women" in m.value for m in at.markdown)


def test_labels_file_names_an_uploads_categories(tmp_path):
    csv = tmp_path / "trial.csv"
    datasets.load("lung")[["time", "status", "age", "sex", "ph.ecog"]].dropna().to_csv(csv, index=False)
    labels = save_labels(ValueLabels().with_labels("sex", {1: "Male", 2: "Female"})
                         .with_labels("ph.ecog", {0: "fit", 1: "ambulatory", 2: "in bed < 50%", 3: "in bed > 50%"})
                         .with_reference("ph.ecog", 1), tmp_path / "trial-labels.json")
    base = ["regression", "--data", str(csv), "--time", "time", "--event", "status", "--covariates", "age,sex,ph.ecog",
            "--mechanism", "nonprivate", "--labels", str(labels), "--json"]
    out = cli_json([*base, "--categorical", "sex,ph.ecog"])
    assert out["covariates"] == ["age", "sex=Female", "ph.ecog=fit", "ph.ecog=in bed < 50%", "ph.ecog=in bed > 50%"]
    assert out["reference_levels"] == {"sex": "Male", "ph.ecog": "ambulatory"}  # the file's declared reference
    assert out["reference_codes"] == {"sex": "1", "ph.ecog": "1"}
    assert not any(d["parameter"].startswith("levels:") for d in out["disclosures"])  # every code labelled
    by_label = cli_json([*base, "--categorical", "sex:Female,ph.ecog:fit"])
    assert by_label["covariates"] == ["age", "sex=Male", "ph.ecog=ambulatory", "ph.ecog=in bed < 50%",
                                      "ph.ecog=in bed > 50%"]
    assert by_label["estimates"][0]["coefficients"]["sex=Male"] == pytest.approx(
        -out["estimates"][0]["coefficients"]["sex=Female"], rel=1e-4)


def test_unlabelled_codes_are_named_by_column_and_code_and_their_levels_are_disclosed(tmp_path):
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
    ("sex:7", "The reference level '7' is not a value of column 'sex': choose one of 1, 2 (or their labels: Male, "
              "Female)."),
    ("sex,sex", "--categorical names 'sex' twice"),
])
def test_bad_categorical_options_are_one_sentence_and_exit_2(categorical, message):
    out = run_cli("regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate",
                  "--categorical", categorical, "--json")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in out.stderr


def test_a_labels_file_that_is_not_json_is_one_sentence(tmp_path):
    bad = tmp_path / "labels.json"
    bad.write_text("sex: 1 = Male", encoding="utf-8")
    out = run_cli("regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate",
                  "--categorical", "sex", "--labels", str(bad), "--json")
    assert out.returncode == 2 and "is not JSON text" in out.stderr and "Traceback" not in out.stderr
