"""The command line: ``datasets --json`` and the shared options' error handling (exit 2, one line, no traceback).

Analysis commands arrive with later issues; their shared options are exercised here through a probe
command built from ``cli/common.py`` exactly as those commands build theirs.
"""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
import types
from pathlib import Path

import pandas as pd
import pytest

from dpsurv_core import cli
from dpsurv_core.cli import common
from dpsurv_core.errors import DataError

ROOT = Path(__file__).resolve().parents[2]

R_COUNTS = {"lung": (228, 165), "kidney": (38, 58), "leukemia": (23, 18), "gehan": (42, 30), "mgus2": (1384, 963),
            "myeloid": (646, 320), "ovarian": (26, 12), "stanford2": (184, 113), "veteran": (137, 128),
            "pbc": (418, 161), "transplant": (815, 66), "flchain": (7874, 2169)}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpsurv_core", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def assert_one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Traceback" not in stderr
    return lines[0]


def test_datasets_json_lists_all_twelve_with_r_counts():
    out = run_cli("datasets", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["name"] for r in rows] == list(R_COUNTS)
    for r in rows:
        assert (r["n"], r["events"]) == R_COUNTS[r["name"]], r["name"]
        for key in ("time", "event", "groups", "covariates", "source", "time_unit"):
            assert key in r
        assert isinstance(r["groups"], list) and isinstance(r["covariates"], list) and "licence" in r["source"]
    by = {r["name"]: r for r in rows}
    assert by["kidney"]["rows"] == 76 and by["kidney"]["id"] == "id"
    assert by["pbc"]["competing_events"]["counts"] == {"1": 25, "2": 161}
    assert by["transplant"]["competing_events"]["counts"] == {"ltx": 636, "death": 66, "withdraw": 37}
    assert out.stderr == ""


