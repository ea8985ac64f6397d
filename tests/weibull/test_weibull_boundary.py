"""The Weibull publication boundary: a release's intervals come from declared values only.

The leak this guards against: the noise-aware intervals of a ``weibull --mechanism lsp-tll`` release were simulated
at the cohort's exact size, so recomputing the stored interval for every n in 180..280 reproduced it only at the
true n (228 on lung). Now the number of subjects and the censoring share are declared (``--n-public``,
``--censoring``; a bundled data set's published size counts as declared) or the release is refused; the intervals,
warnings and curves people read are computed by the reader from the record alone, and re-derive identically.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from dpsurv_core.cli import build_parser, main
from dpsurv_core.data import datasets
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.publication import publish, rederive
from dpsurv_core.weibull.mechanisms import WeibullEstimates

ROOT = Path(__file__).resolve().parents[2]
DECLARED = ["--horizon", "1100", "--censoring", "0.3"]


def _csv(tmp_path: Path, name: str = "cohort.csv", drop: int = 0) -> str:
    """lung as an uploaded file (not the bundled name, so no published size is known), less its last ``drop`` rows."""
    frame = datasets.load("lung")
    if drop:
        frame = frame.iloc[:-drop]
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return str(path)


def _weibull(capsys, data: str, *argv: str) -> tuple[int, dict | None, str]:
    rc = main(["weibull", "--data", data, "--time", "time", "--event", "status", "--mechanism", "lsp-tll",
               "--epsilon", "1", *argv, "--json"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 else None), err


def _releases(path: Path) -> list:
    return [r for r in LedgerStore(path).records() if r.kind == RELEASE] if path.exists() else []


def test_an_upload_without_a_declared_n_is_refused_naming_n_public(tmp_path, capsys, ledger_path):
    rc, _, err = _weibull(capsys, _csv(tmp_path), *DECLARED)
    assert rc == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert "--n-public" in err and "--accept-disclosure n" in err and "nothing was drawn or charged" in err
    assert "228" not in err  # the refusal names the option, never the count
    assert _releases(ledger_path) == []


def test_a_bundled_data_set_s_published_size_counts_as_declared_and_undeclared_values_are_refused(capsys, ledger_path):
    rc, _, err = _weibull(capsys, "lung")  # no horizon, no censoring share: both would be read off the data
    assert rc == 2 and "--horizon" in err and "--censoring" in err and "--n-public" not in err
    rc, out, _ = _weibull(capsys, "lung", *DECLARED)
    assert rc == 0 and out["publishable"]["public_inputs"]["n"] == datasets.published_size("lung") == 228
    assert out["publishable"]["disclosures"] == [] and out["publishable"]["subject_protected"] is True


def test_a_declared_release_publishes_declared_inputs_only_and_prints_the_reader_s_numbers(tmp_path, capsys,
                                                                                          ledger_path):
    rc, out, _ = _weibull(capsys, _csv(tmp_path), *DECLARED, "--n-public", "228")
    assert rc == 0 and out["release"] is True
    pub = out["publishable"]
    inputs = pub["public_inputs"]
    assert inputs["n"] == 228 and inputs["censoring"] == 0.3 and inputs["horizon"] == 1100.0
    assert not any(inputs[k] for k in ("horizon_from_data", "n_from_data", "censoring_from_data", "blocks_from_data"))
    # what the command prints beside the release is exactly what the record derives
    assert out["intervals"] == pub["derived"]["intervals"] and out["warnings"] == pub["derived"]["warnings"]
    assert out["curve"] == pub["derived"]["curve"] and out["estimates"] == pub["released"]["estimates"]
    assert out["interval_method"] == pub["derived"]["interval_method"]
    # exact values about the data are not at the top level of a release
    assert "n" not in out and "censoring_read" not in out
    assert out["confidential"]["n"] == 228 and "data holder" in out["confidential"]["note"]
    assert set(pub["released"]) == {"estimates"}
    assert set(pub["released"]["estimates"][0]) == {"trial", "shape", "scale", "scale_normalised", "clamped"}
    # lung less its last subject, also declared as 228: the public inputs cannot tell the two cohorts apart
    rc, fewer, _ = _weibull(capsys, _csv(tmp_path, "fewer.csv", drop=1), *DECLARED, "--n-public", "228")
    assert rc == 0 and fewer["publishable"]["public_inputs"] == inputs
    assert fewer["confidential"]["n"] == 227


def test_the_stored_record_re_derives_identically(tmp_path, capsys, ledger_path):
    rc, out, _ = _weibull(capsys, _csv(tmp_path), *DECLARED, "--n-public", "228")
    assert rc == 0
    (record,) = _releases(ledger_path)
    assert record.id == out["record_id"]
    assert record.body["kind"] == "weibull" and record.body["derived"] == out["publishable"]["derived"]
    assert rederive(record.body) == {"identical": True, "first_difference": None, "kind": "weibull"}
    assert main(["budget", "rederive", "--record", str(record.id), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["identical"] is True
    # a changed interval in the stored record is found
    body = json.loads(json.dumps(record.body))
    body["derived"]["intervals"][0]["shape"]["upper"] += 1e-9
    assert rederive(body)["first_difference"] == "derived.intervals[0].shape.upper"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_the_reader_imports_no_data_module():
    """Neither its own imports (anywhere in the module) nor what they pull in reach the data layer or the engines:
    the reader is run in a fresh process and ``sys.modules`` is read after it derived a record."""
    own = _imports(ROOT / "dpsurv_core" / "weibull" / "readout.py")
    assert not {m for m in own if m.startswith(("dpsurv_core.data", "dpsurv_core.engines"))}
    code = (
        "import json, sys\n"
        "from dpsurv_core.publication import derive\n"
        f"inputs = {_inputs()!r}\n"
        "released = {'estimates': [{'trial': 0, 'shape': 1.3, 'scale': 440.0, 'scale_normalised': 0.4, "
        "'clamped': False}]}\n"
        "derived = derive('weibull', released, inputs)\n"
        "assert derived['intervals'][0]['shape']['lower'] <= 1.3\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('dpsurv_core.data', 'dpsurv_core.engines', "
        "'pandas', 'lifelines')))))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == []


def _inputs(n: int = 228) -> dict:
    return {"mechanism": "lsp-tll", "epsilon": 1.0, "horizon": 1100.0, "omega": 6.0, "gamma": 10.0, "rungs": 500,
            "rows_per_subject": 1, "blocks": None, "block_size": None, "n": n, "censoring": 0.3, "time_unit": "days",
            "horizon_from_data": False, "n_from_data": False, "censoring_from_data": False, "blocks_from_data": False}


def _build(path: str, *argv: str):
    from dpsurv_core.cli import weibull as cli_weibull

    args_list = ["weibull", "--data", path, "--time", "time", "--event", "status", "--mechanism", "lsp-tll",
                 "--epsilon", "1", *argv]
    args = build_parser("weibull").parse_args(args_list)
    args._argv = args_list
    return cli_weibull.build(args)


def test_the_intervals_of_a_release_cannot_depend_on_the_true_cohort_size(tmp_path):
    """The n-leak experiment in small form. The same released value read with the same declared inputs gives the same
    derived part whatever cohort it came from: the plans of two cohorts of different true sizes (lung, and lung less
    40 subjects) publish the same released estimates with identical public inputs, hence identical intervals. The
    intervals do depend on n (another declared n moves them), which is why n must be declared, not counted."""
    est = WeibullEstimates("lsp-tll", np.array([1.25]), np.array([0.42]), 1100.0, clamped=np.array([False]))
    full = _build(_csv(tmp_path), *DECLARED, "--n-public", "228")
    fewer = _build(_csv(tmp_path, "fewer.csv", drop=40), *DECLARED, "--n-public", "228")
    assert (full.cohort.n_subjects, fewer.cohort.n_subjects) == (228, 188)
    a, b = full.plan.publish(est), fewer.plan.publish(est)
    assert a == b
    pa, pb = publish("weibull", *a), publish("weibull", *b)
    assert pa.derived == pb.derived and pa.public_inputs["n"] == 228
    assert publish("weibull", *a).derived == pa.derived  # the reader is deterministic
    other = publish("weibull", a[0], a[1] | {"n": 188})
    assert other.derived["intervals"] != pa.derived["intervals"]  # n matters to the intervals: it must be declared


def test_values_read_off_the_data_are_published_only_when_accepted_and_then_not_dp(tmp_path, capsys, ledger_path):
    rc, out, _ = _weibull(capsys, _csv(tmp_path), "--horizon", "1100", "--accept-disclosure", "n,censoring")
    assert rc == 0
    pub = out["publishable"]
    assert pub["public_inputs"]["n"] == 228 and pub["public_inputs"]["n_from_data"] is True
    assert pub["public_inputs"]["censoring_from_data"] is True
    assert {d["parameter"] for d in pub["disclosures"]} == {"n", "censoring"}
    assert all(d["dp"] is False and d["message"].startswith("not DP") and f"{d['parameter']} read off the data"
               in d["message"] for d in pub["disclosures"])
    assert out["privacy"].startswith("not differentially private as run")
    assert pub["subject_protected"] is False and out["private"] is False
    assert "228" not in json.dumps(pub["disclosures"])  # the recorded disclosures name the value, never count it
    (record,) = _releases(ledger_path)
    assert rederive(record.body)["identical"] is True


def test_simulations_and_non_private_runs_keep_one_block_and_say_so(capsys):
    rc = main(["weibull", "--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "1", "--horizon", "1100",
               "--seed", "4", "--json"])
    sim = json.loads(capsys.readouterr().out)
    assert rc == 0 and sim["block"].startswith("simulation") and "publishable" not in sim
    assert sim["n"] == 228 and "confidential" not in sim
    # the simulation reads its draws with the reader a release would use
    inputs = _inputs() | {"censoring": sim["censoring_share"]}
    assert sim["intervals"] == publish("weibull", {"estimates": sim["estimates"]}, inputs).derived["intervals"]
    rc = main(["weibull", "--data", "lung", "--mechanism", "mle", "--json"])
    fit = json.loads(capsys.readouterr().out)
    assert rc == 0 and fit["block"].startswith("not private") and fit["n"] == 228 and "publishable" not in fit
