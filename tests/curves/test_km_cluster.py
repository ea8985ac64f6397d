"""Kaplan-Meier robust (infinitesimal jackknife) standard errors for several rows per subject against R's
survfit(..., id = id) (survival 3.5, fixture r_reference/km_cluster.json from tools/r_reference/km_cluster.R): the
survival, the robust standard error of S and the limits of every conf.type at every time of R's curve (events and
censorings) within 1e-8 relative, on kidney (two rows per patient, overall and by sex) and on synthetic data with 2
to 4 rows per subject and heavy ties (Therneau & Grambsch 2000; Lin & Wei 1989)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.curves.km_robust import robust_km
from tests.cli_run import run

FIXTURE = json.loads((Path(__file__).parent / "r_reference" / "km_cluster.json").read_text())
RTOL = 1e-8
CASES = [(c["name"], c, curve) for c in FIXTURE["cases"] for curve in c["curves"]]


def _array(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


@pytest.mark.parametrize(("name", "case", "ref"), CASES, ids=[f"{n}-{r['group']}" for n, _, r in CASES])
def test_robust_curve_agrees_with_r(name, case, ref):
    d = pd.DataFrame(case["data"])
    if "group" in d and ref["group"] != "all":
        d = d[d.group.astype(str) == ref["group"]]
    fit = robust_km(d.time.to_numpy(), d.event.to_numpy(), d.id.to_numpy())
    assert fit.clusters == d.id.nunique()
    times = _array(ref["time"])
    s, se = fit.at(times)
    np.testing.assert_allclose(s, _array(ref["survival"]), rtol=RTOL, atol=1e-300)
    np.testing.assert_allclose(se, _array(ref["std_err"]), rtol=RTOL, atol=1e-300)
    for conf_type, lower in ref["lower"].items():
        lo, up = fit.limits(times, conf_type)
        np.testing.assert_allclose(lo, _array(lower), rtol=RTOL, atol=1e-300, err_msg=conf_type)
        np.testing.assert_allclose(up, _array(ref["upper"][conf_type]), rtol=RTOL, atol=1e-300, err_msg=conf_type)


def test_first_event_influence_by_hand():
    """One row each, five distinct times: at the first event (n = 5, h = 1/5, S before = 1) the dead subject's
    influence is -(1 - h) / n and each of the four others' is h / n, so se = sqrt((4/25)^2 + 4 (1/25)^2)."""
    t = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    fit = robust_km(t, np.ones(5), np.arange(5))
    assert fit.se[0] == pytest.approx(np.sqrt((0.8 / 5) ** 2 + 4 * (0.2 / 5) ** 2), rel=1e-14)


@pytest.mark.parametrize("conf_type", ["log", "log-log", "plain"])
def test_km_command_adds_r_robust_errors_for_repeated_rows(capsys, conf_type):
    """km --mechanism nonprivate on kidney (two rows per patient) by sex: robust_se, robust_lower and robust_upper at
    each time of the curve equal R's survfit(..., id = id) there."""
    o = run(capsys, "km", "--data", "kidney", "--group", "sex", "--mechanism", "nonprivate", "--conf-type", conf_type)
    assert "survfit(..., id = id)" in o["robust_note"]
    refs = {r["group"]: r for c in FIXTURE["cases"] if c["name"] == "kidney_by_sex" for r in c["curves"]}
    for entry in o["curves"]:
        ref = refs[entry["group"]]
        # the command's times are every group's event times: R's value there is its last at or before it
        # (before the group's first time S = 1 with standard error 0: R's first values there, a censoring-only start)
        index = np.searchsorted(_array(ref["time"]), np.asarray(entry["time"], dtype=float), side="right") - 1
        if index.min() < 0:
            assert ref["survival"][0] == 1.0 and ref["std_err"][0] == 0.0
        index = np.maximum(index, 0)
        for key, values in (("robust_se", ref["std_err"]), ("robust_lower", ref["lower"][conf_type]),
                            ("robust_upper", ref["upper"][conf_type])):
            ours = _array(entry[key])
            np.testing.assert_allclose(ours, _array(values)[index], rtol=RTOL, atol=1e-300, err_msg=key)


def test_no_robust_keys_without_repeated_rows(capsys, tmp_path):
    path = tmp_path / "single.csv"
    pd.DataFrame({"id": range(30), "time": np.arange(1.0, 31.0), "event": [1, 0, 1] * 10}).to_csv(path, index=False)
    for argv in (["--data", "lung"], ["--data", str(path), "--time", "time", "--event", "event", "--id", "id"]):
        o = run(capsys, "km", *argv, "--mechanism", "nonprivate")
        assert "robust_note" not in o and not any("robust_se" in c for c in o["curves"])
