"""``weibull --mechanism mle`` is R's survreg Weibull MLE (fixture r_reference/survreg.json from
tools/r_reference/survreg.R): shape = 1 / survreg's scale, scale = exp(intercept) and the Wald standard errors of
log shape and log scale, within 1e-8 relative on every bundled data set; the clipped estimator the private mechanisms
estimate is its own catalogue entry, ``clipped-mle``, and the private mechanisms' reference."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from dpsurv_core.data import datasets
from dpsurv_core.privacy import catalogue
from tests.cli_run import fails, run

FIXTURE = json.loads((Path(__file__).parent / "r_reference" / "survreg.json").read_text())
FITS = {f["data"]: f for f in FIXTURE["fits"]}
RTOL = 1e-8


def close(ours: float, r: float, rtol: float = RTOL) -> bool:
    return abs(ours - r) <= rtol * abs(r)


def _assert_survreg(o: dict, ref: dict) -> None:
    e, iv = o["estimates"][0], o["intervals"][0]
    assert close(e["shape"], ref["shape"]), (e["shape"], ref["shape"])
    assert close(e["scale"], ref["scale"]), (e["scale"], ref["scale"])
    # Wald standard errors: se(log shape) = se(log(survreg scale)), se(log scale) = se(intercept)
    assert close(iv["shape"]["error_sd"] / e["shape"], ref["se_log_scale"])
    assert close(iv["scale"]["error_sd"] / e["scale"], ref["se_intercept"])
    z = 1.959963984540054
    assert close(iv["scale"]["lower"], math.exp(ref["intercept"] - z * ref["se_intercept"]))
    assert close(iv["shape"]["upper"], math.exp(-ref["log_scale"] + z * ref["se_log_scale"]))


@pytest.mark.parametrize("name", [n for n, f in FITS.items() if not f["zero_times_left_out"]])
def test_mle_is_survreg(capsys, name):
    o = run(capsys, "weibull", "--data", name, "--mechanism", "mle")
    _assert_survreg(o, FITS[name])
    assert "survreg" in o["notes"][-1] and "omega" not in o["parameters"]


@pytest.mark.parametrize("name", [n for n, f in FITS.items() if f["zero_times_left_out"]])
def test_a_time_of_zero_is_refused_as_survreg_refuses_it_and_the_other_rows_agree(capsys, tmp_path, name):
    ref = FITS[name]
    line = fails(capsys, "weibull", "--data", name, "--mechanism", "mle")
    assert f"{ref['zero_times_left_out']} record(s) have time 0" in line and "clipped-mle" in line
    info = datasets.info(name)
    table = datasets.load(name)
    event = table[info.event].isin(info.event_codes).astype(int)
    kept = table[info.time] > 0
    path = tmp_path / f"{name}.csv"
    table.loc[kept, [info.time]].assign(event=event[kept]).to_csv(path, index=False)
    o = run(capsys, "weibull", "--data", str(path), "--time", info.time, "--event", "event", "--mechanism", "mle",
            "--horizon", str(ref["max_time"]))
    _assert_survreg(o, ref)


def test_clipped_mle_is_its_own_entry_and_the_private_mechanisms_reference(capsys):
    entry = catalogue.get(catalogue.WEIBULL, "clipped-mle")
    assert not entry.private and "clipped MLE the private mechanisms estimate" in entry.summary
    assert catalogue.reference_id(catalogue.WEIBULL) == "clipped-mle"
    assert "survreg" in catalogue.get(catalogue.WEIBULL, "mle").paper
    # stanford2 has times below horizon x e^-6: the clipped MLE's shape is 0.575, survreg's 0.554
    clipped = run(capsys, "weibull", "--data", "stanford2", "--mechanism", "clipped-mle")["estimates"][0]
    plain = run(capsys, "weibull", "--data", "stanford2", "--mechanism", "mle")["estimates"][0]
    assert clipped["shape"] == pytest.approx(0.575, abs=1e-3) and plain["shape"] == pytest.approx(0.5543041, abs=1e-6)
    # the private mechanisms without noise return the clipped MLE, not survreg's
    lsp = run(capsys, "weibull", "--data", "stanford2", "--mechanism", "lsp-tll", "--epsilon", "inf")["estimates"][0]
    assert lsp["shape"] == pytest.approx(clipped["shape"], rel=1e-12)


def test_on_lung_no_time_is_clipped_so_both_agree(capsys):
    a = run(capsys, "weibull", "--data", "lung", "--mechanism", "mle")["estimates"][0]
    b = run(capsys, "weibull", "--data", "lung", "--mechanism", "clipped-mle")["estimates"][0]
    assert a["shape"] == pytest.approx(b["shape"], rel=1e-14) and a["scale"] == pytest.approx(b["scale"], rel=1e-14)