@pytest.mark.slow
@pytest.mark.parametrize("args", [["datasets", "--bogus"], ["nosuchcommand"]])
def test_unknown_option_or_command_exits_2_with_one_line(args):
    out = run_cli(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert_one_error_line(out.stderr)


def test_no_command_exits_2(capsys):
    assert cli.main([]) == 2
    out = capsys.readouterr()
    assert out.out == "" and assert_one_error_line(out.err).startswith("error: the following arguments are required")


# ---------------------------------------------------------------- the shared options, through a probe command

def _probe_module() -> types.ModuleType:
    mod = types.ModuleType("dpsurv_core.cli.probe")
    mod.NAME, mod.HELP = "probe", "probe the shared options"

    def add_arguments(p):
        common.add_data_options(p, covariates=True)
        common.add_release_options(p, ["laplace-counts"], default="laplace-counts", grid=True)

    def run(args):
        cohort = common.cohort_from_args(args)
        params = common.public_from_args(args, cohort)
        noise = common.noise_from_args(args)
        return {"n": cohort.n_subjects, "rows": cohort.n, "events": cohort.n_events, "groups": cohort.groups,
                "grid": params.grid.to_dict(), "horizon": params.horizon, "epsilon": args.epsilon,
                "release": noise.is_release, "disclosures": [d.to_dict() for d in params.disclosures()]}

    mod.add_arguments, mod.run = add_arguments, run
    return mod


def register_probe() -> None:
    """Make ``probe`` a command of the real CLI, the way a command module in ``dpsurv_core/cli`` is found."""
    mod = _probe_module()
    mod.__spec__ = importlib.machinery.ModuleSpec("dpsurv_core.cli.probe", None)
    sys.modules["dpsurv_core.cli.probe"] = mod
    cli.COMMANDS["probe"] = mod.HELP


@pytest.fixture
def probe(capsys):
    saved = dict(cli.COMMANDS)
    register_probe()

    def call(*args: str) -> tuple[int, str, str]:
        code = cli.main(["probe", *args])
        out = capsys.readouterr()
        return code, out.out, out.err

    yield call
    cli.COMMANDS.clear()
    cli.COMMANDS.update(saved)
    sys.modules.pop("dpsurv_core.cli.probe", None)


def test_probe_grid_means_equal_bins_reported_at_right_edges(probe):
    code, out, err = probe("--data", "lung", "--grid", "0:1100:20", "--group", "sex", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert (res["n"], res["events"], res["groups"]) == (228, 165, ["1", "2"])
    assert len(res["grid"]["edges"]) == 21 and res["grid"]["edges"][-1] == 1100 and res["horizon"] == 1100
    assert res["release"] is True and res["epsilon"] == 1.0
    assert res["disclosures"] == []  # lung's sex codes are documented (R's documentation): declared, not read off


def test_probe_event_times_grid_is_not_dp_and_derived_horizon_disclosed(probe):
    code, out, _ = probe("--data", "leukemia", "--grid", "event-times", "--seed", "3", "--json")
    res = json.loads(out)
    assert code == 0 and res["grid"]["kind"] == "event-times" and res["release"] is False
    flags = {d["parameter"]: d["dp"] for d in res["disclosures"]}
    assert flags == {"horizon": True, "grid": False}


def test_probe_kidney_with_subject_bound(probe):
    code, out, _ = probe("--data", "kidney", "--max-rows-per-subject", "1", "--json")
    assert code == 0 and json.loads(out)["rows"] == 38


def test_probe_reads_a_csv_file(probe, tmp_path):
    path = tmp_path / "mine.csv"
    pd.DataFrame({"t": [3, 5, 8, 13], "dead": ["yes", "no", "yes", "yes"]}).to_csv(path, index=False)
    code, out, err = probe("--data", str(path), "--time", "t", "--event", "dead", "--horizon", "20", "--json")
    assert code == 0, err
    res = json.loads(out)
    assert (res["n"], res["events"], res["horizon"]) == (4, 3, 20.0) and res["disclosures"] == []


@pytest.mark.parametrize(("args", "fragment"), [
    (["--data", "lungs"], "neither a bundled data set"),
    (["--data", "/nonexistent/cohort.csv", "--time", "t", "--event", "d"], "There is no file"),
    (["--data", "mine.csv"], "needs --time and --event"),
    (["--data", "lung", "--grid", "0:1100"], "not START:STOP:BINS"),
    (["--data", "lung", "--grid", "500:100:10"], "0 <= start < stop"),
    (["--data", "lung", "--epsilon", "0"], "must be a positive number"),
    (["--data", "lung", "--epsilon", "-1"], "must be a positive number"),
    (["--data", "lung", "--epsilon", "lots"], "is not a number"),
    (["--data", "lung", "--repeat", "0"], "must be at least 1"),
    (["--data", "lung", "--mechanism", "magic"], "invalid choice"),
    (["--data", "lung", "--unknown-option", "1"], "unrecognized arguments"),
    (["--data", "lung", "--time", "survival"], "no column 'survival'"),
    (["--data", "lung", "--group", "nosuch"], "no column 'nosuch'"),
    (["--data", "lung", "--event", "age"], "event value(s)"),
    (["--grid", "0:10:2"], "--data"),
])
def test_bad_input_exits_2_with_one_error_line(probe, args, fragment):
    code, out, err = probe(*args, "--json")
    assert code == 2 and out == ""
    line = assert_one_error_line(err)
    assert fragment in line


def test_bad_input_through_a_real_subprocess_has_no_traceback(tmp_path):
    script = (
        "import sys, types\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.cli.test_cli_foundation import register_probe\n"
        "from dpsurv_core import cli\n"
        "register_probe()\n"
        "sys.exit(cli.main())\n"
    )
    for args in (["--data", "lung", "--grid", "x"],):
        out = subprocess.run([sys.executable, "-c", script, "probe", *args, "--json"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and out.stdout == ""
        assert_one_error_line(out.stderr)


def test_helpers_directly():
    assert common.split_list(" a, b,,c ") == ("a", "b", "c") and common.split_list(None) == ()
    assert common.epsilon_value("inf") == float("inf") and common.epsilon_value("0.5") == 0.5
    assert common.positive_int("3") == 3
    with pytest.raises(DataError):
        args = types.SimpleNamespace(data="lung", time="nope", event=None, id=None, max_rows_per_subject=None,
                                     event_codes=None, censor_codes=None, group=None, covariates=None, sheet=None)
        common.cohort_from_args(args)
