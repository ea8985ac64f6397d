"""The wheel, built from the checkout and installed in a fresh venv with the core dependencies only (no extras).

It must give a working ``dpsurv`` command (``datasets``, a seeded ``km`` simulation) without PySpark, Streamlit or
plotly, and a command that needs an extra must say which one. The app ships in it too (``dpsurv_app``: app.py with its
nine pages next to it, installed as files where Streamlit reads them); its ``dpsurv-app`` command answers ``--help``
and, without the app extra, names it. The dependencies come from pip's configured index (the
local registry); where it cannot be reached the test is skipped with the reason.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# pip's words when an index has no such package or cannot be reached: the registry is missing, not the package broken
UNREACHABLE = ("No matching distribution", "Could not find a version", "NewConnectionError", "Failed to establish",
               "Temporary failure in name resolution", "Network is unreachable", "connection error")


def _pip(args: list[str], python: str | Path, what: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """Run pip; skip (with the reason printed) when the index cannot be reached, fail on any other error."""
    proc = subprocess.run([str(python), "-m", "pip", *args], capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        out = proc.stdout + proc.stderr
        if any(word in out for word in UNREACHABLE):
            reason = f"{what}: pip's index (the local registry) cannot be reached or lacks a package: {out[-400:]}"
            print(reason)
            pytest.skip(reason)
        pytest.fail(f"{what} failed:\n{out[-3000:]}")
    return proc


def _source_copy(dest: Path) -> Path:
    """What the wheel is built from, copied so that the build leaves no build/ or egg-info in the shared checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    for package in ("dpsurv_core", "dpsurv_app"):
        shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fresh venv (no system site-packages) holding the built wheel and the core dependencies only."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _source_copy(tmp / "src")
    dist = tmp / "dist"
    started = time.monotonic()
    _pip(["wheel", "--no-deps", "--quiet", "--wheel-dir", str(dist), str(src)], sys.executable, "building the wheel",
         timeout=300)
    (wheel,) = dist.glob("dpsurv-*.whl")
    venv = tmp / "venv"
    # no pip of its own (ensurepip's copy costs seconds and is not what is tested): this checkout's pip installs into
    # it (--python); without byte-compiling the dependencies (most of the install's CPU), as the commands import
    # only a few of their modules, compiled as they are
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    _pip(["--python", str(python), "install", "--no-compile", "--quiet", str(wheel)], sys.executable,
         "installing the wheel with its core dependencies", timeout=600)
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 1e3:.0f} kB; built and installed core-only in "
          f"{time.monotonic() - started:.0f} s")
    work = tmp / "work"  # the commands run here, away from the checkout, on a throw-away ledger
    work.mkdir()
    return {"python": python, "dpsurv": venv / "bin" / "dpsurv", "dpsurv-app": venv / "bin" / "dpsurv-app",
            "work": work, "wheel": wheel}


def _run(env: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    run_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "DPSURV_"))}
    run_env.update(DPSURV_LEDGER=str(env["work"] / "ledger.sqlite3"), XDG_DATA_HOME=str(env["work"] / "xdg"))
    return subprocess.run([str(a) for a in args], cwd=env["work"], env=run_env, capture_output=True, text=True,
                          timeout=180)


def test_the_wheel_holds_the_package_and_its_bundled_data(installed):
    import zipfile

    names = zipfile.ZipFile(installed["wheel"]).namelist()
    assert "dpsurv_core/data/bundled/lung.csv" in names and "dpsurv_core/cli/__init__.py" in names
    assert not any("__pycache__" in n or n.startswith(("tests/", "ui/", "pages/", "app.py")) for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    scripts = zipfile.ZipFile(installed["wheel"]).read(entry_points).decode()
    assert "dpsurv = dpsurv_core.__main__:console" in scripts and "dpsurv-app = dpsurv_app.__main__:main" in scripts


def test_the_wheel_holds_the_app_with_its_pages_next_to_it(installed):
    import zipfile

    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    pages = sorted(n for n in names if n.startswith("dpsurv_app/pages/"))
    assert {"dpsurv_app/__init__.py", "dpsurv_app/__main__.py", "dpsurv_app/app.py", "dpsurv_app/serving.py"} <= names
    assert [n.removeprefix("dpsurv_app/") for n in pages] == \
        sorted(p.relative_to(ROOT / "dpsurv_app").as_posix() for p in (ROOT / "dpsurv_app" / "pages").glob("*.py"))
    assert len(pages) == 9
    # installed as files next to app.py, where Streamlit looks for them
    where = _run(installed, installed["python"], "-c", "import dpsurv_app.__main__ as m; print(m.APP)")
    assert where.returncode == 0, where.stderr
    app = Path(where.stdout.strip())
    assert str(installed["python"].parents[1]) in str(app) and app.is_file()
    assert sorted(p.name for p in (app.parent / "pages").glob("*.py")) == [n.rsplit("/", 1)[1] for n in pages]


def test_the_app_command_answers_help_and_names_the_extra_it_needs(installed):
    helped = _run(installed, installed["dpsurv-app"], "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: dpsurv-app"), helped.stderr
    missing = _run(installed, installed["dpsurv-app"], "--server.port", "8600")  # core only: no Streamlit, no server
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.strip() == ("error: the app needs Streamlit, which is not installed: install the app extra: "
                                      "pip install 'dpsurv[app]'")


def test_datasets_from_the_installed_command(installed):
    proc = _run(installed, installed["dpsurv"], "datasets", "--json")
    assert proc.returncode == 0, proc.stderr
    sets = {d["name"]: d for d in json.loads(proc.stdout)}
    assert {"lung", "veteran", "gehan"} <= set(sets) and sets["lung"]["n"] == 228


def test_a_seeded_km_simulation_without_the_extras(installed):
    proc = _run(installed, installed["dpsurv"], "km", "--data", "lung", "--mechanism", "laplace-counts",
                "--epsilon", "1", "--grid", "0:1100:20", "--seed", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["simulation"] is True and out["release"] is False and out["epsilon_spent"] == 1.0
    assert "record_id" not in out  # a simulation is never recorded
    again = _run(installed, installed["dpsurv"], "km", "--data", "lung", "--mechanism", "laplace-counts",
                 "--epsilon", "1", "--grid", "0:1100:20", "--seed", "1", "--json")
    assert json.loads(again.stdout) == out  # seeded: the same noise


def test_the_package_is_the_installed_one_and_the_extras_are_absent(installed):
    where = _run(installed, installed["python"], "-c", "import dpsurv_core; print(dpsurv_core.__file__)")
    assert where.returncode == 0 and str(installed["python"].parents[1]) in where.stdout
    for module in ("pyspark", "streamlit", "plotly", "playwright"):
        proc = _run(installed, installed["python"], "-c", f"import {module}")
        assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, f"{module} is installed by the core"


def test_a_command_needing_an_extra_names_it(installed):
    proc = _run(installed, installed["dpsurv"], "figure", "--record", "1", "--out", "f.svg", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ("error: The figure command needs the Python package plotly, which is not "
                                   "installed: pip install 'dpsurv[app]'.")
    spark = _run(installed, installed["dpsurv"], "km", "--data", "lung", "--engine", "spark", "--mechanism",
                 "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20", "--seed", "1", "--json")
    assert spark.returncode == 2 and "pip install 'dpsurv[spark]'" in spark.stderr
    assert len(spark.stderr.strip().splitlines()) == 1
